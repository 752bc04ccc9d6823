/* A task file on the host: read, parsed and validated (fed/task.h), with
 * what the core leaves to its host (the default model, native/model.h's,
 * the default data set, Fashion-MNIST, and its classes:
 * native/dataset_file.h), and its paths made usable from anywhere: a folder
 * dataset's folders relative to the task file's folder, and the model
 * relative to it when the file is there (else as native_resolve_path finds
 * it: the project's own tasks name models/... from the project folder). */
#ifndef SDFED_NATIVE_TASK_FILE_H
#define SDFED_NATIVE_TASK_FILE_H

#include "base/status.h"
#include "fed/task.h"

/* Errors name the file, and leave the task at its defaults, owning nothing
 * (else the caller frees it: sdfed_task_free). sha256 (may be NULL)
 * receives the file's hash. */
int native_task_read(const char *path, sdfed_task *task, char sha256[65], sdfed_error *err);
/* What the core leaves to its host, for a parsed task (native_task_read
 * gives it before sdfed_task_validate): a task naming no model has
 * NATIVE_DEFAULT_MODEL, one naming no data set Fashion-MNIST, whose classes
 * in label order it gets where it lists none (a list of another length is an
 * error naming 'classes'); a data set this host does not have is an error
 * naming 'dataset'. */
int native_task_host_defaults(sdfed_task *task, sdfed_error *err);

#endif
