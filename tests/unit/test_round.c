/* The round engine (fed/round.h): who is chosen (with over-selection),
 * when a round closes or is abandoned, the dropout draw, the order and
 * weights its updates are combined with, and the noise stream, checked against the sampler and the aggregation rules
 * directly. Every backend. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fed/round.h"
#include "fed/task.h"

static void test_choosing(void) {
    const int64_t candidates[6] = {40, 7, 13, 2, 99, 5}; /* the caller's order */
    sdfed_rng sampler, same;
    sdfed_round_sampler(&sampler, 42);
    sdfed_round_sampler(&same, 42);
    sdfed_round r = {0};
    sdfed_error err = {0};
    CHECK(sdfed_round_choose(&r, 3, candidates, 6, 4, 1.0, &sampler, &err) == SDFED_OK, "%s", err.message);
    int chosen[6];
    sdfed_rng_choose(&same, 6, 4, chosen);
    int same_clients = r.n_clients == 4 && r.target == 4 && r.number == 3 && r.n_reported == 0;
    for (int i = 0; i < 4 && same_clients; i++) same_clients = r.clients[i] == candidates[chosen[i]];
    CHECK(same_clients, "the chosen are the sampler's partial shuffle of the candidates, in their order");
    CHECK(memcmp(&sampler, &same, sizeof sampler) == 0, "choosing advances the sampler as sdfed_rng_choose does");
    CHECK(sdfed_round_choose(&r, 4, candidates, 6, 0, 1.0, &sampler, &err) == SDFED_OK && r.n_clients == 6 &&
              r.clients[0] == 40 && r.clients[5] == 5,
          "clients_per_round 0: every candidate, in order");
    CHECK(sdfed_round_choose(&r, 5, candidates, 3, 10, 1.0, &sampler, &err) == SDFED_OK && r.n_clients == 3,
          "more wanted than connected: all of them");
    CHECK(sdfed_round_index(&r, 13) == 2 && sdfed_round_index(&r, 99) == -1, "places in the round");
    CHECK(sdfed_round_choose(&r, 6, candidates, 6, 2, 1.5, &sampler, &err) == SDFED_OK && r.n_clients == 3 &&
              r.target == 2,
          "over-selection 1.5 of a target of 2: 3 chosen");
    CHECK(sdfed_round_choose(&r, 7, candidates, 6, 4, 2.0, &sampler, &err) == SDFED_OK && r.n_clients == 6 &&
              r.target == 4,
          "over-selection beyond the candidates: all of them");
    sdfed_round_free(&r);
}

