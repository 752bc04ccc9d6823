/* UTF-8 as RFC 3629 has it: one sequence read, one code point written.
 * Well-formed means no overlong form, no surrogate (U+D800..U+DFFF) and
 * nothing past U+10FFFF; the JSON reader refuses anything else, the JSON
 * writer replaces it, the text cleaner keeps it as raw bytes. */
#ifndef SDFED_UTF8_H
#define SDFED_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Bytes (1 to 4) of the well-formed sequence that starts s (n bytes
 * readable), its code point in *cp; 0 when none starts there (a stray
 * continuation byte, a lead byte C0, C1 or past F4, an overlong form, a
 * surrogate, past U+10FFFF, or a sequence cut short by n). */
size_t sdfed_utf8_read(const unsigned char *s, size_t n, uint32_t *cp);
/* Writes the UTF-8 of cp (at most U+10FFFF) to out; returns its bytes, 1 to 4. */
size_t sdfed_utf8_write(unsigned char *out, uint32_t cp);

#endif
