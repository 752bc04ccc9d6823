/* ImageFolder datasets on disk (see image_folder.h). */
#include "native/image_folder.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "base/grow.h"
#include "base/sha256.h"
#include "native/file_map.h"

typedef struct entry {
    char *name; /* file name, for the order */
    char *path;
    int label;
} entry;

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int compare_entries(const void *a, const void *b) {
    const entry *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : x->label - y->label;
}

/* The sorted names of dir's entries that are folders (want_dirs) or files. */
static int list(const char *dir, int want_dirs, char ***names, int *n, sdfed_error *err) {
    *names = NULL, *n = 0;
    DIR *d = opendir(dir);
    if (!d) return sdfed_fail(err, SDFED_ERR_IO, "%s: %s", dir, strerror(errno));
    int cap = 0, rc = SDFED_OK;
    struct dirent *e;
    char path[4096];
    while (rc == SDFED_OK && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0 || (want_dirs ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))) continue;
        char **grown = sdfed_grow(*names, &cap, *n, sizeof *grown);
        if (!grown) {
            rc = sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", dir);
            break;
        }
        *names = grown;
        if (!((*names)[*n] = strdup(e->d_name)))
            rc = sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", dir);
        else
            (*n)++;
    }
    closedir(d);
    if (rc == SDFED_OK) qsort(*names, (size_t)*n, sizeof **names, compare_names);
    return rc;
}

static void free_names(char **names, int n) {
    for (int i = 0; names && i < n; i++) free(names[i]);
    free(names);
}

/* the matching key of a class or folder name: lower case, '_', '-', '/'
 * and space alike */
static void match_key(const char *name, char *key, size_t cap) {
    size_t i = 0;
    for (; name[i] && i + 1 < cap; i++) {
        char c = name[i];
        key[i] = c == '_' || c == '-' || c == '/' ? ' ' : (char)tolower((unsigned char)c);
    }
    key[i] = '\0';
}

