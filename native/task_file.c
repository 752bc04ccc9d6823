/* Task files on the host (see task_file.h). */
#include "native/task_file.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "native/crypto.h"
#include "native/dataset_file.h"
#include "native/file_map.h"
#include "native/model.h"
#include "native/paths.h"

/* path made relative to dir when it is relative; 0 when it does not fit */
static int under(const char *dir, const char *path, char *out, size_t cap) {
    if (path[0] == '/') return snprintf(out, cap, "%s", path) < (int)cap;
    return snprintf(out, cap, "%s/%s", dir, path) < (int)cap;
}

int native_task_host_defaults(sdfed_task *task, sdfed_error *err) {
    if (!task->model[0]) snprintf(task->model, sizeof task->model, "%s", NATIVE_DEFAULT_MODEL);
    if (!task->dataset[0]) snprintf(task->dataset, sizeof task->dataset, "%s", SDFED_FMNIST_NAME);
    if (strcmp(task->dataset, "folder") == 0) return SDFED_OK;
    if (strcmp(task->dataset, SDFED_FMNIST_NAME) != 0)
        return sdfed_fail(err, SDFED_ERR_FORMAT,
                          "task: key 'dataset' must be \"" SDFED_FMNIST_NAME "\", {\"train\": DIR, \"test\": DIR} or "
                          "{\"folder\": DIR, \"test_fraction\": F}");
    if (task->n_classes == 0)
        return sdfed_task_set_classes(task, native_fmnist_class_names, NULL, SDFED_FMNIST_CLASSES, err);
    if (task->n_classes != SDFED_FMNIST_CLASSES)
        return sdfed_fail(err, SDFED_ERR_FORMAT,
                          "task: key 'classes' lists %d classes; " SDFED_FMNIST_NAME "'s %d are needed, in label "
                          "order (%s, %s, ..., %s)",
                          task->n_classes, SDFED_FMNIST_CLASSES, native_fmnist_class_names[0],
                          native_fmnist_class_names[1], native_fmnist_class_names[SDFED_FMNIST_CLASSES - 1]);
    return SDFED_OK;
}

int native_task_read(const char *path, sdfed_task *task, char sha256[65], sdfed_error *err) {
    sdfed_task_defaults(task);
    char resolved[4096], dir[4096], joined[4096];
    char found[4096];
    snprintf(resolved, sizeof resolved, "%s", native_resolve_path(path, found, sizeof found));
    native_file_map f;
    int rc = native_file_map_open(&f, resolved, err);
    if (rc) return rc;
    rc = sdfed_task_parse(task, (const char *)f.data, f.size, err);
    if (rc == SDFED_OK && sha256) rc = native_sha256_hex(f.data, f.size, sha256, err);
    native_file_map_close(&f);
    if (rc == SDFED_OK) rc = native_task_host_defaults(task, err);
    if (rc == SDFED_OK) rc = sdfed_task_validate(task, err);
    if (rc == SDFED_OK && strcmp(task->dataset, "folder") == 0 && !task->data_train[0])
        rc = sdfed_fail(err, SDFED_ERR_FORMAT,
                        "task: key 'dataset': \"folder\" names no folders; a host's task names them: "
                        "{\"train\": DIR, \"test\": DIR} or {\"folder\": DIR, \"test_fraction\": F}");
    if (rc) {
        sdfed_task_free(task);
        return sdfed_fail_context(err, rc, "%s", path);
    }
    /* the task file's folder */
    snprintf(dir, sizeof dir, "%s", resolved);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    char *folders[2] = {task->data_train, task->data_test};
    for (int i = 0; i < 2; i++) {
        if (!folders[i][0]) continue;
        if (!under(dir, folders[i], joined, sizeof joined) || strlen(joined) >= sizeof task->data_train) {
            sdfed_task_free(task);
            return sdfed_fail(err, SDFED_ERR_ARG, "%s: the dataset's path is too long", path);
        }
        memcpy(folders[i], joined, strlen(joined) + 1);
    }
    if (task->model[0] != '/' && under(dir, task->model, joined, sizeof joined) && access(joined, R_OK) == 0 &&
        strlen(joined) < sizeof task->model)
        memcpy(task->model, joined, strlen(joined) + 1);
    return SDFED_OK;
}
