/* The federation loop (see sim.h). */
#include "sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "native/crypto.h"
#include "fed/pace.h"
#include "fed/round.h"
#include "native/clock.h"

void sim_result_free(sim_result *r) {
    for (int i = 0; r->rounds && i < r->n_rounds; i++) free(r->rounds[i].client_accuracy);
    free(r->rounds);
    free(r->client_train);
    free(r->client_test);
    free(r->client_local_len);
    free(r->client_device);
    free(r->client_steps);
    memset(r, 0, sizeof *r);
}

/* Round r's line: its id (from 0, as the aggregator's), then how many of
 * the task's rounds are done with it; a secure round's stages after it. */
static void log_round(FILE *log, const sdfed_task *task, int r, const sim_round *round, int K) {
    double lo = 1, hi = 0; /* fmin and fmax pass over a NaN: a client without test images */
    for (int c = 0; c < K; c++) {
        lo = fmin(lo, round->client_accuracy[c]);
        hi = fmax(hi, round->client_accuracy[c]);
    }
    if (isnan(round->accuracy))
        fprintf(log, "round %d: no accuracy (%d of %d rounds done)", r, r + 1, task->rounds);
    else
        fprintf(log, "round %d: accuracy %.2f%% (%d of %d rounds done), clients %.1f..%.1f%%", r, 100 * round->accuracy,
                r + 1, task->rounds, 100 * lo, 100 * hi);
    fprintf(log, ", loss %.4f, %d clients, %d steps, %.2f s%s", round->total, round->participants, round->steps,
            round->seconds, round->abandoned && !round->secure ? " (abandoned: too few reports)" : "");
    if (task->devices.n > 0)
        fprintf(log, "; simulated %.2f s, %d missed, %d sitting out", round->sim_seconds, round->missed, round->paced);
    const secure_round_stats *st = &round->secagg;
    if (round->secure)
        fprintf(log, "; secure: %d advertised, %d shared, %d masked, %d survivors, %.3f s%s%s", st->advertised,
                st->shared, st->masked, st->survivors, st->protocol_seconds, st->abandoned ? ", abandoned " : "",
                st->abandoned ? st->why : "");
    if (round->secure && task->secagg.epsilon > 0)
        fprintf(log, "; epsilon %.3f spent of %g (delta %g)", round->epsilon, task->secagg.epsilon, task->secagg.delta);
    fputc('\n', log);
    fflush(log);
}

/* What a secure round's clients train with. */
typedef struct training {
    native_fed_client *clients;
    const sdfed_task *task;
    const sdfed_clip_model *m;
    const sdfed_kernels *k;
    const sdfed_classes *cls;
    const native_fed_data *d;
    sdfed_losses *losses;
    int *steps;
    sdfed_arena *arena;
    int round;
} training;

/* client c trains (secure_round_train_fn): its prompt after training, or none without data */
static int train_client(void *ctx, int64_t c, const float **x, int64_t *samples, sdfed_error *err) {
    training *t = ctx;
    native_fed_client *cl = &t->clients[c];
    *x = NULL;
    if (cl->split->n_train == 0) return SDFED_OK;
    int rc = native_fed_client_train(cl, t->task, t->m, t->k, t->cls, t->d, t->losses, t->steps, t->arena, err);
    if (rc) return sdfed_fail_context(err, rc, "round %d, client %lld", t->round, (long long)c);
    *x = cl->params.global;
    *samples = cl->plan.samples;
    return SDFED_OK;
}

/* Whether a client's local work misses a round's deadline (the budget): it
 * ends after it, or it has no step within it. */
static int misses(const sdfed_task *task, const sdfed_local_plan *plan) {
    double budget = task->local_prompt.budget_s;
    return plan->steps == 0 || (budget > 0 && plan->seconds > budget);
}

