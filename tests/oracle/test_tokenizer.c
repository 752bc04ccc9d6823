/* Tests of the CLIP tokenizer (shared/text/tokenizer.h).
 *
 *   test_tokenizer <bpe_simple_vocab_16e6.txt> <mini-vit.reference.safetensors>
 *
 * The 26 reference texts must give exactly the ids openai/CLIP produced,
 * from a vocabulary built by the converter and from a GGUF round trip. The
 * unit cases' expected ids were computed with CLIP's simple_tokenizer logic
 * in Python 3.11 (html.unescape, str.lower, the pattern with \p{L} / \p{N}
 * as unicodedata categories L* / N*, no ftfy; invalid UTF-8 decoded with
 * errors="surrogateescape"). Every encode runs both merge loops (the direct
 * transcription of CLIP's and the heap one) and requires the same ids. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "check.h"
#include "format/gguf.h"
#include "format/safetensors.h"
#include "read_file.h"
#include "text/tokenizer.h"

#define CTX SDFED_CLIP_CONTEXT_LENGTH
#define SOT 49406
#define EOT 49407

/* encode with the heap merge loop forced on and off; the two must agree */
static int encode_both(sdfed_tokenizer *t, const char *text, size_t len, int32_t *ids, int cap, int *n,
                       sdfed_error *err) {
    int32_t *other = malloc(sizeof(int32_t) * (size_t)(cap > 0 ? cap : 1));
    int n_other = 0, saved = t->heap_min_symbols;
    t->heap_min_symbols = INT_MAX;
    int rc = sdfed_tokenizer_encode(t, text, len, ids, cap, n, err);
    t->heap_min_symbols = 0;
    int rc_other = sdfed_tokenizer_encode(t, text, len, other, cap, &n_other, NULL);
    t->heap_min_symbols = saved;
    CHECK(rc == rc_other && *n == n_other && memcmp(ids, other, sizeof(int32_t) * (size_t)*n) == 0,
          "direct and heap merge loops disagree on '%.*s'", (int)(len > 60 ? 60 : len), text);
    free(other);
    return rc;
}

static void check_ids(sdfed_tokenizer *t, const char *text, size_t len, const int32_t *expect, int n_expect) {
    int32_t ids[256];
    int n = -1;
    sdfed_error err = {0};
    int rc = encode_both(t, text, len, ids, 256, &n, &err);
    int same = rc == SDFED_OK && n == n_expect && memcmp(ids, expect, sizeof(int32_t) * (size_t)n) == 0;
    CHECK(same, "encode '%.*s': rc %d (%s), %d ids, expected %d", (int)(len > 60 ? 60 : len), text, rc, err.message, n,
          n_expect);
    if (!same && rc == SDFED_OK) {
        fprintf(stderr, "  got:");
        for (int i = 0; i < n; i++) fprintf(stderr, " %d", ids[i]);
        fprintf(stderr, "\n");
    }
}

#define IDS(...) ((const int32_t[]){__VA_ARGS__}), (int)(sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t))
#define TEXT(s) s, sizeof(s) - 1

/* The 26 reference texts through sdfed_tokenize, against tokenizer.ids. */
static void check_reference(sdfed_tokenizer *t, const sdfed_safetensors *st, const char *label) {
    const sdfed_st_tensor *ref = sdfed_safetensors_find(st, "tokenizer.ids");
    char *texts_json = sdfed_safetensors_metadata(st, "tokenizer_texts");
    CHECK(ref && ref->n_dims == 2 && ref->shape[1] == CTX && texts_json, "%s: reference tensor or texts missing",
          label);
    if (!ref || !texts_json || ref->n_dims != 2 || ref->shape[1] != CTX) {
        free(texts_json);
        return;
    }
    int n_texts = (int)ref->shape[0];
    int32_t *expect = malloc(sizeof(int32_t) * (size_t)ref->n_elements);
    sdfed_json j;
    sdfed_error err = {0};
    CHECK(sdfed_st_to_i32(ref, expect, &err) == SDFED_OK, "%s", err.message);
    CHECK(sdfed_json_parse(&j, texts_json, strlen(texts_json), &err) == SDFED_OK, "texts: %s", err.message);
    CHECK(j.nodes[0].type == SDFED_JSON_ARRAY && j.nodes[0].size == n_texts, "%s: %d texts for %d rows", label,
          j.nodes[0].size, n_texts);
    int exact = 0;
    for (int i = 0; i < n_texts && i < j.nodes[0].size; i++) {
        char *text = sdfed_json_string_dup(&j, sdfed_json_at(&j, 0, i));
        int32_t ids[CTX];
        int n = 0, saved = t->heap_min_symbols;
        for (int mode = 0; mode < 2 && text; mode++) {
            t->heap_min_symbols = mode ? 0 : INT_MAX;
            int rc = sdfed_tokenize(t, text, strlen(text), CTX, ids, &n, &err);
            int same = rc == SDFED_OK && memcmp(ids, expect + (size_t)i * CTX, sizeof ids) == 0;
            CHECK(same, "%s: text %d '%s' (%s loop): rc %d %s", label, i, text, mode ? "heap" : "direct", rc,
                  rc ? err.message : "ids differ");
            exact += same && mode;
        }
        t->heap_min_symbols = saved;
        free(text);
    }
    printf("%s: %d/%d reference texts exact\n", label, exact, n_texts);
    sdfed_json_free(&j);
    free(expect);
    free(texts_json);
}

