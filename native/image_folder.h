/* A folder dataset on disk, walked as torchvision's ImageFolder reads one
 * (the rule is the core's, data/folder_rule.h, shared with the page):
 *   classes  the root's sub-folders in sorted order, named by their folder
 *            names with '_' read as a space; or, when the caller gives class
 *            names, each matched to the folder whose name means it: every
 *            class needs its folder and every folder its class (the error
 *            names the missing and the extra ones); two folders that mean
 *            one class are an error naming both. At most 256. A
 *            folder name that is not UTF-8 is an error naming it (it would
 *            be the class's name, sent to every volunteer as text).
 *   images   every PNG or JPEG (by extension) below a class folder, at any
 *            depth, ordered by file name across the classes (then by class,
 *            then by path), so that a dataset written from an indexed one
 *            (00042.png, ...) keeps its order. Every folder is read once in
 *            a scan (in a dataset's two splits' scans), by the first path to
 *            it (the root and the class folders first): a link to a folder
 *            above it (a loop), or to one read already (another class's, the
 *            other split's), is named and not walked; a class folder that is
 *            the root or another class's folder (or the other split's) is an
 *            error naming both.
 *   skipped  every other file, named with why: hidden (a hidden folder is
 *            named once and not walked), not an image, a picture in another
 *            format, an image in no class folder, and (added by the caller,
 *            native/fed_data.h) an image that does not decode. A class
 *            folder with no images is an error naming it (as in
 *            ImageFolder).
 *   held out native_image_folder_hold_out splits one folder: in each class, of its
 *            images in order, image i goes to the test split when
 *            floor((i + 1) f) > floor(i f), evenly spread, no seed; a class
 *            of n >= 2 images that this gives none (floor(n f) = 0) gives
 *            its last image. */
#ifndef SDFED_NATIVE_IMAGE_FOLDER_H
#define SDFED_NATIVE_IMAGE_FOLDER_H

#include <stdint.h>

#include "base/status.h"

#define IMAGE_FOLDER_MAX_CLASSES 256

/* One file not used, and why. */
typedef struct native_image_folder_skip {
    char *path;   /* as text: a byte that is not UTF-8 shown \xNN (native_path_text) */
    char *reason; /* "hidden", "not an image", "GIF: not PNG or JPEG", "invalid PNG: ...", ... */
    int image;    /* whether it looked like a picture (--strict refuses those) */
} native_image_folder_skip;

typedef struct native_image_folder_skips {
    native_image_folder_skip *items;
    int n, cap;
} native_image_folder_skips;

typedef struct native_image_folder {
    int n, n_classes;
    char **paths;       /* (n) */
    uint8_t *labels;    /* (n) */
    char **class_names; /* (n_classes) */
    native_image_folder_skips skipped;
} native_image_folder;

/* classes: NULL for the folder names, else n_classes names to match; with
 * some_classes, a class may have no folder (a volunteer's own images), but
 * a folder without a class is still an error. */
int native_image_folder_scan(const char *dir, const char *const *classes, int n_classes, int some_classes,
                             native_image_folder *out, sdfed_error *err);
/* A dataset's two splits: train_dir scanned as above, then test_dir with
 * train's classes, every folder read once across the two scans: a link in
 * the test split to a folder the training split read is named and not
 * walked, and a test root or class folder that is one is an error naming
 * both (the test split would hold training images). An image file linked
 * into both splits is not found (each split's files are its own). */
int native_image_folder_scan_splits(const char *train_dir, const char *test_dir, const char *const *classes,
                                    int n_classes, native_image_folder *train, native_image_folder *test,
                                    sdfed_error *err);
/* Every file in the folder dir but in its n_read folders read (the train
 * and test folders of a task), at any depth, added to skipped as not used:
 * each PNG or JPEG (a picture: --strict refuses it) with reason, the others
 * as a scan names them (hidden, not an image, another format). Folders are
 * walked as in a scan (a link to dir, to a folder read or to one walked
 * already is named, not walked). */
int native_image_folder_beside(const char *dir, const char *const *read, int n_read, const char *reason,
                               native_image_folder_skips *skipped, sdfed_error *err);
/* Moves all's images into train and test, which borrow all's class names
 * (all keeps them and its skipped list: free it after the splits). */
int native_image_folder_hold_out(native_image_folder *all, double fraction, native_image_folder *train,
                                 native_image_folder *test, sdfed_error *err);
/* Keeps the images whose keep[i] is set, in order (the others' paths
 * freed). */
void native_image_folder_keep(native_image_folder *f, const uint8_t *keep);
void native_image_folder_free(native_image_folder *f);
/* For a split from native_image_folder_hold_out: its images, not the class names. */
void native_image_folder_free_split(native_image_folder *f);

/* Adds a copy of path and reason to the list. */
int native_image_folder_skip_add(native_image_folder_skips *s, const char *path, const char *reason, int image,
                                 sdfed_error *err);
void native_image_folder_skips_free(native_image_folder_skips *s);

#endif
