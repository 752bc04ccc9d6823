/* The CLIP BPE tokenizer (see tokenizer.h for the exact semantics), run on
 * text cleaned by text_clean.c. Reading order: pre-tokenisation with CLIP's
 * pattern, the BPE merge loop (a direct transcription of CLIP's and an
 * O(n log n) one checked against it), encode and tokenize, then building the
 * tables (init) from a vocabulary (bpe_vocab.c holds its layout) or a model
 * file. */
#include "text/tokenizer.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/unicode.h"
#include "text/bpe_vocab.h"
#include "text/text_clean.h"

#define NONE UINT32_MAX

/* ------------------------------------------------------ pre-tokenisation */

enum { PIECE_TEXT, PIECE_SOT, PIECE_EOT };

static int match_ascii(const uint32_t *s, size_t n, const char *lit) {
    size_t i = 0;
    for (; lit[i]; i++)
        if (i >= n || s[i] != (unsigned char)lit[i]) return 0;
    return 1;
}

/* The next match of CLIP's pattern at or after *pos, as [*start, *end);
 * returns 0 at the end of the text. */
static int next_piece(const uint32_t *s, size_t n, size_t *pos, size_t *start, size_t *end, int *kind) {
    size_t i = *pos;
    while (i < n && sdfed_char_class(s[i]) == SDFED_UC_SPACE) i++;
    if (i >= n) return 0;
    size_t j = i + 1;
    int cls = sdfed_char_class(s[i]);
    *kind = PIECE_TEXT;
    if (match_ascii(s + i, n - i, SDFED_CLIP_SOT_TEXT)) {
        j = i + sizeof SDFED_CLIP_SOT_TEXT - 1;
        *kind = PIECE_SOT;
    } else if (match_ascii(s + i, n - i, SDFED_CLIP_EOT_TEXT)) {
        j = i + sizeof SDFED_CLIP_EOT_TEXT - 1;
        *kind = PIECE_EOT;
    } else if (s[i] == '\'' && i + 1 < n &&
               (s[i + 1] == 's' || s[i + 1] == 't' || s[i + 1] == 'm' || s[i + 1] == 'd')) {
        j = i + 2;
    } else if (s[i] == '\'' && (match_ascii(s + i, n - i, "'re") || match_ascii(s + i, n - i, "'ve") ||
                                match_ascii(s + i, n - i, "'ll"))) {
        j = i + 3;
    } else if (cls == SDFED_UC_LETTER) {
        while (j < n && sdfed_char_class(s[j]) == SDFED_UC_LETTER) j++;
    } else if (cls == SDFED_UC_NUMBER) {
        /* one digit */
    } else {
        while (j < n && sdfed_char_class(s[j]) == SDFED_UC_OTHER) j++;
    }
    *start = i;
    *end = *pos = j;
    return 1;
}

/* ------------------------------------------------------------------- BPE */

struct sdfed_bpe_merge_slot {
    uint32_t left, right; /* symbols */
    uint32_t rank;        /* NONE: empty slot */
    uint32_t result;      /* symbol of left + right */
};

static uint32_t pair_hash(uint32_t a, uint32_t b) {
    uint64_t k = (uint64_t)a << 32 | b;
    k ^= k >> 31;
    k *= 0x7fb5d329728ea185ull;
    k ^= k >> 27;
    k *= 0x81dadef4bc2dd44dull;
    k ^= k >> 33;
    return (uint32_t)k;
}

static const sdfed_bpe_merge_slot *merge_find(const sdfed_tokenizer *t, uint32_t a, uint32_t b) {
    for (uint32_t h = pair_hash(a, b) & t->merge_mask;; h = (h + 1) & t->merge_mask) {
        const sdfed_bpe_merge_slot *s = &t->merges[h];
        if (s->rank == NONE) return NULL;
        if (s->left == a && s->right == b) return s;
    }
}

static uint32_t pair_rank(const sdfed_tokenizer *t, uint32_t a, uint32_t b) {
    const sdfed_bpe_merge_slot *s = merge_find(t, a, b);
    return s ? s->rank : NONE;
}

/* CLIP's loop as written: find the adjacent pair of lowest rank, merge all
 * its occurrences left to right, repeat. O(m^2); for short words. */