static void test_vocab_layout(const sdfed_bpe_vocab *v) {
    CHECK(v->n_tokens == 49408 && v->n_merges == 48894 && v->sot_id == SOT && v->eot_id == EOT, "counts %d %d %d %d",
          v->n_tokens, v->n_merges, v->sot_id, v->eot_id);
    CHECK(strcmp(v->tokens[0], "!") == 0 && strcmp(v->tokens[93], "~") == 0, "first byte symbols");
    CHECK(strcmp(v->tokens[188], "\xc4\x80") == 0, "byte 0 maps to U+0100: '%s'", v->tokens[188]);
    CHECK(strcmp(v->tokens[256], "!</w>") == 0 && strcmp(v->tokens[511], "\xc5\x83</w>") == 0, "</w> symbols");
    CHECK(strcmp(v->merges[0], "i n") == 0 && strcmp(v->tokens[512], "in") == 0, "first merge '%s' / '%s'",
          v->merges[0], v->tokens[512]);
    CHECK(strcmp(v->tokens[SOT], "<|startoftext|>") == 0 && strcmp(v->tokens[EOT], "<|endoftext|>") == 0, "specials");
}

static void test_gguf_round_trip(const sdfed_bpe_vocab *v, const sdfed_safetensors *st) {
    sdfed_gguf_writer w;
    sdfed_buffer buf = {0};
    sdfed_sink sink = sdfed_buffer_sink(&buf);
    sdfed_error err = {0};
    sdfed_gguf_writer_init(&w);
    sdfed_gguf_writer_add_str(&w, "general.architecture", "clip");
    sdfed_gguf_writer_add_str_array(&w, "tokenizer.ggml.tokens", (const char *const *)v->tokens, NULL,
                                    (uint64_t)v->n_tokens);
    sdfed_gguf_writer_add_str_array(&w, "tokenizer.ggml.merges", (const char *const *)v->merges, NULL,
                                    (uint64_t)v->n_merges);
    sdfed_gguf_writer_add_u32(&w, "tokenizer.ggml.bos_token_id", (uint32_t)v->sot_id);
    sdfed_gguf_writer_add_u32(&w, "tokenizer.ggml.eos_token_id", (uint32_t)v->eot_id);
    CHECK(sdfed_gguf_writer_write(&w, &sink, &err) == SDFED_OK, "gguf write: %s", err.message);
    sdfed_gguf_writer_free(&w);

    sdfed_gguf g;
    sdfed_tokenizer t;
    CHECK(sdfed_gguf_open(&g, buf.data, buf.size, &err) == SDFED_OK, "gguf open: %s", err.message);
    int rc = sdfed_tokenizer_init_gguf(&t, &g, &err);
    CHECK(rc == SDFED_OK, "init_gguf: %s", err.message);
    if (rc == SDFED_OK) {
        CHECK(t.n_tokens == 49408 && t.sot_id == SOT && t.eot_id == EOT, "gguf tokenizer shape");
        check_reference(&t, st, "gguf");
        sdfed_tokenizer_free(&t);
    }
    sdfed_gguf_close(&g);
    sdfed_buffer_free(&buf);

    /* a model file without the tokenizer keys */
    sdfed_gguf_writer_init(&w);
    sdfed_gguf_writer_add_str(&w, "general.architecture", "clip");
    sdfed_gguf_writer_add_u32(&w, "tokenizer.ggml.bos_token_id", 0);
    CHECK(sdfed_gguf_writer_write(&w, &sink, &err) == SDFED_OK, "gguf write: %s", err.message);
    sdfed_gguf_writer_free(&w);
    CHECK(sdfed_gguf_open(&g, buf.data, buf.size, &err) == SDFED_OK, "gguf open: %s", err.message);
    rc = sdfed_tokenizer_init_gguf(&t, &g, &err);
    CHECK(rc == SDFED_ERR_NOT_FOUND && strstr(err.message, "tokenizer.ggml.tokens"), "no tokenizer keys: %d %s", rc,
          err.message);
    sdfed_gguf_close(&g);
    sdfed_buffer_free(&buf);

    /* tokens present but merges of the wrong type */
    const char *toks[] = {"a", "b"};
    sdfed_gguf_writer_init(&w);
    sdfed_gguf_writer_add_str_array(&w, "tokenizer.ggml.tokens", toks, NULL, 2);
    sdfed_gguf_writer_add_u32(&w, "tokenizer.ggml.merges", 3);
    CHECK(sdfed_gguf_writer_write(&w, &sink, &err) == SDFED_OK, "gguf write: %s", err.message);
    sdfed_gguf_writer_free(&w);
    CHECK(sdfed_gguf_open(&g, buf.data, buf.size, &err) == SDFED_OK, "gguf open: %s", err.message);
    rc = sdfed_tokenizer_init_gguf(&t, &g, &err);
    CHECK(rc == SDFED_ERR_FORMAT && strstr(err.message, "tokenizer.ggml.merges"), "bad merges key: %d %s", rc,
          err.message);
    sdfed_gguf_close(&g);
    sdfed_buffer_free(&buf);
}

