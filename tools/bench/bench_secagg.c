/* make bench, the server's side of a secure round at scale: for each N, one
 * whole round of N sampled clients (the simulator's one-process round,
 * tools/sim/secure_round.h: real messages, X25519, AES-GCM and AES-CTR
 * through OpenSSL) under TASK.json's secure_aggregation (k and t from its
 * rule, its delta and gamma), the prompt of its global_prompt_length rows of
 * its model's text width, in the least ring that cannot wrap at N (its max_weight and
 * quant_bits kept). Every client's own steps run once in this process, one
 * after another; what is timed for the server is its work alone (requests,
 * receiving, the unmasking into the sum), on the round's one thread.
 * Dropouts, by place (p mod 50): 4 before their keys, 4 after them, 8 after
 * sharing (their mask keys are reconstructed), 1 before its unmasking
 * answer: 32% gone before the masked input (delta 0.33 allows 33%), 34% in
 * all. Bytes are the secure frames' (the messages plus
 * SDFED_SECURE_OVERHEAD), a surviving client's, against a plain client's
 * update (a tensor frame of the prompt); round_start and the global frame
 * down are the same in both and left out, as are the JSON acks. Times are
 * CPU ms of the round's thread (the machine may be loaded: cpu/wall says
 * how much of the round the process ran), but the unmasking, which runs on
 * the kernels' thread pool (threads=, the caller's included): its wall
 * time and the CPU time of all its threads (the goal at 10,000
 * clients: under 5 s, wall time on this 2-core machine; a loaded machine
 * stretches the wall time, cpu_s / threads is what the split would take on
 * idle cores). Lines, per N:
 *   secagg_round n=N k= t= min_inputs= P= ring_bits= advertised= shared= masked= survivors= cpu/wall=
 *   secagg_bytes n=N up=B (keys= shares= masked= unmask=) plain_up=B up_ratio=X down=B
 *   native_secagg_client n=N advertise_ms= share_ms= masked_ms= unmask_ms= total_ms=
 *   native_secagg_server n=N advertise_ms= share_ms= masked_ms= unmask_answers_ms= unmasking_ms= total_ms=
 *   secagg_unmasking n=N dropped_after_sharing= threads= wall_s= cpu_s= cpu_per_thread_s=
 *       [goal=under_5_s_wall:met|missed at 10,000]
 *   bench_secagg TASK.json N [N ...]   (run from the root: the task's model path is relative) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "fed/protocol.h"
#include "fed/secagg_task.h"
#include "kernels/kernels.h"
#include "native/args.h"
#include "native/clock.h"
#include "native/model.h"
#include "native/task_file.h"
#include "secure_round.h"

/* the clients' copies after training: the global plus changes up to 0.6 (past the clip), a new draw each */
typedef struct trainer {
    const float *g;
    float *x;
    size_t P;
    sdfed_rng rng;
} trainer;

static int train(void *ctx, int64_t client, const float **x, int64_t *samples, sdfed_error *err) {
    (void)err;
    trainer *t = ctx;
    for (size_t j = 0; j < t->P; j++) t->x[j] = t->g[j] + (float)(0.6 * (2 * sdfed_rng_uniform(&t->rng) - 1));
    *x = t->x;
    *samples = 16 + client % 64;
    return SDFED_OK;
}

/* the dropouts above, by place */
static int drops(void *ctx, int64_t client, sdfed_secagg_stage stage) {
    (void)ctx;
    const int64_t r = client % 50;
    if (stage == SDFED_SECAGG_ADVERTISE) return r < 4;
    if (stage == SDFED_SECAGG_SHARE) return r < 8;
    if (stage == SDFED_SECAGG_MASKED) return r < 16;
    return r < 17;
}