static size_t bpe_direct(const sdfed_tokenizer *t, uint32_t *sym, size_t m) {
    while (m > 1) {
        const sdfed_bpe_merge_slot *best = NULL;
        for (size_t i = 0; i + 1 < m; i++) {
            const sdfed_bpe_merge_slot *s = merge_find(t, sym[i], sym[i + 1]);
            if (s && (!best || s->rank < best->rank)) best = s;
        }
        if (!best) break;
        size_t w = 0;
        for (size_t i = 0; i < m; w++) {
            if (i + 1 < m && sym[i] == best->left && sym[i + 1] == best->right) {
                sym[w] = best->result;
                i += 2;
            } else {
                sym[w] = sym[i++];
            }
        }
        m = w;
    }
    return m;
}

/* The same result in O(m log m): symbols in a linked list, each position's
 * pair rank in an indexed min-heap ordered by (rank, position). A round takes
 * every entry of the lowest rank out of the heap first and then merges them
 * left to right, so pairs the round creates (never of the same rank) wait for
 * later rounds, exactly as in CLIP's loop. */
typedef struct bpe_heap {
    uint32_t *key;  /* [m] rank of the pair starting at each position, or NONE */
    uint32_t *heap; /* positions */
    uint32_t *slot; /* [m] index of each position in heap, or NONE */
    size_t n;
} bpe_heap;

static int heap_less(const bpe_heap *h, uint32_t a, uint32_t b) {
    return h->key[a] < h->key[b] || (h->key[a] == h->key[b] && a < b);
}

static void heap_place(bpe_heap *h, size_t i, uint32_t p) {
    h->heap[i] = p;
    h->slot[p] = (uint32_t)i;
}

static void heap_sift(bpe_heap *h, size_t i) {
    uint32_t p = h->heap[i];
    while (i > 0 && heap_less(h, p, h->heap[(i - 1) / 2])) {
        heap_place(h, i, h->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && heap_less(h, h->heap[c + 1], h->heap[c])) c++;
        if (!heap_less(h, h->heap[c], p)) break;
        heap_place(h, i, h->heap[c]);
        i = c;
    }
    heap_place(h, i, p);
}

static void heap_remove(bpe_heap *h, uint32_t p) {
    size_t i = h->slot[p];
    h->slot[p] = NONE;
    if (i == --h->n) return;
    heap_place(h, i, h->heap[h->n]);
    heap_sift(h, i);
}

/* Sets the pair rank of position p and its place in the heap. */
static void heap_set(bpe_heap *h, uint32_t p, uint32_t rank) {
    if (h->slot[p] != NONE) heap_remove(h, p);
    h->key[p] = rank;
    if (rank == NONE) return;
    heap_place(h, h->n++, p);
    heap_sift(h, h->n - 1);
}

typedef struct bpe_work {
    unsigned char *bytes; /* the word's UTF-8 */
    uint32_t *sym, *next, *prev, *key, *heap, *slot, *round;
    size_t cap;
} bpe_work;

static int work_reserve(bpe_work *w, size_t m) {
    if (m <= w->cap) return 1;
    size_t cap = w->cap ? w->cap : 64;
    while (cap < m) cap *= 2;
    if (cap > SIZE_MAX / (7 * sizeof(uint32_t) + 1)) return 0;
    uint32_t *block = malloc(cap * 7 * sizeof(uint32_t));
    unsigned char *bytes = malloc(cap);
    if (!block || !bytes) {
        free(block);
        free(bytes);
        return 0;
    }
    free(w->sym);
    free(w->bytes);
    w->bytes = bytes;
    w->sym = block;
    w->next = block + cap;
    w->prev = block + 2 * cap;
    w->key = block + 3 * cap;
    w->heap = block + 4 * cap;
    w->slot = block + 5 * cap;
    w->round = block + 6 * cap;
    w->cap = cap;
    return 1;
}

