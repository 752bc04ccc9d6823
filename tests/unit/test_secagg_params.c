/* Secure aggregation's parameters and share graph (fed/secagg_params.h,
 * fed/secagg_graph.h): the (k, t) rule against the production stack's
 * reference values, the complete graph where the rule finds no Harary
 * graph, refusals; the Harary graph's symmetry, degree and slots, its
 * shuffle drawn from the caller's bytes. Every build. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fed/secagg_graph.h"
#include "fed/secagg_params.h"

/* google-parfait/federated-compute, fcp/secagg/server/graph_parameter_finder_test.cc
 * (commit bdbd822af00fb45b21a8364d40d62ca1eba4e27a), the CURIOUS_SERVER (and
 * NONE) rows of HararyGraphParameterFinderTest_Feasible: n, corrupt rate,
 * dropout rate, degree, threshold. The test there requires the degree equal
 * and the threshold at most the value; we get both equal. */
static const struct {
    int n;
    double corrupt, dropout;
    int k, t;
} REFERENCE[] = {
    {100, 0.45, 0.45, 92, 46},
    {1000, 0.45, 0.45, 822, 417},
    {10000, 0.45, 0.45, 3494, 1771},
    {100000, 0.45, 0.45, 5508, 2788},
    {1000000, 0.45, 0.45, 6240, 3156},
    {10, 0.33, 0.33, 8, 4},
    {100, 0.33, 0.33, 68, 34},
    {1000, 0.33, 0.33, 286, 150},
    {10000, 0.33, 0.33, 422, 221},
    {100000, 0.33, 0.33, 480, 251},
    {1000000, 0.33, 0.33, 518, 270},
    {10, 0.05, 0.33, 4, 2},
    {100, 0.05, 0.33, 28, 6},
    {1000, 0.05, 0.33, 72, 24},
    {10000, 0.05, 0.33, 86, 29},
    {100000, 0.05, 0.33, 96, 32},
    {1000000, 0.05, 0.33, 102, 34},
    {10, 0.33, 0.05, 4, 4},
    {100, 0.33, 0.05, 34, 29},
    {1000, 0.33, 0.05, 78, 60},
    {10000, 0.33, 0.05, 92, 70},
    {100000, 0.33, 0.05, 102, 77},
    {1000000, 0.33, 0.05, 110, 83},
    {10, 0.05, 0.05, 2, 2},
    {100, 0.05, 0.05, 12, 6},
    {1000, 0.05, 0.05, 30, 17},
    {10000, 0.05, 0.05, 34, 20},
    {100000, 0.05, 0.05, 36, 21},
    {1000000, 0.05, 0.05, 38, 22},
    {10, 0.33, 0.0, 4, 4},
    {100, 0.33, 0.0, 26, 25},
    {1000, 0.33, 0.0, 38, 36},
    {10000, 0.33, 0.0, 42, 40},
    {100000, 0.33, 0.0, 46, 44},
    {1000000, 0.33, 0.0, 50, 47},
    {10, 0.0, 0.33, 4, 2},
    {100, 0.0, 0.33, 26, 2},
    {1000, 0.0, 0.33, 38, 2},
    {10000, 0.0, 0.33, 42, 2},
    {100000, 0.0, 0.33, 46, 2},
    {1000000, 0.0, 0.33, 50, 2},
    {10, 0.0, 0.0, 2, 2},
    {100, 0.0, 0.0, 2, 2},
    {1000, 0.0, 0.0, 2, 2},
    {10000, 0.0, 0.0, 2, 2},
    {100000, 0.0, 0.0, 2, 2},
    {1000000, 0.0, 0.0, 2, 2},
};

static void test_reference(void) {
    for (size_t i = 0; i < sizeof REFERENCE / sizeof REFERENCE[0]; i++) {
        sdfed_secagg_params p;
        sdfed_error err = {0};
        int rc = sdfed_secagg_params_choose(REFERENCE[i].n, REFERENCE[i].dropout, REFERENCE[i].corrupt, 0, &p, &err);
        CHECK(rc == SDFED_OK && p.k == REFERENCE[i].k && p.t == REFERENCE[i].t && !p.complete,
              "n %d, corrupt %.2f, dropout %.2f: k %d t %d (reference %d, %d) %s", REFERENCE[i].n, REFERENCE[i].corrupt,
              REFERENCE[i].dropout, p.k, p.t, REFERENCE[i].k, REFERENCE[i].t, err.message);
        CHECK(p.min_inputs >= p.t && p.min_inputs <= p.n, "min_inputs %d", p.min_inputs);
    }
    /* the volunteers' defaults: 10 sampled, dropout 0.33, corrupt 0.05 */
    sdfed_secagg_params p;
    CHECK(sdfed_secagg_params_choose(10, 0.33, 0.05, 0, &p, NULL) == SDFED_OK && p.k == 4 && p.t == 2 &&
              p.min_inputs == 7,
          "n 10: k 4, t 2, at least 7 inputs (ceil(0.67 x 10)); got %d %d %d", p.k, p.t, p.min_inputs);
    CHECK(sdfed_secagg_params_choose(10, 0.33, 0.05, 9, &p, NULL) == SDFED_OK && p.min_inputs == 9,
          "the task's quorum raises min_inputs");
}

