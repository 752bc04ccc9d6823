/* The native side of the browser's secure round test (secagg.mjs): the
 * server (native/secagg_server.h, secagg_unmask.h) and the round's native
 * clients (native/secagg_client.h, OpenSSL), with some places of the round
 * left to the page's clients (web/secagg.js and the wasm in Chromium),
 * whose messages the test script carries over this program's stdin and
 * stdout, one line each.
 *   secagg_native TASK.json N ROUND P PAGE [DROP] [BAD]
 * TASK.json: the task as the page was given it (its secure_aggregation, its
 * seed); N clients in round ROUND, P coordinates; PAGE the page's places
 * ("1,3"); DROP a native place that leaves after it shared (-1: none); BAD
 * a page place whose unmasking request also names an alive neighbour as
 * dropped (-1: none). Every native client advertises at once.
 * Writes, first:
 *   plan N K T MIN_INPUTS
 *   g HEX                       the round's global (P floats, little-endian)
 *   page PLACE CLIENT SAMPLES HEX   for each page place: its rounding's
 *                               client number, its sample count, its x
 *   time advertise CPU_MS WALL_MS   a native client's mean time making its
 *                               keys and message
 *   end
 * then reads commands, answering each with lines and "end":
 *   msg PLACE HEX     the page client's message: "ok", or "refused CODE why"
 *   leave PLACE       the page client left: "ok"
 *   input PLACE HEX   the page client's input before masking ((P + 1) u64
 *                     little-endian), for the parity check when it added
 *                     noise (otherwise its input is computed here from its
 *                     x, g, samples and rounding, as the page must): "ok"
 *   next              the stage ends (its deadline passed): "stage NAME", or
 *                     "abandoned WHY"; the native clients due take part
 *                     ("time STAGE CPU_MS WALL_MS": one native client's mean
 *                     time in the stage), and each page place due gets its
 *                     request: "request PLACE HEX"; after the unmasking,
 *                     "done", the sum unmasked and compared with the plain
 *                     weighted mean of the same inputs
 *                     (sdfed_secagg_plain_global):
 *                     "parity same|differs WEIGHT SHA256" (of the global);
 *                     for each page client that sent its input, "noised
 *                     PLACE COUNT same-weight|other-weight": how many of its
 *                     values differ from its input without noise, and
 *                     whether its weight is that one's (noise spares it)
 * Exit status 0 unless a command could not be carried out. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/rng.h"
#include "fed/secagg_message.h"
#include "fed/secagg_task.h"
#include "fed/task.h"
#include "native/crypto.h"
#include "native/secagg_client.h"
#include "native/secagg_server.h"
#include "native/secagg_unmask.h"
#include "read_file.h"

static struct {
    sdfed_task task;
    sdfed_secagg_plan plan;
    int64_t round;
    int n, drop, bad;
    size_t P;
    unsigned char *page;           /* (n) 1 for the page's places */
    native_secagg_client *clients; /* (n) the native ones' */
    float *g, *x;                  /* g (P), x (n x P) */
    int64_t *samples;              /* (n) */
    uint64_t *given;               /* (n x (P + 1)) the page's inputs, when it sent them */
    unsigned char *has_given;
    native_secagg_server server;
    sdfed_buffer in, out;
    sdfed_error err;
} S;

static void die(const char *what) {
    fprintf(stderr, "secagg_native: %s: %s\n", what, S.err.message);
    exit(2);
}

static void hex_out(const char *head, const void *data, size_t n) {
    const unsigned char *b = data;
    fputs(head, stdout);
    for (size_t i = 0; i < n; i++) printf("%02x", b[i]);
    putchar('\n');
}

/* bytes (their count in *n) from hex; NULL when it is not hex */
static unsigned char *hex_in(const char *s, size_t *n) {
    size_t len = strcspn(s, " \n");
    if (len % 2) return NULL;
    unsigned char *out = malloc(len / 2 + 1);
    for (size_t i = 0; out && i < len / 2; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1) {
            free(out);
            return NULL;
        }
        out[i] = (unsigned char)v;
    }
    *n = len / 2;
    return out;
}

static double ms(const struct timespec *a, const struct timespec *b) {
    return (double)(b->tv_sec - a->tv_sec) * 1e3 + (double)(b->tv_nsec - a->tv_nsec) / 1e6;
}

