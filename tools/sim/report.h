/* What a simulation writes into its output folder: results.json (the task
 * as run, every client's data sizes, and per round the accuracies, losses
 * and time; an accuracy there is null where there is none: a client without
 * test images, and the means when no client has any) and accuracy.svg (mean
 * accuracy over rounds with the band from the worst to the best client). */
#ifndef SDFED_SIM_REPORT_H
#define SDFED_SIM_REPORT_H

#include "sim.h"

int report_write_json(const char *path, const sdfed_task *task, const char *model_sha256, const sim_result *r,
                      sdfed_error *err);
int report_write_svg(const char *path, const sdfed_task *task, const sim_result *r, sdfed_error *err);

#endif