/* The plan's line before the rounds. */
static void log_plan(FILE *log, const sdfed_task *task, const sdfed_secagg_plan *p) {
    fprintf(log,
            "sim: secure aggregation: %d clients a round, %d neighbours each (%s), threshold %d, at least %d inputs; "
            "changes clipped to +-%g, %d bits, weights up to %lld, a %d-bit ring",
            p->params.n, p->params.k, p->params.complete ? "complete graph" : "Harary graph", p->params.t,
            p->params.min_inputs, p->ring.clip, p->ring.quant_bits, (long long)p->ring.max_weight, p->ring.ring_bits);
    if (p->sigma2)
        fprintf(log, "; noise sigma^2 %llu per client for epsilon %g at delta %g over %d rounds",
                (unsigned long long)p->sigma2, task->secagg.epsilon, task->secagg.delta, task->rounds);
    fputc('\n', log);
}

int sim_run(const sdfed_task *task, const sdfed_clip_model *m, const sdfed_kernels *k, const sdfed_classes *cls,
            const native_fed_data *d, int validation, sim_result *out, FILE *log, sdfed_error *err) {
    memset(out, 0, sizeof *out);
    int rc = sdfed_task_validate(task, err);
    if (rc) return rc;
    if (task->devices.n > 0 && task->secagg.on)
        return sdfed_fail(err, SDFED_ERR_UNSUPPORTED, "sim: 'devices' are not simulated with 'secure_aggregation'");
    sdfed_partition part;
    if ((rc = native_fed_partition(task, d, &part, err))) return sdfed_fail_context(err, rc, "partition");
    /* validation: clients are tested on images held out of their training sets */
    native_fed_data held_out = *d;
    if (validation) {
        sdfed_samples train = {.n = d->n_train, .id = NULL, .label = d->train_labels, .domain = d->train_domains};
        if ((rc = sdfed_partition_hold_out(&part, &train, SIM_VALIDATION_EVERY, task->seed, err))) {
            sdfed_partition_free(&part);
            return rc;
        }
        held_out.n_test = d->n_train;
        held_out.test_features = d->train_features;
        held_out.test_labels = d->train_labels;
        d = &held_out;
    }
    int K = task->clients, trains = task->method != SDFED_METHOD_ZEROSHOT;
    native_fed_client *clients = calloc((size_t)K, sizeof *clients);
    out->rounds = calloc((size_t)task->rounds, sizeof *out->rounds);
    out->client_train = calloc((size_t)K, sizeof(int));
    out->client_test = calloc((size_t)K, sizeof(int));
    out->client_local_len = calloc((size_t)K, sizeof(int));
    out->client_device = calloc((size_t)K, sizeof(int));
    out->client_steps = calloc((size_t)K, sizeof(int));
    int64_t *candidates = malloc(sizeof *candidates * (size_t)K);
    sdfed_round_update *uploads = malloc(sizeof *uploads * (size_t)K);
    sdfed_round round_clients = {0};
    sdfed_method_params server = {0};
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    float *next_global = NULL; /* a secure round's result */
    double rho_spent = 0;
    out->n_clients = K;
    if (!clients || !out->rounds || !out->client_train || !out->client_test || !out->client_local_len ||
        !out->client_device || !out->client_steps || !candidates || !uploads)
        rc = sdfed_fail(err, SDFED_ERR_NOMEM, "sim: out of memory");

    /* the server's initial shared parameters; every client starts from them */
    if (rc == SDFED_OK) rc = sdfed_task_server_params(task, m, k, cls, &server, &arena, err);
    size_t shared = (size_t)server.global_rows * server.width;
    for (int c = 0; c < K && rc == SDFED_OK; c++) {
        sdfed_arena_reset(&arena);
        /* its simulated device's step times, for the local prompt rule */
        int device = out->client_device[c] = sdfed_devices_of_client(&task->devices, task->seed, c);
        double step_s[SDFED_LOCAL_PROMPT_MAX_LENGTHS];
        if (device >= 0) sdfed_device_step_seconds(&task->devices.device[device], task->local_prompt.n_lengths, step_s);
        rc = native_fed_client_init(&clients[c], task, c, &part.clients[c], device >= 0 ? step_s : NULL, m, k, cls,
                                    &arena, err);
        out->client_steps[c] = clients[c].plan.steps;
        if (rc == SDFED_OK && shared) memcpy(clients[c].params.global, server.global, sizeof(float) * shared);
        out->client_train[c] = part.clients[c].n_train;
        out->client_test[c] = part.clients[c].n_test;
        out->client_local_len[c] = clients[c].cfg.local_len;
        out->clients_without_test += part.clients[c].n_test == 0;
    }
    if (rc == SDFED_OK && log && out->clients_without_test == K)
        fprintf(log, "sim: no client has a test image: no accuracy to report\n");
    else if (rc == SDFED_OK && log && out->clients_without_test)
        fprintf(log, "sim: %d of %d clients have no test image: no accuracy, left out of the means\n",
                out->clients_without_test, K);

    /* secure aggregation: the plan of a round of its sampled clients */
    int per_round = task->clients_per_round > 0 && task->clients_per_round < K ? task->clients_per_round : K;
    out->secure = rc == SDFED_OK && task->secagg.on && trains && shared;
    if (out->secure) {
        rc = sdfed_secagg_plan_make(task, per_round, shared, &out->plan, err);
        next_global = malloc(sizeof *next_global * shared);
        if (rc == SDFED_OK && !next_global) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "sim: out of memory");
        if (rc == SDFED_OK && log) log_plan(log, task, &out->plan);
    }

    /* the round engine (fed/round.h) chooses among the clients in index
     * order and combines their uploads, as the aggregator does; pace
     * steering (fed/pace.h) sits out those that missed rounds, as the
     * aggregator's does */
    sdfed_pace *pace = calloc((size_t)K + 1, sizeof *pace);
    if (rc == SDFED_OK && !pace) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "sim: out of memory");
    sdfed_rng sampler;
    sdfed_round_sampler(&sampler, task->seed);
    for (int r = 0; r < task->rounds && rc == SDFED_OK; r++) {
        sim_round *round = &out->rounds[r];
        double t0 = native_clock_seconds(native_clock_monotonic_ns());
        if (!(round->client_accuracy = calloc((size_t)K, sizeof(double)))) {
            rc = sdfed_fail(err, SDFED_ERR_NOMEM, "sim: out of memory");
            break;
        }
        out->n_rounds = r + 1;
        /* this round's clients, trained in the engine's order; a client
         * that drops out (or has nothing to train on) leaves the round */
        int n_candidates = 0;
        for (int c = 0; c < K; c++)
            if (sdfed_pace_rounds_out(&pace[c], r) == 0) candidates[n_candidates++] = c;
        round->paced = K - n_candidates;
        if (n_candidates < (task->min_clients > 0 ? task->min_clients : 1)) { /* too few would be left: none sits out */
            for (int c = 0; c < K; c++) candidates[c] = c;
            n_candidates = K;
            round->paced = 0;
        }
        rc = sdfed_round_choose(&round_clients, r, candidates, trains ? n_candidates : 0, task->clients_per_round, 1.0,
                                &sampler, err);
        sdfed_losses losses = {0};
        if (rc == SDFED_OK && out->secure) { /* the whole protocol; the clients train at their masked input */
            training t = {.clients = clients,
                          .task = task,
                          .m = m,
                          .k = k,
                          .cls = cls,
                          .d = d,
                          .losses = &losses,
                          .steps = &round->steps,
                          .arena = &arena,
                          .round = r};
            round->secure = 1;
            rc = secure_round_run(task, &out->plan, r, round_clients.clients, server.global, train_client, &t, NULL,
                                  next_global, &round->secagg, err);
            if (rc) break;
            round->participants = round->secagg.masked;
            round->abandoned = round->secagg.abandoned;
            if (!round->abandoned) {
                memcpy(server.global, next_global, sizeof(float) * shared);
                rho_spent += out->plan.rho;
            }
            if (out->plan.sigma2 && (rc = sdfed_secagg_epsilon(&out->plan, rho_spent, &round->epsilon, err))) break;
        }
        for (int i = 0; i < round_clients.n_clients && rc == SDFED_OK && !out->secure; i++) {
            int c = (int)round_clients.clients[i];
            native_fed_client *cl = &clients[c];
            if (cl->split->n_train == 0 || sdfed_round_drops_out(task->seed, r, c, task->dropout)) {
                sdfed_round_leave(&round_clients, c);
                continue;
            }
            /* a client whose work ends after the deadline trains (its local prompt learns), but its update
             * comes too late to count */
            int late = task->devices.n > 0 && misses(task, &cl->plan);
            if (!late) round->sim_seconds = fmax(round->sim_seconds, cl->plan.seconds);
            rc = native_fed_client_train(cl, task, m, k, cls, d, &losses, &round->steps, &arena, err);
            if (rc) {
                sdfed_fail_context(err, rc, "round %d, client %d", r, c);
                break;
            }
            if (late) {
                sdfed_round_leave(&round_clients, c);
                sdfed_pace_missed(&pace[c], r);
                round->missed++;
                continue;
            }
            sdfed_round_report(&round_clients, c);
            sdfed_pace_reported(&pace[c]);
            uploads[round->participants++] =
                (sdfed_round_update){.client = c, .base = r, .samples = cl->plan.samples, .values = cl->params.global};
        }
        if (rc) break;
        if (round->missed) round->sim_seconds = task->local_prompt.budget_s; /* it waited for the deadline */
        /* the round closes (the server's sample-weighted mean, broadcast to
         * every client) or is abandoned, as the aggregator decides it */
        if (!out->secure)
            round->abandoned =
                trains && sdfed_round_check(&round_clients, task->min_clients > 0 ? task->min_clients : 1, 1) ==
                              SDFED_ROUND_ABANDON;
        if (shared && round->participants > 0 && !round->abandoned && !out->secure) {
            sdfed_aggregate_config mean = {
                .rule = SDFED_AGGREGATE_MEAN, .trim = 0, .clip_norm = 0, .noise_multiplier = 0};
            sdfed_arena_reset(&arena);
            float *next = sdfed_arena_alloc(&arena, sizeof *next * shared);
            rc = next ? sdfed_round_combine(&mean, task->seed, r, uploads, round->participants, server.global, shared,
                                            next, &arena, err)
                      : sdfed_fail(err, SDFED_ERR_NOMEM, "sim: out of memory");
            if (rc) break;
            memcpy(server.global, next, sizeof(float) * shared);
        }
        /* every client starts the next round from the server's parameters,
         * also after an abandoned round */
        for (int c = 0; c < K && shared; c++) memcpy(clients[c].params.global, server.global, sizeof(float) * shared);
        if (shared) rc = native_sha256_hex(server.global, sizeof(float) * shared, round->global_sha256, err);
        int tested = K - out->clients_without_test;
        for (int c = 0; c < K && rc == SDFED_OK; c++) {
            sdfed_arena_reset(&arena);
            rc = native_fed_client_accuracy(&clients[c], m, k, cls, d, &round->client_accuracy[c], &arena, err);
            if (!isnan(round->client_accuracy[c])) round->accuracy += round->client_accuracy[c] / tested;
        }
        if (tested == 0) round->accuracy = NAN;
        int steps = round->steps > 0 ? round->steps : 1;
        round->ce_local = losses.ce_local / steps;
        round->ce_global = losses.ce_global / steps;
        round->stretch = losses.stretch / steps;
        round->separation = losses.separation / steps;
        round->total = losses.total / steps;
        round->seconds = native_clock_seconds(native_clock_monotonic_ns()) - t0;
        if (log && rc == SDFED_OK) log_round(log, task, r, round, K);
    }
    if (rc == SDFED_OK) {
        out->final_rounds = out->n_rounds < 10 ? out->n_rounds : 10;
        for (int r = out->n_rounds - out->final_rounds; r < out->n_rounds; r++)
            out->final_accuracy += out->rounds[r].accuracy / out->final_rounds;
    }
    for (int c = 0; clients && c < K; c++) native_fed_client_free(&clients[c]);
    sdfed_method_params_free(&server);
    sdfed_round_free(&round_clients);
    free(clients);
    free(pace);
    free(candidates);
    free(uploads);
    free(next_global);
    sdfed_arena_free(&arena);
    sdfed_partition_free(&part);
    if (rc) sim_result_free(out);
    return rc;
}