static size_t bpe_heap_merge(const sdfed_tokenizer *t, bpe_work *w, size_t m) {
    uint32_t *sym = w->sym, *next = w->next, *prev = w->prev, *round = w->round;
    bpe_heap h = {.key = w->key, .heap = w->heap, .slot = w->slot, .n = 0};
    for (size_t p = 0; p < m; p++) {
        next[p] = p + 1 < m ? (uint32_t)(p + 1) : NONE;
        prev[p] = p > 0 ? (uint32_t)(p - 1) : NONE;
        h.slot[p] = NONE;
        h.key[p] = NONE;
    }
    for (size_t p = 0; p + 1 < m; p++) heap_set(&h, (uint32_t)p, pair_rank(t, sym[p], sym[p + 1]));
    while (h.n > 0) {
        uint32_t rank = h.key[h.heap[0]];
        size_t n_round = 0;
        while (h.n > 0 && h.key[h.heap[0]] == rank) {
            round[n_round++] = h.heap[0];
            heap_remove(&h, h.heap[0]);
        }
        for (size_t i = 0; i < n_round; i++) {
            uint32_t p = round[i], q = next[p];
            if (sym[p] == NONE || q == NONE) continue; /* merged away by an earlier merge of this round */
            const sdfed_bpe_merge_slot *s = merge_find(t, sym[p], sym[q]);
            if (!s || s->rank != rank) continue;
            sym[p] = s->result;
            sym[q] = NONE;
            heap_set(&h, q, NONE);
            next[p] = next[q];
            if (next[p] != NONE) prev[next[p]] = p;
            heap_set(&h, p, next[p] != NONE ? pair_rank(t, sym[p], sym[next[p]]) : NONE);
            if (prev[p] != NONE) heap_set(&h, prev[p], pair_rank(t, sym[prev[p]], sym[p]));
        }
    }
    size_t k = 0; /* position 0 always survives: merges keep the left position */
    for (uint32_t p = 0; p != NONE; p = next[p]) sym[k++] = sym[p];
    return k;
}

/* ------------------------------------------------------ encode, tokenize */

typedef struct encode_out {
    int32_t *ids; /* NULL: only count */
    int cap, n;
    int stop_when_full; /* tokenize: stop once cap ids are there */
    int overflow;       /* encode: a (cap+1)-th id came */
} encode_out;

/* Appends one id; returns 1 when encoding should stop. */
static int emit(encode_out *o, int32_t id) {
    if (!o->ids) {
        o->n++;
        return 0;
    }
    if (o->n == o->cap) {
        o->overflow = 1;
        return 1;
    }
    o->ids[o->n++] = id;
    return o->stop_when_full && o->n == o->cap;
}

static int symbol_error(const sdfed_tokenizer *t, uint32_t sym, sdfed_error *err) {
    const char *s = t->strings + t->sym_offset[sym];
    int len = (int)(t->sym_offset[sym + 1] - t->sym_offset[sym] - 1);
    return sdfed_fail(err, SDFED_ERR_NOT_FOUND, "tokenizer: BPE result '%.*s' is not in the vocabulary",
                      len > 64 ? 64 : len, s);
}

/* BPE of the m bytes in w->bytes; emits the ids. *stop = 1 if the output is full. */
static int encode_word(const sdfed_tokenizer *t, bpe_work *w, size_t m, encode_out *o, int *stop, sdfed_error *err) {
    for (size_t i = 0; i < m; i++) w->sym[i] = t->byte_sym[w->bytes[i]];
    w->sym[m - 1] = t->byte_end_sym[w->bytes[m - 1]];
    if (t->heap_min_symbols >= 0 && m >= (size_t)t->heap_min_symbols)
        m = bpe_heap_merge(t, w, m);
    else
        m = bpe_direct(t, w->sym, m);
    for (size_t i = 0; i < m; i++) {
        int32_t id = t->sym_token[w->sym[i]];
        if (id < 0) return symbol_error(t, w->sym[i], err);
        if (emit(o, id)) {
            *stop = 1;
            break;
        }
    }
    return SDFED_OK;
}

