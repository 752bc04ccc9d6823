/* HTML tables for CLIP text cleaning (text/text_clean.c): the data of
 * html.unescape, in the generated file html_entities.c, written by
 * tools/gen_unicode_tables.py from CPython 3.11 (as base/unicode.h's
 * tables): html.entities.html5 and the numeric-reference rules. Range
 * tables are sorted by lo and do not overlap. */
#ifndef SDFED_HTML_ENTITIES_H
#define SDFED_HTML_ENTITIES_H

#include <stdint.h>

#include "base/unicode.h"

typedef struct sdfed_html_entity {
    const char *name; /* ASCII, without the '&'; may end in ';' */
    uint8_t n;        /* code points in the value (1 or 2) */
    uint32_t cp[2];
} sdfed_html_entity;

typedef struct sdfed_html_charref {
    uint32_t num, cp;
} sdfed_html_charref;

extern const sdfed_html_entity sdfed_html_entities[]; /* sorted bytewise by name */
extern const int sdfed_html_entity_count;
extern const sdfed_html_charref sdfed_html_invalid_charrefs[]; /* sorted by num */
extern const int sdfed_html_invalid_charref_count;
extern const sdfed_uc_range sdfed_html_invalid_codepoints[];
extern const int sdfed_html_invalid_codepoint_count;

#endif
