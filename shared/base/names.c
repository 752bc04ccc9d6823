/* Name↔enum tables (see names.h). */
#include "base/names.h"

#include <stdio.h>
#include <string.h>

int sdfed_name_value(const sdfed_name *table, int n, const char *name) {
    for (int i = 0; name && i < n; i++)
        if (table[i].name && strcmp(name, table[i].name) == 0) return table[i].value;
    return -1;
}

const char *sdfed_name_of(const sdfed_name *table, int n, int value) {
    for (int i = 0; i < n; i++)
        if (table[i].name && table[i].value == value) return table[i].name;
    return NULL;
}

const char *sdfed_name_list(const sdfed_name *table, int n, char *out, size_t cap) {
    if (!cap) return out;
    size_t used = (size_t)snprintf(out, cap, "one of");
    for (int i = 0; i < n && used < cap; i++)
        if (table[i].name) used += (size_t)snprintf(out + used, cap - used, "%s \"%s\"", i ? "," : "", table[i].name);
    return out;
}
