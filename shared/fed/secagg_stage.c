/* Secure aggregation's stage machine (see secagg_stage.h). */
#include "fed/secagg_stage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fed/secagg_ring.h"

/* per-client flags: bit `stage` for each stage completed, then these */
enum { GONE = 16, NEED_SEED = 32, NEED_KEY = 64 };

static const char *const CODE_NAMES[SDFED_SECAGG_CODE_END - SDFED_SECAGG_WRONG_STAGE] = {
    [SDFED_SECAGG_WRONG_STAGE - SDFED_SECAGG_WRONG_STAGE] = "secagg_wrong_stage",
    [SDFED_SECAGG_NOT_IN_ROUND - SDFED_SECAGG_WRONG_STAGE] = "secagg_not_in_round",
    [SDFED_SECAGG_REPEATED - SDFED_SECAGG_WRONG_STAGE] = "secagg_repeated",
    [SDFED_SECAGG_MISSED_STAGE - SDFED_SECAGG_WRONG_STAGE] = "secagg_missed_stage",
    [SDFED_SECAGG_BOTH_SETS - SDFED_SECAGG_WRONG_STAGE] = "secagg_both_sets",
    [SDFED_SECAGG_NOT_NEIGHBOUR - SDFED_SECAGG_WRONG_STAGE] = "secagg_not_neighbour",
    [SDFED_SECAGG_INCONSISTENT - SDFED_SECAGG_WRONG_STAGE] = "secagg_inconsistent",
    [SDFED_SECAGG_SELF_NOT_ALIVE - SDFED_SECAGG_WRONG_STAGE] = "secagg_self_not_alive",
    [SDFED_SECAGG_TOO_FEW - SDFED_SECAGG_WRONG_STAGE] = "secagg_too_few",
};
_Static_assert(sizeof CODE_NAMES / sizeof CODE_NAMES[0] == SDFED_SECAGG_CODE_END - SDFED_SECAGG_WRONG_STAGE,
               "a name for every secagg code");

static const char *const STAGE_NAMES[SDFED_SECAGG_STAGE_COUNT] = {
    [SDFED_SECAGG_ADVERTISE] = "advertise", [SDFED_SECAGG_SHARE] = "share", [SDFED_SECAGG_MASKED] = "masked",
    [SDFED_SECAGG_UNMASK] = "unmask",       [SDFED_SECAGG_DONE] = "done",   [SDFED_SECAGG_ABANDONED] = "abandoned",
};
_Static_assert(sizeof STAGE_NAMES / sizeof STAGE_NAMES[0] == SDFED_SECAGG_STAGE_COUNT, "a name for every stage");

const char *sdfed_secagg_code_name(int code) {
    if (code < SDFED_SECAGG_WRONG_STAGE || code >= SDFED_SECAGG_CODE_END) return NULL;
    return CODE_NAMES[code - SDFED_SECAGG_WRONG_STAGE];
}

const char *sdfed_secagg_stage_name(sdfed_secagg_stage stage) {
    return stage >= 0 && stage < SDFED_SECAGG_STAGE_COUNT ? STAGE_NAMES[stage] : "unknown";
}

static int bit(sdfed_secagg_stage stage) { return 1 << stage; }

static int valid_client(const sdfed_secagg_server *s, int client) { return client >= 0 && client < s->params.n; }

int sdfed_secagg_server_completed(const sdfed_secagg_server *s, int client, sdfed_secagg_stage stage) {
    return valid_client(s, client) && stage < SDFED_SECAGG_DONE && (s->flags[client] & bit(stage));
}

int sdfed_secagg_server_gone(const sdfed_secagg_server *s, int client) {
    return valid_client(s, client) && (s->flags[client] & GONE);
}

/* whether the client is expected in the current stage */
static int expected(const sdfed_secagg_server *s, int client) {
    return s->stage == SDFED_SECAGG_ADVERTISE || (s->flags[client] & bit(s->stage - 1));
}