/* the rounding of place p: its client number is 100 + p */
static int64_t client_number(int p) { return 100 + p; }

/* place p's step in the current stage: its request, its message, the server receiving it */
static void native_step(int p, sdfed_secagg_stage stage) {
    native_secagg_client *c = &S.clients[p];
    int rc = native_secagg_server_request(&S.server, p, &S.in, &S.err);
    if (rc) die("a request");
    if (stage == SDFED_SECAGG_SHARE)
        rc = native_secagg_client_share(c, S.in.data, S.in.size, &S.out, &S.err);
    else if (stage == SDFED_SECAGG_MASKED) {
        sdfed_rng state;
        sdfed_secagg_bytes rounding = sdfed_secagg_rounding(&state, S.task.seed, S.round, client_number(p));
        sdfed_secagg_bytes noise = native_crypto_os_source();
        rc = native_secagg_client_mask(c, S.in.data, S.in.size, S.x + S.P * (size_t)p, S.g, S.samples[p], &rounding,
                                       S.plan.sigma2 ? &noise : NULL, &S.out, &S.err);
    } else
        rc = native_secagg_client_unmask(c, S.in.data, S.in.size, &S.out, &S.err);
    if (rc) die("a native client's step");
    if (native_secagg_server_receive(&S.server, p, S.out.data, S.out.size, &S.err)) die("a native client's message");
}

/* the unmasking request to page place p naming one more client dropped: an alive neighbour */
static void bad_request(int p) {
    sdfed_secagg_unmask_request q;
    if (sdfed_secagg_read_unmask_request(S.in.data, S.in.size, S.round, S.n, &q, &S.err)) die("the request");
    int *alive = malloc(sizeof(int) * (size_t)S.n), *dropped = malloc(sizeof(int) * (size_t)(S.n + 1)), victim = -1;
    for (int i = 0; i < q.alive.count; i++) {
        alive[i] = (int)sdfed_secagg_be32(q.alive.entries + 4 * (size_t)i);
        if (alive[i] != p && victim < 0) victim = alive[i];
    }
    for (int i = 0; i < q.dropped.count; i++) dropped[i] = (int)sdfed_secagg_be32(q.dropped.entries + 4 * (size_t)i);
    dropped[q.dropped.count] = victim;
    if (sdfed_secagg_write_unmask_request(&S.in, S.round, q.inputs, alive, q.alive.count, dropped, q.dropped.count + 1,
                                          &S.err))
        die("a bad request");
    free(alive), free(dropped);
}

/* the sum unmasked against the plain mean of the same inputs */
static void finish(void) {
    float *next = malloc(sizeof *next * S.P), *plain = malloc(sizeof *plain * S.P);
    const uint64_t **inputs = malloc(sizeof *inputs * (size_t)S.n);
    uint64_t *mine = malloc(sizeof *mine * (S.P + 1) * (size_t)S.n);
    int64_t weight = 0, plain_weight = 0;
    if (native_secagg_server_finish(&S.server, S.g, next, &weight, &S.err)) die("unmasking");
    int m = 0;
    for (int p = 0; p < S.n; p++) {
        if (!sdfed_secagg_server_completed(&S.server.stages, p, SDFED_SECAGG_MASKED)) continue;
        if (!S.page[p]) {
            inputs[m++] = S.clients[p].core.input;
            continue;
        }
        /* the page's input as it must have made it without noise, the rounding from the seed */
        uint64_t *v = mine + (S.P + 1) * (size_t)p;
        sdfed_rng state;
        sdfed_secagg_bytes rounding = sdfed_secagg_rounding(&state, S.task.seed, S.round, client_number(p));
        sdfed_secagg_plan quiet = S.plan;
        quiet.sigma2 = 0;
        if (sdfed_secagg_input(&quiet, S.x + S.P * (size_t)p, S.g, S.samples[p], &rounding, NULL, v, &S.err))
            die("a page client's input");
        inputs[m++] = v;
        if (S.has_given[p]) { /* the page's own (with its noise): how many of its coordinates the noise moved */
            const uint64_t *own = S.given + (S.P + 1) * (size_t)p;
            size_t moved = 0;
            for (size_t j = 0; j <= S.P; j++) moved += own[j] != v[j];
            printf("noised %d %zu %s\n", p, moved, own[S.P] == v[S.P] ? "same-weight" : "other-weight");
            inputs[m - 1] = own;
        }
    }
    if (sdfed_secagg_plain_global(&S.plan, inputs, m, S.g, plain, &plain_weight, &S.err)) die("the plain mean");
    char sha[65];
    if (native_sha256_hex(next, sizeof *next * S.P, sha, &S.err)) die("the global's SHA-256");
    int same = weight == plain_weight && !memcmp(next, plain, sizeof *next * S.P);
    printf("parity %s %lld %s\n", same ? "same" : "differs", (long long)weight, sha);
    free(next), free(plain), free(inputs), free(mine);
}