static int encode_text(const sdfed_tokenizer *t, const char *text, size_t len, encode_out *o, sdfed_error *err) {
    if (!t || !t->merges) return sdfed_fail(err, SDFED_ERR_ARG, "tokenizer: not initialised");
    if (!text && len) return sdfed_fail(err, SDFED_ERR_ARG, "tokenizer: text is NULL");
    if (len > SDFED_TOKENIZER_MAX_TEXT)
        return sdfed_fail(err, SDFED_ERR_ARG, "tokenizer: text of %zu bytes is longer than the limit of %u", len,
                          SDFED_TOKENIZER_MAX_TEXT);
    uint32_t *s = NULL;
    size_t n = 0;
    int rc = sdfed_clean_text(text, len, &s, &n, err);
    if (rc) return rc;
    bpe_work w = {0};
    size_t pos = 0, start, end;
    int kind, stop = 0;
    while (!rc && !stop && next_piece(s, n, &pos, &start, &end, &kind)) {
        if (kind != PIECE_TEXT) {
            int32_t id = kind == PIECE_SOT ? t->sot_text_id : t->eot_text_id;
            if (id < 0)
                rc = sdfed_fail(err, SDFED_ERR_NOT_FOUND, "tokenizer: '%s' is not in the vocabulary",
                                kind == PIECE_SOT ? SDFED_CLIP_SOT_TEXT : SDFED_CLIP_EOT_TEXT);
            else
                stop = emit(o, id);
            continue;
        }
        size_t m = 0;
        for (size_t i = start; i < end; i++) m += sdfed_utf8_len(s[i]);
        if (!work_reserve(&w, m)) {
            rc = sdfed_fail(err, SDFED_ERR_NOMEM, "tokenizer: out of memory for a word of %zu bytes", m);
            break;
        }
        m = 0;
        for (size_t i = start; i < end; i++) m += sdfed_utf8_put(w.bytes + m, s[i]);
        rc = encode_word(t, &w, m, o, &stop, err);
    }
    free(s);
    free(w.sym);
    free(w.bytes);
    return rc;
}

int sdfed_tokenizer_encode(const sdfed_tokenizer *t, const char *text, size_t len, int32_t *ids, int cap, int *n_ids,
                           sdfed_error *err) {
    if (!n_ids) return sdfed_fail(err, SDFED_ERR_ARG, "tokenizer: n_ids is NULL");
    *n_ids = 0;
    if (ids && cap < 0) return sdfed_fail(err, SDFED_ERR_ARG, "tokenizer: negative capacity %d", cap);
    encode_out o = {.ids = ids, .cap = cap, .n = 0, .stop_when_full = 0, .overflow = 0};
    int rc = encode_text(t, text, len, &o, err);
    *n_ids = o.n;
    if (rc) return rc;
    if (o.overflow) return sdfed_fail(err, SDFED_ERR_ARG, "tokenizer: the text needs more than %d ids", cap);
    return SDFED_OK;
}

int sdfed_tokenize(const sdfed_tokenizer *t, const char *text, size_t len, int context_length, int32_t *ids, int *n_ids,
                   sdfed_error *err) {
    if (!n_ids || !ids) return sdfed_fail(err, SDFED_ERR_ARG, "tokenizer: ids or n_ids is NULL");
    *n_ids = 0;
    if (context_length < 2)
        return sdfed_fail(err, SDFED_ERR_ARG, "tokenizer: context length %d cannot hold SOT and EOT", context_length);
    memset(ids, 0, sizeof(int32_t) * (size_t)context_length);
    encode_out o = {.ids = ids + 1, .cap = context_length - 1, .n = 0, .stop_when_full = 1, .overflow = 0};
    int rc = encode_text(t, text, len, &o, err);
    if (rc) {
        memset(ids, 0, sizeof(int32_t) * (size_t)context_length);
        return rc;
    }
    ids[0] = t->sot_id;
    if (o.n >= context_length - 1) { /* too long: the last kept id becomes EOT */
        ids[context_length - 1] = t->eot_id;
        *n_ids = context_length;
    } else {
        ids[1 + o.n] = t->eot_id;
        *n_ids = o.n + 2;
    }
    return SDFED_OK;
}

const char *sdfed_tokenizer_token(const sdfed_tokenizer *t, int id, size_t *len) {
    if (!t || !t->token_sym || id < 0 || id >= t->n_tokens) {
        if (len) *len = 0;
        return NULL;
    }
    uint32_t s = t->token_sym[id];
    if (len) *len = t->sym_offset[s + 1] - t->sym_offset[s] - 1;
    return t->strings + t->sym_offset[s];
}

/* ------------------------------------------------------------------ init */

typedef struct interner {
    sdfed_tokenizer *t;
    size_t used, cap; /* bytes of t->strings */
    uint32_t max_syms;
    uint32_t *table; /* symbol ids, NONE = empty */
    uint32_t mask;
} interner;

