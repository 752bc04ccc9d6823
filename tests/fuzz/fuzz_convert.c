/* libFuzzer target for the CLIP converter (sdfed convert): any byte string
 * read as a safetensors checkpoint must convert or fail with a message,
 * never crash or read out of bounds. Its vocabulary is a small one made
 * here (64 merges of two letters), so that a checkpoint of up to 578 tokens
 * converts whole. Seeds live in tests/fuzz/corpus/convert
 * (tests/fuzz/make_seeds.sh). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/dtype.h"
#include "clip/clip_convert.h"
#include "clip/clip_model.h"
#include "format/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MERGES 64

/* the converted file's bytes are counted, not kept */
static int count_bytes(void *ctx, const void *bytes, size_t n) {
    (void)bytes;
    *(size_t *)ctx += n;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char vocab[16 + 4 * MERGES];
    static size_t vocab_len;
    if (!vocab_len) {
        vocab_len = (size_t)snprintf(vocab, sizeof vocab, "#version: 0.2\n");
        for (int i = 0; i < MERGES; i++)
            vocab_len +=
                (size_t)snprintf(vocab + vocab_len, sizeof vocab - vocab_len, "%c %c\n", 'a' + i / 26, 'a' + i % 26);
    }
    sdfed_error err = {0};
    sdfed_safetensors st;
    if (sdfed_safetensors_open(&st, data, size, &err) != SDFED_OK) {
        if (err.message[0] == '\0') abort(); /* every failure must explain itself */
        return 0;
    }
    size_t written = 0;
    sdfed_sink sink = {.write = count_bytes, .ctx = &written};
    sdfed_convert_options opt = {.weight_type = SDFED_TYPE_Q8_0,
                                 .activation = SDFED_ACT_QUICK_GELU,
                                 .vocab_text = vocab,
                                 .vocab_len = vocab_len};
    sdfed_convert_report report;
    if (sdfed_clip_convert(&st, &opt, &sink, &report, &err) != SDFED_OK && err.message[0] == '\0') abort();
    sdfed_safetensors_close(&st);
    return 0;
}