static void next_stage(void) {
    sdfed_secagg_verdict v = native_secagg_server_check(&S.server, 1);
    if (v != SDFED_SECAGG_NEXT) {
        printf("abandoned at the %s stage\n", sdfed_secagg_stage_name(S.server.stages.stage));
        return;
    }
    if (native_secagg_server_advance(&S.server, &S.err)) die("advancing");
    sdfed_secagg_stage stage = S.server.stages.stage;
    printf("stage %s\n", sdfed_secagg_stage_name(stage));
    if (stage == SDFED_SECAGG_DONE) return finish();
    double cpu = 0, wall = 0;
    int timed = 0;
    for (int p = 0; p < S.n; p++) {
        if (S.page[p] || sdfed_secagg_server_gone(&S.server.stages, p) ||
            !sdfed_secagg_server_completed(&S.server.stages, p, stage - 1))
            continue;
        if (p == S.drop && stage == SDFED_SECAGG_MASKED) {
            if (native_secagg_server_leave(&S.server, p, &S.err)) die("leaving");
            continue;
        }
        struct timespec c0, w0, c1, w1;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        clock_gettime(CLOCK_MONOTONIC, &w0);
        native_step(p, stage);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        clock_gettime(CLOCK_MONOTONIC, &w1);
        cpu += ms(&c0, &c1);
        wall += ms(&w0, &w1);
        timed++;
    }
    if (timed) printf("time %s %.3f %.3f\n", sdfed_secagg_stage_name(stage), cpu / timed, wall / timed);
    for (int p = 0; p < S.n; p++) {
        if (!S.page[p] || sdfed_secagg_server_gone(&S.server.stages, p) ||
            !sdfed_secagg_server_completed(&S.server.stages, p, stage - 1))
            continue;
        if (native_secagg_server_request(&S.server, p, &S.in, &S.err)) die("a request to the page");
        if (p == S.bad && stage == SDFED_SECAGG_UNMASK) bad_request(p);
        char head[32];
        snprintf(head, sizeof head, "request %d ", p);
        hex_out(head, S.in.data, S.in.size);
    }
}

