/* FedOTP's optimal transport between one image's patches and one class's
 * prompts (Li et al., CVPR 2024; its code: trainers/GLP_OT.py, CustomCLIP).
 *
 * One problem: M patch features x_m and N prompt text features y_n (unit
 * rows), their cosine similarities S_mn = x_m . y_n, the cost 1 - S and the
 * Gibbs kernel K_mn = exp(-(1 - S_mn) / epsilon). Marginals: a_m = 1/M over
 * the patches, b_n = mass/N over the prompts. The plan is
 * T = diag(u) K diag(v), from u = 1_M, v = 1_N, each iteration:
 *   balanced (FedOTP's OT "Sinkhorn", mass 1), CustomCLIP.Sinkhorn:
 *     u <- a / (K v),              v <- b / (K^T u),  change = mean |u - u_prev|
 *   partial (FedOTP's OT "COT", the default), CustomCLIP.entropic_COT_fast:
 *     u <- min(a / (K v), 1_M),    v <- b / (K^T u),  change = mean |v - v_prev|
 * (divisions element-wise), until change < threshold or max_iterations
 * iterations. The partial plan moves mass `mass` in all: T^T 1_M = b
 * exactly, T 1_N <= a (a patch may be left partly unused): Chizat et al.'s
 * scaling algorithm for entropic partial transport, whose fixed point
 *   u = min(a / (K v), 1),  v = b / (K^T u)
 * minimises epsilon KL(T | K) = <1 - S, T> + epsilon sum T (log T - 1)
 * + const under those constraints (the balanced one under T 1 = a too).
 *
 * The score of the pair is FedOTP's transport-weighted similarity
 *   s = sum_mn T_mn S_mn,
 * the class's logit before exp(logit_scale). FedOTP solves the plan under
 * torch.no_grad(): T is a constant for the gradient,
 *   d s / d y_n = sum_m T_mn x_m.
 *
 * Kernel, scalings and sums are in double, in a fixed order: the same
 * inputs give the same bits on every run of a build (libm's exp may differ
 * in its last bit between targets). One deviation from FedOTP's code, kept on purpose: it
 * stops a whole batch of problems (images x classes) on the mean change
 * over the batch; here each problem stops on its own change, so that an
 * image's plan does not depend on the rest of its batch. */
#ifndef SDFED_TRANSPORT_H
#define SDFED_TRANSPORT_H

#include <stddef.h>

#include "base/names.h"
#include "base/status.h"

typedef enum sdfed_transport_kind {
    SDFED_TRANSPORT_BALANCED, /* FedOTP --OT Sinkhorn */
    SDFED_TRANSPORT_PARTIAL,  /* FedOTP --OT COT */
    SDFED_TRANSPORT_KINDS
} sdfed_transport_kind;

/* FedOTP's command line and its defaults (federated_main.py; its scripts
 * set --top_percent 0.8 and --eps 0.1 for CIFAR-100, 0.01 few-shot). */
typedef struct sdfed_transport {
    sdfed_transport_kind kind; /* --OT, default COT (partial) */
    double epsilon;            /* --eps, default 0.1; > 0 */
    double mass;               /* --top_percent, default 1; in (0, 1]; balanced needs 1 */
    int max_iterations;        /* --max_iter, default 100; >= 1 */
    double threshold;          /* --thresh, default 1e-3; >= 0 */
} sdfed_transport;

/* The names of the kinds, by sdfed_transport_kind: "balanced", "partial". */
extern const sdfed_name sdfed_transport_kind_names[SDFED_TRANSPORT_KINDS];
const char *sdfed_transport_kind_name(int kind);

/* FedOTP's defaults as its scripts run it: partial, epsilon 0.1, mass 0.8,
 * 100 iterations, threshold 1e-3. */
sdfed_transport sdfed_transport_defaults(void);
/* Whether a configuration is one sdfed_transport_plan accepts; the error
 * names the setting. */
int sdfed_transport_check(const sdfed_transport *t, sdfed_error *err);

/* Doubles of scratch one problem of M x N needs (its kernel and scalings). */
size_t sdfed_transport_scratch_size(int M, int N);

/* plan (M, N) of one problem from its similarities sim (M, N); u (M) and
 * v (N) receive the scalings, plan = diag(u) K diag(v), kernel (M x N
 * doubles) the caller's scratch; *iterations (if not NULL) the iterations
 * run. Allocates nothing. Refuses a bad configuration or non-finite
 * similarities (SDFED_ERR_ARG, SDFED_ERR_NUMERIC), and an epsilon so small
 * that the kernel or the scalings leave the range of double
 * (SDFED_ERR_NUMERIC). */
int sdfed_transport_plan(const sdfed_transport *t, const float *sim, int M, int N, float *plan, double *u, double *v,
                         int *iterations, double *kernel, sdfed_error *err);

/* The score of one image and one class: sim (M, N) = patches (M, D) @
 * prompts (N, D)^T (unit rows: cosine similarities), plan (M, N) from sim,
 * *score = sum plan * sim. sim and plan are kept for the backward pass;
 * scratch holds sdfed_transport_scratch_size(M, N) doubles. */
int sdfed_transport_score_forward(const sdfed_transport *t, double *score, float *sim, float *plan,
                                  const float *patches, const float *prompts, int M, int N, int D, double *scratch,
                                  sdfed_error *err);
/* d_prompts (N, D) += weight * plan^T @ patches: the gradient of the score
 * with the plan held constant (FedOTP's no_grad). */
void sdfed_transport_score_backward(float *d_prompts, const float *plan, const float *patches, int M, int N, int D,
                                    float weight);

#endif
