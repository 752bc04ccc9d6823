/* The local prompt rule: a client's S_l and local steps (local_prompt.h). */
#include "fed/local_prompt.h"

#include <assert.h>
#include <math.h>

const sdfed_name sdfed_local_rule_names[] = {
    {.name = "random", .value = SDFED_LOCAL_RULE_RANDOM},
    {.name = "fixed", .value = SDFED_LOCAL_RULE_FIXED},
    {.name = "adaptive", .value = SDFED_LOCAL_RULE_ADAPTIVE},
};
static_assert(sizeof sdfed_local_rule_names / sizeof sdfed_local_rule_names[0] == SDFED_LOCAL_RULE_COUNT,
              "a name for every rule");

int sdfed_local_prompt_check(const sdfed_local_prompt *lp, int max_length, sdfed_error *err) {
    if (lp->n_lengths < 1 || lp->n_lengths > SDFED_LOCAL_PROMPT_MAX_LENGTHS)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "task: key 'local_prompt.lengths' must list 1..%d lengths, got %d",
                          SDFED_LOCAL_PROMPT_MAX_LENGTHS, lp->n_lengths);
    for (int i = 0; i < lp->n_lengths; i++) {
        int len = lp->lengths[i];
        if (i > 0 && len <= lp->lengths[i - 1])
            return sdfed_fail(err, SDFED_ERR_FORMAT,
                              "task: key 'local_prompt.lengths' must be strictly ascending (%d after %d)", len,
                              lp->lengths[i - 1]);
        if (len < 1 || (max_length > 0 && len > max_length))
            return sdfed_fail(err, SDFED_ERR_FORMAT,
                              "task: key 'local_prompt.lengths' holds %d, outside 1..%d (the longest prompt the "
                              "model's context holds with every class)",
                              len, max_length > 0 ? max_length : len);
    }
    if (lp->rule == SDFED_LOCAL_RULE_ADAPTIVE && !(lp->budget_s > 0))
        return sdfed_fail(err, SDFED_ERR_FORMAT,
                          "task: key 'local_prompt.budget_s' must be > 0 for the adaptive rule (seconds of local "
                          "work a round)");
    if (!(lp->images_per_token >= 0))
        return sdfed_fail(err, SDFED_ERR_FORMAT, "task: key 'local_prompt.images_per_token' must be >= 0");
    return SDFED_OK;
}

int sdfed_local_prompt_data_cap(const sdfed_local_prompt *lp, int n_train) {
    int cap = lp->lengths[0];
    for (int i = 1; i < lp->n_lengths; i++)
        if (lp->lengths[i] * lp->images_per_token <= n_train) cap = lp->lengths[i];
    return cap;
}

int sdfed_local_prompt_plan(const sdfed_local_prompt *lp, int draw, const double *step_s, int n_train, int local_epochs,
                            int batch_size, sdfed_local_plan *out, sdfed_error *err) {
    *out = (sdfed_local_plan){0};
    int rc = sdfed_local_prompt_check(lp, 0, err);
    if (rc) return rc;
    if (n_train < 0 || local_epochs < 1 || batch_size < 1 || draw < 0 || draw >= lp->n_lengths)
        return sdfed_fail(err, SDFED_ERR_ARG, "local prompt: %d images, %d epochs, batches of %d, draw %d", n_train,
                          local_epochs, batch_size, draw);
    if (!step_s && lp->rule == SDFED_LOCAL_RULE_ADAPTIVE)
        return sdfed_fail(err, SDFED_ERR_ARG, "local prompt: the adaptive rule needs the device's step times");
    for (int i = 0; step_s && i < lp->n_lengths; i++)
        if (!(step_s[i] > 0) || !isfinite(step_s[i]))
            return sdfed_fail(err, SDFED_ERR_ARG, "local prompt: step times must be finite and > 0 (%g s at length %d)",
                              step_s[i], lp->lengths[i]);
    int epoch_steps = local_epochs * ((n_train + batch_size - 1) / batch_size);
    int index = lp->rule == SDFED_LOCAL_RULE_RANDOM ? draw : lp->n_lengths - 1;
    int steps = epoch_steps;
    if (lp->rule == SDFED_LOCAL_RULE_ADAPTIVE) {
        int cap = sdfed_local_prompt_data_cap(lp, n_train);
        index = -1;
        for (int i = 0; i < lp->n_lengths && lp->lengths[i] <= cap; i++)
            if (epoch_steps * step_s[i] <= lp->budget_s) index = i;
        if (index < 0) { /* not even the shortest finishes: as many of its steps as the budget holds */
            index = 0;
            double fit = floor(lp->budget_s / step_s[0]);
            steps = fit < epoch_steps ? (int)fit : epoch_steps;
        }
    }
    int64_t used = (int64_t)steps * batch_size;
    *out = (sdfed_local_plan){
        .length = lp->lengths[index],
        .steps = steps,
        .epoch_steps = epoch_steps,
        .samples = steps == epoch_steps || used > n_train ? n_train : used,
        .seconds = step_s ? steps * step_s[index] : 0.0,
    };
    return SDFED_OK;
}

double sdfed_local_prompt_deadline_s(const sdfed_local_prompt *lp) {
    if (!(lp->n_lengths > 0 && lp->budget_s > 0)) return 0;
    return SDFED_LOCAL_PROMPT_DEADLINE_FACTOR * lp->budget_s + SDFED_LOCAL_PROMPT_DEADLINE_SLACK_S;
}

int sdfed_local_prompt_drifted(double expected_s, double round_step_s) {
    if (!(expected_s > 0 && round_step_s > 0)) return 0;
    return round_step_s > SDFED_LOCAL_PROMPT_DRIFT_SLOWER * expected_s ||
           round_step_s < SDFED_LOCAL_PROMPT_DRIFT_FASTER * expected_s;
}

int sdfed_step_watch_round(sdfed_step_watch *w, double round_step_s) {
    if (w->expected_s > 0) return sdfed_local_prompt_drifted(w->expected_s, round_step_s);
    if (round_step_s > 0) w->expected_s = round_step_s;
    return 0;
}

void sdfed_step_watch_measured(sdfed_step_watch *w, double before_s, double now_s) {
    w->expected_s = before_s > 0 && now_s > 0 ? w->expected_s * (now_s / before_s) : 0;
}
