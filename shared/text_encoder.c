/* Text tower forward: plan the rows (shared prefix + per-sequence tails),
 * embed, run the blocks, read each sequence's EOT row. */
#include "text_encoder.h"

#include <math.h>
#include <string.h>

#include "dtype.h"
#include "transformer.h"

int sdfed_text_eot(const int32_t *ids, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (ids[i] > ids[best]) best = i;
    return best;
}

/* Row layout of a batch: rows [0, prefix) are positions shared by every
 * sequence; sequence s then owns rows [first[s], first[s] + eot[s] - prefix],
 * i.e. positions prefix..eot[s]. */
typedef struct text_plan {
    int prefix, N;
    int *eot, *first;
    sdfed_attn_span *spans;
    int n_spans;
} text_plan;

static int is_spliced(const sdfed_text_batch *b, int pos, int *which) {
    for (int j = 0; j < b->n_splice; j++)
        if (b->splice_pos[j] == pos) {
            *which = j;
            return 1;
        }
    return 0;
}

static int validate(const sdfed_clip_model *m, const sdfed_text_batch *b, sdfed_error *err) {
    const sdfed_clip_config *c = &m->cfg;
    if (b->n_seqs < 1 || b->stride < 1 || !b->ids || (b->n_splice > 0 && (!b->splice || !b->splice_pos)) ||
        b->n_splice < 0)
        return sdfed_fail(err, SDFED_ERR_ARG, "text: empty or inconsistent batch");
    for (int s = 0; s < b->n_seqs; s++) {
        const int32_t *ids = b->ids + (size_t)s * b->stride;
        int eot = sdfed_text_eot(ids, b->stride);
        if (eot + 1 > c->context_length)
            return sdfed_fail(err, SDFED_ERR_ARG, "text: sequence %d ends at position %d, beyond the context of %d", s,
                              eot, c->context_length);
        for (int p = 0; p <= eot; p++)
            if (ids[p] < 0 || ids[p] >= c->vocab_size)
                return sdfed_fail(err, SDFED_ERR_ARG, "text: token id %d at position %d is outside the vocabulary",
                                  ids[p], p);
        for (int j = 0; j < b->n_splice; j++)
            if (b->splice_pos[j] < 0 || b->splice_pos[j] >= eot)
                return sdfed_fail(err, SDFED_ERR_ARG, "text: prompt slot %d is not before the EOT of sequence %d",
                                  b->splice_pos[j], s);
    }
    for (size_t i = 0; i < (size_t)b->n_splice * c->text_width; i++)
        if (!isfinite(b->splice[i])) return sdfed_fail(err, SDFED_ERR_NUMERIC, "text: prompt vector holds NaN or Inf");
    return SDFED_OK;
}

static int plan_rows(const sdfed_text_batch *b, text_plan *p, sdfed_arena *arena, sdfed_error *err) {
    p->eot = sdfed_arena_alloc(arena, sizeof(int) * (size_t)b->n_seqs);
    p->first = sdfed_arena_alloc(arena, sizeof(int) * (size_t)b->n_seqs);
    p->spans = sdfed_arena_alloc(arena, sizeof *p->spans * (size_t)(b->n_seqs + 1));
    if (!p->eot || !p->first || !p->spans) return sdfed_fail(err, SDFED_ERR_NOMEM, "text: out of memory");
    int min_eot = b->stride;
    for (int s = 0; s < b->n_seqs; s++) {
        p->eot[s] = sdfed_text_eot(b->ids + (size_t)s * b->stride, b->stride);
        if (p->eot[s] < min_eot) min_eot = p->eot[s];
    }
    /* longest common prefix, stopping before any EOT so every sequence keeps
     * at least its EOT row; spliced positions are shared by construction */
    int prefix = 0, which;
    while (prefix < min_eot) {
        int same = 1;
        if (!is_spliced(b, prefix, &which))
            for (int s = 1; s < b->n_seqs && same; s++) same = b->ids[(size_t)s * b->stride + prefix] == b->ids[prefix];
        if (!same) break;
        prefix++;
    }
    p->prefix = prefix;
    p->n_spans = 0;
    if (prefix > 0) p->spans[p->n_spans++] = (sdfed_attn_span){0, prefix, 0, 0};
    int row = prefix;
    for (int s = 0; s < b->n_seqs; s++) {
        p->first[s] = row;
        int own = p->eot[s] - prefix + 1;
        p->spans[p->n_spans++] = (sdfed_attn_span){row, own, 0, prefix};
        row += own;
    }
    p->N = row;
    return SDFED_OK;
}

/* x row = token (or spliced) embedding at `pos` + positional embedding. */
static void embed_row(const sdfed_clip_model *m, const sdfed_text_batch *b, int32_t id, int pos, float *x) {
    int W = m->cfg.text_width, which;
    if (is_spliced(b, pos, &which)) {
        memcpy(x, b->splice + (size_t)which * W, sizeof(float) * (size_t)W);
    } else {
        size_t row_bytes = sdfed_type_row_bytes(m->token_embd.type, (uint64_t)W);
        sdfed_row_to_f32(m->token_embd.type, x, (const char *)m->token_embd.data + (size_t)id * row_bytes, W);
    }
    const float *pe = m->text_pos + (size_t)pos * W;
    for (int c = 0; c < W; c++) x[c] += pe[c];
}

int sdfed_text_encode(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_text_batch *batch, float *features,
                      sdfed_arena *arena, sdfed_error *err) {
    int rc = validate(m, batch, err);
    if (rc) return rc;
    text_plan p = {0};
    if ((rc = plan_rows(batch, &p, arena, err))) return rc;
    int W = m->cfg.text_width;
    float *x = sdfed_arena_floats(arena, (size_t)p.N * W);
    if (!x) return sdfed_fail(err, SDFED_ERR_NOMEM, "text: out of memory");
    for (int pos = 0; pos < p.prefix; pos++) embed_row(m, batch, batch->ids[pos], pos, x + (size_t)pos * W);
    for (int s = 0; s < batch->n_seqs; s++) {
        const int32_t *ids = batch->ids + (size_t)s * batch->stride;
        for (int pos = p.prefix; pos <= p.eot[s]; pos++)
            embed_row(m, batch, ids[pos], pos, x + (size_t)(p.first[s] + pos - p.prefix) * W);
    }

    sdfed_transformer t = {m->text_blocks,
                           m->cfg.text_layers,
                           W,
                           m->cfg.text_heads,
                           m->cfg.activation,
                           1,
                           m->cfg.layer_norm_eps,
                           p.spans,
                           p.n_spans,
                           p.N,
                           NULL,
                           NULL};
    if ((rc = sdfed_transformer_forward(k, &t, x, 0, arena, err))) return rc;

    /* the feature is ln_final(x[eot]) projected */
    float *eot_rows = sdfed_arena_floats(arena, (size_t)batch->n_seqs * W);
    float *scratch = sdfed_arena_floats(arena, sdfed_kernel_scratch_floats(W));
    if (!eot_rows || !scratch) return sdfed_fail(err, SDFED_ERR_NOMEM, "text: out of memory");
    for (int s = 0; s < batch->n_seqs; s++) {
        const float *last = x + (size_t)(p.first[s] + p.eot[s] - p.prefix) * W;
        sdfed_layernorm_forward(eot_rows + (size_t)s * W, NULL, NULL, last, m->ln_final_w, m->ln_final_b, 1, W,
                                m->cfg.layer_norm_eps);
    }
    k->linear(features, eot_rows, &m->text_proj, NULL, batch->n_seqs, scratch);
    return SDFED_OK;
}
