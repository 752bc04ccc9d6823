/* The federation's devices (devices.h) as /status and /metrics say them. */
#ifndef SDFED_AGGREGATOR_STATUS_DEVICES_H
#define SDFED_AGGREGATOR_STATUS_DEVICES_H

#include "devices.h"
#include "base/io.h"
#include "base/json_writer.h"

/* /status's member key: {"count": N, "step_ms": [{"length": L, "p10": ms,
 * "p50": ms, "p90": ms}, ...], "threads": [{"threads": T, "devices": n},
 * ...], "kernels": [{"kernels": "name", "devices": n}, ...], "others":
 * {"threads": n, "kernels": n}} (step_ms empty while no device reported). */
void agg_status_devices_json(sdfed_json_writer *w, const char *key, const agg_devices_summary *s);
/* The sdfed_devices* Prometheus lines. */
int agg_status_devices_metrics(sdfed_sink sink, const agg_devices_summary *s);

#endif
