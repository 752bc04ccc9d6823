/* Bump allocation in chunks, consolidated on reset. */
#include "base/arena.h"

#include <stdint.h>
#include <stdlib.h>

struct sdfed_arena_chunk {
    sdfed_arena_chunk *next;
    size_t size, used;
    unsigned char *data; /* SDFED_ARENA_ALIGN-aligned start within the block */
};

static sdfed_arena_chunk *chunk_new(size_t size) {
    sdfed_arena_chunk *c = malloc(sizeof *c + size + SDFED_ARENA_ALIGN);
    if (!c) return NULL;
    uintptr_t start = (uintptr_t)(c + 1);
    start = (start + SDFED_ARENA_ALIGN - 1) & ~(uintptr_t)(SDFED_ARENA_ALIGN - 1);
    c->data = (unsigned char *)start;
    c->size = size;
    c->used = 0;
    c->next = NULL;
    return c;
}

void sdfed_arena_init(sdfed_arena *a) {
    a->chunks = NULL;
    a->used = a->peak = 0;
}

void *sdfed_arena_alloc(sdfed_arena *a, size_t bytes) {
    size_t rounded = (bytes + SDFED_ARENA_ALIGN - 1) & ~(size_t)(SDFED_ARENA_ALIGN - 1);
    if (rounded < bytes) return NULL;
    sdfed_arena_chunk *c = a->chunks;
    if (!c || c->size - c->used < rounded) {
        size_t size = rounded > ((size_t)1 << 20) ? rounded : ((size_t)1 << 20);
        sdfed_arena_chunk *fresh = chunk_new(size);
        if (!fresh) return NULL;
        fresh->next = a->chunks;
        a->chunks = c = fresh;
    }
    void *p = c->data + c->used;
    c->used += rounded;
    a->used += rounded;
    if (a->used > a->peak) a->peak = a->used;
    return p;
}

float *sdfed_arena_floats(sdfed_arena *a, size_t n) {
    if (n > ((size_t)-1) / sizeof(float)) return NULL;
    return sdfed_arena_alloc(a, n * sizeof(float));
}

void sdfed_arena_reset(sdfed_arena *a) {
    if (a->chunks && a->chunks->next) {
        /* several chunks: replace them by one that holds the peak */
        sdfed_arena_free(a);
        size_t peak = a->peak;
        a->chunks = chunk_new(peak);
        a->peak = peak;
    }
    if (a->chunks) a->chunks->used = 0;
    a->used = 0;
}

void sdfed_arena_free(sdfed_arena *a) {
    sdfed_arena_chunk *c = a->chunks;
    while (c) {
        sdfed_arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->chunks = NULL;
    a->used = 0;
}
