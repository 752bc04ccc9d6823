/* The federation's devices in /status and /metrics (status_devices.h). */
#include "status_devices.h"

void agg_status_devices_json(sdfed_json_writer *w, const char *key, const agg_devices_summary *s) {
    sdfed_jw_object(w, key);
    sdfed_jw_int(w, "count", s->count);
    sdfed_jw_array(w, "step_ms");
    for (int l = 0; s->count && l < s->n_lengths; l++) {
        sdfed_jw_object(w, NULL);
        sdfed_jw_int(w, "length", s->lengths[l]);
        sdfed_jw_fixed(w, "p10", s->p10[l], 3);
        sdfed_jw_fixed(w, "p50", s->p50[l], 3);
        sdfed_jw_fixed(w, "p90", s->p90[l], 3);
        sdfed_jw_close(w);
    }
    sdfed_jw_close(w);
    sdfed_jw_array(w, "threads");
    for (int i = 0; i < s->n_threads; i++) {
        sdfed_jw_object(w, NULL);
        sdfed_jw_int(w, "threads", s->threads[i].threads);
        sdfed_jw_int(w, "devices", s->threads[i].devices);
        sdfed_jw_close(w);
    }
    sdfed_jw_close(w);
    sdfed_jw_array(w, "kernels");
    for (int i = 0; i < s->n_kernels; i++) {
        sdfed_jw_object(w, NULL);
        sdfed_jw_string(w, "kernels", s->kernels[i].kernels);
        sdfed_jw_int(w, "devices", s->kernels[i].devices);
        sdfed_jw_close(w);
    }
    sdfed_jw_close(w);
    sdfed_jw_object(w, "others");
    sdfed_jw_int(w, "threads", s->other_threads);
    sdfed_jw_int(w, "kernels", s->other_kernels);
    sdfed_jw_close(w);
    sdfed_jw_close(w);
}

int agg_status_devices_metrics(sdfed_sink sink, const agg_devices_summary *s) {
    int failed = sdfed_sink_printf(sink,
                                   "# HELP sdfed_devices Clients whose device figures the federation heard.\n"
                                   "# TYPE sdfed_devices gauge\nsdfed_devices %d\n",
                                   s->count);
    if (!s->count) return failed;
    failed |= sdfed_sink_printf(sink, "# HELP sdfed_device_step_ms Their ms a local step, by local prompt length "
                                      "(10th, 50th, 90th percentile).\n# TYPE sdfed_device_step_ms gauge\n");
    for (int l = 0; l < s->n_lengths; l++)
        failed |= sdfed_sink_printf(sink,
                                    "sdfed_device_step_ms{length=\"%d\",quantile=\"0.1\"} %.3f\n"
                                    "sdfed_device_step_ms{length=\"%d\",quantile=\"0.5\"} %.3f\n"
                                    "sdfed_device_step_ms{length=\"%d\",quantile=\"0.9\"} %.3f\n",
                                    s->lengths[l], s->p10[l], s->lengths[l], s->p50[l], s->lengths[l], s->p90[l]);
    failed |= sdfed_sink_printf(sink, "# HELP sdfed_device_threads Devices by the threads their kernels use.\n"
                                      "# TYPE sdfed_device_threads gauge\n");
    for (int i = 0; i < s->n_threads; i++)
        failed |= sdfed_sink_printf(sink, "sdfed_device_threads{threads=\"%d\"} %d\n", s->threads[i].threads,
                                    s->threads[i].devices);
    failed |= sdfed_sink_printf(sink, "# HELP sdfed_device_kernels Devices by their kernels.\n"
                                      "# TYPE sdfed_device_kernels gauge\n");
    for (int i = 0; i < s->n_kernels; i++)
        failed |= sdfed_sink_printf(sink, "sdfed_device_kernels{kernels=\"%s\"} %d\n", s->kernels[i].kernels,
                                    s->kernels[i].devices);
    return failed;
}