static int is_image_name(const char *name) {
    const char *dot = strrchr(name, '.');
    return dot && (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg"));
}

/* folder_of[c]: the folder of class c; an error names every class without
 * a folder and every folder without a class. */
static int match_classes(const char *dir, char **folders, int n_folders, const char *const *classes, int n_classes,
                         int some_classes, int *folder_of, sdfed_error *err) {
    char missing[1024] = "", extra[1024] = "", a[256], b[256];
    int *used = calloc((size_t)n_folders + 1, sizeof *used);
    if (!used) return sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", dir);
    for (int c = 0; c < n_classes; c++) {
        folder_of[c] = -1;
        match_key(classes[c], a, sizeof a);
        for (int f = 0; f < n_folders && folder_of[c] < 0; f++) {
            match_key(folders[f], b, sizeof b);
            if (!strcmp(a, b) && !used[f]) folder_of[c] = f, used[f] = 1;
        }
        if (folder_of[c] < 0 && !some_classes)
            snprintf(missing + strlen(missing), sizeof missing - strlen(missing), "%s'%s'", missing[0] ? ", " : "",
                     classes[c]);
    }
    for (int f = 0; f < n_folders; f++)
        if (!used[f])
            snprintf(extra + strlen(extra), sizeof extra - strlen(extra), "%s'%s'", extra[0] ? ", " : "", folders[f]);
    free(used);
    if (!missing[0] && !extra[0]) return SDFED_OK;
    return sdfed_fail(
        err, SDFED_ERR_FORMAT, "%s:%s%s%s%s", dir, missing[0] ? " classes without a folder: " : "", missing,
        extra[0] ? (missing[0] ? "; folders without a class: " : " folders without a class: ") : "", extra);
}

int image_folder_scan(const char *dir, const char *const *classes, int n_classes, int some_classes, image_folder *out,
                      sdfed_error *err) {
    memset(out, 0, sizeof *out);
    char **folders = NULL;
    int n_folders = 0, rc = list(dir, 1, &folders, &n_folders, err);
    if (rc == SDFED_OK && n_folders == 0)
        rc = sdfed_fail(err, SDFED_ERR_FORMAT, "%s: no class folders (one sub-folder per class)", dir);
    int C = classes ? n_classes : n_folders;
    if (rc == SDFED_OK && C > IMAGE_FOLDER_MAX_CLASSES)
        rc = sdfed_fail(err, SDFED_ERR_FORMAT, "%s: %d classes, at most %d", dir, C, IMAGE_FOLDER_MAX_CLASSES);
    int *folder_of = rc == SDFED_OK ? malloc(sizeof *folder_of * (size_t)C) : NULL;
    out->class_names = rc == SDFED_OK ? calloc((size_t)C, sizeof *out->class_names) : NULL;
    if (rc == SDFED_OK && (!folder_of || !out->class_names))
        rc = sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", dir);
    if (rc == SDFED_OK && classes)
        rc = match_classes(dir, folders, n_folders, classes, n_classes, some_classes, folder_of, err);
    for (int c = 0; c < C && rc == SDFED_OK; c++) {
        if (!classes) folder_of[c] = c;
        out->class_names[c] = strdup(classes ? classes[c] : folders[c]);
        if (!out->class_names[c]) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", dir);
        for (char *p = out->class_names[c]; !classes && p && *p; p++)
            if (*p == '_') *p = ' ';
    }
    out->n_classes = C;
    entry *all = NULL;
    int n = 0, cap = 0;
    for (int c = 0; c < C && rc == SDFED_OK; c++) {
        if (folder_of[c] < 0) continue; /* a class the volunteer has no images of */
        char folder[4096];
        snprintf(folder, sizeof folder, "%s/%s", dir, folders[folder_of[c]]);
        char **files = NULL;
        int n_files = 0, images = 0;
        rc = list(folder, 0, &files, &n_files, err);
        for (int i = 0; i < n_files && rc == SDFED_OK; i++) {
            if (!is_image_name(files[i])) {
                out->skipped++;
                continue;
            }
            entry *grown = sdfed_grow(all, &cap, n, sizeof *grown);
            if (!grown) {
                rc = sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", dir);
                break;
            }
            all = grown;
            size_t len = strlen(folder) + strlen(files[i]) + 2;
            entry e = {strdup(files[i]), malloc(len), c};
            if (!e.name || !e.path) {
                free(e.name), free(e.path);
                rc = sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", dir);
                break;
            }
            snprintf(e.path, len, "%s/%s", folder, files[i]);
            all[n++] = e;
            images++;
        }
        if (rc == SDFED_OK && images == 0)
            rc = sdfed_fail(err, SDFED_ERR_FORMAT, "%s: class '%s' has no images (PNG or JPEG)", folder,
                            out->class_names[c]);
        free_names(files, n_files);
    }
    if (rc == SDFED_OK) {
        qsort(all, (size_t)n, sizeof *all, compare_entries);
        out->paths = malloc(sizeof *out->paths * (size_t)n);
        out->labels = malloc((size_t)n);
        if (!out->paths || !out->labels) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", dir);
    }
    for (int i = 0; i < n; i++) {
        if (rc == SDFED_OK)
            out->paths[i] = all[i].path, out->labels[i] = (uint8_t)all[i].label;
        else
            free(all[i].path);
        free(all[i].name);
    }
    if (rc == SDFED_OK) out->n = n;
    free(all);
    free(folder_of);
    free_names(folders, n_folders);
    if (rc) image_folder_free(out);
    return rc;
}

int image_folder_hold_out(const image_folder *all, double fraction, image_folder *train, image_folder *test,
                          sdfed_error *err) {
    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    image_folder *split[2] = {train, test};
    for (int s = 0; s < 2; s++) {
        *split[s] = (image_folder){0,
                                   all->n_classes,
                                   malloc(sizeof(char *) * (size_t)(all->n + 1)),
                                   malloc((size_t)all->n + 1),
                                   all->class_names,
                                   0};
        if (!split[s]->paths || !split[s]->labels) {
            image_folder_free_split(train), image_folder_free_split(test);
            return sdfed_fail(err, SDFED_ERR_NOMEM, "dataset: out of memory");
        }
    }
    int *seen = calloc((size_t)all->n_classes, sizeof *seen);
    if (!seen) {
        image_folder_free_split(train), image_folder_free_split(test);
        return sdfed_fail(err, SDFED_ERR_NOMEM, "dataset: out of memory");
    }
    for (int i = 0; i < all->n; i++) {
        int c = all->labels[i], k = seen[c]++;
        image_folder *to = split[(int)((k + 1) * fraction) > (int)(k * fraction)];
        to->paths[to->n] = all->paths[i], to->labels[to->n++] = (uint8_t)c;
    }
    free(seen);
    return SDFED_OK;
}

int image_folder_digest(const image_folder *f, char hex[65], sdfed_error *err) {
    sdfed_sha256 all;
    sdfed_sha256_init(&all);
    for (int i = 0; i < f->n; i++) {
        file_map m;
        int rc = file_map_open(&m, f->paths[i], err);
        if (rc) return rc;
        unsigned char one[32];
        sdfed_sha256 h;
        sdfed_sha256_init(&h);
        sdfed_sha256_update(&h, m.data, m.size);
        sdfed_sha256_final(&h, one);
        file_map_close(&m);
        sdfed_sha256_update(&all, one, sizeof one);
    }
    unsigned char digest[32];
    sdfed_sha256_final(&all, digest);
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", digest[i]);
    return SDFED_OK;
}

void image_folder_free_split(image_folder *f) {
    free(f->paths);
    free(f->labels);
    memset(f, 0, sizeof *f);
}

void image_folder_free(image_folder *f) {
    for (int i = 0; f->paths && i < f->n; i++) free(f->paths[i]);
    for (int c = 0; f->class_names && c < f->n_classes; c++) free(f->class_names[c]);
    free(f->class_names);
    image_folder_free_split(f);
}
