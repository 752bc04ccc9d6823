/* results.json and accuracy.svg of a simulation. */
#include "report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/json_writer.h"
#include "native/paths.h"
#include "native/svg_chart.h"
#include "prompt/projector.h"

/* a secure round's stages: how many completed each, the parity hash, the privacy spent */
static void write_secure_round(sdfed_json_writer *w, const sim_round *rd, int noise) {
    const secure_round_stats *st = &rd->secagg;
    sdfed_jw_object(w, "secure");
    sdfed_jw_int(w, "advertised", st->advertised);
    sdfed_jw_int(w, "shared", st->shared);
    sdfed_jw_int(w, "masked", st->masked);
    sdfed_jw_int(w, "survivors", st->survivors);
    sdfed_jw_int(w, "weight_sum", st->weight_sum);
    sdfed_jw_fixed(w, "protocol_seconds", st->protocol_seconds, 4);
    sdfed_jw_fixed(w, "server_seconds", st->server_seconds, 4);
    sdfed_jw_fixed(w, "unmask_seconds", st->unmask_seconds, 4);
    sdfed_jw_int(w, "bytes_up", st->bytes_up);
    sdfed_jw_int(w, "bytes_down", st->bytes_down);
    sdfed_jw_string(w, "plain_sha256", st->plain_sha256);
    if (noise) sdfed_jw_fixed(w, "epsilon", rd->epsilon, 6);
    if (st->abandoned) sdfed_jw_string(w, "why", st->why);
    sdfed_jw_close(w);
}

/* the plan every secure round ran with, and the privacy spent over the run */
static void write_plan(sdfed_json_writer *w, const sim_result *r) {
    const sdfed_secagg_plan *p = &r->plan;
    int unmasked = 0;
    for (int i = 0; i < r->n_rounds; i++) unmasked += r->rounds[i].secure && !r->rounds[i].abandoned;
    sdfed_jw_object(w, "secure_aggregation");
    sdfed_jw_int(w, "clients", p->params.n);
    sdfed_jw_int(w, "k", p->params.k);
    sdfed_jw_int(w, "t", p->params.t);
    sdfed_jw_int(w, "min_inputs", p->params.min_inputs);
    sdfed_jw_bool(w, "complete_graph", p->params.complete);
    sdfed_jw_int(w, "ring_bits", p->ring.ring_bits);
    sdfed_jw_int(w, "quant_bits", p->ring.quant_bits);
    sdfed_jw_double(w, "clip", p->ring.clip);
    sdfed_jw_int(w, "max_weight", p->ring.max_weight);
    sdfed_jw_double(w, "l2_bound", p->l2_bound);
    sdfed_jw_int(w, "sigma2", (int64_t)p->sigma2); /* at most 2^48 (SDFED_DGAUSS_MAX_SIGMA2) */
    sdfed_jw_double(w, "rho_per_round", p->rho);
    sdfed_jw_int(w, "rounds_unmasked", unmasked);
    if (p->sigma2 && r->n_rounds > 0) {
        sdfed_jw_fixed(w, "epsilon", r->rounds[r->n_rounds - 1].epsilon, 6);
        sdfed_jw_double(w, "delta", p->delta);
    }
    sdfed_jw_close(w);
}

/* every client's data sizes and local prompt length (with devices: its device, an index into the task's, and its
 * steps a round) */
static void write_clients(sdfed_json_writer *w, const sdfed_task *task, const sim_result *r) {
    sdfed_jw_array(w, "clients");
    for (int c = 0; c < r->n_clients; c++) {
        sdfed_jw_object(w, NULL);
        sdfed_jw_int(w, "train", r->client_train[c]);
        sdfed_jw_int(w, "test", r->client_test[c]);
        sdfed_jw_int(w, "local_prompt_length", r->client_local_len[c]);
        if (task->devices.n > 0) {
            sdfed_jw_int(w, "device", r->client_device[c]);
            sdfed_jw_int(w, "steps", r->client_steps[c]);
        }
        sdfed_jw_close(w);
    }
    sdfed_jw_close(w);
}

/* an accuracy, or null for none (no test image) */
static void write_accuracy(sdfed_json_writer *w, const char *key, double accuracy) {
    if (isnan(accuracy))
        sdfed_jw_null(w, key);
    else
        sdfed_jw_fixed(w, key, accuracy, 6);
}

