/* A folder dataset in the ImageFolder layout: one sub-folder per class,
 * holding PNG and JPEG images (native/image_decode.h; any size, grey or
 * colour).
 *   classes  the sub-folders in sorted order, named by their folder names
 *            with '_' read as a space; or, when the caller gives class
 *            names, each matched to the folder whose name equals it
 *            ignoring case and treating '_', '-', '/' and space alike:
 *            every class needs its folder and every folder its class (the
 *            error names the missing and the extra ones). At most 256.
 *   images   every file whose name ends in .png, .jpg or .jpeg (any case)
 *            in a class folder, ordered by file name across the classes
 *            (then by class), so that a dataset written from an indexed one
 *            (00042.png, ...) keeps its order; other files are skipped and
 *            counted; names starting with '.' are ignored. A class without
 *            images is an error naming it.
 *   held out image_folder_hold_out splits one folder: in each class, of its
 *            images in order, image i goes to the test split when
 *            floor((i + 1) f) > floor(i f), evenly spread, no seed.
 *   content  image_folder_digest hashes every file's bytes, in order (not
 *            the labels: features do not depend on them), so that a feature
 *            cache knows when a folder changed. */
#ifndef SDFED_NATIVE_IMAGE_FOLDER_H
#define SDFED_NATIVE_IMAGE_FOLDER_H

#include <stdint.h>

#include "base/status.h"

#define IMAGE_FOLDER_MAX_CLASSES 256

typedef struct image_folder {
    int n, n_classes;
    char **paths;       /* (n) */
    uint8_t *labels;    /* (n) */
    char **class_names; /* (n_classes) */
    int skipped;        /* files that are not images */
} image_folder;

/* classes: NULL for the folder names, else n_classes names to match; with
 * some_classes, a class may have no folder (a volunteer's own images), but
 * a folder without a class is still an error. */
int image_folder_scan(const char *dir, const char *const *classes, int n_classes, int some_classes, image_folder *out,
                      sdfed_error *err);
/* train and test from all (which keeps its storage; free all only). */
int image_folder_hold_out(const image_folder *all, double fraction, image_folder *train, image_folder *test,
                          sdfed_error *err);
/* hex: SHA-256 over every file's SHA-256, in order. */
int image_folder_digest(const image_folder *f, char hex[65], sdfed_error *err);
void image_folder_free(image_folder *f);
/* For a split from image_folder_hold_out: its arrays only. */
void image_folder_free_split(image_folder *f);

#endif