static void test_cleaning(sdfed_tokenizer *t) {
    /* HTML references, applied twice */
    check_ids(t, TEXT("&amp;"), IDS(261));
    check_ids(t, TEXT("&amp"), IDS(261));                        /* valid without ';' */
    check_ids(t, TEXT("&notit;"), IDS(126, 361, 585, 282));      /* longest prefix: "¬it;" */
    check_ids(t, TEXT("&#x41;"), IDS(320));                      /* "A" -> "a" */
    check_ids(t, TEXT("&#128;"), IDS(6309));                     /* windows-1252: "€" */
    check_ids(t, TEXT("&#0;"), IDS(39802));                      /* U+FFFD */
    check_ids(t, TEXT("&amp;amp;"), IDS(261));                   /* double escaped */
    check_ids(t, TEXT("&amp;#x41;B"), IDS(3937));                /* -> "&#x41;B" -> "AB" */
    check_ids(t, TEXT("&amp;lt;|endoftext|&amp;gt;"), IDS(EOT)); /* unescapes to the special token */
    /* "<x < &#;&#x;& amp; &abc": LT without ';', refs that match nothing */
    check_ids(t, TEXT("&LTx &lt &#;&#x;& amp; &abc"),
              IDS(283, 343, 283, 5, 2, 26, 5, 258, 343, 26, 261, 6259, 282, 261, 5334));
    /* CR, removed control, surrogate, out of range, windows-1252 dash, noncharacter, hex X: "ab�c�d–ef~" */
    check_ids(t, TEXT("&#13;a&#1;b&#xD800;c&#99999999999;d&#150;e&#x10FFFF;f&#X7e;"),
              IDS(3937, 39802, 322, 39802, 323, 1224, 1829, 349));
    /* lower-casing: Final_Sigma ("οδος, σοφος σ ασ'β"), U+0130 -> "i̇", titlecase, Latin-1, ß */
    check_ids(t,
              TEXT("\xce\x9f\xce\x94\xce\x9f\xce\xa3, \xce\xa3\xce\x9f\xce\xa6\xce\x9f\xce\xa3 \xce\xa3 "
                   "\xce\x91\xce\xa3'\xce\x92"),
              IDS(138, 123, 138, 112, 138, 123, 139, 480, 267, 139, 225, 138, 123, 139, 228, 138, 123, 139, 480, 139,
                  481, 138, 109, 139, 481, 262, 138, 366));
    check_ids(t, TEXT("\xc4\xb0stanbul"), IDS(328, 16384, 11231));
    check_ids(t,
              TEXT("\xc7\x85 \xc3\x80\xc3\x89\xc3\x8e Stra\xc3\x9f"
                   "e"),
              IDS(131, 484, 36149, 3459, 127, 362, 1894, 127, 253, 324));
    /* whitespace: tabs, newlines, U+3000, VT and U+001C (str.isspace) collapse and strip */
    check_ids(t,
              TEXT(" \t a\n\n b\xe3\x80\x80"
                   "c \r\n\x0b\x1c"),
              IDS(320, 321, 322));
    static const int32_t none[1] = {0};
    check_ids(t, TEXT(""), none, 0);
    check_ids(t, TEXT("   \t "), none, 0);
}