static void test_closing(void) {
    const int64_t ids[3] = {10, 11, 12};
    sdfed_rng sampler;
    sdfed_round_sampler(&sampler, 1);
    sdfed_round r = {0};
    sdfed_round_choose(&r, 0, ids, 3, 0, 1.0, &sampler, NULL);
    CHECK(sdfed_round_check(&r, 2, 0) == SDFED_ROUND_WAIT, "nobody reported: wait");
    CHECK(sdfed_round_check(&r, 2, 1) == SDFED_ROUND_ABANDON, "deadline, no reports: abandoned");
    CHECK(sdfed_round_report(&r, 11) == 1 && sdfed_round_report(&r, 11) == 1 && r.n_reported == 1,
          "a report counts once");
    CHECK(sdfed_round_report(&r, 77) == -1 && r.n_reported == 1, "a client not chosen does not count");
    CHECK(sdfed_round_check(&r, 2, 1) == SDFED_ROUND_ABANDON, "deadline with 1 of the 2 reports needed: abandoned");
    CHECK(sdfed_round_check(&r, 1, 1) == SDFED_ROUND_CLOSE, "deadline with the 1 report needed: close");
    CHECK(sdfed_round_check(&r, 1, 0) == SDFED_ROUND_WAIT, "before the deadline, the others are still due");
    CHECK(sdfed_round_leave(&r, 12) == 2 && r.n_gone == 1 && sdfed_round_still_in(&r) == 2,
          "a client that leaves is out: 2 still in");
    CHECK(!sdfed_round_due(&r, 12) && sdfed_round_report(&r, 12) == 2 && r.n_reported == 1,
          "a client that left is not due, and its report does not count");
    CHECK(sdfed_round_check(&r, 2, 0) == SDFED_ROUND_WAIT, "1 reported, 1 due, 2 needed: wait");
    sdfed_round_report(&r, 10);
    CHECK(sdfed_round_check(&r, 2, 0) == SDFED_ROUND_CLOSE, "everyone still in reported, enough of them: close");
    CHECK(sdfed_round_leave(&r, 10) == 0 && !r.gone[0] && r.n_gone == 1, "a client that reported never leaves");
    CHECK(sdfed_round_check(&r, 3, 0) == SDFED_ROUND_ABANDON, "2 reports can never make 3: abandoned at once");

    /* the quorum out of reach before any deadline */
    sdfed_round_choose(&r, 1, ids, 3, 0, 1.0, &sampler, NULL);
    sdfed_round_leave(&r, 10);
    CHECK(sdfed_round_check(&r, 2, 0) == SDFED_ROUND_WAIT, "one of 3 left, 2 can still report: wait");
    sdfed_round_leave(&r, 11);
    CHECK(sdfed_round_check(&r, 2, 0) == SDFED_ROUND_ABANDON, "two of 3 left, 2 needed: abandoned at once");

    /* over-selection: the target's reports close the round */
    const int64_t more[5] = {1, 2, 3, 4, 5};
    sdfed_round_choose(&r, 2, more, 5, 2, 2.0, &sampler, NULL);
    sdfed_round_report(&r, r.clients[3]);
    CHECK(sdfed_round_check(&r, 2, 0) == SDFED_ROUND_WAIT, "over-selected: 1 of the target of 2");
    sdfed_round_report(&r, r.clients[0]);
    CHECK(sdfed_round_check(&r, 2, 0) == SDFED_ROUND_CLOSE, "over-selected: the target reported, 2 still due: close");

    sdfed_error err = {0};
    CHECK(sdfed_round_resume(&r, 8, ids, 3, 0, &err) == SDFED_OK && r.number == 8 && r.n_reported == 0 && r.target == 3,
          "resume: %s", err.message);
    CHECK(sdfed_round_due(&r, 10) && sdfed_round_due(&r, 11) && sdfed_round_due(&r, 12),
          "a resumed round's clients are due until they come back or the deadline");
    CHECK(sdfed_round_check(&r, 1, 0) == SDFED_ROUND_WAIT, "a resumed round with no reports waits");
    sdfed_round_report(&r, 12);
    CHECK(sdfed_round_check(&r, 1, 0) == SDFED_ROUND_WAIT, "a stored report; the others may still come back");
    CHECK(sdfed_round_check(&r, 1, 1) == SDFED_ROUND_CLOSE, "at the deadline the stored report closes it");
    sdfed_round_free(&r);
}

/* the dropout draw: seeded per round and client, at the given rate */
static void test_dropping_out(void) {
    int drops = 0, again = 0, n = 20000;
    for (int c = 0; c < n; c++) {
        drops += sdfed_round_drops_out(7, 3, c, 0.25);
        again += sdfed_round_drops_out(7, 3, c, 0.25) == sdfed_round_drops_out(7, 3, c, 0.25);
    }
    CHECK(again == n, "the same draw for the same seed, round and client");
    CHECK(drops > 0.23 * n && drops < 0.27 * n, "a quarter drop out (%d of %d)", drops, n);
    int differ = 0;
    for (int c = 0; c < 200; c++) differ += sdfed_round_drops_out(7, 3, c, 0.5) != sdfed_round_drops_out(7, 4, c, 0.5);
    CHECK(differ > 50 && differ < 150, "other rounds draw anew (%d of 200 differ)", differ);
    CHECK(!sdfed_round_drops_out(7, 3, 1, 0.0), "no dropout at 0");
}

static void test_order(void) {
    const int64_t ids[3] = {30, 10, 20};
    sdfed_round r = {0};
    sdfed_round_resume(&r, 0, ids, 3, 0, NULL);
    static const float v = 0;
    sdfed_round_update u[5] = {{.client = 20, .base = 0, .samples = 1, .values = &v},
                               {.client = 99, .base = 0, .samples = 2, .values = &v},
                               {.client = 10, .base = 0, .samples = 3, .values = &v},
                               {.client = 98, .base = 0, .samples = 4, .values = &v},
                               {.client = 30, .base = 0, .samples = 5, .values = &v}};
    CHECK(sdfed_round_order(&r, u, 5, NULL) == SDFED_OK, "ordering");
    CHECK(u[0].client == 30 && u[1].client == 10 && u[2].client == 20, "the round's order");
    CHECK(u[3].client == 99 && u[4].client == 98, "clients not chosen last, as given");
    sdfed_round_free(&r);
}