/* one round of n clients, its lines */
static int bench(sdfed_task *task, size_t width, int n, sdfed_error *err) {
    const size_t P = (size_t)task->global_prompt_length * width;
    sdfed_secagg_plan plan;
    /* the least ring that holds n inputs */
    sdfed_secagg_ring ring = {.clip = task->secagg.clip,
                              .quant_bits = task->secagg.quant_bits,
                              .max_weight = task->secagg.max_weight,
                              .clients = n};
    task->secagg.ring_bits = sdfed_secagg_ring_bits_needed(&ring);
    int rc = sdfed_secagg_plan_make(task, n, P, &plan, err);
    int64_t *clients = malloc(sizeof *clients * (size_t)n);
    float *g = malloc(sizeof *g * P), *next = malloc(sizeof *next * P);
    trainer t = {.g = g, .x = malloc(sizeof *t.x * P), .P = P};
    if (rc == SDFED_OK && !(clients && g && next && t.x)) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "out of memory");
    secure_round_stats s;
    double cpu = 0, wall = 0;
    if (rc == SDFED_OK) {
        sdfed_rng_seed(&t.rng, 20261129);
        for (size_t j = 0; j < P; j++) g[j] = (float)(0.02 * sdfed_rng_normal(&t.rng));
        for (int p = 0; p < n; p++) clients[p] = p;
        const secure_round_options options = {.drops = drops};
        const int64_t c0 = native_clock_process_cpu_ns(), w0 = native_clock_monotonic_ns();
        rc = secure_round_run(task, &plan, 1, clients, g, train, &t, &options, next, &s, err);
        cpu = native_clock_seconds(native_clock_process_cpu_ns() - c0);
        wall = native_clock_seconds(native_clock_monotonic_ns() - w0);
    }
    if (rc == SDFED_OK && s.abandoned) rc = sdfed_fail(err, SDFED_ERR_NUMERIC, "the round was abandoned %s", s.why);
    if (rc == SDFED_OK) {
        const int completed[] = {s.advertised, s.shared, s.masked, s.survivors};
        double client_ms[SDFED_SECAGG_UNMASK + 1], client_total = 0, server_total = 1e3 * s.unmask_cpu_seconds;
        int64_t up[SDFED_SECAGG_UNMASK + 1], up_total = 0, down = 0;
        for (int k = SDFED_SECAGG_ADVERTISE; k <= SDFED_SECAGG_UNMASK; k++) {
            client_ms[k] = 1e3 * s.stage[k].client_cpu_seconds / completed[k];
            client_total += client_ms[k];
            server_total += 1e3 * s.stage[k].server_cpu_seconds;
            up[k] = s.stage[k].bytes_up / completed[k] + SDFED_SECURE_OVERHEAD;
            up_total += up[k];
            if (k != SDFED_SECAGG_ADVERTISE) down += s.stage[k].bytes_down / completed[k] + SDFED_SECURE_OVERHEAD;
        }
        const uint32_t shape[2] = {(uint32_t)task->global_prompt_length, (uint32_t)width};
        const size_t plain_up = sdfed_frame_size(2, shape);
        printf("secagg_round n=%d k=%d t=%d min_inputs=%d P=%zu ring_bits=%d advertised=%d shared=%d masked=%d "
               "survivors=%d cpu/wall=%.2f\n",
               n, plan.params.k, plan.params.t, plan.params.min_inputs, P, plan.ring.ring_bits, s.advertised, s.shared,
               s.masked, s.survivors, cpu / wall);
        printf("secagg_bytes n=%d up=%lld (keys=%lld shares=%lld masked=%lld unmask=%lld) plain_up=%zu "
               "up_ratio=%.2f down=%lld\n",
               n, (long long)up_total, (long long)up[SDFED_SECAGG_ADVERTISE], (long long)up[SDFED_SECAGG_SHARE],
               (long long)up[SDFED_SECAGG_MASKED], (long long)up[SDFED_SECAGG_UNMASK], plain_up,
               (double)up_total / (double)plain_up, (long long)down);
        printf("secagg_client n=%d advertise_ms=%.2f share_ms=%.2f masked_ms=%.2f unmask_ms=%.2f total_ms=%.2f\n", n,
               client_ms[SDFED_SECAGG_ADVERTISE], client_ms[SDFED_SECAGG_SHARE], client_ms[SDFED_SECAGG_MASKED],
               client_ms[SDFED_SECAGG_UNMASK], client_total);
        printf("secagg_server n=%d advertise_ms=%.1f share_ms=%.1f masked_ms=%.1f unmask_answers_ms=%.1f "
               "unmasking_ms=%.1f total_ms=%.1f\n",
               n, 1e3 * s.stage[SDFED_SECAGG_ADVERTISE].server_cpu_seconds,
               1e3 * s.stage[SDFED_SECAGG_SHARE].server_cpu_seconds,
               1e3 * s.stage[SDFED_SECAGG_MASKED].server_cpu_seconds,
               1e3 * s.stage[SDFED_SECAGG_UNMASK].server_cpu_seconds, 1e3 * s.unmask_cpu_seconds, server_total);
        const int threads = sdfed_kernels_thread_count();
        const char *goal = ""; /* the issue's: the unmasking at 10,000 under 5 s */
        if (n == 10000) goal = s.unmask_seconds < 5 ? " goal=under_5_s_wall:met" : " goal=under_5_s_wall:missed";
        printf("secagg_unmasking n=%d dropped_after_sharing=%d threads=%d wall_s=%.2f cpu_s=%.2f "
               "cpu_per_thread_s=%.2f%s\n",
               n, s.shared - s.masked, threads, s.unmask_seconds, s.unmask_cpu_seconds, s.unmask_cpu_seconds / threads,
               goal);
        fflush(stdout);
    }
    free(clients);
    free(g);
    free(next);
    free(t.x);
    return rc;
}

int main(int argc, char **argv) {
    native_cli_set_program("bench_secagg");
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: bench_secagg TASK.json N [N ...]\n"
               "one whole secure round of N sampled clients for each N under TASK.json's secure_aggregation,\n"
               "the server's CPU time, the unmasking's wall time and the bytes each way (make bench)\n");
        return CLI_OK;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: bench_secagg TASK.json N [N ...]   (--help: what it does)\n");
        return CLI_USAGE;
    }
    sdfed_task task;
    native_model model;
    sdfed_error err = {0};
    char sha[65];
    if (native_task_read(argv[1], &task, sha, &err)) {
        fprintf(stderr, "bench_secagg: %s\n", err.message);
        return 1;
    }
    int rc = native_model_open(&model, task.model, &err);
    const size_t width = rc == SDFED_OK ? (size_t)model.clip.cfg.text_width : 0;
    if (rc == SDFED_OK) native_model_close(&model);
    for (int i = 2; i < argc && rc == SDFED_OK; i++) {
        long long n;
        if (native_cli_integer(argv[i], "N", 2, 1000000, &n)) {
            sdfed_task_free(&task);
            return CLI_USAGE;
        }
        rc = bench(&task, width, (int)n, &err);
    }
    if (rc) fprintf(stderr, "bench_secagg: %s\n", err.message);
    sdfed_task_free(&task);
    return rc ? 1 : 0;
}