static void test_complete(void) {
    /* small rounds where no Harary degree below n - 1 passes: SecAgg's complete graph */
    sdfed_secagg_params p;
    sdfed_error err = {0};
    CHECK(sdfed_secagg_params_choose(3, 0.33, 0.05, 0, &p, &err) == SDFED_OK && p.complete && p.k == 2 && p.t == 3 &&
              p.min_inputs == 3,
          "n 3: complete, t = ceil(0.67 x 3) = 3; got complete %d k %d t %d %s", p.complete, p.k, p.t, err.message);
    CHECK(sdfed_secagg_params_choose(5, 0.33, 0.33, 0, &p, &err) == SDFED_OK && p.complete && p.k == 4 && p.t == 4,
          "n 5, dropout and corrupt 0.33: complete, t 4; got %d %d %d", p.complete, p.k, p.t);
    CHECK(sdfed_secagg_params_choose(10, 0.45, 0.45, 0, &p, &err) == SDFED_OK && p.complete && p.k == 9 && p.t == 6,
          "n 10 at 0.45 and 0.45: complete, t = ceil(0.55 x 10) = 6 > ceil(4.5); got %d %d %d", p.complete, p.k, p.t);
    CHECK(sdfed_secagg_params_choose(4, 0.33, 0.05, 0, &p, &err) == SDFED_OK && !p.complete && p.k == 2,
          "n 4 at the defaults: H(2, 4) already passes");
    int complete_seen = 0;
    for (int n = 3; n <= 12; n++)
        if (sdfed_secagg_params_choose(n, 0.33, 0.33, 0, &p, NULL) == SDFED_OK && p.complete) {
            complete_seen++;
            CHECK(p.k == n - 1 && p.t > (int)(0.33 * n) + 1 - 1 && p.t >= 2, "n %d complete: k %d t %d", n, p.k, p.t);
        }
    CHECK(complete_seen > 0, "dropout and corrupt 0.33: some n <= 12 takes the complete graph");
}

static void test_refusals(void) {
    sdfed_secagg_params p;
    sdfed_error err = {0};
    CHECK(sdfed_secagg_params_choose(1, 0.1, 0.1, 0, &p, &err) == SDFED_ERR_ARG, "one client");
    CHECK(sdfed_secagg_params_choose(2000000, 0.1, 0.1, 0, &p, &err) == SDFED_ERR_ARG, "two million");
    CHECK(sdfed_secagg_params_choose(100, 1.0, 0.0, 0, &p, &err) == SDFED_ERR_ARG &&
              strstr(err.message, "dropout_rate"),
          "dropout 1: %s", err.message);
    CHECK(sdfed_secagg_params_choose(100, 0.1, -0.1, 0, &p, &err) == SDFED_ERR_ARG &&
              strstr(err.message, "corrupt_rate"),
          "corrupt -0.1: %s", err.message);
    CHECK(sdfed_secagg_params_choose(1000, 0.5, 0.5, 0, &p, &err) == SDFED_ERR_ARG,
          "0.5 + 0.5 > 0.9 (reference: infeasible)");
    CHECK(sdfed_secagg_params_choose(4, 0.8, 0.1, 0, &p, &err) == SDFED_ERR_ARG && strstr(err.message, "threshold"),
          "a complete graph's threshold of 1: %s", err.message);
}

/* bytes 0, 1, 2, ... times a seed: a fixed stream for the shuffle */
static unsigned char STREAM[1 << 16];

static sdfed_secagg_buffer fixed_stream(unsigned seed) {
    for (size_t i = 0; i < sizeof STREAM; i++) STREAM[i] = (unsigned char)((i * 2654435761u + seed * 40503u) >> 13);
    return (sdfed_secagg_buffer){.bytes = STREAM, .size = sizeof STREAM, .used = 0};
}