int sdfed_secagg_server_start(sdfed_secagg_server *s, int64_t round, const sdfed_secagg_params *p,
                              const sdfed_secagg_graph *g, sdfed_arena *arena, sdfed_error *err) {
    if (g->n != p->n || g->k != p->k)
        return sdfed_fail(err, SDFED_ERR_ARG,
                          "secagg round %lld: a graph of %d clients and %d neighbours for %d and %d", (long long)round,
                          g->n, g->k, p->n, p->k);
    if (p->t < 2 || p->t > p->k + 1 || p->min_inputs < 1 || p->min_inputs > p->n)
        return sdfed_fail(err, SDFED_ERR_ARG, "secagg round %lld: threshold %d of %d holders, %d inputs of %d",
                          (long long)round, p->t, p->k + 1, p->min_inputs, p->n);
    size_t n = (size_t)p->n;
    unsigned char *flags = sdfed_arena_alloc(arena, n);
    int *answered = sdfed_arena_alloc(arena, sizeof *answered * n);
    int *reachable = sdfed_arena_alloc(arena, sizeof *reachable * n);
    if (!flags || !answered || !reachable)
        return sdfed_fail(err, SDFED_ERR_NOMEM, "secagg round %lld: out of memory", (long long)round);
    memset(flags, 0, n);
    memset(answered, 0, sizeof *answered * n);
    memset(reachable, 0, sizeof *reachable * n);
    *s = (sdfed_secagg_server){.round = round,
                               .params = *p,
                               .graph = g,
                               .stage = SDFED_SECAGG_ADVERTISE,
                               .flags = flags,
                               .answered = answered,
                               .reachable = reachable,
                               .due = p->n};
    return SDFED_OK;
}

int sdfed_secagg_server_receive(sdfed_secagg_server *s, int client, sdfed_secagg_stage stage, sdfed_error *err) {
    if (s->stage != stage || stage >= SDFED_SECAGG_DONE)
        return sdfed_fail(err, SDFED_SECAGG_WRONG_STAGE, "secagg round %lld is at its %s stage, not %s",
                          (long long)s->round, sdfed_secagg_stage_name(s->stage), sdfed_secagg_stage_name(stage));
    if (!valid_client(s, client) || (s->flags[client] & GONE))
        return sdfed_fail(err, SDFED_SECAGG_NOT_IN_ROUND, "client %d is not in secagg round %lld", client,
                          (long long)s->round);
    if (!expected(s, client))
        return sdfed_fail(err, SDFED_SECAGG_MISSED_STAGE, "client %d did not complete the %s stage of round %lld",
                          client, sdfed_secagg_stage_name(stage - 1), (long long)s->round);
    if (s->flags[client] & bit(stage))
        return sdfed_fail(err, SDFED_SECAGG_REPEATED, "client %d's second %s message in round %lld", client,
                          sdfed_secagg_stage_name(stage), (long long)s->round);
    s->flags[client] |= (unsigned char)bit(stage);
    s->completed++;
    s->due--;
    if (stage == SDFED_SECAGG_UNMASK) /* its answer brings a share of each secret it holds */
        for (int slot = 0; slot <= s->params.k; slot++) {
            int j = sdfed_secagg_graph_holder(s->graph, client, slot);
            if (!(s->flags[j] & (NEED_SEED | NEED_KEY))) continue;
            if (++s->answered[j] == s->params.t) s->short_of_t--;
        }
    return SDFED_OK;
}

int sdfed_secagg_server_leave(sdfed_secagg_server *s, int client, sdfed_error *err) {
    if (!valid_client(s, client))
        return sdfed_fail(err, SDFED_SECAGG_NOT_IN_ROUND, "client %d is not in secagg round %lld", client,
                          (long long)s->round);
    if ((s->flags[client] & GONE) || s->stage >= SDFED_SECAGG_DONE) return SDFED_OK;
    s->flags[client] |= GONE;
    if (!expected(s, client) || (s->flags[client] & bit(s->stage))) return SDFED_OK;
    s->due--;
    if (s->stage == SDFED_SECAGG_UNMASK) /* the shares it held will not come */
        for (int slot = 0; slot <= s->params.k; slot++) {
            int j = sdfed_secagg_graph_holder(s->graph, client, slot);
            if (!(s->flags[j] & (NEED_SEED | NEED_KEY))) continue;
            if (--s->reachable[j] == s->params.t - 1) s->lost++;
        }
    return SDFED_OK;
}

sdfed_secagg_verdict sdfed_secagg_server_check(const sdfed_secagg_server *s, int deadline_passed) {
    if (s->stage >= SDFED_SECAGG_DONE) return SDFED_SECAGG_WAIT;
    if (s->stage == SDFED_SECAGG_UNMASK) {
        if (s->lost) return SDFED_SECAGG_ABANDON;
        if (s->due == 0 || deadline_passed) return s->short_of_t ? SDFED_SECAGG_ABANDON : SDFED_SECAGG_NEXT;
        return SDFED_SECAGG_WAIT;
    }
    if (s->completed + s->due < s->params.min_inputs) return SDFED_SECAGG_ABANDON;
    if (s->due == 0 || deadline_passed)
        return s->completed >= s->params.min_inputs ? SDFED_SECAGG_NEXT : SDFED_SECAGG_ABANDON;
    return SDFED_SECAGG_WAIT;
}

void sdfed_secagg_server_abandon(sdfed_secagg_server *s, const char *why) {
    s->stage = SDFED_SECAGG_ABANDONED;
    snprintf(s->why, sizeof s->why, "%s", why ? why : "abandoned");
}

