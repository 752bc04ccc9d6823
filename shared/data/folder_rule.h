/* How a folder of labelled images is read: torchvision's ImageFolder rule,
 * one for the CLI, the server's demo shards and the page (which calls it
 * through the wasm client), so that the three count the same images.
 *
 * A path is relative to the dataset's root (the folder a host names, the
 * folder a volunteer picks), '/'-separated, as browsers give it below the
 * chosen folder:
 *   class     the path's first folder: every image below it counts, at any
 *             depth ("animals/bugs/ant.png" is an image of "animals")
 *   loose     an image directly in the root belongs to no class folder
 *             (the CLI skips it and names it; the page asks its class)
 *   hidden    a file or folder whose name starts with '.' (".DS_Store",
 *             ".thumbnails/"), or macOS's archive folder "__MACOSX", is
 *             skipped, and so is everything below a hidden folder
 *   images    by the extension, ignoring case: .png, .jpg, .jpeg, .jpe,
 *             .jfif; the other formats people keep pictures in (GIF, WebP,
 *             BMP, TIFF, SVG, HEIC, HEIF, AVIF, ICO, PSD, PNM, camera raw)
 *             are "unsupported" and named with their format, any other
 *             file "not an image"
 * A folder name means the class whose name equals it ignoring ASCII case
 * and treating '_', '-', '/' and space alike ("Sea_lion" is "sea lion").
 * Nothing here touches files: the callers list them. */
#ifndef SDFED_DATA_FOLDER_RULE_H
#define SDFED_DATA_FOLDER_RULE_H

#include <stddef.h>

typedef enum sdfed_folder_kind {
    SDFED_FOLDER_IMAGE = 0,       /* an image in a class folder */
    SDFED_FOLDER_LOOSE = 1,       /* an image in the root, in no class folder */
    SDFED_FOLDER_HIDDEN = 2,      /* hidden, or below a hidden folder */
    SDFED_FOLDER_UNSUPPORTED = 3, /* a picture in a format that is not PNG or JPEG */
    SDFED_FOLDER_NOT_IMAGE = 4,   /* any other file */
    SDFED_FOLDER_KINDS = 5
} sdfed_folder_kind;

typedef struct sdfed_folder_entry {
    sdfed_folder_kind kind;
    size_t class_length; /* IMAGE: the class folder is the path's first class_length bytes */
    const char *format;  /* UNSUPPORTED: the format's name ("GIF"); else NULL */
} sdfed_folder_entry;

/* What the file at path (relative to the root) is. */
sdfed_folder_entry sdfed_folder_classify(const char *path);

/* Whether a folder of this name is hidden (and not to be walked). */
int sdfed_folder_name_hidden(const char *name, size_t length);

/* Why an entry of this kind is not used, for a summary ("hidden", "not an
 * image", ...); NULL for IMAGE. */
const char *sdfed_folder_kind_reason(sdfed_folder_kind kind);

/* The class among n names that the folder name (length bytes) means, or
 * -1. */
int sdfed_folder_class_of(const char *folder, size_t length, const char *const *classes, int n);

/* Whether two names mean the same class. */
int sdfed_folder_names_match(const char *a, size_t a_length, const char *b, size_t b_length);

#endif
