/* CLIP's byte-level BPE vocabulary: its layout, and building it from
 * OpenAI's merges file (bpe_simple_vocab_16e6.txt) for writing into a model
 * file. The tokenizer (tokenizer.h) builds its tables from such a vocabulary
 * and shares the layout's pieces declared here: the byte symbols
 * (bytes_to_unicode), the "left right" merge syntax and the special tokens. */
#ifndef SDFED_BPE_VOCAB_H
#define SDFED_BPE_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* The most tokens (and merges) a vocabulary may hold: the limit of the
 * tokenizer's tables, checked by the vocabulary builder too. */
#define SDFED_TOKENIZER_MAX_VOCAB (1 << 24)

/* The special tokens' strings, last in CLIP's vocabulary. */
#define SDFED_CLIP_SOT_TEXT "<|startoftext|>"
#define SDFED_CLIP_EOT_TEXT "<|endoftext|>"

/* A vocabulary as plain strings (for writing into a model file). */
typedef struct sdfed_bpe_vocab {
    char **tokens;
    int n_tokens;
    char **merges;
    int n_merges;
    int sot_id, eot_id;
    char *storage; /* every string above points into this block */
} sdfed_bpe_vocab;

/* CLIP's vocabulary from the text of bpe_simple_vocab_16e6.txt (uncompressed):
 * a first line holding "#version" (OpenAI's reads "\"bpe_simple_vocab_16e6.txt#version: 0.2"
 * and is skipped like CLIP does), then merges "left right" one per line, of which
 * the first vocab_size - 512 - 2 are used. Tokens: the 256 byte symbols in
 * bytes_to_unicode order, the same with "</w>", each merge joined, then
 * "<|startoftext|>" (sot_id) and "<|endoftext|>" (eot_id). vocab_size 49408
 * gives the real CLIP vocabulary. Fails with SDFED_ERR_ARG if vocab_size <
 * 514 or above SDFED_TOKENIZER_MAX_VOCAB, SDFED_ERR_FORMAT on a
 * missing header, too few merge lines or a malformed line (named by number). */
int sdfed_bpe_vocab_from_clip_merges(const char *text, size_t len, int vocab_size, sdfed_bpe_vocab *out,
                                     sdfed_error *err);
void sdfed_bpe_vocab_free(sdfed_bpe_vocab *v);

/* CLIP's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the
 * others map to 256, 257, ... in byte order. order[] lists the bytes in the
 * order of the dict (printable ones first), which is the vocabulary order. */
void sdfed_bytes_to_unicode(uint32_t cp[256], uint8_t order[256]);

/* A merge "left right" with exactly one space between two non-empty halves:
 * returns the length of left, or 0 if malformed. */
size_t sdfed_bpe_merge_split(const char *s, size_t len);

#endif