/* the unmasking's secrets and counters, once U3 and D are frozen */
static void start_unmasking(sdfed_secagg_server *s) {
    const int n = s->params.n, k = s->params.k, t = s->params.t;
    const int masked = bit(SDFED_SECAGG_MASKED), shared = bit(SDFED_SECAGG_SHARE);
    s->short_of_t = 0;
    s->lost = 0;
    for (int j = 0; j < n; j++) {
        int need = 0;
        if (s->flags[j] & masked) {
            need = NEED_SEED;
        } else if (s->flags[j] & shared) {
            for (int slot = 0; slot <= k && !need; slot++) {
                int a = sdfed_secagg_graph_holder(s->graph, j, slot);
                if (a != j && (s->flags[a] & masked)) need = NEED_KEY;
            }
        }
        s->flags[j] |= (unsigned char)need;
        s->answered[j] = 0;
        s->reachable[j] = 0;
        if (!need) continue;
        for (int slot = 0; slot <= k; slot++) {
            int h = sdfed_secagg_graph_holder(s->graph, j, slot);
            if ((s->flags[h] & masked) && !(s->flags[h] & GONE)) s->reachable[j]++;
        }
        s->short_of_t++;
        if (s->reachable[j] < t) s->lost++;
    }
}

int sdfed_secagg_server_advance(sdfed_secagg_server *s, sdfed_error *err) {
    if (s->stage >= SDFED_SECAGG_DONE)
        return sdfed_fail(err, SDFED_SECAGG_WRONG_STAGE, "secagg round %lld is %s", (long long)s->round,
                          sdfed_secagg_stage_name(s->stage));
    if (s->stage == SDFED_SECAGG_UNMASK) {
        if (s->lost || s->short_of_t)
            return sdfed_fail(err, SDFED_ERR_ARG, "secagg round %lld: %d secrets still lack %d shares",
                              (long long)s->round, s->short_of_t, s->params.t);
        s->stage = SDFED_SECAGG_DONE;
        return SDFED_OK;
    }
    if (s->completed < s->params.min_inputs)
        return sdfed_fail(err, SDFED_ERR_ARG, "secagg round %lld: %d clients completed the %s stage, %d needed",
                          (long long)s->round, s->completed, sdfed_secagg_stage_name(s->stage), s->params.min_inputs);
    s->stage++;
    s->completed = 0;
    s->due = 0;
    for (int i = 0; i < s->params.n; i++)
        if (expected(s, i) && !(s->flags[i] & GONE)) s->due++;
    if (s->stage == SDFED_SECAGG_UNMASK) start_unmasking(s);
    return SDFED_OK;
}

int sdfed_secagg_server_needs(const sdfed_secagg_server *s, int j) {
    if (!valid_client(s, j) || s->stage < SDFED_SECAGG_UNMASK || s->stage == SDFED_SECAGG_ABANDONED)
        return SDFED_SECAGG_NONE;
    if (s->flags[j] & NEED_SEED) return SDFED_SECAGG_SELF_SEED;
    return s->flags[j] & NEED_KEY ? SDFED_SECAGG_MASK_KEY : SDFED_SECAGG_NONE;
}

static int compare_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

int sdfed_secagg_server_request(const sdfed_secagg_server *s, int client, int *alive, int *n_alive, int *dropped,
                                int *n_dropped, sdfed_error *err) {
    if (s->stage != SDFED_SECAGG_UNMASK)
        return sdfed_fail(err, SDFED_SECAGG_WRONG_STAGE, "secagg round %lld is at its %s stage, not unmask",
                          (long long)s->round, sdfed_secagg_stage_name(s->stage));
    if (!valid_client(s, client) || (s->flags[client] & GONE))
        return sdfed_fail(err, SDFED_SECAGG_NOT_IN_ROUND, "client %d is not in secagg round %lld", client,
                          (long long)s->round);
    if (!(s->flags[client] & bit(SDFED_SECAGG_MASKED)))
        return sdfed_fail(err, SDFED_SECAGG_MISSED_STAGE, "client %d's masked input is not in round %lld", client,
                          (long long)s->round);
    *n_alive = 0;
    *n_dropped = 0;
    for (int slot = 0; slot <= s->params.k; slot++) {
        int h = sdfed_secagg_graph_holder(s->graph, client, slot);
        if (s->flags[h] & bit(SDFED_SECAGG_MASKED))
            alive[(*n_alive)++] = h;
        else if (s->flags[h] & bit(SDFED_SECAGG_SHARE))
            dropped[(*n_dropped)++] = h;
    }
    qsort(alive, (size_t)*n_alive, sizeof *alive, compare_int);
    qsort(dropped, (size_t)*n_dropped, sizeof *dropped, compare_int);
    return SDFED_OK;
}

