/* libFuzzer target for the GGUF reader and the CLIP model loader: any byte
 * string must open cleanly or fail with a message, never crash or read out
 * of bounds. Seeds live in tests/fuzz/corpus/gguf. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clip/clip_model.h"
#include "format/gguf.h"
#include "text/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* reads are summed into here so the compiler cannot drop them */
static volatile unsigned touched;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* the model loader wants 4-byte alignment, as mmap and malloc give */
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    sdfed_error err;
    sdfed_gguf g;
    if (sdfed_gguf_open(&g, copy, size, &err) == SDFED_OK) {
        /* touch everything the reader indexed */
        unsigned sum = 0;
        for (uint64_t i = 0; i < g.n_kv; i++) {
            const sdfed_gguf_kv *kv = &g.kv[i];
            if (kv->type == SDFED_GGUF_ARRAY && kv->elem_type == SDFED_GGUF_STRING) {
                sdfed_gguf_str_iter it = sdfed_gguf_str_iter_begin(kv);
                sdfed_str s;
                while (sdfed_gguf_str_iter_next(&it, &s)) sum += s.len ? (unsigned char)s.ptr[s.len - 1] : 0;
            }
        }
        for (uint64_t i = 0; i < g.n_tensors; i++) {
            const uint8_t *t = g.tensors[i].data;
            if (g.tensors[i].nbytes) sum += t[0] + t[g.tensors[i].nbytes - 1];
        }
        touched = sum;
        sdfed_tokenizer tok;
        if (sdfed_tokenizer_init_gguf(&tok, &g, &err) == SDFED_OK) sdfed_tokenizer_free(&tok);
        sdfed_gguf_close(&g);
    } else if (err.message[0] == '\0') {
        abort(); /* every failure must explain itself */
    }
    sdfed_clip_model m;
    if (sdfed_clip_load(&m, copy, size, &err) == SDFED_OK) sdfed_clip_free(&m);
    free(copy);
    return 0;
}
