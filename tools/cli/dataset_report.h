/* What a host reads about a dataset before opening a federation: the
 * images of each class that will be used, and every file that will not,
 * with why (`sdfed task init`, `task check`, `sim`). */
#ifndef SDFED_CLI_DATASET_REPORT_H
#define SDFED_CLI_DATASET_REPORT_H

#include <stdint.h>

#include "native/image_folder.h"

/* One line per class: its training images and, with test labels, its test
 * images. */
void report_classes(const char *const *names, int C, const uint8_t *train, int n_train, const uint8_t *test,
                    int n_test);

/* The files not used, paths shown below the dataset's folder root: every picture that is not used (it does not decode,
 * its format is not PNG or JPEG, it is in no class folder) by name and reason, the others (hidden, not images) counted
 * by reason with their first names. Returns how many pictures are not used (what --strict refuses). */
int report_skipped(const native_image_folder_skips *skipped, const char *root);

#endif