static uint32_t string_hash(const char *a, size_t alen, const char *b, size_t blen) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < alen; i++) h = (h ^ (unsigned char)a[i]) * 16777619u;
    for (size_t i = 0; i < blen; i++) h = (h ^ (unsigned char)b[i]) * 16777619u;
    return h;
}

/* Symbol of the string a + b, added if new; NONE only if the caller's size
 * bounds were wrong (cannot happen). find_only: NONE when absent. */
static uint32_t intern(interner *in, const char *a, size_t alen, const char *b, size_t blen, int find_only) {
    sdfed_tokenizer *t = in->t;
    uint32_t h = string_hash(a, alen, b, blen) & in->mask;
    for (;; h = (h + 1) & in->mask) {
        uint32_t s = in->table[h];
        if (s == NONE) break;
        const char *str = t->strings + t->sym_offset[s];
        size_t len = t->sym_offset[s + 1] - t->sym_offset[s] - 1;
        if (len == alen + blen && (alen == 0 || memcmp(str, a, alen) == 0) &&
            (blen == 0 || memcmp(str + alen, b, blen) == 0))
            return s;
    }
    if (find_only || t->n_symbols >= in->max_syms || in->used + alen + blen + 1 > in->cap) return NONE;
    uint32_t s = t->n_symbols++;
    char *dst = t->strings + in->used;
    if (alen) memcpy(dst, a, alen);
    if (blen) memcpy(dst + alen, b, blen);
    dst[alen + blen] = '\0';
    in->used += alen + blen + 1;
    t->sym_offset[s + 1] = (uint32_t)in->used;
    t->sym_token[s] = -1;
    in->table[h] = s;
    return s;
}

void sdfed_tokenizer_free(sdfed_tokenizer *t) {
    if (!t) return;
    free(t->strings);
    free(t->sym_offset);
    free(t->sym_token);
    free(t->token_sym);
    free(t->merges);
    memset(t, 0, sizeof *t);
}

