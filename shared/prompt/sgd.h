/* SGD with momentum and weight decay, PyTorch's semantics:
 *   g = grad + weight_decay * p;  buf = momentum * buf + g;  p -= lr * buf
 * (buf starting at zero; without momentum buf is g). An update covers
 * several tensors at once and is all or nothing: if any new value would not
 * be finite, nothing changes and the call fails with SDFED_ERR_NUMERIC. */
#ifndef SDFED_SGD_H
#define SDFED_SGD_H

#include <stddef.h>

#include "base/arena.h"
#include "base/status.h"

typedef struct sdfed_sgd {
    float lr, momentum, weight_decay;
} sdfed_sgd;

/* One trainable tensor: value and momentum buffer (NULL without momentum)
 * of n floats, and its gradient. */
typedef struct sdfed_param {
    float *value, *momentum;
    const float *grad;
    size_t n;
} sdfed_param;

/* Checks lr > 0, 0 <= momentum < 1, weight_decay >= 0 (all finite). */
int sdfed_sgd_validate(const sdfed_sgd *sgd, sdfed_error *err);

int sdfed_sgd_apply(const sdfed_sgd *sgd, const sdfed_param *params, int n_params, sdfed_arena *arena,
                    sdfed_error *err);

#endif