int sdfed_secagg_server_terms(const sdfed_secagg_server *s, sdfed_secagg_term *terms, int capacity, int *count,
                              sdfed_error *err) {
    if (s->stage != SDFED_SECAGG_DONE)
        return sdfed_fail(err, SDFED_SECAGG_WRONG_STAGE, "secagg round %lld is %s, not done", (long long)s->round,
                          sdfed_secagg_stage_name(s->stage));
    int used = 0;
    for (int j = 0; j < s->params.n; j++) {
        if (s->flags[j] & NEED_SEED) {
            if (used == capacity) return sdfed_fail(err, SDFED_ERR_ARG, "secagg: more than %d mask terms", capacity);
            terms[used++] = (sdfed_secagg_term){.kind = SDFED_SECAGG_SELF_SEED, .a = j, .b = j, .sign = -1};
        }
        if (!(s->flags[j] & NEED_KEY)) continue;
        for (int slot = 0; slot <= s->params.k; slot++) {
            int a = sdfed_secagg_graph_holder(s->graph, j, slot);
            if (a == j || !(s->flags[a] & bit(SDFED_SECAGG_MASKED))) continue;
            if (used == capacity) return sdfed_fail(err, SDFED_ERR_ARG, "secagg: more than %d mask terms", capacity);
            terms[used++] = (sdfed_secagg_term){
                .kind = SDFED_SECAGG_MASK_KEY, .a = a, .b = j, .sign = -sdfed_secagg_pair_sign(a, j)};
        }
    }
    *count = used;
    return SDFED_OK;
}

/* ---- the client --------------------------------------------------------- */

static int slot_of(const sdfed_secagg_client_view *v, int client) {
    for (int slot = 0; slot < v->holders; slot++)
        if (v->holder[slot] == client) return slot;
    return -1;
}

static int refuse(unsigned char *reply, int holders, sdfed_error *err, int code, const char *what, int client) {
    memset(reply, SDFED_SECAGG_NONE, (size_t)holders);
    return sdfed_fail(err, code, "unmasking request refused: %s (client %d)", what, client);
}

int sdfed_secagg_client_check_request(const sdfed_secagg_client_view *v, const int *alive, int n_alive,
                                      const int *dropped, int n_dropped, int inputs, unsigned char *reply,
                                      sdfed_error *err) {
    const int holders = v->holders;
    memset(reply, SDFED_SECAGG_NONE, (size_t)holders);
    for (int i = 0; i < n_alive; i++) {
        int slot = slot_of(v, alive[i]);
        if (slot < 0) return refuse(reply, holders, err, SDFED_SECAGG_NOT_NEIGHBOUR, "not a neighbour", alive[i]);
        if (reply[slot]) return refuse(reply, holders, err, SDFED_SECAGG_REPEATED, "named alive twice", alive[i]);
        reply[slot] = SDFED_SECAGG_SELF_SEED;
    }
    for (int i = 0; i < n_dropped; i++) {
        int slot = slot_of(v, dropped[i]);
        if (slot < 0) return refuse(reply, holders, err, SDFED_SECAGG_NOT_NEIGHBOUR, "not a neighbour", dropped[i]);
        if (reply[slot] == SDFED_SECAGG_SELF_SEED)
            return refuse(reply, holders, err, SDFED_SECAGG_BOTH_SETS, "named both alive and dropped", dropped[i]);
        if (reply[slot]) return refuse(reply, holders, err, SDFED_SECAGG_REPEATED, "named dropped twice", dropped[i]);
        reply[slot] = SDFED_SECAGG_MASK_KEY;
    }
    int self = slot_of(v, v->self);
    if (self < 0 || reply[self] != SDFED_SECAGG_SELF_SEED)
        return refuse(reply, holders, err, SDFED_SECAGG_SELF_NOT_ALIVE, "this client is not named alive", v->self);
    for (int slot = 0; slot < holders; slot++) {
        if (slot == self) continue;
        if (v->masked_with[slot] && !reply[slot])
            return refuse(reply, holders, err, SDFED_SECAGG_INCONSISTENT, "a neighbour it masked with is not named",
                          v->holder[slot]);
        if (!v->masked_with[slot] && reply[slot])
            return refuse(reply, holders, err, SDFED_SECAGG_INCONSISTENT,
                          "a neighbour whose shares it never received is named", v->holder[slot]);
    }
    if (inputs < v->min_inputs) {
        memset(reply, SDFED_SECAGG_NONE, (size_t)holders);
        return sdfed_fail(err, SDFED_SECAGG_TOO_FEW,
                          "unmasking request refused: %d inputs, the round accepts %d at least", inputs, v->min_inputs);
    }
    return SDFED_OK;
}
