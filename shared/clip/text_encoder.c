/* Text tower forward and backward: plan the rows (shared prefix + tails per
 * sequence), embed, run the blocks, read each sequence's EOT row; backward
 * from the features to the spliced prompt vectors. */
#include "clip/text_encoder.h"

#include <math.h>
#include <string.h>

#include "base/dtype.h"

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

/* Plans batch b's rows from row `base`, its spans from pass->n_spans and its
 * sequences from pass->n_seqs. */
static int plan_rows(const sdfed_text_batch *b, int base, sdfed_text_pass *pass, sdfed_text_plan *p, sdfed_arena *arena,
                     sdfed_error *err) {
    p->batch = b;
    p->base = base;
    p->eot = sdfed_arena_alloc(arena, sizeof(int) * (size_t)b->n_seqs);
    p->first = sdfed_arena_alloc(arena, sizeof(int) * (size_t)b->n_seqs);
    if (!p->eot || !p->first) return sdfed_fail(err, SDFED_ERR_NOMEM, "text: out of memory");
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
    p->span0 = pass->n_spans;
    p->seq0 = pass->n_seqs;
    if (prefix > 0) pass->spans[pass->n_spans++] = (sdfed_attn_span){.q0 = base, .nq = prefix, .c0 = 0, .nc = 0};
    int row = base + prefix;
    for (int s = 0; s < b->n_seqs; s++) {
        p->first[s] = row;
        int own = p->eot[s] - prefix + 1;
        pass->spans[pass->n_spans++] = (sdfed_attn_span){.q0 = row, .nq = own, .c0 = base, .nc = prefix};
        row += own;
    }
    p->n_spans = pass->n_spans - p->span0;
    p->N = row - base;
    pass->n_seqs += b->n_seqs;
    return SDFED_OK;
}

/* Row of position `pos` of sequence s. */
static int row_of(const sdfed_text_plan *p, int s, int pos) {
    return pos < p->prefix ? p->base + pos : p->first[s] + pos - p->prefix;
}

void sdfed_text_token_embedding(const sdfed_clip_model *m, int32_t id, float *out) {
    int W = m->cfg.text_width;
    size_t row_bytes = sdfed_type_row_bytes(m->token_embd.type, (uint64_t)W);
    sdfed_row_to_f32(m->token_embd.type, out, (const char *)m->token_embd.data + (size_t)id * row_bytes, W);
}

/* x row = token (or spliced) embedding at `pos` + positional embedding. */
static void embed_row(const sdfed_clip_model *m, const sdfed_text_batch *b, int32_t id, int pos, float *x) {
    int W = m->cfg.text_width, j = splice_at(b, pos);
    if (j >= 0)
        memcpy(x, b->splice + (size_t)j * W, sizeof(float) * (size_t)W);
    else
        sdfed_text_token_embedding(m, id, x);
    const float *pe = m->text_pos + (size_t)pos * W;
    for (int c = 0; c < W; c++) x[c] += pe[c];
}

static int forward(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_text_batch *batches, int n,
                   float *const *features, sdfed_text_pass *pass, int keep, sdfed_arena *arena, sdfed_error *err) {
    int W = m->cfg.text_width, rc = SDFED_OK, total_seqs = 0;
    if (n < 1) return sdfed_fail(err, SDFED_ERR_ARG, "text: no batch given");
    for (int b = 0; b < n && rc == SDFED_OK; b++) {
        rc = validate(m, &batches[b], err);
        total_seqs += batches[b].n_seqs;
    }
    if (rc) return rc;
    memset(pass, 0, sizeof *pass);
    pass->n_batches = n;
    pass->plans = sdfed_arena_alloc(arena, sizeof *pass->plans * (size_t)n);
    pass->spans = sdfed_arena_alloc(arena, sizeof *pass->spans * (size_t)(total_seqs + n));
    if (!pass->plans || !pass->spans) return sdfed_fail(err, SDFED_ERR_NOMEM, "text: out of memory");
    int N = 0;
    for (int b = 0; b < n; b++) {
        if ((rc = plan_rows(&batches[b], N, pass, &pass->plans[b], arena, err))) return rc;
        N += pass->plans[b].N;
    }
    float *x = sdfed_arena_floats(arena, (size_t)N * W);
    pass->eot_rows = sdfed_arena_floats(arena, (size_t)total_seqs * W);
    pass->lnf_mean = sdfed_arena_floats(arena, (size_t)total_seqs);
    pass->lnf_rstd = sdfed_arena_floats(arena, (size_t)total_seqs);
    float *normed = sdfed_arena_floats(arena, (size_t)total_seqs * W);
    float *scratch = sdfed_arena_floats(arena, sdfed_kernel_scratch_floats(k, W));
    if (!x || !pass->eot_rows || !pass->lnf_mean || !pass->lnf_rstd || !normed || !scratch)
        return sdfed_fail(err, SDFED_ERR_NOMEM, "text: out of memory");
    for (int b = 0; b < n; b++) {
        const sdfed_text_plan *p = &pass->plans[b];
        for (int s = 0; s < p->batch->n_seqs; s++) {
            const int32_t *ids = p->batch->ids + (size_t)s * p->batch->stride;
            for (int pos = s == 0 ? 0 : p->prefix; pos <= p->eot[s]; pos++)
                embed_row(m, p->batch, ids[pos], pos, x + (size_t)row_of(p, s, pos) * W);
        }
    }

    pass->blocks = (sdfed_transformer){.blocks = m->text_blocks,
                                       .n_layers = m->cfg.text_layers,
                                       .C = W,
                                       .heads = m->cfg.text_heads,
                                       .activation = m->cfg.activation,
                                       .causal = 1,
                                       .eps = m->cfg.layer_norm_eps,
                                       .spans = pass->spans,
                                       .n_spans = pass->n_spans,
                                       .N = N,
                                       .int8 = 0,
                                       .att_offset = NULL,
                                       .acts = NULL};
    if ((rc = sdfed_transformer_forward(k, &pass->blocks, x, keep, arena, err))) return rc;

    /* the feature is text_proj @ ln_final(x[eot]) */
    for (int b = 0; b < n; b++) {
        const sdfed_text_plan *p = &pass->plans[b];
        for (int s = 0; s < p->batch->n_seqs; s++)
            memcpy(pass->eot_rows + (size_t)(p->seq0 + s) * W, x + (size_t)row_of(p, s, p->eot[s]) * W,
                   sizeof(float) * (size_t)W);
    }
    sdfed_layernorm_forward(normed, pass->lnf_mean, pass->lnf_rstd, pass->eot_rows, m->ln_final_w, m->ln_final_b,
                            total_seqs, W, m->cfg.layer_norm_eps);
    for (int b = 0; b < n; b++)
        k->linear(features[b], normed + (size_t)pass->plans[b].seq0 * W, &m->text_proj, NULL, batches[b].n_seqs,
                  scratch);
    return SDFED_OK;
}

