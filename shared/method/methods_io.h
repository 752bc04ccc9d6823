/* A client's method parameters as a small GGUF file: metadata
 * sdfed.method (name), sdfed.width, sdfed.global_rows, sdfed.local_rows and
 * F32 tensors "global", "local" (and their momentum buffers when present).
 * This is how a client keeps its private prompt between sessions (the
 * browser stores these bytes in IndexedDB). */
#ifndef SDFED_METHODS_IO_H
#define SDFED_METHODS_IO_H

#include "base/io.h"
#include "method/methods.h"

int sdfed_method_params_save(int method, const sdfed_method_params *p, sdfed_sink *sink, sdfed_error *err);

/* Loads into a fresh *p (free with sdfed_method_params_free); *method
 * receives the method the file was saved for. */
int sdfed_method_params_load(const void *data, size_t size, int *method, sdfed_method_params *p, sdfed_error *err);

#endif
