/* A task file on the host: read, parsed and validated (fed/task.h), with
 * its paths made usable from anywhere: a folder dataset's folders relative
 * to the task file's folder, and the model relative to it when the file is
 * there (else as native_resolve_path finds it: the project's own tasks name
 * models/... from the project folder). */
#ifndef SDFED_NATIVE_TASK_FILE_H
#define SDFED_NATIVE_TASK_FILE_H

#include "base/status.h"
#include "fed/task.h"

/* Errors name the file, and leave the task at its defaults, owning nothing
 * (else the caller frees it: sdfed_task_free). sha256 (may be NULL)
 * receives the file's hash. */
int native_task_read(const char *path, sdfed_task *task, char sha256[65], sdfed_error *err);

#endif
