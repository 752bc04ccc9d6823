/* The federation's description for clients (see description.h). */
#include "description.h"

#include <stdlib.h>
#include <string.h>

#include "base/json_writer.h"

int agg_description_write(const sdfed_task *task, const agg_description_model *model, const uint32_t global_shape[2],
                          int demo_shards, char **out, sdfed_error *err) {
    *out = NULL;
    sdfed_buffer task_json = {0}, model_json = {0}, b = {0};
    int rc = sdfed_task_write(task, model->url, &task_json, err);
    sdfed_json_writer w;
    sdfed_jw_begin(&w, &model_json, NULL);
    sdfed_jw_string(&w, "url", model->url);
    sdfed_jw_string(&w, "sha256", model->sha256);
    sdfed_jw_int(&w, "size", (int64_t)model->size);
    if (rc == SDFED_OK) rc = sdfed_jw_end(&w, err);
    sdfed_jw_begin(&w, &b, NULL);
    sdfed_jw_raw(&w, "task", (const char *)task_json.data, task_json.size);
    sdfed_jw_raw(&w, "model", (const char *)model_json.data, model_json.size);
    int n_classes = sdfed_task_class_count(task);
    const char **class_names = malloc(sizeof *class_names * (size_t)(n_classes + 1));
    if (!class_names && rc == SDFED_OK) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "description: out of memory");
    for (int i = 0; class_names && i < n_classes; i++) class_names[i] = sdfed_task_class_name(task, i);
    if (class_names) sdfed_jw_strings(&w, "classes", class_names, n_classes);
    free(class_names);
    sdfed_jw_shape(&w, "global_shape", 2, global_shape);
    sdfed_jw_int(&w, "demo_shards", demo_shards);
    if (rc == SDFED_OK) rc = sdfed_jw_end(&w, err);
    if (rc == SDFED_OK) {
        /* the members without the object's braces */
        if (!(*out = malloc(b.size)))
            rc = sdfed_fail(err, SDFED_ERR_NOMEM, "description: out of memory");
        else {
            memcpy(*out, b.data + 1, b.size - 2);
            (*out)[b.size - 2] = '\0';
        }
    }
    sdfed_buffer_free(&task_json);
    sdfed_buffer_free(&model_json);
    sdfed_buffer_free(&b);
    return rc;
}
