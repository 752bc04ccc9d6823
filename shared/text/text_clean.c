/* The text cleaning CLIP applies before tokenising (see text_clean.h), on
 * code points and over the generated tables of base/unicode.h and
 * html_entities.h: first the table lookups (character class, case property,
 * lower case of one character), then the cleaning steps (UTF-8 decoding that
 * keeps invalid bytes as raw-byte values, html.unescape, whitespace,
 * str.lower() with Final_Sigma) and last sdfed_clean_text, which applies
 * them in that order. */
#include "text/text_clean.h"

#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "text/html_entities.h"

/* An input byte that does not start well-formed UTF-8 is kept as RAW | byte:
 * above every code point, so it is of class "other" and lowers to itself. */
#define RAW 0x80000000u

/* ---------------------------------------------------------------- tables */

static int range_lookup(const sdfed_uc_range *r, int n, uint32_t cp) {
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (cp < r[mid].lo)
            hi = mid - 1;
        else if (cp > r[mid].hi)
            lo = mid + 1;
        else
            return r[mid].value;
    }
    return 0;
}

int sdfed_char_class(uint32_t cp) { return range_lookup(sdfed_uc_class_ranges, sdfed_uc_class_count, cp); }
static int case_property(uint32_t cp) { return range_lookup(sdfed_uc_case_ranges, sdfed_uc_case_count, cp); }

/* str.lower() of one character other than U+03A3; returns the count written. */
static int lower_char(uint32_t cp, uint32_t out[SDFED_UC_LOWER_MAX]) {
    for (int i = 0; i < sdfed_uc_lower_multi_count; i++)
        if (sdfed_uc_lower_multis[i].cp == cp) {
            memcpy(out, sdfed_uc_lower_multis[i].out, sizeof(uint32_t) * sdfed_uc_lower_multis[i].n);
            return sdfed_uc_lower_multis[i].n;
        }
    out[0] = cp;
    /* the last run starting at or before cp */
    int lo = 0, hi = sdfed_uc_lower_run_count - 1, found = -1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (sdfed_uc_lower_runs[mid].lo <= cp) {
            found = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    if (found >= 0) {
        const sdfed_uc_lower_run *r = &sdfed_uc_lower_runs[found];
        if (cp <= r->hi && (cp - r->lo) % r->stride == 0) out[0] = (uint32_t)((int64_t)cp + r->delta);
    }
    return 1;
}

/* --------------------------------------------------------------- cleaning */

/* UTF-8 to code points; a byte that does not start a well-formed sequence
 * becomes RAW | byte (Python's errors="surrogateescape"). Returns the count. */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *out) {
    size_t i = 0, k = 0;
    while (i < n) {
        size_t len = sdfed_utf8_read(s + i, n - i, &out[k]);
        if (len == 0) {
            out[k] = RAW | s[i];
            len = 1;
        }
        k++;
        i += len;
    }
    return k;
}

size_t sdfed_utf8_len(uint32_t cp) {
    if ((cp & RAW) || cp < 0x80) return 1;
    if (cp < 0x800) return 2;
    return cp < 0x10000 ? 3 : 4;
}

size_t sdfed_utf8_put(unsigned char *out, uint32_t cp) {
    if (cp & RAW) {
        out[0] = (unsigned char)(cp & 0xff);
        return 1;
    }
    return sdfed_utf8_write(out, cp);
}

static const sdfed_html_entity *entity_find(const char *name, size_t len) {
    int lo = 0, hi = sdfed_html_entity_count - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        const char *e = sdfed_html_entities[mid].name;
        size_t elen = strlen(e);
        int c = memcmp(name, e, len < elen ? len : elen);
        if (c == 0) c = (len > elen) - (len < elen);
        if (c == 0) return &sdfed_html_entities[mid];
        if (c < 0)
            hi = mid - 1;
        else
            lo = mid + 1;
    }
    return NULL;
}

/* What html.unescape makes of the numeric reference &#num; (num saturated
 * at 0x110000): writes 0 or 1 code point, returns the count. */
static int numeric_charref(uint32_t num, uint32_t *out) {
    for (int i = 0; i < sdfed_html_invalid_charref_count; i++)
        if (sdfed_html_invalid_charrefs[i].num == num) {
            out[0] = sdfed_html_invalid_charrefs[i].cp;
            return 1;
        }
    if ((num >= 0xd800 && num <= 0xdfff) || num > 0x10ffff) {
        out[0] = 0xfffd;
        return 1;
    }
    if (range_lookup(sdfed_html_invalid_codepoints, sdfed_html_invalid_codepoint_count, num)) return 0;
    out[0] = num;
    return 1;
}

static int decimal_value(uint32_t c) { return c >= '0' && c <= '9' ? (int)(c - '0') : -1; }