static void test_pretokenize(sdfed_tokenizer *t) {
    check_ids(t, TEXT("it's we're they've I'M you'll he'd don't 'sun ''s"),
              IDS(585, 568, 649, 982, 889, 1200, 328, 880, 592, 1342, 797, 1896, 847, 713, 568, 2271, 8445, 338));
    /* digits one by one, also Nl (Ⅻ) and No (½) */
    check_ids(t, TEXT("2024 is 12:30, \xe2\x85\xab \xc2\xbd"),
              IDS(273, 271, 273, 275, 533, 272, 273, 281, 274, 271, 267, 158, 227, 375, 33613));
    /* special tokens inside text, lower-cased ones too; after '!' the run of
     * "other" characters swallows "<|" as in CLIP's pattern */
    check_ids(t, TEXT("a <|startoftext|>b<|endoftext|> x<|ENDOFTEXT|> !<|endoftext|>"),
              IDS(320, SOT, 321, EOT, 343, EOT, 0, 27, 347, 40786, 4160, 91, 285));
    /* invalid UTF-8: truncated, stray, surrogate, above U+10FFFF, overlong; then valid "café" */
    check_ids(t,
              TEXT("caf\xc3 \xff\xfe"
                   "ab \xed\xa0\x80x \xe2\x82"
                   "A \xf4\x90\x80\x80 \xc0\xaf caf\xc3\xa9"),
              IDS(20867, 383, 187, 442, 3937, 169, 254, 478, 343, 158, 480, 320, 176, 238, 222, 478, 124, 363, 15304));
    check_ids(t, TEXT("a\0b"), IDS(320, 444, 321));
}

static void test_tokenize(sdfed_tokenizer *t) {
    char text[1024];
    int32_t ids[CTX];
    int n;
    sdfed_error err = {0};
    for (int k = 74; k <= 200; k++) {
        if (k > 76 && k != 200) continue;
        for (int i = 0; i < k; i++) memcpy(text + 2 * i, "a ", 2);
        CHECK(sdfed_tokenize(t, text, (size_t)(2 * k), CTX, ids, &n, &err) == SDFED_OK, "%s", err.message);
        int want = k + 2 < CTX ? k + 2 : CTX;
        int ok = n == want && ids[0] == SOT && ids[want - 1] == EOT;
        for (int i = 1; i < want - 1; i++) ok = ok && ids[i] == 320;
        for (int i = want; i < CTX; i++) ok = ok && ids[i] == 0;
        CHECK(ok, "%d words: n %d, last %d", k, n, ids[CTX - 1]);
    }
    CHECK(sdfed_tokenize(t, "", 0, CTX, ids, &n, &err) == SDFED_OK && n == 2 && ids[0] == SOT && ids[1] == EOT &&
              ids[2] == 0,
          "empty text");
    CHECK(sdfed_tokenize(t, "dog", 3, 2, ids, &n, &err) == SDFED_OK && n == 2 && ids[0] == SOT && ids[1] == EOT,
          "context 2");
    CHECK(sdfed_tokenize(t, "dog", 3, 1, ids, &n, &err) == SDFED_ERR_ARG, "context 1 must fail");

    /* capacity and counting */
    int32_t few[3];
    int rc = sdfed_tokenizer_encode(t, TEXT("a photo of a dog"), few, 3, &n, &err);
    CHECK(rc == SDFED_ERR_ARG && n == 3 && few[2] == 539, "capacity 3: rc %d n %d (%s)", rc, n, err.message);
    rc = sdfed_tokenizer_encode(t, TEXT("a photo of a dog"), NULL, 0, &n, &err);
    CHECK(rc == SDFED_OK && n == 5, "count only: rc %d n %d", rc, n);
    rc = sdfed_tokenizer_encode(t, TEXT("a photo of a dog"), few, 0, &n, &err);
    CHECK(rc == SDFED_ERR_ARG && n == 0, "capacity 0: rc %d n %d", rc, n);
    size_t len = 0;
    const char *s = sdfed_tokenizer_token(t, 1125, &len);
    CHECK(s && len == 9 && strcmp(s, "photo</w>") == 0, "token 1125 is '%s'", s ? s : "(null)");
    CHECK(sdfed_tokenizer_token(t, -1, &len) == NULL && sdfed_tokenizer_token(t, 49408, &len) == NULL, "token range");
}

