/* results.json and accuracy.svg of a simulation. */
#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_writer.h"
#include "native/paths.h"
#include "native/svg_chart.h"
#include "prompt/projector.h"

/* a secure round's stages: how many completed each, the parity hash, the privacy spent */
static void write_secure_round(FILE *f, const sim_round *rd, int noise) {
    const secure_round_stats *st = &rd->secagg;
    fprintf(f,
            ", \"secure\": {\"advertised\": %d, \"shared\": %d, \"masked\": %d, \"survivors\": %d, "
            "\"weight_sum\": %lld, \"protocol_seconds\": %.4f, \"server_seconds\": %.4f, \"unmask_seconds\": %.4f, "
            "\"bytes_up\": %lld, \"bytes_down\": %lld, \"plain_sha256\": \"%s\"",
            st->advertised, st->shared, st->masked, st->survivors, (long long)st->weight_sum, st->protocol_seconds,
            st->server_seconds, st->unmask_seconds, (long long)st->bytes_up, (long long)st->bytes_down,
            st->plain_sha256);
    if (noise) fprintf(f, ", \"epsilon\": %.6f", rd->epsilon);
    if (st->abandoned) {
        sdfed_buffer why = {0};
        sdfed_json_writer w;
        sdfed_jw_begin(&w, &why, NULL);
        sdfed_jw_string(&w, "why", st->why);
        if (sdfed_jw_end(&w, NULL) == SDFED_OK && why.size > 2)
            fprintf(f, ", %.*s", (int)why.size - 2, (const char *)why.data + 1);
        sdfed_buffer_free(&why);
    }
    fputc('}', f);
}

/* the plan every secure round ran with, and the privacy spent over the run */
static void write_plan(FILE *f, const sim_result *r) {
    const sdfed_secagg_plan *p = &r->plan;
    fprintf(f,
            ",\n  \"secure_aggregation\": {\"clients\": %d, \"k\": %d, \"t\": %d, \"min_inputs\": %d, "
            "\"complete_graph\": %s, \"ring_bits\": %d, \"quant_bits\": %d, \"clip\": %g, \"max_weight\": %lld, "
            "\"l2_bound\": %.6g, \"sigma2\": %llu, \"rho_per_round\": %.6g",
            p->params.n, p->params.k, p->params.t, p->params.min_inputs, p->params.complete ? "true" : "false",
            p->ring.ring_bits, p->ring.quant_bits, p->ring.clip, (long long)p->ring.max_weight, p->l2_bound,
            (unsigned long long)p->sigma2, p->rho);
    int unmasked = 0;
    for (int i = 0; i < r->n_rounds; i++) unmasked += r->rounds[i].secure && !r->rounds[i].abandoned;
    fprintf(f, ", \"rounds_unmasked\": %d", unmasked);
    if (p->sigma2 && r->n_rounds > 0)
        fprintf(f, ", \"epsilon\": %.6f, \"delta\": %g", r->rounds[r->n_rounds - 1].epsilon, p->delta);
    fputc('}', f);
}

int report_write_json(const char *path, const sdfed_task *task, const char *model_sha256, const sim_result *r,
                      sdfed_error *err) {
    FILE *f = fopen(path, "w");
    if (!f) return sdfed_fail(err, SDFED_ERR_IO, "%s: %s", path, strerror(errno));
    sdfed_buffer task_json = {0};
    int rc = sdfed_task_write(task, NULL, &task_json, err);
    if (rc) {
        fclose(f);
        return rc;
    }
    fprintf(f, "{\n  \"task\": %.*s", (int)task_json.size, (const char *)task_json.data);
    sdfed_buffer_free(&task_json);
    fprintf(f, ",\n  \"model_sha256\": \"%s\",\n  \"clients\": [", model_sha256);
    for (int c = 0; c < r->n_clients; c++) {
        fprintf(f, "%s{\"train\": %d, \"test\": %d, \"local_prompt_length\": %d", c ? ", " : "", r->client_train[c],
                r->client_test[c], r->client_local_len[c]);
        if (task->devices.n > 0) /* its device: an index into the task's devices */
            fprintf(f, ", \"device\": %d, \"steps\": %d", r->client_device[c], r->client_steps[c]);
        fputc('}', f);
    }
    fprintf(f, "],\n  \"rounds\": [\n");
    for (int i = 0; i < r->n_rounds; i++) {
        const sim_round *rd = &r->rounds[i];
        fprintf(f, "    {\"round\": %d, \"accuracy\": %.6f, \"client_accuracy\": [", i, rd->accuracy);
        for (int c = 0; c < r->n_clients; c++) fprintf(f, "%s%.6f", c ? ", " : "", rd->client_accuracy[c]);
        fprintf(f,
                "], \"losses\": {\"ce_local\": %.6f, \"ce_global\": %.6f, \"stretch\": %.6g, \"separation\": %.6f, "
                "\"total\": %.6f}, \"steps\": %d, \"participants\": %d, \"abandoned\": %s, \"seconds\": %.4f, "
                "\"global_sha256\": \"%s\"",
                rd->ce_local, rd->ce_global, rd->stretch, rd->separation, rd->total, rd->steps, rd->participants,
                rd->abandoned ? "true" : "false", rd->seconds, rd->global_sha256);
        if (rd->secure) write_secure_round(f, rd, r->plan.sigma2 > 0);
        if (task->devices.n > 0)
            fprintf(f, ", \"sim_seconds\": %.6f, \"missed\": %d, \"paced\": %d", rd->sim_seconds, rd->missed,
                    rd->paced);
        fprintf(f, "}%s\n", i + 1 < r->n_rounds ? "," : "");
    }
    fprintf(f, "  ],\n  \"final_accuracy\": %.6f", r->final_accuracy);
    if (r->secure) write_plan(f, r);
    fprintf(f, "\n}\n");
    if (fclose(f) != 0) return sdfed_fail(err, SDFED_ERR_IO, "%s: write failed", path);
    return SDFED_OK;
}

int report_write_svg(const char *path, const sdfed_task *task, const sim_result *r, sdfed_error *err) {
    int n = r->n_rounds;
    double *values = malloc(sizeof(double) * 3 * (size_t)(n > 0 ? n : 1));
    if (!values) return sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", path);
    double *mean = values, *low = values + n, *high = values + 2 * n;
    for (int i = 0; i < n; i++) {
        mean[i] = r->rounds[i].accuracy;
        low[i] = 1;
        high[i] = 0;
        for (int c = 0; c < r->n_clients; c++) {
            low[i] = fmin(low[i], r->rounds[i].client_accuracy[c]);
            high[i] = fmax(high[i], r->rounds[i].client_accuracy[c]);
        }
    }
    char title[256], x_label[64];
    snprintf(title, sizeof title, "%s on %s, %d clients (seed %llu): final %.2f%% (mean of the last %d rounds)",
             sdfed_method_name(task->method), sdfed_partition_kind_name(task->partition.kind), task->clients,
             (unsigned long long)task->seed, 100 * r->final_accuracy, r->final_rounds);
    snprintf(x_label, sizeof x_label, "round (0..%d)", n - 1);
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
