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

/* Rows of the residual stream between two linears, a range of rows per
 * thread: x += add (unless NULL), save = x (unless NULL), then
 * ln = layernorm(x) with its mean and rstd (unless ln is NULL). */
typedef struct rows_task {
    float *x;
    const float *add;
    float *save, *ln, *mean, *rstd;
    const float *ln_w, *ln_b;
    int C;
    float eps;
} rows_task;

static void residual_rows(void *ctx, int begin, int end) {
    const rows_task *t = ctx;
    size_t first = (size_t)begin * t->C, count = (size_t)(end - begin) * t->C;
    if (t->add) sdfed_residual_add(t->x + first, t->add + first, (int)count);
    if (t->save) memcpy(t->save + first, t->x + first, count * sizeof *t->x);
    if (t->ln)
        sdfed_layernorm_forward(t->ln + first, t->mean + begin, t->rstd + begin, t->x + first, t->ln_w, t->ln_b,
                                end - begin, t->C, t->eps);
}

/* The MLP's activation, rows of `width` values per item. */
typedef struct activation_task {
    float *out;
    const float *inp;
    int width, activation;
} activation_task;

static void activation_rows(void *ctx, int begin, int end) {
    const activation_task *t = ctx;
    size_t first = (size_t)begin * t->width;
    sdfed_activation_forward(t->out + first, t->inp + first, (end - begin) * t->width, t->activation);
}

/* The backward pass's activation, rows of `width` values per item:
 * d = act'(inp) * d in place. */
typedef struct activation_grad_task {
    float *d;
    const float *inp;
    int width, activation;
} activation_grad_task;

static void activation_grad_rows(void *ctx, int begin, int end) {
    const activation_grad_task *t = ctx;
    size_t first = (size_t)begin * t->width;
    sdfed_activation_backward(t->d + first, t->d + first, t->inp + first, (end - begin) * t->width, t->activation);
}

/* The backward pass's layer norm, a range of rows: dx += d ln / d inp
 * applied to d_ln. */
typedef struct norm_grad_task {
    float *dx;
    const float *d_ln, *inp, *ln_w, *mean, *rstd;
    int C;
} norm_grad_task;

static void norm_grad_rows(void *ctx, int begin, int end) {
    const norm_grad_task *t = ctx;
    size_t first = (size_t)begin * t->C;
    sdfed_layernorm_backward(t->dx + first, t->d_ln + first, t->inp + first, t->ln_w, t->mean + begin, t->rstd + begin,
                             end - begin, t->C);
}

/* multiply-adds of a linear layer that a value of a layer norm (passes
 * over the row whose sums are chains of dependent adds), or of an
 * activation (an exponential or erf), costs as much as, about: what
 * splitting their rows is worth */
#define NORM_WORK_PER_VALUE 100.0
#define ACTIVATION_WORK_PER_VALUE 200.0

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
    activation_task act_task = {.out = act, .inp = NULL, .width = 4 * C, .activation = t->activation};
    for (int l = 0; l < t->n_layers; l++) {
        const sdfed_clip_block *b = &t->blocks[l];
        sdfed_block_acts *a = &t->acts[keep_activations ? l : 0];
        /* x += the previous block's MLP output; inp = x (for a backward pass); ln = ln_1(x) */
        rows_task before_attn = {.x = x,
                                 .add = l > 0 ? proj : NULL,
                                 .save = keep_activations ? a->inp : NULL,
                                 .ln = ln,
                                 .mean = a->ln1_mean,
                                 .rstd = a->ln1_rstd,
                                 .ln_w = b->ln1_w,
                                 .ln_b = b->ln1_b,
                                 .C = C,
                                 .eps = t->eps};
        sdfed_kernels_parallel(k, N, C * NORM_WORK_PER_VALUE, residual_rows, &before_attn);
        linear(a->qkv, ln, &b->attn_qkv, b->attn_qkv_b, N, scratch);
        sdfed_attention_forward(k, att_out, a->att, a->qkv, t->spans, t->att_offset, t->n_spans, C, t->heads,
                                t->causal);
        linear(proj, att_out, &b->attn_out, b->attn_out_b, N, scratch);
        /* x += attention output; res = x (for a backward pass); ln = ln_2(x) */
        rows_task before_mlp = {.x = x,
                                .add = proj,
                                .save = keep_activations ? a->res : NULL,
                                .ln = ln,
                                .mean = a->ln2_mean,
                                .rstd = a->ln2_rstd,
                                .ln_w = b->ln2_w,
                                .ln_b = b->ln2_b,
                                .C = C,
                                .eps = t->eps};
        sdfed_kernels_parallel(k, N, C * NORM_WORK_PER_VALUE, residual_rows, &before_mlp);
        linear(a->fc, ln, &b->mlp_fc, b->mlp_fc_b, N, scratch);
        act_task.inp = a->fc;
        sdfed_kernels_parallel(k, N, 4 * C * ACTIVATION_WORK_PER_VALUE, activation_rows, &act_task);
        linear(proj, act, &b->mlp_proj, b->mlp_proj_b, N, scratch);
    }
    /* x += the last block's MLP output */
    rows_task last = {.x = x,
                      .add = proj,
                      .save = NULL,
                      .ln = NULL,
                      .mean = NULL,
                      .rstd = NULL,
                      .ln_w = NULL,
                      .ln_b = NULL,
                      .C = C,
                      .eps = t->eps};
    if (t->n_layers > 0) sdfed_kernels_parallel(k, N, C * NORM_WORK_PER_VALUE, residual_rows, &last);
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
        activation_grad_task act_grad = {.d = d_act, .inp = a->fc, .width = 4 * C, .activation = t->activation};
        sdfed_kernels_parallel(k, N, 4 * C * ACTIVATION_WORK_PER_VALUE, activation_grad_rows, &act_grad);
        memset(d_ln, 0, NC * sizeof *d_ln);
        k->linear_backward(d_ln, d_act, &b->mlp_fc, N, scratch);
        norm_grad_task ln2_grad = {
            .dx = dx, .d_ln = d_ln, .inp = a->res, .ln_w = b->ln2_w, .mean = a->ln2_mean, .rstd = a->ln2_rstd, .C = C};
        sdfed_kernels_parallel(k, N, C * NORM_WORK_PER_VALUE, norm_grad_rows, &ln2_grad);
        /* res = inp + attn_out(attention(attn_qkv(ln_1(inp)))) */
        memset(d_att, 0, NC * sizeof *d_att);
        k->linear_backward(d_att, dx, &b->attn_out, N, scratch);
        memset(d_qkv, 0, NC * 3 * sizeof *d_qkv);
        sdfed_attention_backward(k, d_qkv, d_att, a->qkv, a->att, t->spans, t->att_offset, t->n_spans, C, t->heads,
                                 d_scores);
        memset(d_ln, 0, NC * sizeof *d_ln);
        k->linear_backward(d_ln, d_qkv, &b->attn_qkv, N, scratch);
        norm_grad_task ln1_grad = {
            .dx = dx, .d_ln = d_ln, .inp = a->inp, .ln_w = b->ln1_w, .mean = a->ln1_mean, .rstd = a->ln1_rstd, .C = C};
        sdfed_kernels_parallel(k, N, C * NORM_WORK_PER_VALUE, norm_grad_rows, &ln1_grad);
    }
    return SDFED_OK;
}