int sdfed_tokenizer_init(sdfed_tokenizer *t, const sdfed_str *tokens, int n_tokens, const sdfed_str *merges,
                         int n_merges, int sot_id, int eot_id, sdfed_error *err) {
    if (!t) return sdfed_fail(err, SDFED_ERR_ARG, "tokenizer: NULL tokenizer");
    memset(t, 0, sizeof *t);
    if (n_tokens < 1 || n_tokens > SDFED_TOKENIZER_MAX_VOCAB || !tokens)
        return sdfed_fail(err, SDFED_ERR_ARG, "tokenizer: %d tokens (need 1 to %d)", n_tokens,
                          SDFED_TOKENIZER_MAX_VOCAB);
    if (n_merges < 0 || n_merges > SDFED_TOKENIZER_MAX_VOCAB || (n_merges > 0 && !merges))
        return sdfed_fail(err, SDFED_ERR_ARG, "tokenizer: %d merges (need 0 to %d)", n_merges,
                          SDFED_TOKENIZER_MAX_VOCAB);
    if (sot_id < 0 || sot_id >= n_tokens || eot_id < 0 || eot_id >= n_tokens)
        return sdfed_fail(err, SDFED_ERR_ARG, "tokenizer: SOT id %d / EOT id %d outside the %d tokens", sot_id, eot_id,
                          n_tokens);

    /* room for every string: tokens, merge halves and results, byte symbols */
    uint64_t bytes = 512 * 8;
    for (int i = 0; i < n_tokens; i++) {
        if (!tokens[i].ptr && tokens[i].len) return sdfed_fail(err, SDFED_ERR_ARG, "tokenizer: token %d is NULL", i);
        bytes += (uint64_t)tokens[i].len + 1;
        if (bytes > UINT32_MAX / 2) return sdfed_fail(err, SDFED_ERR_ARG, "tokenizer: the vocabulary is too large");
    }
    for (int i = 0; i < n_merges; i++) {
        int shown = 0; /* of the merge, in the message: at most 64 bytes */
        if (merges[i].ptr) shown = merges[i].len > 64 ? 64 : (int)merges[i].len;
        if (!merges[i].ptr || sdfed_bpe_merge_split(merges[i].ptr, merges[i].len) == 0)
            return sdfed_fail(err, SDFED_ERR_FORMAT,
                              "tokenizer: merge %d ('%.*s') is not two symbols separated by one space", i, shown,
                              merges[i].ptr ? merges[i].ptr : "");
        bytes += 2 * (uint64_t)merges[i].len + 1;
        if (bytes > UINT32_MAX / 2) return sdfed_fail(err, SDFED_ERR_ARG, "tokenizer: the merges are too large");
    }
    uint32_t max_syms = (uint32_t)n_tokens + 3 * (uint32_t)n_merges + 512;
    uint32_t table_size = 16;
    while (table_size < 2 * max_syms) table_size *= 2;
    uint32_t merge_size = 16;
    while (merge_size < 2 * (uint32_t)n_merges) merge_size *= 2;

    interner in = {
        .t = t, .used = 0, .cap = (size_t)bytes, .max_syms = max_syms, .table = NULL, .mask = table_size - 1};
    t->n_tokens = n_tokens;
    t->n_merges = n_merges;
    t->sot_id = sot_id;
    t->eot_id = eot_id;
    t->heap_min_symbols = 24;
    t->strings = malloc((size_t)bytes);
    t->sym_offset = malloc(sizeof(uint32_t) * ((size_t)max_syms + 1));
    t->sym_token = malloc(sizeof(int32_t) * (size_t)max_syms);
    t->token_sym = malloc(sizeof(uint32_t) * (size_t)n_tokens);
    t->merges = malloc(sizeof(sdfed_bpe_merge_slot) * (size_t)merge_size);
    in.table = malloc(sizeof(uint32_t) * (size_t)table_size);
    if (!t->strings || !t->sym_offset || !t->sym_token || !t->token_sym || !t->merges || !in.table) {
        free(in.table);
        sdfed_tokenizer_free(t);
        return sdfed_fail(err, SDFED_ERR_NOMEM, "tokenizer: out of memory for %d tokens", n_tokens);
    }
    memset(in.table, 0xff, sizeof(uint32_t) * (size_t)table_size);
    t->sym_offset[0] = 0;

    /* tokens; a repeated string keeps the later id, like CLIP's dict */
    int sized = 1; /* the bounds above hold every string; checked anyway */
    for (int i = 0; i < n_tokens && sized; i++) {
        uint32_t s = intern(&in, tokens[i].ptr, tokens[i].len, NULL, 0, 0);
        sized = s != NONE;
        if (sized) {
            t->token_sym[i] = s;
            t->sym_token[s] = i;
        }
    }
    uint32_t cp[256];
    uint8_t order[256];
    sdfed_bytes_to_unicode(cp, order);
    for (int b = 0; b < 256; b++) {
        unsigned char u[4];
        size_t n = sdfed_utf8_put(u, cp[b]);
        t->byte_sym[b] = intern(&in, (const char *)u, n, NULL, 0, 0);
        t->byte_end_sym[b] = intern(&in, (const char *)u, n, "</w>", 4, 0);
        sized = sized && t->byte_sym[b] != NONE && t->byte_end_sym[b] != NONE;
    }

    /* merges; a repeated pair keeps the later rank, like CLIP's dict */
    t->merge_mask = merge_size - 1;
    for (uint32_t i = 0; i < merge_size; i++) t->merges[i].rank = NONE;
    for (int i = 0; i < n_merges && sized; i++) {
        const char *s = merges[i].ptr;
        size_t left_len = sdfed_bpe_merge_split(s, merges[i].len), right_len = merges[i].len - left_len - 1;
        uint32_t a = intern(&in, s, left_len, NULL, 0, 0);
        uint32_t b = intern(&in, s + left_len + 1, right_len, NULL, 0, 0);
        uint32_t r = intern(&in, s, left_len, s + left_len + 1, right_len, 0);
        if (a == NONE || b == NONE || r == NONE) {
            sized = 0;
            break;
        }
        uint32_t h = pair_hash(a, b) & t->merge_mask;
        while (t->merges[h].rank != NONE && !(t->merges[h].left == a && t->merges[h].right == b))
            h = (h + 1) & t->merge_mask;
        sdfed_bpe_merge_slot slot = {.left = a, .right = b, .rank = (uint32_t)i, .result = r};
        t->merges[h] = slot;
    }

    if (!sized) {
        free(in.table);
        sdfed_tokenizer_free(t);
        return sdfed_fail(err, SDFED_ERR_NOMEM, "tokenizer: internal string table overflow");
    }
    uint32_t s = intern(&in, SDFED_CLIP_SOT_TEXT, sizeof SDFED_CLIP_SOT_TEXT - 1, NULL, 0, 1);
    t->sot_text_id = s == NONE ? -1 : t->sym_token[s];
    s = intern(&in, SDFED_CLIP_EOT_TEXT, sizeof SDFED_CLIP_EOT_TEXT - 1, NULL, 0, 1);
    t->eot_text_id = s == NONE ? -1 : t->sym_token[s];
    free(in.table);
    return SDFED_OK;
}

