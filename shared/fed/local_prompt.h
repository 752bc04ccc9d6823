/* The rule that fits a client's local prompt to its device and its data
 * (the task's "local_prompt" key, fed/task.h): which local prompt length
 * S_l a client keeps and how many local steps it takes a round. A pure
 * function of its inputs: the step times are the caller's (a client's
 * measurement at join, a flag, or a simulated device's profile), never a
 * clock's.
 *   random    S_l drawn per client from the lengths (the task's seed,
 *             SDFED_STREAM_LENGTHS); the task's whole local epochs
 *   fixed     the longest listed length for every client; the whole epochs
 *   adaptive  the longest listed length that (a) the client's data supports,
 *             lengths[i] <= n_train / images_per_token (the shortest is
 *             always allowed), and (b) whose whole local epochs fit the
 *             budget on this device, epoch_steps x step_s[i] <= budget_s;
 *             when none fits, the shortest for as many steps as the budget
 *             holds, floor(budget_s / step_s[0]) (possibly none: the client
 *             cannot contribute within the budget)
 * A plan's samples are the training samples its steps use (the client's
 * aggregation weight): all n_train for whole epochs, else
 * min(n_train, steps x batch_size). */
#ifndef SDFED_FED_LOCAL_PROMPT_H
#define SDFED_FED_LOCAL_PROMPT_H

#include <stdint.h>

#include "base/names.h"
#include "base/status.h"

enum { SDFED_LOCAL_PROMPT_MAX_LENGTHS = 16 };

typedef enum sdfed_local_rule {
    SDFED_LOCAL_RULE_RANDOM,
    SDFED_LOCAL_RULE_FIXED,
    SDFED_LOCAL_RULE_ADAPTIVE,
    SDFED_LOCAL_RULE_COUNT
} sdfed_local_rule;

extern const sdfed_name sdfed_local_rule_names[];

/* The task's key; n_lengths 0: absent (the task's local_prompt_length then) */
typedef struct sdfed_local_prompt {
    int rule; /* sdfed_local_rule */
    int n_lengths;
    int lengths[SDFED_LOCAL_PROMPT_MAX_LENGTHS]; /* strictly ascending */
    double budget_s;                             /* a round's local work on a device, seconds (0: none) */
    double images_per_token;                     /* the data cap (see above) */
} sdfed_local_prompt;

/* The data cap's default: none. The simulator found the longest prompt
 * best at every data size it tried, down to 2 images a client
 * (docs/tasks.md has the evidence); a host whose runs show a long prompt
 * overfitting a few images sets images_per_token. */
#define SDFED_LOCAL_PROMPT_IMAGES_PER_TOKEN 0.0

/* Whether the key holds together: 1..SDFED_LOCAL_PROMPT_MAX_LENGTHS
 * lengths, strictly ascending, each within 1..max_length (the longest prompt
 * the model's context holds with every class: sdfed_classes_max_prompt;
 * 0: unchecked), and a budget for the adaptive rule. Errors name the key
 * ('local_prompt.lengths', 'local_prompt.budget_s'). */
int sdfed_local_prompt_check(const sdfed_local_prompt *lp, int max_length, sdfed_error *err);

/* The longest listed length that n_train images support (the shortest at least). */
int sdfed_local_prompt_data_cap(const sdfed_local_prompt *lp, int n_train);

/* A client's local work a round. */
typedef struct sdfed_local_plan {
    int length;      /* S_l */
    int steps;       /* local steps a round */
    int epoch_steps; /* the steps of the task's whole local epochs */
    int64_t samples; /* the training samples those steps use: the aggregation weight */
    double seconds;  /* steps x the step time at S_l (0 when not known) */
} sdfed_local_plan;

/* The plan of a client with n_train images, local_epochs passes in batches
 * of batch_size. draw: the client's draw from SDFED_STREAM_LENGTHS, an index
 * below n_lengths (the random rule's length). step_s: the device's seconds a
 * step at each listed length, each finite and > 0 (else the error names
 * 'step times'); the adaptive rule needs them, the others may take NULL
 * (seconds 0). */
int sdfed_local_prompt_plan(const sdfed_local_prompt *lp, int draw, const double *step_s, int n_train, int local_epochs,
                            int batch_size, sdfed_local_plan *out, sdfed_error *err);

/* Whether a device's step time drifted from what was expected: a round's
 * steps took more than SDFED_LOCAL_PROMPT_DRIFT_SLOWER or less than
 * SDFED_LOCAL_PROMPT_DRIFT_FASTER times expected_s a step (round_step_s
 * and expected_s > 0; else no drift). The client then measures again, and
 * its next metrics carry the new figures; its length and local work stay
 * as they were chosen. */
#define SDFED_LOCAL_PROMPT_DRIFT_SLOWER 1.5
#define SDFED_LOCAL_PROMPT_DRIFT_FASTER 0.67
int sdfed_local_prompt_drifted(double expected_s, double round_step_s);

/* A device's rounds watched for drift (the headless client's, and the
 * page's through its wasm). A round's steps hold work the measured ones do
 * not, so rounds are compared with a round: the first after the first
 * measurement is the reference. When a round drifted from it, the device
 * is measured again, and the reference is scaled by how the measured step
 * time at the plan's length changed (on one device a round's steps and the
 * measured ones keep their ratio): the very next round is judged by what
 * the new figures predict, so a device that changes again right after
 * being measured is measured again too, and a round slowed by noise once
 * changes nothing. */
typedef struct sdfed_step_watch {
    double expected_s; /* a round's seconds a step as expected now; 0: the next round's becomes it */
} sdfed_step_watch;
/* After a round whose steps took round_step_s each: 1 when the device is
 * to be measured again (then sdfed_step_watch_measured). */
int sdfed_step_watch_round(sdfed_step_watch *w, double round_step_s);
/* The device measured again: its seconds a step at the plan's length as
 * measured before and now (either not > 0: the next round's becomes the
 * reference). */
void sdfed_step_watch_measured(sdfed_step_watch *w, double before_s, double now_s);

/* A round's deadline that follows the budget, for a server given none:
 * SDFED_LOCAL_PROMPT_DEADLINE_FACTOR x budget_s for the local work and
 * SDFED_LOCAL_PROMPT_DEADLINE_SLACK_S more for the rest (the parameters
 * down and up, the client's evaluation); 0 without a budget. */
#define SDFED_LOCAL_PROMPT_DEADLINE_FACTOR 2.0
#define SDFED_LOCAL_PROMPT_DEADLINE_SLACK_S 30.0
double sdfed_local_prompt_deadline_s(const sdfed_local_prompt *lp);

#endif