enum { N = 4, P = 5 };

static void test_combining(void) {
    static const float values[N][P] = {{1, 2, 3, 4, 5}, {-1, 0.5f, 2, 8, 1}, {3, 3, 3, 3, 3}, {0.25f, -4, 1, 0, 2}};
    const float global[P] = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
    const float *rows[N] = {values[0], values[1], values[2], values[3]};
    sdfed_round_update sync[N], async[N];
    const int64_t samples[N] = {10, 30, 7, 53}, base[N] = {9, 7, 9, 4};
    for (int i = 0; i < N; i++) {
        sync[i] = (sdfed_round_update){.client = i, .base = 9, .samples = samples[i], .values = values[i]};
        async[i] = (sdfed_round_update){.client = i, .base = base[i], .samples = samples[i], .values = values[i]};
    }
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_error err = {0};
    float got[P], want[P];
    sdfed_aggregate_config mean = {.rule = SDFED_AGGREGATE_MEAN, .trim = 0, .clip_norm = 0, .noise_multiplier = 0};

    /* a synchronous round: weights are the sample counts exactly */
    double w[N];
    for (int i = 0; i < N; i++) w[i] = (double)samples[i];
    CHECK(sdfed_round_combine(&mean, 5, 9, sync, N, global, P, got, &arena, &err) == SDFED_OK, "%s", err.message);
    sdfed_aggregate(&mean, rows, w, N, P, global, NULL, want, &arena, &err);
    CHECK(memcmp(got, want, sizeof got) == 0, "a sync round is the sample-weighted mean, bit for bit");

    /* asynchronous: samples / sqrt(1 + staleness) */
    for (int i = 0; i < N; i++) w[i] = (double)samples[i] / sqrt(1.0 + (double)(9 - base[i]));
    sdfed_round_combine(&mean, 5, 9, async, N, global, P, got, &arena, &err);
    sdfed_aggregate(&mean, rows, w, N, P, global, NULL, want, &arena, &err);
    CHECK(memcmp(got, want, sizeof got) == 0, "stale updates weigh samples / sqrt(1 + staleness)");
    double total = 0;
    for (int i = 0; i < N; i++) total += w[i];
    int close = 1;
    for (int j = 0; j < P; j++) {
        double s = 0;
        for (int i = 0; i < N; i++) s += w[i] * values[i][j];
        close &= fabs(got[j] - s / total) <= 1e-5 * (1 + fabs(s / total));
    }
    CHECK(close, "the staleness-weighted mean in double precision");

    /* the noise is round r's stream of the task seed */
    sdfed_aggregate_config dp = {.rule = SDFED_AGGREGATE_MEAN, .trim = 0, .clip_norm = 1.0, .noise_multiplier = 0.5};
    sdfed_rng noise;
    sdfed_rng_seed_stream(&noise, 5, SDFED_STREAM_NOISE + 9);
    for (int i = 0; i < N; i++) w[i] = (double)samples[i];
    sdfed_round_combine(&dp, 5, 9, sync, N, global, P, got, &arena, &err);
    sdfed_aggregate(&dp, rows, w, N, P, global, &noise, want, &arena, &err);
    CHECK(memcmp(got, want, sizeof got) == 0, "noise from the stream SDFED_STREAM_NOISE + round");
    for (int i = 0; i < N; i++) sync[i].base = 10;
    sdfed_round_combine(&dp, 5, 10, sync, N, global, P, want, &arena, &err);
    CHECK(memcmp(got, want, sizeof got) != 0, "another round draws other noise");
    CHECK(sdfed_round_combine(&mean, 5, 9, sync, 0, global, P, got, &arena, &err) == SDFED_ERR_ARG,
          "no updates: refused");
    sdfed_arena_free(&arena);
}

int main(void) {
    test_choosing();
    test_closing();
    test_order();
    test_dropping_out();
    test_combining();
    return check_report("test_round");
}
