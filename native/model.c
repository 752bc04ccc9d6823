/* Model files opened on the host and the kernel backend (see model.h). */
#include "native/model.h"

#include <string.h>
#include <unistd.h>

#include "native/clock.h"
#include "native/paths.h"

int native_model_open(native_model *m, const char *path, sdfed_error *err) {
    memset(m, 0, sizeof *m);
    char resolved[4096];
    if (!path) path = NATIVE_DEFAULT_MODEL;
    path = native_resolve_path(path, resolved, sizeof resolved);
    int rc = native_file_map_open(&m->file, path, err);
    if (rc) return rc;
    rc = sdfed_clip_load(&m->clip, m->file.data, m->file.size, err);
    if (rc == SDFED_OK) {
        rc = sdfed_tokenizer_init_gguf(&m->tokenizer, &m->clip.file, err);
        if (rc) sdfed_clip_free(&m->clip);
    }
    if (rc) {
        native_file_map_close(&m->file);
        return sdfed_fail_context(err, rc, "%s", path);
    }
    return SDFED_OK;
}

void native_model_close(native_model *m) {
    sdfed_tokenizer_free(&m->tokenizer);
    sdfed_clip_free(&m->clip);
    native_file_map_close(&m->file);
}

int native_backend_threads(void) {
#if defined(SDFED_HAVE_NATIVE_KERNELS)
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores > 1 ? (int)cores : 1;
#else
    return 1;
#endif
}

const sdfed_kernels *native_backend(const char *name) {
    const sdfed_kernels *k = name ? sdfed_kernels_by_name(name) : sdfed_kernels_default();
#if defined(SDFED_HAVE_NATIVE_KERNELS)
    /* natively, split over the cores this process may use */
    if (k) k = sdfed_kernels_threaded(k, native_backend_threads(), native_clock_monotonic_ns);
#endif
    return k;
}
