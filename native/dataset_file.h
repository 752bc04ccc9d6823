/* Fashion-MNIST from disk (native builds only: gzip through native/gzip.h). The four files of
 * http://fashion-mnist (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz,
 * t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz) are read whole into
 * memory, uncompressed, and parsed by shared/data/idx.h. */
#ifndef SDFED_NATIVE_DATASET_FILE_H
#define SDFED_NATIVE_DATASET_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "data/idx.h"

enum { SDFED_FMNIST_TRAIN = 0, SDFED_FMNIST_TEST = 1 };

/* its name in a task ("dataset"), and a task's data set when it names none */
#define SDFED_FMNIST_NAME "fashion-mnist"

#define SDFED_FMNIST_DEFAULT_DIR "/usr/share/datasets/fashion-mnist"

/* its ten classes, by label */
#define SDFED_FMNIST_CLASSES 10
extern const char *const native_fmnist_class_names[SDFED_FMNIST_CLASSES];
/* the most one file may uncompress to (a corrupt or hostile file stops here) */
#define SDFED_DATASET_FILE_MAX ((size_t)256 << 20)

/* Loads one split from dir: "<prefix>-images-idx3-ubyte.gz" and
 * "<prefix>-labels-idx1-ubyte.gz" with prefix "train" or "t10k"; when a .gz
 * file does not exist, the same name without .gz (already uncompressed) is
 * tried. On success out owns both buffers (sdfed_dataset_free), n_classes is
 * 10 with native_fmnist_class_names. Errors: SDFED_ERR_IO for a missing or
 * unreadable file, SDFED_ERR_FORMAT for corrupt gzip data or a bad IDX file
 * (the message names the file), SDFED_ERR_ARG for a bad split. */
int native_fmnist_load(const char *dir, int split, sdfed_dataset *out, sdfed_error *err);

#endif
