/* results.json and accuracy.svg of a simulation. */
#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fed/protocol.h"
#include "prompt/projector.h"

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
    for (int c = 0; c < r->n_clients; c++)
        fprintf(f, "%s{\"train\": %d, \"test\": %d, \"local_prompt_length\": %d}", c ? ", " : "", r->client_train[c],
                r->client_test[c], r->client_local_len[c]);
    fprintf(f, "],\n  \"rounds\": [\n");
    for (int i = 0; i < r->n_rounds; i++) {
        const sim_round *rd = &r->rounds[i];
        fprintf(f, "    {\"round\": %d, \"accuracy\": %.6f, \"client_accuracy\": [", i + 1, rd->accuracy);
        for (int c = 0; c < r->n_clients; c++) fprintf(f, "%s%.6f", c ? ", " : "", rd->client_accuracy[c]);
        fprintf(
            f,
            "], \"losses\": {\"ce_local\": %.6f, \"ce_global\": %.6f, \"stretch\": %.6g, \"separation\": %.6f, "
            "\"total\": %.6f}, \"steps\": %d, \"participants\": %d, \"seconds\": %.4f, \"global_sha256\": \"%s\"}%s\n",
            rd->ce_local, rd->ce_global, rd->stretch, rd->separation, rd->total, rd->steps, rd->participants,
            rd->seconds, rd->global_sha256, i + 1 < r->n_rounds ? "," : "");
    }
    fprintf(f, "  ],\n  \"final_accuracy\": %.6f\n}\n", r->final_accuracy);
    if (fclose(f) != 0) return sdfed_fail(err, SDFED_ERR_IO, "%s: write failed", path);
    return SDFED_OK;
}

int report_write_svg(const char *path, const sdfed_task *task, const sim_result *r, sdfed_error *err) {
    FILE *f = fopen(path, "w");
    if (!f) return sdfed_fail(err, SDFED_ERR_IO, "%s: %s", path, strerror(errno));
    const double W = 640, H = 400, left = 60, right = 20, top = 40, bottom = 50;
    double pw = W - left - right, ph = H - top - bottom;
    int n = r->n_rounds;
#define X(i) (left + (n > 1 ? pw * (i) / (n - 1) : pw / 2))
#define Y(a) (top + ph * (1.0 - (a)))
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" font-family=\"sans-serif\" "
            "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            W, H);
    fprintf(f, "<text x=\"%g\" y=\"22\" font-size=\"14\">%s on %s, %d clients (seed %llu): final %.2f%%</text>\n", left,
            sdfed_method_name(task->method), sdfed_partition_kind_name(task->partition.kind), task->clients,
            (unsigned long long)task->seed, 100 * r->final_accuracy);
    for (int p = 0; p <= 100; p += 20) {
        fprintf(f, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#ddd\"/>", left, Y(p / 100.0), W - right,
                Y(p / 100.0));
        fprintf(f, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%d%%</text>\n", left - 6, Y(p / 100.0) + 4, p);
    }
    fprintf(f, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">round (1..%d)</text>\n", left + pw / 2, H - 12, n);
    /* the band from the worst to the best client, then the mean */
    fprintf(f, "<polygon fill=\"#9ecae1\" fill-opacity=\"0.5\" points=\"");
    for (int i = 0; i < n; i++) {
        double hi = 0;
        for (int c = 0; c < r->n_clients; c++) hi = fmax(hi, r->rounds[i].client_accuracy[c]);
        fprintf(f, "%.1f,%.1f ", X(i), Y(hi));
    }
    for (int i = n - 1; i >= 0; i--) {
        double lo = 1;
        for (int c = 0; c < r->n_clients; c++) lo = fmin(lo, r->rounds[i].client_accuracy[c]);
        fprintf(f, "%.1f,%.1f ", X(i), Y(lo));
    }
    fprintf(f, "\"/>\n<polyline fill=\"none\" stroke=\"#08519c\" stroke-width=\"2\" points=\"");
    for (int i = 0; i < n; i++) fprintf(f, "%.1f,%.1f ", X(i), Y(r->rounds[i].accuracy));
    fprintf(f,
            "\"/>\n<text x=\"%g\" y=\"%g\" fill=\"#08519c\">mean client accuracy; band: worst to best client</text>\n",
            left + 8, top + 14);
    fprintf(f, "</svg>\n");
#undef X
#undef Y
    if (fclose(f) != 0) return sdfed_fail(err, SDFED_ERR_IO, "%s: write failed", path);
    return SDFED_OK;
}
