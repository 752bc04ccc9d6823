/* Opening a model file on the host: the GGUF file mapped, the CLIP model
 * and its tokenizer loaded from it; and the kernel backend a program runs
 * (natively over the kernels' thread pool). */
#ifndef SDFED_NATIVE_MODEL_H
#define SDFED_NATIVE_MODEL_H

#include "base/status.h"
#include "clip/clip_model.h"
#include "kernels/kernels.h"
#include "native/file_map.h"
#include "text/tokenizer.h"

/* The default model, used by every program when --model is not given. */
#define NATIVE_DEFAULT_MODEL "models/fmnist-tiny-clip.q8_0.gguf"

/* A model file loaded with its tokenizer. */
typedef struct native_model {
    native_file_map file;
    sdfed_clip_model clip;
    sdfed_tokenizer tokenizer;
} native_model;

/* path NULL: NATIVE_DEFAULT_MODEL; a relative path is resolved with
 * native_resolve_path. */
int native_model_open(native_model *m, const char *path, sdfed_error *err);
void native_model_close(native_model *m);

/* The kernel backend named by --backend, or the default when name is NULL;
 * natively it splits its work over the cores this process may use. */
const sdfed_kernels *native_backend(const char *name);
/* The threads native_backend's kernels split their work over. */
int native_backend_threads(void);

#endif
