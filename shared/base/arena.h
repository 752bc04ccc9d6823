/* A caller-owned arena for activations and other per-call scratch.
 *
 * Allocation is a pointer bump; reset makes everything free again at once.
 * When a call needs more than the arena holds, a new chunk is added; the
 * next reset merges the chunks into one of the peak size, so after a first
 * call of each shape the arena never allocates again. */
#ifndef SDFED_ARENA_H
#define SDFED_ARENA_H

#include <stddef.h>

typedef struct sdfed_arena_chunk sdfed_arena_chunk;

typedef struct sdfed_arena {
    sdfed_arena_chunk *chunks; /* newest first */
    size_t used;               /* bytes handed out since the last reset */
    size_t peak;               /* largest `used` seen */
} sdfed_arena;

#define SDFED_ARENA_ALIGN 64

void sdfed_arena_init(sdfed_arena *a);
/* Uninitialised memory, SDFED_ARENA_ALIGN-aligned; NULL when out of memory. */
void *sdfed_arena_alloc(sdfed_arena *a, size_t bytes);
float *sdfed_arena_floats(sdfed_arena *a, size_t n);
void sdfed_arena_reset(sdfed_arena *a);
void sdfed_arena_free(sdfed_arena *a);

#endif