/* A small vocabulary of the same construction: merges that create a pair of
 * lower rank than the one being applied ("ab a" before "a b"), so the order
 * of merges within a round matters. Expected ids from the Python reference. */
static void test_custom_vocab(void) {
    const char merges[] = "#version: test\nab a\na b\na a\naa aa\nb a</w>\nunused line\n";
    sdfed_bpe_vocab v;
    sdfed_tokenizer t;
    sdfed_error err = {0};
    int rc = sdfed_bpe_vocab_from_clip_merges(merges, sizeof merges - 1, 519, &v, &err);
    CHECK(rc == SDFED_OK && v.n_tokens == 519 && v.n_merges == 5 && strcmp(v.tokens[512], "aba") == 0 &&
              v.sot_id == 517 && v.eot_id == 518,
          "custom vocab: %s", err.message);
    if (rc) return;
    rc = sdfed_tokenizer_init_vocab(&t, &v, &err);
    CHECK(rc == SDFED_OK, "custom init: %s", err.message);
    if (rc == SDFED_OK) {
        check_ids(&t, TEXT("ababab"), IDS(513, 512, 321));
        check_ids(&t, TEXT("abab"), IDS(512, 321));
        check_ids(&t, TEXT("aaaaa"), IDS(515, 320));
        check_ids(&t, TEXT("aaaa"), IDS(514, 64, 320));
        check_ids(&t, TEXT("ba"), IDS(516));
        check_ids(&t, TEXT("ab aba abb"), IDS(64, 321, 513, 320, 513, 321));
        check_ids(&t, TEXT("Hello!"), IDS(71, 68, 75, 75, 334, 256));
        int32_t ids[8];
        int n = 0;
        CHECK(sdfed_tokenize(&t, "Hello!", 6, 8, ids, &n, &err) == SDFED_OK && n == 8 && ids[0] == 517 &&
                  ids[6] == 256 && ids[7] == 518,
              "custom tokenize");
        CHECK(sdfed_tokenize(&t, "ab aba abb", 10, 8, ids, &n, &err) == SDFED_OK && n == 8 && ids[6] == 321 &&
                  ids[7] == 518,
              "custom tokenize, exactly full");
        /* long random words: the heap loop must keep CLIP's round order */
        uint32_t seed = 7;
        char word[300];
        int32_t many[300];
        for (int round = 0; round < 60; round++) {
            size_t len = 1 + (size_t)(round * 37 % 299);
            for (size_t i = 0; i < len; i++) {
                seed = seed * 1103515245u + 12345u;
                word[i] = "aab"[(seed >> 16) % 3];
            }
            encode_both(&t, word, len, many, 300, &n, &err);
        }
        sdfed_tokenizer_free(&t);
    }
    sdfed_bpe_vocab_free(&v);

    /* a vocabulary without the byte symbols: BPE results it cannot name */
    sdfed_str toks[] = {{"h", 1}, {"i</w>", 5}, {"<|endoftext|>", 13}, {"h</w>", 5}};
    sdfed_str mrg[] = {{"h i</w>", 7}};
    rc = sdfed_tokenizer_init(&t, toks, 4, mrg, 1, 2, 2, &err);
    CHECK(rc == SDFED_OK, "tiny init: %s", err.message);
    if (rc == SDFED_OK) {
        int32_t ids[4];
        int n = 0;
        rc = sdfed_tokenizer_encode(&t, "hi HI", 5, ids, 4, &n, &err);
        CHECK(rc == SDFED_ERR_NOT_FOUND && strstr(err.message, "'hi</w>'"), "missing token: %d %s", rc, err.message);
        rc = sdfed_tokenizer_encode(&t, "h<|endoftext|>", 14, ids, 4, &n, &err);
        CHECK(rc == SDFED_OK && n == 2 && ids[0] == 3 && ids[1] == 2, "tiny special: %d %s", rc, err.message);
        rc = sdfed_tokenizer_encode(&t, "<|startoftext|>", 15, ids, 4, &n, &err);
        CHECK(rc == SDFED_ERR_NOT_FOUND && strstr(err.message, "startoftext"), "missing special: %d %s", rc,
              err.message);
        sdfed_tokenizer_free(&t);
    }
}