static int hex_value(uint32_t c) {
    if (c >= '0' && c <= '9') return (int)(c - '0');
    if (c >= 'a' && c <= 'f') return (int)(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return (int)(c - 'A' + 10);
    return -1;
}

/* One html.unescape match at s[0] == '&', following Python's pattern
 *   &(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)
 * Returns the characters consumed (0: no match) and writes the replacement,
 * which is never longer than what it replaces, into rep / *n_rep. */
static size_t charref(const uint32_t *s, size_t n, uint32_t rep[34], size_t *n_rep) {
    size_t j;
    if (n >= 3 && s[1] == '#') {
        uint32_t num = 0;
        int base = 10;
        j = 2;
        if ((s[2] == 'x' || s[2] == 'X') && n >= 4 && hex_value(s[3]) >= 0) {
            base = 16;
            j = 3;
        } else if (!(s[2] >= '0' && s[2] <= '9')) {
            return 0;
        }
        for (; j < n; j++) {
            int d = base == 16 ? hex_value(s[j]) : decimal_value(s[j]);
            if (d < 0) break;
            num = num > 0x10ffff ? 0x110000 : num * (uint32_t)base + (uint32_t)d;
            if (num > 0x10ffff) num = 0x110000;
        }
        if (j < n && s[j] == ';') j++;
        *n_rep = (size_t)numeric_charref(num, rep);
        return j;
    }
    /* a name: 1 to 32 characters, then an optional ';' */
    char name[34];
    size_t k = 0;
    for (j = 1; j < n && k < 32; j++, k++) {
        uint32_t c = s[j];
        if (c == '\t' || c == '\n' || c == '\f' || c == ' ' || c == '<' || c == '&' || c == '#' || c == ';') break;
        name[k] = c < 0x80 ? (char)c : (char)0xff; /* entity names are ASCII */
    }
    if (k == 0) return 0;
    if (j < n && s[j] == ';') {
        name[k++] = ';';
        j++;
    }
    /* the whole name, else its longest prefix of at least 2 characters */
    size_t x = k;
    const sdfed_html_entity *e = entity_find(name, x);
    while (!e && x > 2) e = entity_find(name, --x);
    if (!e) { /* left as it is: '&' + name */
        memcpy(rep, s, sizeof(uint32_t) * j);
        *n_rep = j;
        return j;
    }
    rep[0] = e->cp[0];
    rep[1] = e->cp[1];
    memcpy(rep + e->n, s + 1 + x, sizeof(uint32_t) * (k - x));
    *n_rep = e->n + (k - x);
    return j;
}

/* html.unescape in place (replacements never grow); returns the new length. */
static size_t html_unescape(uint32_t *s, size_t n) {
    size_t r = 0, w = 0;
    while (r < n) {
        uint32_t rep[34];
        size_t n_rep = 0, used = s[r] == '&' ? charref(s + r, n - r, rep, &n_rep) : 0;
        if (used == 0) {
            s[w++] = s[r++];
            continue;
        }
        memcpy(s + w, rep, sizeof(uint32_t) * n_rep);
        w += n_rep;
        r += used;
    }
    return w;
}

/* strip, collapse runs of whitespace into one ' ', strip; in place. */
static size_t clean_whitespace(uint32_t *s, size_t n) {
    size_t w = 0;
    int space = 0;
    for (size_t r = 0; r < n; r++) {
        if (sdfed_char_class(s[r]) == SDFED_UC_SPACE) {
            space = w > 0;
            continue;
        }
        if (space) s[w++] = ' ';
        space = 0;
        s[w++] = s[r];
    }
    return w;
}

/* Python's Final_Sigma test for the U+03A3 at s[i]: preceded by a cased
 * character and not followed by one, case-ignorable characters skipped. */
static int final_sigma(const uint32_t *s, size_t n, size_t i) {
    size_t j = i;
    int prop = 0;
    while (j > 0 && (prop = case_property(s[j - 1])) == SDFED_UC_CASE_IGNORABLE) j--;
    if (j == 0 || prop != SDFED_UC_CASED) return 0;
    for (j = i + 1; j < n; j++) {
        prop = case_property(s[j]);
        if (prop != SDFED_UC_CASE_IGNORABLE) return prop != SDFED_UC_CASED;
    }
    return 1;
}

/* str.lower() of s into out (NULL: only count); returns the length. */
static size_t lower_text(const uint32_t *s, size_t n, uint32_t *out) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t tmp[SDFED_UC_LOWER_MAX];
        int m;
        if (s[i] == 0x3a3) {
            tmp[0] = final_sigma(s, n, i) ? 0x3c2 : 0x3c3;
            m = 1;
        } else {
            m = lower_char(s[i], tmp);
        }
        if (out) memcpy(out + k, tmp, sizeof(uint32_t) * (size_t)m);
        k += (size_t)m;
    }
    return k;
}

/* ------------------------------------------------------------ clean text */

int sdfed_clean_text(const char *text, size_t len, uint32_t **out, size_t *n_out, sdfed_error *err) {
    uint32_t *cps = malloc(sizeof(uint32_t) * (len ? len : 1));
    if (!cps) return sdfed_fail(err, SDFED_ERR_NOMEM, "tokenizer: out of memory for a text of %zu bytes", len);
    size_t n = utf8_decode((const unsigned char *)text, len, cps);
    n = html_unescape(cps, n);
    n = html_unescape(cps, n);
    n = clean_whitespace(cps, n);
    *n_out = lower_text(cps, n, NULL);
    *out = malloc(sizeof(uint32_t) * (*n_out ? *n_out : 1));
    if (*out) lower_text(cps, n, *out);
    free(cps);
    if (!*out) return sdfed_fail(err, SDFED_ERR_NOMEM, "tokenizer: out of memory for a text of %zu bytes", len);
    return SDFED_OK;
}
