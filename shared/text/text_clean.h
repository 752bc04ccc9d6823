/* The text cleaning CLIP applies before tokenising, on code points.
 *
 * sdfed_clean_text turns UTF-8 into the code points the pre-tokeniser reads:
 * decoding (a byte that does not start well-formed UTF-8 is kept as one "raw
 * byte" value above U+10FFFF, Python's errors="surrogateescape"), then
 * html.unescape twice, whitespace stripped and collapsed, and str.lower()
 * with Final_Sigma; tokenizer.h states the exact semantics. The character
 * classes and UTF-8 encoding below accept those raw-byte values: a raw byte
 * is of class SDFED_UC_OTHER and encodes back to itself. */
#ifndef SDFED_TEXT_CLEAN_H
#define SDFED_TEXT_CLEAN_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "base/unicode.h"

/* The cleaned, lower-cased code points of the UTF-8 text (text, len) in a
 * new buffer (free it); *n_out is their count. Fails only with
 * SDFED_ERR_NOMEM. */
int sdfed_clean_text(const char *text, size_t len, uint32_t **out, size_t *n_out, sdfed_error *err);

/* SDFED_UC_OTHER, _SPACE, _LETTER or _NUMBER (base/unicode.h) of a code point. */
int sdfed_char_class(uint32_t cp);

/* Bytes of the UTF-8 of one code point (or raw byte): 1 to 4. */
size_t sdfed_utf8_len(uint32_t cp);

/* Writes the UTF-8 of one code point (or the raw byte); returns the byte count. */
size_t sdfed_utf8_put(unsigned char *out, uint32_t cp);

#endif