static void test_bad_inputs(const char *vocab_text, size_t vocab_len) {
    sdfed_bpe_vocab v;
    sdfed_tokenizer t;
    sdfed_error err = {0};
    int rc = sdfed_bpe_vocab_from_clip_merges(vocab_text, vocab_len, 600000, &v, &err);
    CHECK(rc == SDFED_ERR_FORMAT && strstr(err.message, "merge lines"), "too few merges: %d %s", rc, err.message);
    const char short_text[] = "#version: 0.2\ni n\nt h\n";
    rc = sdfed_bpe_vocab_from_clip_merges(short_text, sizeof short_text - 1, 517, &v, &err);
    CHECK(rc == SDFED_ERR_FORMAT && strstr(err.message, "only 2 merge lines"), "too few merges: %d %s", rc,
          err.message);
    rc = sdfed_bpe_vocab_from_clip_merges(short_text, sizeof short_text - 1, 513, &v, &err);
    CHECK(rc == SDFED_ERR_ARG, "vocab_size 513: %d %s", rc, err.message);
    const char *bad[] = {"#version: 0.2\ni n\nthe\n", "#version: 0.2\ni n\nt  h\n", "#version: 0.2\ni n\n t\n",
                         "#version: 0.2\ni n\na b c\n", "#version: 0.2\ni n\n\nt h\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rc = sdfed_bpe_vocab_from_clip_merges(bad[i], strlen(bad[i]), 516, &v, &err);
        CHECK(rc == SDFED_ERR_FORMAT && strstr(err.message, "line 3"), "malformed line %zu: %d %s", i, rc, err.message);
    }
    const char no_header[] = "i n\nt h\n";
    rc = sdfed_bpe_vocab_from_clip_merges(no_header, sizeof no_header - 1, 515, &v, &err);
    CHECK(rc == SDFED_ERR_FORMAT && strstr(err.message, "#version"), "no header: %d %s", rc, err.message);
    rc = sdfed_bpe_vocab_from_clip_merges("", 0, 514, &v, &err);
    CHECK(rc == SDFED_ERR_FORMAT, "empty text: %d", rc);
    const char crlf[] = "#version: 0.2\r\ni n\r\n";
    rc = sdfed_bpe_vocab_from_clip_merges(crlf, sizeof crlf - 1, 515, &v, &err);
    CHECK(rc == SDFED_OK && strcmp(v.merges[0], "i n") == 0 && strcmp(v.tokens[512], "in") == 0, "CRLF: %s",
          err.message);
    sdfed_bpe_vocab_free(&v);

    sdfed_str toks[] = {{"a", 1}, {"b", 1}};
    sdfed_str mrg[] = {{"ab", 2}};
    rc = sdfed_tokenizer_init(&t, toks, 2, mrg, 1, 0, 1, &err);
    CHECK(rc == SDFED_ERR_FORMAT && strstr(err.message, "merge 0"), "malformed merge: %d %s", rc, err.message);
    rc = sdfed_tokenizer_init(&t, toks, 2, NULL, 0, 0, 2, &err);
    CHECK(rc == SDFED_ERR_ARG, "EOT id out of range: %d", rc);
    rc = sdfed_tokenizer_init(&t, toks, 0, NULL, 0, 0, 0, &err);
    CHECK(rc == SDFED_ERR_ARG, "no tokens: %d", rc);
    sdfed_tokenizer_free(&t); /* safe on a failed init */
    int n = 0;
    CHECK(sdfed_tokenizer_encode(&t, "a", 1, NULL, 0, &n, &err) == SDFED_ERR_ARG, "encode on a failed init");
}

