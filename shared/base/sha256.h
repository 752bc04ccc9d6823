/* SHA-256 (FIPS 180-4), for model hashes: the feature cache is keyed by
 * them, and clients verify the model they download against them. */
#ifndef SDFED_SHA256_H
#define SDFED_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct sdfed_sha256 {
    uint32_t state[8];
    uint64_t length; /* bytes hashed so far */
    unsigned char block[64];
    size_t used; /* bytes waiting in block */
} sdfed_sha256;

void sdfed_sha256_init(sdfed_sha256 *h);
void sdfed_sha256_update(sdfed_sha256 *h, const void *data, size_t n);
void sdfed_sha256_final(sdfed_sha256 *h, unsigned char digest[32]);
/* The digest of a buffer as 64 lower-case hex digits and a NUL. */
void sdfed_sha256_hex(const void *data, size_t n, char hex[65]);

#endif