int sdfed_tokenizer_init_vocab(sdfed_tokenizer *t, const sdfed_bpe_vocab *v, sdfed_error *err) {
    if (!t || !v || v->n_tokens < 1 || !v->tokens || v->n_merges < 0 || (v->n_merges > 0 && !v->merges))
        return sdfed_fail(err, SDFED_ERR_ARG, "tokenizer: empty vocabulary");
    sdfed_str *strs = malloc(sizeof(sdfed_str) * ((size_t)v->n_tokens + (size_t)v->n_merges));
    if (!strs) return sdfed_fail(err, SDFED_ERR_NOMEM, "tokenizer: out of memory");
    for (int i = 0; i < v->n_tokens; i++) {
        strs[i].ptr = v->tokens[i];
        strs[i].len = strlen(v->tokens[i]);
    }
    for (int i = 0; i < v->n_merges; i++) {
        strs[v->n_tokens + i].ptr = v->merges[i];
        strs[v->n_tokens + i].len = strlen(v->merges[i]);
    }
    int rc = sdfed_tokenizer_init(t, strs, v->n_tokens, strs + v->n_tokens, v->n_merges, v->sot_id, v->eot_id, err);
    free(strs);
    return rc;
}

/* ------------------------------------------------------------ model file */

static int gguf_strings(const sdfed_gguf *g, const char *key, sdfed_str **out, int *n, sdfed_error *err) {
    const sdfed_gguf_kv *kv;
    int rc = sdfed_gguf_get_array(g, key, SDFED_GGUF_STRING, &kv, err);
    if (rc) return rc;
    if (kv->count > (uint64_t)SDFED_TOKENIZER_MAX_VOCAB)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "gguf: '%s' holds %llu strings, more than %d", key,
                          (unsigned long long)kv->count, SDFED_TOKENIZER_MAX_VOCAB);
    *n = (int)kv->count;
    *out = malloc(sizeof(sdfed_str) * (kv->count ? (size_t)kv->count : 1));
    if (!*out) return sdfed_fail(err, SDFED_ERR_NOMEM, "gguf: out of memory for '%s'", key);
    sdfed_gguf_str_iter it = sdfed_gguf_str_iter_begin(kv);
    for (int i = 0; i < *n; i++) sdfed_gguf_str_iter_next(&it, &(*out)[i]);
    return SDFED_OK;
}

int sdfed_tokenizer_init_gguf(sdfed_tokenizer *t, const sdfed_gguf *g, sdfed_error *err) {
    if (!t || !g) return sdfed_fail(err, SDFED_ERR_ARG, "tokenizer: NULL argument");
    memset(t, 0, sizeof *t);
    sdfed_str *tokens = NULL, *merges = NULL;
    int n_tokens = 0, n_merges = 0;
    uint32_t sot = 0, eot = 0;
    int rc = gguf_strings(g, "tokenizer.ggml.tokens", &tokens, &n_tokens, err);
    if (!rc) rc = gguf_strings(g, "tokenizer.ggml.merges", &merges, &n_merges, err);
    if (!rc) rc = sdfed_gguf_get_u32(g, "tokenizer.ggml.bos_token_id", &sot, err);
    if (!rc) rc = sdfed_gguf_get_u32(g, "tokenizer.ggml.eos_token_id", &eot, err);
    if (!rc && (sot > INT_MAX || eot > INT_MAX)) rc = sdfed_fail(err, SDFED_ERR_FORMAT, "gguf: SOT/EOT id too large");
    if (!rc) rc = sdfed_tokenizer_init(t, tokens, n_tokens, merges, n_merges, (int)sot, (int)eot, err);
    free(tokens);
    free(merges);
    if (rc) return sdfed_fail_context(err, rc, "tokenizer from the model file");
    return SDFED_OK;
}
