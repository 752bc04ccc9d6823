/* The federation as a client sees it before its first round: the task as
 * it runs (in the task-file format, the model given by its URL; its name,
 * description, classes, template and prompt_init with it), the model's
 * URL, hash and size, the class names (the task's, for pages that only
 * show them), the shape of the global parameters and the number of demo
 * shards the server offers (0: none, whatever the task's "demo" says, e.g.
 * when its dataset is missing here). Written once at start; the welcome
 * message and /task carry it. */
#ifndef SDFED_AGGREGATOR_DESCRIPTION_H
#define SDFED_AGGREGATOR_DESCRIPTION_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "fed/task.h"

typedef struct agg_description_model {
    const char *url, *sha256;
    size_t size;
} agg_description_model;

/* *out (heap): JSON members without the object's braces, "task", "model",
 * "classes", "global_shape", "demo_shards", to be spliced into a message. */
int agg_description_write(const sdfed_task *task, const agg_description_model *model, const uint32_t global_shape[2],
                          int demo_shards, char **out, sdfed_error *err);

#endif
