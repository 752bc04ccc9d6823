/* The local prompt rule (fed/local_prompt.h) as a pure function: known step
 * times, budgets and data sizes give known lengths, steps and samples; the
 * edges (a budget too small for any length, one image, no images) and a
 * refused key (lengths not ascending, outside the model's context, the
 * adaptive rule without a budget, both length keys) name the key; the task's
 * key parses, writes and reads back, and a task without it keeps today's
 * lengths; the simulator's devices parse, are checked against the lengths
 * and are drawn by share. */
#include <string.h>

#include "check.h"
#include "fed/task.h"

/* lengths 4, 8, 16, 32; a device at 10, 12, 16, 24 ms a step */
static const double device[] = {0.010, 0.012, 0.016, 0.024};

static sdfed_local_prompt adaptive(double budget_s) {
    return (sdfed_local_prompt){.rule = SDFED_LOCAL_RULE_ADAPTIVE,
                                .n_lengths = 4,
                                .lengths = {4, 8, 16, 32},
                                .budget_s = budget_s,
                                .images_per_token = 2};
}

static sdfed_local_plan plan(const sdfed_local_prompt *lp, const double *step_s, int n_train, int epochs, int *rc) {
    sdfed_local_plan p;
    sdfed_error err = {0};
    *rc = sdfed_local_prompt_plan(lp, 0, step_s, n_train, epochs, 16, &p, &err);
    return p;
}

static void test_adaptive(void) {
    int rc;
    sdfed_local_prompt lp = adaptive(1.0);
    /* 640 images, batches of 16: 40 steps an epoch; 40 x 24 ms = 0.96 s fits 1 s */
    sdfed_local_plan p = plan(&lp, device, 640, 1, &rc);
    CHECK(rc == SDFED_OK && p.length == 32 && p.steps == 40 && p.epoch_steps == 40 && p.samples == 640,
          "a fast device with data: the longest length, the whole epoch (%d, %d steps)", p.length, p.steps);
    CHECK(p.seconds > 0.959 && p.seconds < 0.961, "the plan's work: 40 x 24 ms (%g s)", p.seconds);
    /* two epochs: 80 steps; 80 x 12 ms = 0.96 fits, 80 x 16 ms = 1.28 does not */
    p = plan(&lp, device, 640, 2, &rc);
    CHECK(rc == SDFED_OK && p.length == 8 && p.steps == 80 && p.samples == 640,
          "more work a round: the longest length that still fits (%d)", p.length);
    /* the data cap: 40 images support 4, 8 and 16 tokens (2 images a token), not 32 */
    p = plan(&lp, device, 40, 1, &rc);
    CHECK(rc == SDFED_OK && p.length == 16 && p.steps == 3 && p.samples == 40,
          "fewer images: a shorter prompt although the device could (%d)", p.length);
    lp.images_per_token = 0;
    CHECK(sdfed_local_prompt_data_cap(&lp, 1) == 32, "no cap (the default): the longest with any data");
    lp.images_per_token = 2;
    CHECK(sdfed_local_prompt_data_cap(&lp, 63) == 16 && sdfed_local_prompt_data_cap(&lp, 64) == 32 &&
              sdfed_local_prompt_data_cap(&lp, 15) == 4 && sdfed_local_prompt_data_cap(&lp, 16) == 8,
          "the cap: S_l <= n / 2");
    /* a slow device: an epoch of 40 steps at 62.5 ms = 2.5 s > 1 s */
    double slow[4] = {0.0625, 0.075, 0.1, 0.15};
    p = plan(&lp, slow, 640, 1, &rc);
    CHECK(rc == SDFED_OK && p.length == 4 && p.steps == 16 && p.epoch_steps == 40 && p.samples == 256,
          "not even the shortest finishes: the shortest for the budget, 16 steps, 256 samples (%d, %d, %lld)", p.length,
          p.steps, (long long)p.samples);
    /* partial steps that pass an epoch's end count each image once */
    p = plan(&lp, slow, 100, 3, &rc);
    CHECK(rc == SDFED_OK && p.length == 4 && p.steps == 16 && p.epoch_steps == 21 && p.samples == 100,
          "a partial third epoch: every image used (%d steps, %lld samples)", p.steps, (long long)p.samples);
    lp.budget_s = 0.04;
    p = plan(&lp, slow, 640, 1, &rc);
    CHECK(rc == SDFED_OK && p.length == 4 && p.steps == 0 && p.samples == 0,
          "a budget too small for one step: no steps, no weight");
}

