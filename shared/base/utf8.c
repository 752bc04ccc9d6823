/* UTF-8 sequences read and written (see utf8.h). */
#include "base/utf8.h"

size_t sdfed_utf8_read(const unsigned char *s, size_t n, uint32_t *cp) {
    if (n == 0) return 0;
    unsigned c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t need;
    uint32_t v;
    unsigned lo = 0x80, hi = 0xbf; /* the second byte's range */
    if (c >= 0xc2 && c <= 0xdf) {
        need = 1;
        v = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        need = 2;
        v = c & 0x0f;
        if (c == 0xe0) lo = 0xa0; /* no overlongs */
        if (c == 0xed) hi = 0x9f; /* no surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        need = 3;
        v = c & 0x07;
        if (c == 0xf0) lo = 0x90; /* no overlongs */
        if (c == 0xf4) hi = 0x8f; /* nothing past U+10FFFF */
    } else {
        return 0; /* a continuation byte, C0, C1 (overlong by their nature) or F5 and up */
    }
    if (n <= need) return 0;
    for (size_t j = 1; j <= need; j++) {
        unsigned b = s[j];
        if (j == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xbf)) return 0;
        v = v << 6 | (b & 0x3f);
    }
    *cp = v;
    return need + 1;
}

size_t sdfed_utf8_write(unsigned char *out, uint32_t cp) {
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xc0 | cp >> 6);
        out[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xe0 | cp >> 12);
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (unsigned char)(0xf0 | cp >> 18);
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}
