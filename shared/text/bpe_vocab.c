/* CLIP's byte-level BPE vocabulary (see bpe_vocab.h): the pieces of its
 * layout the tokenizer shares (bytes_to_unicode, the merge syntax), then the
 * converter that builds the whole vocabulary from OpenAI's merges file, the
 * way simple_tokenizer.py does, for writing into a model file. */
#include "text/bpe_vocab.h"

#include <stdlib.h>
#include <string.h>

#include "text/text_clean.h"

/* ---------------------------------------------------------------- layout */

void sdfed_bytes_to_unicode(uint32_t cp[256], uint8_t order[256]) {
    int k = 0, extra = 0;
    for (int b = 0; b < 256; b++)
        if ((b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff)) {
            cp[b] = (uint32_t)b;
            order[k++] = (uint8_t)b;
        }
    for (int b = 0; b < 256; b++)
        if (!((b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff))) {
            cp[b] = (uint32_t)(256 + extra++);
            order[k++] = (uint8_t)b;
        }
}

size_t sdfed_bpe_merge_split(const char *s, size_t len) {
    const char *sp = len ? memchr(s, ' ', len) : NULL;
    if (!sp || sp == s || (size_t)(sp - s) == len - 1 || memchr(sp + 1, ' ', len - (size_t)(sp - s) - 1)) return 0;
    return (size_t)(sp - s);
}

/* ------------------------------------------------- CLIP merges converter */

/* The next line of text from *p (without '\n' and a trailing '\r'); 0 at the end. */
static int next_line(const char **p, const char *end, const char **line, size_t *len) {
    if (*p >= end) return 0;
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    const char *stop = nl ? nl : end;
    *line = *p;
    *len = (size_t)(stop - *p);
    if (*len && (*line)[*len - 1] == '\r') (*len)--;
    *p = nl ? nl + 1 : end;
    return 1;
}

int sdfed_bpe_vocab_from_clip_merges(const char *text, size_t len, int vocab_size, sdfed_bpe_vocab *out,
                                     sdfed_error *err) {
    if (!out) return sdfed_fail(err, SDFED_ERR_ARG, "clip vocab: NULL output");
    memset(out, 0, sizeof *out);
    if (!text && len) return sdfed_fail(err, SDFED_ERR_ARG, "clip vocab: NULL text");
    if (vocab_size < 514 || vocab_size > SDFED_TOKENIZER_MAX_VOCAB)
        return sdfed_fail(err, SDFED_ERR_ARG,
                          "clip vocab: vocab_size %d must be 514 (512 byte symbols + 2 special) to %d", vocab_size,
                          SDFED_TOKENIZER_MAX_VOCAB);
    int n_merges = vocab_size - 512 - 2;
    const char *p = text, *end = text + len, *line;
    size_t line_len;
    /* the header; OpenAI's file has it as "\"bpe_simple_vocab_16e6.txt#version: 0.2" */
    int header = 0;
    if (next_line(&p, end, &line, &line_len))
        for (size_t i = 0; i + 8 <= line_len && !header; i++) header = memcmp(line + i, "#version", 8) == 0;
    if (!header) return sdfed_fail(err, SDFED_ERR_FORMAT, "clip vocab: the first line is not a '#version' header");

    /* pass 1: check the merge lines and size the strings */
    const char *first_merge = p;
    size_t bytes = 256 * 3 + 256 * 7 + sizeof SDFED_CLIP_SOT_TEXT + sizeof SDFED_CLIP_EOT_TEXT;
    for (int i = 0; i < n_merges; i++) {
        if (!next_line(&p, end, &line, &line_len))
            return sdfed_fail(err, SDFED_ERR_FORMAT, "clip vocab: only %d merge lines, vocab_size %d needs %d", i,
                              vocab_size, n_merges);
        if (sdfed_bpe_merge_split(line, line_len) == 0)
            return sdfed_fail(err, SDFED_ERR_FORMAT, "clip vocab: line %d ('%.*s') is not a merge \"left right\"",
                              i + 2, (int)(line_len > 64 ? 64 : line_len), line);
        bytes += 2 * line_len + 1;
    }

    out->n_tokens = vocab_size;
    out->n_merges = n_merges;
    out->sot_id = vocab_size - 2;
    out->eot_id = vocab_size - 1;
    out->tokens = malloc(sizeof(char *) * (size_t)vocab_size);
    out->merges = malloc(sizeof(char *) * (size_t)(n_merges ? n_merges : 1));
    out->storage = malloc(bytes);
    if (!out->tokens || !out->merges || !out->storage) {
        sdfed_bpe_vocab_free(out);
        return sdfed_fail(err, SDFED_ERR_NOMEM, "clip vocab: out of memory");
    }

    /* pass 2: byte symbols, byte symbols + "</w>", merges joined, specials */
    char *w = out->storage;
    uint32_t cp[256];
    uint8_t order[256];
    sdfed_bytes_to_unicode(cp, order);
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < 256; k++) {
            out->tokens[pass * 256 + k] = w;
            w += sdfed_utf8_put((unsigned char *)w, cp[order[k]]);
            if (pass) {
                memcpy(w, "</w>", 4);
                w += 4;
            }
            *w++ = '\0';
        }
    p = first_merge;
    for (int i = 0; i < n_merges; i++) {
        next_line(&p, end, &line, &line_len);
        size_t left = sdfed_bpe_merge_split(line, line_len);
        out->merges[i] = w;
        memcpy(w, line, line_len);
        w[line_len] = '\0';
        w += line_len + 1;
        out->tokens[512 + i] = w;
        memcpy(w, line, left);
        memcpy(w + left, line + left + 1, line_len - left - 1);
        w[line_len - 1] = '\0';
        w += line_len;
    }
    out->tokens[out->sot_id] = w;
    memcpy(w, SDFED_CLIP_SOT_TEXT, sizeof SDFED_CLIP_SOT_TEXT);
    w += sizeof SDFED_CLIP_SOT_TEXT;
    out->tokens[out->eot_id] = w;
    memcpy(w, SDFED_CLIP_EOT_TEXT, sizeof SDFED_CLIP_EOT_TEXT);
    return SDFED_OK;
}

void sdfed_bpe_vocab_free(sdfed_bpe_vocab *v) {
    if (!v) return;
    free(v->tokens);
    free(v->merges);
    free(v->storage);
    memset(v, 0, sizeof *v);
}