static void check_graph(const sdfed_secagg_graph *g, const char *what) {
    int n = g->n, k = g->k, ok_perm = 1, ok_degree = 1, ok_symmetric = 1, ok_slots = 1;
    char *seen = calloc((size_t)n, 1);
    for (int p = 0; p < n; p++) {
        if (seen[g->client_at[p]]) ok_perm = 0;
        seen[g->client_at[p]] = 1;
        if (g->position[g->client_at[p]] != p) ok_perm = 0;
    }
    for (int i = 0; i < n; i++) {
        int degree = 0;
        for (int j = 0; j < n; j++) {
            if (sdfed_secagg_graph_adjacent(g, i, j)) degree++;
            if (sdfed_secagg_graph_adjacent(g, i, j) != sdfed_secagg_graph_adjacent(g, j, i)) ok_symmetric = 0;
        }
        if (degree != k) ok_degree = 0;
        for (int s = 0; s <= k; s++) {
            int h = sdfed_secagg_graph_holder(g, i, s);
            if (h < 0 || sdfed_secagg_graph_slot(g, i, h) != s) ok_slots = 0;
        }
        int self = sdfed_secagg_graph_slot(g, i, i);
        if (self != (g->complete ? i : k / 2)) ok_slots = 0;
    }
    CHECK(ok_perm, "%s: the ring is a permutation", what);
    CHECK(ok_degree, "%s: every client has %d neighbours", what, k);
    CHECK(ok_symmetric, "%s: symmetric", what);
    CHECK(ok_slots, "%s: holder and slot are inverses, itself in slot k/2 (i when complete)", what);
    free(seen);
}

static void test_graph(void) {
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_error err = {0};
    const struct { int n, k; } shapes[] = {{10, 4}, {10, 8}, {1000, 72}, {7, 6}};
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
        sdfed_secagg_params p = {
            .n = shapes[c].n, .k = shapes[c].k, .t = 2, .min_inputs = 2, .complete = shapes[c].k == shapes[c].n - 1};
        sdfed_secagg_buffer buffer = fixed_stream(1);
        sdfed_secagg_bytes src = sdfed_secagg_buffer_source(&buffer);
        sdfed_secagg_graph g;
        CHECK(sdfed_secagg_graph_make(&g, &p, &src, &arena, &err) == SDFED_OK, "%s", err.message);
        char what[64];
        snprintf(what, sizeof what, "H(%d, %d)", shapes[c].k, shapes[c].n);
        check_graph(&g, what);
        if (g.complete) CHECK(buffer.used == 0, "the complete graph draws nothing");
    }
    /* the same bytes, the same ring; other bytes, another */
    sdfed_secagg_params p = {.n = 1000, .k = 72, .t = 24, .min_inputs = 670};
    sdfed_secagg_graph a, b, c;
    sdfed_secagg_buffer ba = fixed_stream(1), bb, bc;
    sdfed_secagg_bytes src = sdfed_secagg_buffer_source(&ba);
    CHECK(sdfed_secagg_graph_make(&a, &p, &src, &arena, &err) == SDFED_OK, "%s", err.message);
    int *first = malloc(sizeof *first * 1000);
    memcpy(first, a.client_at, sizeof *first * 1000);
    bb = fixed_stream(1);
    src = sdfed_secagg_buffer_source(&bb);
    CHECK(sdfed_secagg_graph_make(&b, &p, &src, &arena, &err) == SDFED_OK &&
              !memcmp(first, b.client_at, sizeof *first * 1000),
          "the same keystream, the same graph");
    bc = fixed_stream(2);
    src = sdfed_secagg_buffer_source(&bc);
    CHECK(sdfed_secagg_graph_make(&c, &p, &src, &arena, &err) == SDFED_OK &&
              memcmp(first, c.client_at, sizeof *first * 1000),
          "another keystream, another graph");
    int moved = 0;
    for (int i = 0; i < 1000; i++) moved += a.client_at[i] != i;
    CHECK(moved > 900, "the labels are shuffled (%d of 1000 moved)", moved);
    free(first);
    /* refusals */
    sdfed_secagg_buffer dry = {.bytes = STREAM, .size = 40, .used = 0};
    src = sdfed_secagg_buffer_source(&dry);
    CHECK(sdfed_secagg_graph_make(&a, &p, &src, &arena, &err) == SDFED_ERR_ARG && strstr(err.message, "ran dry"),
          "a keystream too short: %s", err.message);
    sdfed_secagg_params odd = {.n = 10, .k = 3, .t = 2, .min_inputs = 2};
    CHECK(sdfed_secagg_graph_make(&a, &odd, &src, &arena, &err) == SDFED_ERR_ARG, "an odd degree below n - 1");
    sdfed_arena_free(&arena);
}

int main(void) {
    test_reference();
    test_complete();
    test_refusals();
    test_graph();
    return check_report("test_secagg_params");
}
