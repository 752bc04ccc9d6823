/* Names of an enum's values: one table of {name, value} pairs per enum,
 * looked up both ways, and listed for the message that refuses a name
 * (`one of "a", "b", "c"`). Every name↔enum mapping in the core uses it. */
#ifndef SDFED_NAMES_H
#define SDFED_NAMES_H

#include <stddef.h>

typedef struct sdfed_name {
    const char *name;
    int value;
} sdfed_name;

/* The value named name among the n entries, or -1 (also for name NULL). */
int sdfed_name_value(const sdfed_name *table, int n, const char *name);
/* The name of value, or NULL when no entry has it. */
const char *sdfed_name_of(const sdfed_name *table, int n, int value);
/* Writes `one of "a", "b", "c"` (every entry, in table order) into out,
 * truncated to cap bytes; returns out. */
const char *sdfed_name_list(const sdfed_name *table, int n, char *out, size_t cap);

#endif
