/* The federation's devices in /status and /metrics (status_devices.h). */
#include "status_devices.h"

int status_devices_json(sdfed_sink sink, const devices_summary *s) {
    int failed = sdfed_sink_printf(sink, "{\"count\": %d, \"step_ms\": [", s->count);
    for (int l = 0; s->count && l < s->n_lengths; l++)
        failed |= sdfed_sink_printf(sink, "%s{\"length\": %d, \"p10\": %.3f, \"p50\": %.3f, \"p90\": %.3f}",
                                    l ? ", " : "", s->lengths[l], s->p10[l], s->p50[l], s->p90[l]);
    failed |= sdfed_sink_printf(sink, "], \"threads\": [");
    for (int i = 0; i < s->n_threads; i++)
        failed |= sdfed_sink_printf(sink, "%s{\"threads\": %d, \"devices\": %d}", i ? ", " : "", s->threads[i].threads,
                                    s->threads[i].devices);
    failed |= sdfed_sink_printf(sink, "], \"kernels\": [");
    for (int i = 0; i < s->n_kernels; i++) /* a name of letters, digits, - _ . + (fed/protocol.h) */
        failed |= sdfed_sink_printf(sink, "%s{\"kernels\": \"%s\", \"devices\": %d}", i ? ", " : "",
                                    s->kernels[i].kernels, s->kernels[i].devices);
    failed |= sdfed_sink_printf(sink, "], \"others\": {\"threads\": %d, \"kernels\": %d}}", s->other_threads,
                                s->other_kernels);
    return failed;
}

int status_devices_metrics(sdfed_sink sink, const devices_summary *s) {
    int failed = sdfed_sink_printf(sink,
                                   "# HELP sdfed_devices Clients whose device figures this process heard.\n"
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