/* round i: accuracies, losses, time, the global's hash; the secure stages; with devices the simulated time */
static void write_round(sdfed_json_writer *w, const sdfed_task *task, const sim_result *r, int i) {
    const sim_round *rd = &r->rounds[i];
    sdfed_jw_object(w, NULL);
    sdfed_jw_int(w, "round", i);
    write_accuracy(w, "accuracy", rd->accuracy);
    sdfed_jw_array(w, "client_accuracy");
    for (int c = 0; c < r->n_clients; c++) write_accuracy(w, NULL, rd->client_accuracy[c]);
    sdfed_jw_close(w);
    sdfed_jw_object(w, "losses");
    sdfed_jw_fixed(w, "ce_local", rd->ce_local, 6);
    sdfed_jw_fixed(w, "ce_global", rd->ce_global, 6);
    sdfed_jw_double(w, "stretch", rd->stretch);
    sdfed_jw_fixed(w, "separation", rd->separation, 6);
    sdfed_jw_fixed(w, "total", rd->total, 6);
    sdfed_jw_close(w);
    sdfed_jw_int(w, "steps", rd->steps);
    sdfed_jw_int(w, "participants", rd->participants);
    sdfed_jw_bool(w, "abandoned", rd->abandoned);
    sdfed_jw_fixed(w, "seconds", rd->seconds, 4);
    sdfed_jw_string(w, "global_sha256", rd->global_sha256);
    if (rd->secure) write_secure_round(w, rd, r->plan.sigma2 > 0);
    if (task->devices.n > 0) {
        sdfed_jw_fixed(w, "sim_seconds", rd->sim_seconds, 6);
        sdfed_jw_int(w, "missed", rd->missed);
        sdfed_jw_int(w, "paced", rd->paced);
    }
    sdfed_jw_close(w);
}

int report_write_json(const char *path, const sdfed_task *task, const char *model_sha256, const sim_result *r,
                      sdfed_error *err) {
    sdfed_buffer task_json = {0}, b = {0};
    int rc = sdfed_task_write(task, NULL, &task_json, err);
    if (rc) return rc;
    sdfed_json_writer w;
    sdfed_jw_begin(&w, &b, NULL);
    sdfed_jw_raw(&w, "task", (const char *)task_json.data, task_json.size);
    sdfed_jw_string(&w, "model_sha256", model_sha256);
    write_clients(&w, task, r);
    sdfed_jw_array(&w, "rounds");
    for (int i = 0; i < r->n_rounds; i++) write_round(&w, task, r, i);
    sdfed_jw_close(&w);
    write_accuracy(&w, "final_accuracy", r->final_accuracy);
    sdfed_jw_int(&w, "clients_without_test", r->clients_without_test);
    if (r->secure) write_plan(&w, r);
    rc = sdfed_jw_end(&w, err);
    sdfed_sink sink = sdfed_buffer_sink(&b);
    if (rc == SDFED_OK && sink.write(sink.ctx, "\n", 2)) /* a last line, and the NUL native_write_file reads to */
        rc = sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", path);
    if (rc == SDFED_OK) rc = native_write_file(path, (const char *)b.data, err);
    sdfed_buffer_free(&task_json);
    sdfed_buffer_free(&b);
    return rc;
}

int report_write_svg(const char *path, const sdfed_task *task, const sim_result *r, sdfed_error *err) {
    int n = r->n_rounds;
    double *values = malloc(sizeof(double) * 3 * (size_t)(n > 0 ? n : 1));
    if (!values) return sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", path);
    double *mean = values, *low = values + n, *high = values + 2 * n;
    if (isnan(r->final_accuracy)) n = 0; /* no client has a test image: no line */
    for (int i = 0; i < n; i++) {
        mean[i] = r->rounds[i].accuracy;
        low[i] = 1;
        high[i] = 0;
        for (int c = 0; c < r->n_clients; c++) {
            low[i] = fmin(low[i], r->rounds[i].client_accuracy[c]);
            high[i] = fmax(high[i], r->rounds[i].client_accuracy[c]);
        }
    }
    char title[256], x_label[64], final[64];
    if (n == 0)
        snprintf(final, sizeof final, "no accuracy (no client has a test image)");
    else
        snprintf(final, sizeof final, "final %.2f%% (mean of the last %d rounds)", 100 * r->final_accuracy,
                 r->final_rounds);
    snprintf(title, sizeof title, "%s on %s, %d clients (seed %llu): %s", sdfed_method_name(task->method),
             sdfed_partition_kind_name(task->partition.kind), task->clients, (unsigned long long)task->seed, final);
    snprintf(x_label, sizeof x_label, "round (0..%d)", r->n_rounds - 1);
    native_svg_chart chart = {.width = 640,
                              .height = 400,
                              .left = 60,
                              .right = 20,
                              .top = 40,
                              .bottom = 50,
                              .font_size = 12,
                              .standalone = 1,
                              .title = title,
                              .x_label = x_label,
                              .legend = "mean client accuracy; band: worst to best client",
                              .n = n,
                              .line = mean,
                              .band_low = low,
                              .band_high = high};
    sdfed_buffer b = {0};
    int rc = native_svg_chart_write(&b, &chart, err);
    unsigned char nul = 0;
    sdfed_sink sink = sdfed_buffer_sink(&b);
    if (rc == SDFED_OK && sink.write(sink.ctx, &nul, 1))
        rc = sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", path);
    if (rc == SDFED_OK) rc = native_write_file(path, (const char *)b.data, err);
    sdfed_buffer_free(&b);
    free(values);
    return rc;
}