static void test_edges(void) {
    int rc;
    sdfed_local_prompt lp = adaptive(1.0);
    sdfed_local_plan p = plan(&lp, device, 1, 1, &rc);
    CHECK(rc == SDFED_OK && p.length == 4 && p.steps == 1 && p.samples == 1, "one image: the shortest, one step");
    p = plan(&lp, device, 0, 1, &rc);
    CHECK(rc == SDFED_OK && p.length == 4 && p.steps == 0 && p.samples == 0, "no images: nothing to train");
    plan(&lp, NULL, 640, 1, &rc);
    CHECK(rc == SDFED_ERR_ARG, "the adaptive rule needs step times");
    double bad[4] = {0.01, 0.0, 0.02, 0.03};
    sdfed_error err = {0};
    rc = sdfed_local_prompt_plan(&lp, 0, bad, 640, 1, 16, &p, &err);
    CHECK(rc == SDFED_ERR_ARG && strstr(err.message, "step times"), "a step time of 0 is refused: %s", err.message);
    /* random and fixed: the draw's length and the longest, the whole epochs */
    lp.rule = SDFED_LOCAL_RULE_RANDOM;
    rc = sdfed_local_prompt_plan(&lp, 2, NULL, 640, 1, 16, &p, &err);
    CHECK(rc == SDFED_OK && p.length == 16 && p.steps == 40 && p.seconds == 0, "random: the draw's length");
    lp.rule = SDFED_LOCAL_RULE_FIXED;
    rc = sdfed_local_prompt_plan(&lp, 2, device, 10, 1, 16, &p, &err);
    CHECK(rc == SDFED_OK && p.length == 32 && p.steps == 1 && p.samples == 10 && p.seconds == 0.024,
          "fixed: the longest whatever the data, its time on the device");
}

static void test_refused(void) {
    sdfed_error err = {0};
    sdfed_local_prompt lp = adaptive(1.0);
    lp.lengths[2] = 6;
    CHECK(sdfed_local_prompt_check(&lp, 60, &err) == SDFED_ERR_FORMAT &&
              strstr(err.message, "'local_prompt.lengths'") && strstr(err.message, "ascending"),
          "lengths out of order: %s", err.message);
    lp = adaptive(1.0);
    CHECK(sdfed_local_prompt_check(&lp, 20, &err) == SDFED_ERR_FORMAT &&
              strstr(err.message, "'local_prompt.lengths'") && strstr(err.message, "32"),
          "a length past the model's context: %s", err.message);
    CHECK(sdfed_local_prompt_check(&lp, 32, &err) == SDFED_OK, "the longest that fits is allowed");
    lp = adaptive(0);
    CHECK(sdfed_local_prompt_check(&lp, 0, &err) == SDFED_ERR_FORMAT && strstr(err.message, "'local_prompt.budget_s'"),
          "adaptive without a budget: %s", err.message);
}

static int parse(sdfed_task *t, const char *json, sdfed_error *err) {
    return sdfed_task_parse(t, json, strlen(json), err);
}