/* Hostile and bulk inputs: a 1 MB word, a huge number run, the limits. */
static void test_limits(sdfed_tokenizer *t) {
    sdfed_error err = {0};
    size_t big = 1u << 20;
    char *text = malloc(SDFED_TOKENIZER_MAX_TEXT + 1);
    int32_t ids[CTX];
    int n = 0;
    memset(text, 'a', big);
    int rc = sdfed_tokenize(t, text, big, CTX, ids, &n, &err);
    CHECK(rc == SDFED_OK && n == CTX && ids[0] == SOT && ids[CTX - 1] == EOT, "1 MB of 'a': %d %s", rc, err.message);
    int total = 0;
    rc = sdfed_tokenizer_encode(t, text, big, NULL, 0, &total, &err);
    CHECK(rc == SDFED_OK && total > 1000, "count a 1 MB word: %d ids", total);
    /* 1 MB of '&', of digits, of invalid bytes */
    const char fill[] = {'&', '7', (char)0xff, (char)0xce};
    for (size_t f = 0; f < sizeof fill; f++) {
        memset(text, fill[f], big);
        rc = sdfed_tokenize(t, text, big, CTX, ids, &n, &err);
        CHECK(rc == SDFED_OK && n == CTX, "1 MB of 0x%02x: %d %s", (unsigned char)fill[f], rc, err.message);
    }
    rc = sdfed_tokenize(t, text, SDFED_TOKENIZER_MAX_TEXT + 1, CTX, ids, &n, &err);
    CHECK(rc == SDFED_ERR_ARG && n == 0 && ids[0] == 0, "over the text limit: %d", rc);
    free(text);

    /* long random words from a small alphabet: both merge loops agree */
    uint32_t seed = 12345;
    char word[2048];
    int32_t *many = malloc(sizeof(int32_t) * 4096);
    for (int round = 0; round < 40; round++) {
        size_t len = 20 + (size_t)(round * 47 % 1500);
        for (size_t i = 0; i < len; i++) {
            seed = seed * 1103515245u + 12345u;
            word[i] = "aaabnsert"[(seed >> 16) % 9];
        }
        encode_both(t, word, len, many, 4096, &n, &err);
    }
    free(many);

    /* 1,000 short class names */
    static const char *names[] = {"t-shirt/top", "trouser",    "pullover",    "dress",
                                  "coat",        "sandal",     "shirt",       "sneaker",
                                  "bag",         "ankle boot", "king protea", "bird-of-paradise flower"};
    int nn = (int)(sizeof names / sizeof names[0]);
    int ok = 1;
    for (int i = 0; i < 1000; i++) {
        char name[64];
        int len = snprintf(name, sizeof name, "a photo of a %s %d.", names[i % nn], i);
        ok = ok && sdfed_tokenize(t, name, (size_t)len, CTX, ids, &n, &err) == SDFED_OK;
    }
    CHECK(ok, "1000 class names: %s", err.message);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s bpe_simple_vocab_16e6.txt mini-vit.reference.safetensors\n", argv[0]);
        return 2;
    }
    size_t vocab_len = 0, st_len = 0;
    char *vocab_text = (char *)read_file(argv[1], &vocab_len);
    char *st_data = (char *)read_file(argv[2], &st_len);
    CHECK(vocab_text && st_data, "cannot read %s or %s", argv[1], argv[2]);
    if (!vocab_text || !st_data) return check_report("test_tokenizer");

    sdfed_error err = {0};
    sdfed_bpe_vocab v;
    sdfed_tokenizer t;
    sdfed_safetensors st;
    int rc = sdfed_bpe_vocab_from_clip_merges(vocab_text, vocab_len, 49408, &v, &err);
    CHECK(rc == SDFED_OK, "vocab: %s", err.message);
    if (rc == SDFED_OK) rc = sdfed_tokenizer_init_vocab(&t, &v, &err);
    CHECK(rc == SDFED_OK, "init: %s", err.message);
    int st_rc = sdfed_safetensors_open(&st, st_data, st_len, &err);
    CHECK(st_rc == SDFED_OK, "reference: %s", err.message);
    if (rc == SDFED_OK && st_rc == SDFED_OK) {
        test_vocab_layout(&v);
        check_reference(&t, &st, "vocab");
        test_gguf_round_trip(&v, &st);
        test_cleaning(&t);
        test_pretokenize(&t);
        test_tokenize(&t);
        test_limits(&t);
    }
    test_custom_vocab();
    test_bad_inputs(vocab_text, vocab_len);
    if (rc == SDFED_OK) {
        sdfed_tokenizer_free(&t);
        sdfed_bpe_vocab_free(&v);
    }
    if (st_rc == SDFED_OK) sdfed_safetensors_close(&st);
    free(vocab_text);
    free(st_data);
    return check_report("test_tokenizer");
}
