/* Unicode tables for CLIP text cleaning (text/text_clean.c).
 *
 * The data lives in the generated file unicode_tables.c, written by
 * tools/gen_unicode_tables.py from CPython 3.11 (Unicode 14.0.0) so that the
 * tokenizer matches what OpenAI's simple_tokenizer.py computes under that
 * Python: character classes (str.isspace, \p{L}, \p{N}), the Cased /
 * Case_Ignorable properties of str.lower()'s Final_Sigma rule, and
 * str.lower()'s mappings. The same script writes the HTML tables
 * (text/html_entities.h). All range tables are sorted by lo and do not
 * overlap. */
#ifndef SDFED_UNICODE_H
#define SDFED_UNICODE_H

#include <stdint.h>

enum { SDFED_UC_OTHER = 0, SDFED_UC_SPACE = 1, SDFED_UC_LETTER = 2, SDFED_UC_NUMBER = 3 };
enum { SDFED_UC_CASED = 1, SDFED_UC_CASE_IGNORABLE = 2 };

/* the most code points str.lower() makes of one character */
#define SDFED_UC_LOWER_MAX 3

typedef struct sdfed_uc_range {
    uint32_t lo, hi; /* inclusive */
    uint8_t value;
} sdfed_uc_range;

typedef struct sdfed_uc_lower_run {
    uint32_t lo, hi; /* inclusive */
    uint8_t stride;  /* every stride-th code point from lo maps */
    int32_t delta;   /* to cp + delta */
} sdfed_uc_lower_run;

typedef struct sdfed_uc_lower_multi {
    uint32_t cp;
    uint8_t n;
    uint32_t out[SDFED_UC_LOWER_MAX];
} sdfed_uc_lower_multi;

extern const sdfed_uc_range sdfed_uc_class_ranges[];
extern const int sdfed_uc_class_count;
extern const sdfed_uc_range sdfed_uc_case_ranges[];
extern const int sdfed_uc_case_count;
extern const sdfed_uc_lower_run sdfed_uc_lower_runs[];
extern const int sdfed_uc_lower_run_count;
extern const sdfed_uc_lower_multi sdfed_uc_lower_multis[];
extern const int sdfed_uc_lower_multi_count;

#endif