static void test_task_key(void) {
    sdfed_task t, back;
    sdfed_error err = {0};
    CHECK(parse(&t, "{\"local_prompt\": {\"lengths\": [4, 8, 16], \"rule\": \"adaptive\", \"budget_s\": 30}}", &err) ==
                  SDFED_OK &&
              t.local_prompt.rule == SDFED_LOCAL_RULE_ADAPTIVE && t.local_prompt.n_lengths == 3 &&
              t.local_prompt.budget_s == 30 && t.local_prompt_min == 4 && t.local_prompt_max == 16 &&
              t.local_prompt.images_per_token == SDFED_LOCAL_PROMPT_IMAGES_PER_TOKEN,
          "the key parses: %s", err.message);
    sdfed_buffer b = {0};
    CHECK(sdfed_task_write(&t, NULL, &b, &err) == SDFED_OK &&
              sdfed_task_parse(&back, (const char *)b.data, b.size, &err) == SDFED_OK &&
              memcmp(&back.local_prompt, &t.local_prompt, sizeof t.local_prompt) == 0,
          "written and read back: %.*s", (int)b.size, (const char *)b.data);
    sdfed_buffer_free(&b);
    sdfed_task_free(&t);
    sdfed_task_free(&back);
    static const struct {
        const char *json, *key;
    } refused[] = {
        {"{\"local_prompt\": {\"lengths\": [8, 4]}}", "'local_prompt.lengths'"},
        {"{\"local_prompt\": {\"lengths\": []}}", "'local_prompt.lengths'"},
        {"{\"local_prompt\": {\"rule\": \"fixed\"}}", "'local_prompt.lengths'"},
        {"{\"local_prompt\": {\"lengths\": [4], \"rule\": \"adaptive\"}}", "'local_prompt.budget_s'"},
        {"{\"local_prompt\": {\"lengths\": [4], \"rule\": \"fastest\"}}", "'local_prompt.rule'"},
        {"{\"local_prompt\": {\"lengths\": [4], \"speed\": 1}}", "'local_prompt.speed'"},
        {"{\"local_prompt_length\": 8, \"local_prompt\": {\"lengths\": [4]}}", "'local_prompt_length'"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        CHECK(parse(&t, refused[i].json, &err) == SDFED_ERR_FORMAT && strstr(err.message, refused[i].key),
              "%s refused naming %s: %s", refused[i].json, refused[i].key, err.message);
    /* without the key: today's draw from [min, max], the whole epochs */
    CHECK(parse(&t, "{\"local_prompt_length\": [4, 64], \"seed\": 3}", &err) == SDFED_OK, "a range");
    sdfed_local_plan p;
    int same = 1;
    for (int c = 0; c < 20; c++) {
        same &= sdfed_task_local_plan(&t, c, NULL, 100, &p, &err) == SDFED_OK &&
                p.length == sdfed_task_local_prompt_length(&t, c) && p.steps == 7 && p.samples == 100;
        same &= p.length >= 4 && p.length <= 64;
    }
    CHECK(same, "local_prompt_length: each client's draw, the whole epoch");
    sdfed_task_free(&t);
    CHECK(parse(&t, "{\"local_prompt\": {\"lengths\": [4, 8, 16, 32]}, \"seed\": 3}", &err) == SDFED_OK, "random");
    int seen[4] = {0}, listed = 1;
    for (int c = 0; c < 40; c++) {
        int len = sdfed_task_local_prompt_length(&t, c);
        listed &= len == 4 || len == 8 || len == 16 || len == 32;
        static const int lengths[4] = {4, 8, 16, 32};
        for (int l = 0; l < 4; l++) seen[l] += len == lengths[l];
    }
    CHECK(listed && seen[0] && seen[1] && seen[2] && seen[3], "random: every listed length drawn, none other");
    sdfed_task_free(&t);
}

/* the simulator's devices: parsed, checked against the lengths, written back, and drawn by share */
static void test_devices(void) {
    sdfed_task t, back;
    sdfed_error err = {0};
    const char *json = "{\"clients\": 1000, \"local_prompt\": {\"lengths\": [4, 16], \"rule\": \"adaptive\", "
                       "\"budget_s\": 2}, \"devices\": [{\"name\": \"phone\", \"share\": 3, \"step_ms\": [40, 52]}, "
                       "{\"name\": \"desktop\", \"share\": 1, \"step_ms\": [6, 7.5]}]}";
    CHECK(parse(&t, json, &err) == SDFED_OK && sdfed_task_validate(&t, &err) == SDFED_OK && t.devices.n == 2 &&
              strcmp(t.devices.device[0].name, "phone") == 0 && t.devices.device[1].step_ms[1] == 7.5f,
          "devices parse: %s", err.message);
    sdfed_buffer b = {0};
    CHECK(sdfed_task_write(&t, NULL, &b, &err) == SDFED_OK &&
              sdfed_task_parse(&back, (const char *)b.data, b.size, &err) == SDFED_OK &&
              memcmp(&back.devices, &t.devices, sizeof t.devices) == 0,
          "devices written and read back: %s", err.message);
    sdfed_buffer_free(&b);
    int phones = 0, same = 1;
    for (int c = 0; c < 1000; c++) {
        int d = sdfed_devices_of_client(&t.devices, t.seed, c);
        phones += d == 0;
        same &= d == sdfed_devices_of_client(&back.devices, back.seed, c) && (d == 0 || d == 1);
    }
    CHECK(same && phones > 700 && phones < 800, "clients drawn by share, the same for the same task (%d phones)",
          phones);
    double step_s[2];
    sdfed_device_step_seconds(&t.devices.device[1], 2, step_s);
    CHECK(step_s[0] == 0.006 && step_s[1] == 0.0075, "a device's step times in seconds");
    sdfed_task_free(&t);
    sdfed_task_free(&back);
    CHECK(sdfed_devices_of_client(&(sdfed_devices){0}, 1, 0) == -1, "no devices: none");
    static const struct {
        const char *json, *key;
    } refused[] = {
        {"{\"local_prompt\": {\"lengths\": [4, 16]}, \"devices\": [{\"step_ms\": [40]}]}", "'devices[0].step_ms'"},
        {"{\"local_prompt\": {\"lengths\": [4]}, \"devices\": [{\"step_ms\": [1]}, {\"share\": 0}]}",
         "'devices[1].share'"},
        {"{\"devices\": [{\"step_ms\": [40]}]}", "'local_prompt'"},
        {"{\"devices\": []}", "'devices'"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        int rc = parse(&t, refused[i].json, &err);
        if (rc == SDFED_OK) rc = sdfed_task_validate(&t, &err);
        CHECK(rc == SDFED_ERR_FORMAT && strstr(err.message, refused[i].key), "%s refused naming %s: %s",
              refused[i].json, refused[i].key, err.message);
        sdfed_task_free(&t);
    }
}

/* when a client measures again, and the deadline a budget gives */
static void test_drift_and_deadline(void) {
    CHECK(!sdfed_local_prompt_drifted(0.040, 0.040) && !sdfed_local_prompt_drifted(0.040, 0.059) &&
              !sdfed_local_prompt_drifted(0.040, 0.027),
          "steps within 0.67x..1.5x of the measured time: no drift");
    CHECK(sdfed_local_prompt_drifted(0.040, 0.061) && sdfed_local_prompt_drifted(0.040, 0.026),
          "more than 1.5x or less than 0.67x: measured again");
    CHECK(!sdfed_local_prompt_drifted(0, 0.5) && !sdfed_local_prompt_drifted(0.04, 0),
          "no measurement, or a round without steps: no drift");
    sdfed_local_prompt lp = {.rule = SDFED_LOCAL_RULE_ADAPTIVE, .n_lengths = 2, .lengths = {4, 16}, .budget_s = 60};
    CHECK(sdfed_local_prompt_deadline_s(&lp) == 150, "a 60 s budget: a 150 s deadline (2 x 60 + 30)");
    lp.budget_s = 0;
    CHECK(sdfed_local_prompt_deadline_s(&lp) == 0, "no budget: no deadline of its own");
}

/* a device's rounds watched: the reference, a noisy round, a device that
 * slows down right after being measured again (the round after a
 * measurement is judged by what the new figures predict, not taken as the
 * reference whatever it is), and one that speeds up */
static void test_step_watch(void) {
    sdfed_step_watch w = {0};
    CHECK(!sdfed_step_watch_round(&w, 0) && w.expected_s == 0, "a round without steps is no reference");
    CHECK(!sdfed_step_watch_round(&w, 0.100) && w.expected_s == 0.100, "the first round is the reference");
    CHECK(!sdfed_step_watch_round(&w, 0.120), "a round within the band: nothing");
    CHECK(sdfed_step_watch_round(&w, 0.200), "a round slowed by noise: measured again");
    sdfed_step_watch_measured(&w, 0.040, 0.040); /* the measurement finds the device as it was */
    CHECK(w.expected_s == 0.100, "the same figures: the same expectation (%g)", w.expected_s);
    CHECK(sdfed_step_watch_round(&w, 0.210), "the device slows down in the very next round: measured again");
    sdfed_step_watch_measured(&w, 0.040, 0.084);
    CHECK(w.expected_s > 0.2099 && w.expected_s < 0.2101, "the new figures predict 0.21 s a round's step (%g)",
          w.expected_s);
    CHECK(!sdfed_step_watch_round(&w, 0.215), "the slow device's rounds as predicted: nothing");
    CHECK(sdfed_step_watch_round(&w, 0.100), "faster again: measured again");
    sdfed_step_watch_measured(&w, 0.084, 0);
    CHECK(w.expected_s == 0, "a measurement without figures: the next round becomes the reference");
    CHECK(!sdfed_step_watch_round(&w, 0.090) && w.expected_s == 0.090, "and it does");
}

int main(void) {
    test_adaptive();
    test_edges();
    test_refused();
    test_task_key();
    test_devices();
    test_drift_and_deadline();
    test_step_watch();
    return check_report("test_local_prompt");
}
