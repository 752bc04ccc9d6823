/* Text tower forward and backward: plan the rows (shared prefix + tails per
 * sequence), embed, run the blocks, read each sequence's EOT row; backward
 * from the features to the spliced prompt vectors. */
#include "text_encoder.h"

#include <math.h>
#include <string.h>

#include "dtype.h"

int sdfed_text_eot(const int32_t *ids, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (ids[i] > ids[best]) best = i;
    return best;
}

/* Index of the spliced vector at `pos`, or -1. */
static int splice_at(const sdfed_text_batch *b, int pos) {
    for (int j = 0; j < b->n_splice; j++)
        if (b->splice_pos[j] == pos) return j;
    return -1;
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
    for (int j = 0; j < b->n_splice; j++)
        if (splice_at(b, b->splice_pos[j]) != j)
            return sdfed_fail(err, SDFED_ERR_ARG, "text: two prompt vectors for position %d", b->splice_pos[j]);
    for (size_t i = 0; i < (size_t)b->n_splice * c->text_width; i++)
        if (!isfinite(b->splice[i])) return sdfed_fail(err, SDFED_ERR_NUMERIC, "text: prompt vector holds NaN or Inf");
    return SDFED_OK;
}

static int plan_rows(const sdfed_text_batch *b, sdfed_text_pass *p, sdfed_arena *arena, sdfed_error *err) {
    p->batch = b;
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
    int prefix = 0;
    while (prefix < min_eot) {
        int same = 1;
        if (splice_at(b, prefix) < 0)
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

/* Row of position `pos` of sequence s. */
static int row_of(const sdfed_text_pass *p, int s, int pos) {
    return pos < p->prefix ? pos : p->first[s] + pos - p->prefix;
}

/* x row = token (or spliced) embedding at `pos` + positional embedding. */
static void embed_row(const sdfed_clip_model *m, const sdfed_text_batch *b, int32_t id, int pos, float *x) {
    int W = m->cfg.text_width, j = splice_at(b, pos);
    if (j >= 0) {
        memcpy(x, b->splice + (size_t)j * W, sizeof(float) * (size_t)W);
    } else {
        size_t row_bytes = sdfed_type_row_bytes(m->token_embd.type, (uint64_t)W);
        sdfed_row_to_f32(m->token_embd.type, x, (const char *)m->token_embd.data + (size_t)id * row_bytes, W);
    }
    const float *pe = m->text_pos + (size_t)pos * W;
    for (int c = 0; c < W; c++) x[c] += pe[c];
}

static int forward(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_text_batch *batch, float *features,
                   sdfed_text_pass *p, int keep, sdfed_arena *arena, sdfed_error *err) {
    int rc = validate(m, batch, err);
    if (rc || (rc = plan_rows(batch, p, arena, err))) return rc;
    int W = m->cfg.text_width, n = batch->n_seqs;
    float *x = sdfed_arena_floats(arena, (size_t)p->N * W);
    p->eot_rows = sdfed_arena_floats(arena, (size_t)n * W);
    p->lnf_mean = sdfed_arena_floats(arena, (size_t)n);
    p->lnf_rstd = sdfed_arena_floats(arena, (size_t)n);
    float *normed = sdfed_arena_floats(arena, (size_t)n * W);
    float *scratch = sdfed_arena_floats(arena, sdfed_kernel_scratch_floats(W));
    if (!x || !p->eot_rows || !p->lnf_mean || !p->lnf_rstd || !normed || !scratch)
        return sdfed_fail(err, SDFED_ERR_NOMEM, "text: out of memory");
    for (int s = 0; s < n; s++) {
        const int32_t *ids = batch->ids + (size_t)s * batch->stride;
        for (int pos = s == 0 ? 0 : p->prefix; pos <= p->eot[s]; pos++)
            embed_row(m, batch, ids[pos], pos, x + (size_t)row_of(p, s, pos) * W);
    }

    p->blocks = (sdfed_transformer){m->text_blocks,
                                    m->cfg.text_layers,
                                    W,
                                    m->cfg.text_heads,
                                    m->cfg.activation,
                                    1,
                                    m->cfg.layer_norm_eps,
                                    p->spans,
                                    p->n_spans,
                                    p->N,
                                    NULL,
                                    NULL};
    if ((rc = sdfed_transformer_forward(k, &p->blocks, x, keep, arena, err))) return rc;

    /* the feature is text_proj @ ln_final(x[eot]) */
    for (int s = 0; s < n; s++)
        memcpy(p->eot_rows + (size_t)s * W, x + (size_t)row_of(p, s, p->eot[s]) * W, sizeof(float) * (size_t)W);
    sdfed_layernorm_forward(normed, p->lnf_mean, p->lnf_rstd, p->eot_rows, m->ln_final_w, m->ln_final_b, n, W,
                            m->cfg.layer_norm_eps);
    k->linear(features, normed, &m->text_proj, NULL, n, scratch);
    return SDFED_OK;
}

int sdfed_text_encode(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_text_batch *batch, float *features,
                      sdfed_arena *arena, sdfed_error *err) {
    sdfed_text_pass pass;
    return forward(m, k, batch, features, &pass, 0, arena, err);
}

int sdfed_text_forward(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_text_batch *batch,
                       float *features, sdfed_text_pass *pass, sdfed_arena *arena, sdfed_error *err) {
    return forward(m, k, batch, features, pass, 1, arena, err);
}

int sdfed_text_backward(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_text_pass *p,
                        const float *d_features, float *d_splice, sdfed_arena *arena, sdfed_error *err) {
    const sdfed_text_batch *b = p->batch;
    int W = m->cfg.text_width, n = b->n_seqs;
    float *d_normed = sdfed_arena_floats(arena, (size_t)n * W);
    float *d_eot = sdfed_arena_floats(arena, (size_t)n * W);
    float *dx = sdfed_arena_floats(arena, (size_t)p->N * W);
    float *scratch = sdfed_arena_floats(arena, sdfed_kernel_scratch_floats(W));
    if (!d_normed || !d_eot || !dx || !scratch) return sdfed_fail(err, SDFED_ERR_NOMEM, "text: out of memory");
    memset(d_normed, 0, sizeof(float) * (size_t)n * W);
    memset(d_eot, 0, sizeof(float) * (size_t)n * W);
    memset(dx, 0, sizeof(float) * (size_t)p->N * W);
    k->linear_backward(d_normed, d_features, &m->text_proj, n, scratch);
    sdfed_layernorm_backward(d_eot, d_normed, p->eot_rows, m->ln_final_w, p->lnf_mean, p->lnf_rstd, n, W);
    for (int s = 0; s < n; s++) {
        float *row = dx + (size_t)row_of(p, s, p->eot[s]) * W;
        for (int c = 0; c < W; c++) row[c] += d_eot[(size_t)s * W + c];
    }
    int rc = sdfed_transformer_backward(k, &p->blocks, dx, arena, err);
    if (rc) return rc;
    /* a spliced vector feeds its row directly (the positional embedding is
     * added to it); a prefix row is shared, a later one belongs to each
     * sequence */
    for (int j = 0; j < b->n_splice; j++) {
        int pos = b->splice_pos[j];
        float *d = d_splice + (size_t)j * W;
        for (int s = 0; s < (pos < p->prefix ? 1 : n); s++) {
            const float *row = dx + (size_t)row_of(p, s, pos) * W;
            for (int c = 0; c < W; c++) d[c] += row[c];
        }
    }
    return SDFED_OK;
}