int sdfed_text_encode(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_text_batch *batch, float *features,
                      sdfed_arena *arena, sdfed_error *err) {
    sdfed_text_pass pass;
    return forward(m, k, batch, 1, &features, &pass, 0, arena, err);
}

int sdfed_text_forward(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_text_batch *batches, int n,
                       float *const *features, sdfed_text_pass *pass, sdfed_arena *arena, sdfed_error *err) {
    sdfed_text_pass local;
    return forward(m, k, batches, n, features, pass ? pass : &local, pass != NULL, arena, err);
}

int sdfed_text_backward(const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_text_pass *pass, int n_grad,
                        const float *const *d_features, float *const *d_splice, sdfed_arena *arena, sdfed_error *err) {
    if (n_grad < 1 || n_grad > pass->n_batches)
        return sdfed_fail(err, SDFED_ERR_ARG, "text: gradients for %d of %d batches", n_grad, pass->n_batches);
    const sdfed_text_plan *last = &pass->plans[n_grad - 1];
    int W = m->cfg.text_width, n_seqs = last->seq0 + last->batch->n_seqs, N = last->base + last->N;
    float *d_normed = sdfed_arena_floats(arena, (size_t)n_seqs * W);
    float *d_eot = sdfed_arena_floats(arena, (size_t)n_seqs * W);
    float *dx = sdfed_arena_floats(arena, (size_t)N * W);
    float *scratch = sdfed_arena_floats(arena, sdfed_kernel_scratch_floats(k, W));
    if (!d_normed || !d_eot || !dx || !scratch) return sdfed_fail(err, SDFED_ERR_NOMEM, "text: out of memory");
    memset(d_normed, 0, sizeof(float) * (size_t)n_seqs * W);
    memset(d_eot, 0, sizeof(float) * (size_t)n_seqs * W);
    memset(dx, 0, sizeof(float) * (size_t)N * W);
    for (int b = 0; b < n_grad; b++) {
        const sdfed_text_plan *p = &pass->plans[b];
        k->linear_backward(d_normed + (size_t)p->seq0 * W, d_features[b], &m->text_proj, p->batch->n_seqs, scratch);
    }
    sdfed_layernorm_backward(d_eot, d_normed, pass->eot_rows, m->ln_final_w, pass->lnf_mean, pass->lnf_rstd, n_seqs, W);
    for (int b = 0; b < n_grad; b++) {
        const sdfed_text_plan *p = &pass->plans[b];
        for (int s = 0; s < p->batch->n_seqs; s++) {
            float *row = dx + (size_t)row_of(p, s, p->eot[s]) * W;
            const float *d = d_eot + (size_t)(p->seq0 + s) * W;
            for (int c = 0; c < W; c++) row[c] += d[c];
        }
    }
    /* the batches after n_grad are the last rows and spans: leave them out */
    sdfed_transformer blocks = pass->blocks;
    blocks.N = N;
    blocks.n_spans = last->span0 + last->n_spans;
    int rc = sdfed_transformer_backward(k, &blocks, dx, arena, err);
    if (rc) return rc;
    /* a spliced vector feeds its row directly (the positional embedding is
     * added to it); a prefix row is shared, a later one belongs to each
     * sequence */
    for (int b = 0; b < n_grad; b++) {
        const sdfed_text_plan *p = &pass->plans[b];
        for (int j = 0; j < p->batch->n_splice; j++) {
            int pos = p->batch->splice_pos[j];
            float *d = d_splice[b] + (size_t)j * W;
            for (int s = 0; s < (pos < p->prefix ? 1 : p->batch->n_seqs); s++) {
                const float *row = dx + (size_t)row_of(p, s, pos) * W;
                for (int c = 0; c < W; c++) d[c] += row[c];
            }
        }
    }
    return SDFED_OK;
}
