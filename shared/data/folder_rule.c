/* The ImageFolder rule (see folder_rule.h). */
#include "data/folder_rule.h"

#include <string.h>

typedef struct extension {
    const char *dot; /* lower case, with its dot */
    const char *format;
} extension;

/* read by the decoders (native/image_decode.h; the browser's) */
static const char *const decoded[] = {".png", ".jpg", ".jpeg", ".jpe", ".jfif"};

static const extension unsupported[] = {
    {.dot = ".gif", .format = "GIF"},        {.dot = ".webp", .format = "WebP"},
    {.dot = ".bmp", .format = "BMP"},        {.dot = ".dib", .format = "BMP"},
    {.dot = ".tif", .format = "TIFF"},       {.dot = ".tiff", .format = "TIFF"},
    {.dot = ".svg", .format = "SVG"},        {.dot = ".svgz", .format = "SVG"},
    {.dot = ".heic", .format = "HEIC"},      {.dot = ".heif", .format = "HEIF"},
    {.dot = ".avif", .format = "AVIF"},      {.dot = ".ico", .format = "ICO"},
    {.dot = ".psd", .format = "PSD"},        {.dot = ".ppm", .format = "PNM"},
    {.dot = ".pgm", .format = "PNM"},        {.dot = ".pbm", .format = "PNM"},
    {.dot = ".pnm", .format = "PNM"},        {.dot = ".jxl", .format = "JPEG XL"},
    {.dot = ".jp2", .format = "JPEG 2000"},  {.dot = ".cr2", .format = "camera raw"},
    {.dot = ".cr3", .format = "camera raw"}, {.dot = ".nef", .format = "camera raw"},
    {.dot = ".arw", .format = "camera raw"}, {.dot = ".dng", .format = "camera raw"},
    {.dot = ".raf", .format = "camera raw"}, {.dot = ".orf", .format = "camera raw"},
};

static const char *const reasons[SDFED_FOLDER_KINDS] = {
    [SDFED_FOLDER_IMAGE] = NULL,
    [SDFED_FOLDER_LOOSE] = "in no class folder",
    [SDFED_FOLDER_HIDDEN] = "hidden",
    [SDFED_FOLDER_UNSUPPORTED] = "not PNG or JPEG",
    [SDFED_FOLDER_NOT_IMAGE] = "not an image",
};

static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

/* whether name (length bytes) ends in dot, ignoring ASCII case */
static int has_extension(const char *name, size_t length, const char *dot) {
    size_t n = strlen(dot);
    if (length <= n) return 0;
    for (size_t i = 0; i < n; i++)
        if (lower(name[length - n + i]) != dot[i]) return 0;
    return 1;
}

int sdfed_folder_name_hidden(const char *name, size_t length) {
    static const char archive[] = "__MACOSX";
    return (length > 0 && name[0] == '.') ||
           (length == sizeof archive - 1 && memcmp(name, archive, sizeof archive - 1) == 0);
}

sdfed_folder_entry sdfed_folder_classify(const char *path) {
    sdfed_folder_entry out = {.kind = SDFED_FOLDER_NOT_IMAGE};
    size_t first_folder = 0;
    int depth = 0;
    const char *name = path;
    for (const char *p = path;; p++) {
        if (*p != '/' && *p != '\0') continue;
        size_t length = (size_t)(p - name);
        if (sdfed_folder_name_hidden(name, length)) {
            out.kind = SDFED_FOLDER_HIDDEN;
            return out;
        }
        if (*p == '\0') break;
        if (length > 0 && depth++ == 0) first_folder = length;
        name = p + 1;
    }
    size_t length = strlen(name);
    for (size_t i = 0; i < sizeof decoded / sizeof *decoded; i++)
        if (has_extension(name, length, decoded[i])) {
            out.kind = depth > 0 ? SDFED_FOLDER_IMAGE : SDFED_FOLDER_LOOSE;
            out.class_length = depth > 0 ? first_folder : 0;
            return out;
        }
    for (size_t i = 0; i < sizeof unsupported / sizeof *unsupported; i++)
        if (has_extension(name, length, unsupported[i].dot)) {
            out.kind = SDFED_FOLDER_UNSUPPORTED;
            out.format = unsupported[i].format;
            return out;
        }
    return out;
}

const char *sdfed_folder_kind_reason(sdfed_folder_kind kind) {
    return kind >= 0 && kind < SDFED_FOLDER_KINDS ? reasons[kind] : NULL;
}

/* the matching form of one character: lower case, '_', '-', '/' as space */
static char match_char(char c) { return c == '_' || c == '-' || c == '/' ? ' ' : lower(c); }

int sdfed_folder_names_match(const char *a, size_t a_length, const char *b, size_t b_length) {
    if (a_length != b_length) return 0;
    for (size_t i = 0; i < a_length; i++)
        if (match_char(a[i]) != match_char(b[i])) return 0;
    return 1;
}

int sdfed_folder_class_of(const char *folder, size_t length, const char *const *classes, int n) {
    for (int c = 0; c < n; c++)
        if (sdfed_folder_names_match(folder, length, classes[c], strlen(classes[c]))) return c;
    return -1;
}
