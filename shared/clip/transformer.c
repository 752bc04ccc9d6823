/* Forward and backward passes of the residual block stack. */
#include "clip/transformer.h"

#include <string.h>

static int alloc_acts(sdfed_block_acts *a, sdfed_arena *arena, int N, int C, size_t att_floats) {
    a->inp = sdfed_arena_floats(arena, (size_t)N * C);
    a->ln1_mean = sdfed_arena_floats(arena, (size_t)N);
    a->ln1_rstd = sdfed_arena_floats(arena, (size_t)N);
    a->qkv = sdfed_arena_floats(arena, (size_t)N * 3 * C);
    a->att = sdfed_arena_floats(arena, att_floats);
    a->res = sdfed_arena_floats(arena, (size_t)N * C);
    a->ln2_mean = sdfed_arena_floats(arena, (size_t)N);
    a->ln2_rstd = sdfed_arena_floats(arena, (size_t)N);
    a->fc = sdfed_arena_floats(arena, (size_t)N * 4 * C);
    return a->inp && a->ln1_mean && a->ln1_rstd && a->qkv && a->att && a->res && a->ln2_mean && a->ln2_rstd && a->fc;
}

int sdfed_transformer_forward(const sdfed_kernels *k, sdfed_transformer *t, float *x, int keep_activations,
                              sdfed_arena *arena, sdfed_error *err) {
    int N = t->N, C = t->C;
    size_t NC = (size_t)N * C;
    int n_sets = keep_activations ? t->n_layers : 1;
    t->att_offset = sdfed_arena_alloc(arena, sizeof *t->att_offset * (size_t)(t->n_spans + 1));
    t->acts = sdfed_arena_alloc(arena, sizeof *t->acts * (size_t)n_sets);
    if (!t->att_offset || !t->acts) return sdfed_fail(err, SDFED_ERR_NOMEM, "transformer: out of memory");
    size_t att_floats = sdfed_attention_size(t->spans, t->att_offset, t->n_spans, t->heads);
    for (int l = 0; l < n_sets; l++)
        if (!alloc_acts(&t->acts[l], arena, N, C, att_floats))
            return sdfed_fail(err, SDFED_ERR_NOMEM, "transformer: out of memory for activations");
    /* scratch that no backward pass needs */
    float *ln = sdfed_arena_floats(arena, NC);
    float *att_out = sdfed_arena_floats(arena, NC);
    float *proj = sdfed_arena_floats(arena, NC);
    float *act = sdfed_arena_floats(arena, NC * 4);
    float *scratch = sdfed_arena_floats(arena, sdfed_kernel_scratch_floats(k, 4 * C));
    if (!ln || !att_out || !proj || !act || !scratch)
        return sdfed_fail(err, SDFED_ERR_NOMEM, "transformer: out of memory for scratch");

    void (*linear)(float *, const float *, const sdfed_weight *, const float *, int, float *) =
        t->int8 ? k->linear_int8 : k->linear;
    for (int l = 0; l < t->n_layers; l++) {
        const sdfed_clip_block *b = &t->blocks[l];
        sdfed_block_acts *a = &t->acts[keep_activations ? l : 0];
        memcpy(a->inp, x, NC * sizeof *x);
        sdfed_layernorm_forward(ln, a->ln1_mean, a->ln1_rstd, x, b->ln1_w, b->ln1_b, N, C, t->eps);
        linear(a->qkv, ln, &b->attn_qkv, b->attn_qkv_b, N, scratch);
        sdfed_attention_forward(k, att_out, a->att, a->qkv, t->spans, t->att_offset, t->n_spans, C, t->heads,
                                t->causal);
        linear(proj, att_out, &b->attn_out, b->attn_out_b, N, scratch);
        sdfed_residual_add(x, proj, (int)NC);
        memcpy(a->res, x, NC * sizeof *x);
        sdfed_layernorm_forward(ln, a->ln2_mean, a->ln2_rstd, x, b->ln2_w, b->ln2_b, N, C, t->eps);
        linear(a->fc, ln, &b->mlp_fc, b->mlp_fc_b, N, scratch);
        sdfed_activation_forward(act, a->fc, (int)(NC * 4), t->activation);
        linear(proj, act, &b->mlp_proj, b->mlp_proj_b, N, scratch);
        sdfed_residual_add(x, proj, (int)NC);
    }
    return SDFED_OK;
}

int sdfed_transformer_backward(const sdfed_kernels *k, const sdfed_transformer *t, float *dx, sdfed_arena *arena,
                               sdfed_error *err) {
    int N = t->N, C = t->C;
    size_t NC = (size_t)N * C;
    size_t att_scratch = 0;
    for (int s = 0; s < t->n_spans; s++) {
        size_t need = (size_t)t->spans[s].nq * (t->spans[s].nc + t->spans[s].nq);
        if (need > att_scratch) att_scratch = need;
    }
    float *d_act = sdfed_arena_floats(arena, NC * 4);
    float *d_ln = sdfed_arena_floats(arena, NC);
    float *d_att = sdfed_arena_floats(arena, NC);
    float *d_qkv = sdfed_arena_floats(arena, NC * 3);
    float *d_scores = sdfed_arena_floats(arena, att_scratch);
    float *scratch = sdfed_arena_floats(arena, sdfed_kernel_scratch_floats(k, 4 * C));
    if (!d_act || !d_ln || !d_att || !d_qkv || !d_scores || !scratch)
        return sdfed_fail(err, SDFED_ERR_NOMEM, "transformer: out of memory for the backward pass");

    for (int l = t->n_layers - 1; l >= 0; l--) {
        const sdfed_clip_block *b = &t->blocks[l];
        const sdfed_block_acts *a = &t->acts[l];
        /* x_out = res + mlp_proj(act(mlp_fc(ln_2(res)))) */
        memset(d_act, 0, NC * 4 * sizeof *d_act);
        k->linear_backward(d_act, dx, &b->mlp_proj, N, scratch);
        sdfed_activation_backward(d_act, d_act, a->fc, (int)(NC * 4), t->activation);
        memset(d_ln, 0, NC * sizeof *d_ln);
        k->linear_backward(d_ln, d_act, &b->mlp_fc, N, scratch);
        sdfed_layernorm_backward(dx, d_ln, a->res, b->ln2_w, a->ln2_mean, a->ln2_rstd, N, C);
        /* res = inp + attn_out(attention(attn_qkv(ln_1(inp)))) */
        memset(d_att, 0, NC * sizeof *d_att);
        k->linear_backward(d_att, dx, &b->attn_out, N, scratch);
        memset(d_qkv, 0, NC * 3 * sizeof *d_qkv);
        sdfed_attention_backward(k, d_qkv, d_att, a->qkv, a->att, t->spans, t->att_offset, t->n_spans, C, t->heads,
                                 d_scores);
        memset(d_ln, 0, NC * sizeof *d_ln);
        k->linear_backward(d_ln, d_qkv, &b->attn_qkv, N, scratch);
        sdfed_layernorm_backward(dx, d_ln, a->inp, b->ln1_w, a->ln1_mean, a->ln1_rstd, N, C);
    }
    return SDFED_OK;
}