static void command(char *line) {
    int p = -1, at = 0;
    char verb[16];
    if (sscanf(line, "%15s %n%d %n", verb, &at, &p, &at) < 1) return;
    size_t len = 0;
    unsigned char *bytes = NULL;
    if ((!strcmp(verb, "msg") || !strcmp(verb, "input")) && !(bytes = hex_in(line + at, &len))) {
        printf("refused 0 not hex\n");
    } else if (!strcmp(verb, "msg") && p >= 0 && p < S.n && S.page[p]) {
        int rc = native_secagg_server_receive(&S.server, p, bytes, len, &S.err);
        if (rc)
            printf("refused %d %s\n", rc, S.err.message);
        else
            printf("ok\n");
    } else if (!strcmp(verb, "input") && p >= 0 && p < S.n && S.page[p] && len == 8 * (S.P + 1)) {
        for (size_t j = 0; j <= S.P; j++) {
            uint64_t v = 0;
            for (int i = 7; i >= 0; i--) v = v << 8 | bytes[8 * j + (size_t)i];
            S.given[(S.P + 1) * (size_t)p + j] = v;
        }
        S.has_given[p] = 1;
        printf("ok\n");
    } else if (!strcmp(verb, "leave") && p >= 0 && p < S.n) {
        if (native_secagg_server_leave(&S.server, p, &S.err)) die("leaving");
        printf("ok\n");
    } else if (!strcmp(verb, "next")) {
        next_stage();
    } else {
        printf("refused 0 unknown command %s\n", verb);
    }
    free(bytes);
    printf("end\n");
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: secagg_native TASK.json N ROUND P PAGE [DROP] [BAD]\n");
        return 2;
    }
    size_t size = 0;
    char *json = (char *)read_file(argv[1], &size);
    if (!json) return fprintf(stderr, "secagg_native: cannot read %s\n", argv[1]), 2;
    if (sdfed_task_parse(&S.task, json, size, &S.err) || sdfed_task_validate(&S.task, &S.err)) die("the task");
    free(json);
    S.n = atoi(argv[2]);
    S.round = atoll(argv[3]);
    S.P = (size_t)atol(argv[4]);
    S.drop = argc > 6 ? atoi(argv[6]) : -1;
    S.bad = argc > 7 ? atoi(argv[7]) : -1;
    if (sdfed_secagg_plan_make(&S.task, S.n, S.P, &S.plan, &S.err)) die("the plan");
    S.page = calloc((size_t)S.n, 1);
    S.has_given = calloc((size_t)S.n, 1);
    S.clients = calloc((size_t)S.n, sizeof *S.clients);
    S.g = malloc(sizeof *S.g * S.P);
    S.x = malloc(sizeof *S.x * S.P * (size_t)S.n);
    S.samples = malloc(sizeof *S.samples * (size_t)S.n);
    S.given = malloc(sizeof *S.given * (S.P + 1) * (size_t)S.n);
    for (char *s = strtok(argv[5], ","); s; s = strtok(NULL, ","))
        if (atoi(s) >= 0 && atoi(s) < S.n) S.page[atoi(s)] = 1;
    /* the round's global and each client's copy after training: changes up to 0.6 (past the clip) */
    sdfed_rng rng;
    sdfed_rng_seed(&rng, 20261128);
    for (size_t j = 0; j < S.P; j++) S.g[j] = (float)(0.02 * sdfed_rng_normal(&rng));
    for (int p = 0; p < S.n; p++) {
        S.samples[p] = 16 + 997 * p; /* some beyond max_weight */
        for (size_t j = 0; j < S.P; j++)
            S.x[S.P * (size_t)p + j] = S.g[j] + (float)(0.6 * (2 * sdfed_rng_uniform(&rng) - 1));
    }
    unsigned char key[32];
    if (native_crypto_random(key, sizeof key, &S.err) ||
        native_secagg_server_start(&S.server, &S.plan, S.round, key, &S.err))
        die("the server");
    printf("plan %d %d %d %d\n", S.plan.params.n, S.plan.params.k, S.plan.params.t, S.plan.params.min_inputs);
    hex_out("g ", S.g, sizeof *S.g * S.P);
    double cpu = 0, wall = 0;
    int timed = 0;
    for (int p = 0; p < S.n; p++) {
        if (S.page[p]) {
            char head[64];
            snprintf(head, sizeof head, "page %d %lld %lld ", p, (long long)client_number(p), (long long)S.samples[p]);
            hex_out(head, S.x + S.P * (size_t)p, sizeof *S.x * S.P);
            continue;
        }
        sdfed_secagg_bytes secret = native_crypto_os_source();
        struct timespec c0, w0, c1, w1;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        clock_gettime(CLOCK_MONOTONIC, &w0);
        if (native_secagg_client_advertise(&S.clients[p], &S.plan, S.round, &secret, &S.out, &S.err))
            die("a native client's keys");
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        clock_gettime(CLOCK_MONOTONIC, &w1);
        cpu += ms(&c0, &c1);
        wall += ms(&w0, &w1);
        timed++;
        if (native_secagg_server_receive(&S.server, p, S.out.data, S.out.size, &S.err)) die("a native client's keys");
    }
    if (timed) printf("time advertise %.3f %.3f\n", cpu / timed, wall / timed);
    printf("end\n");
    fflush(stdout);
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, stdin) > 0) command(line);
    free(line);
    for (int p = 0; p < S.n; p++) native_secagg_client_free(&S.clients[p]);
    native_secagg_server_free(&S.server);
    sdfed_task_free(&S.task);
    return 0;
}
