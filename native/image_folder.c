/* ImageFolder datasets on disk (see image_folder.h). */
#include "native/image_folder.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/grow.h"
#include "data/folder_rule.h"
#include "native/paths.h"

/* folders below a class folder walked at most this deep */
#define MAX_DEPTH 64

/* A folder, whichever path leads to it. */
typedef struct folder_id {
    dev_t dev;
    ino_t ino;
} folder_id;

typedef struct entry {
    const char *name; /* the file name, inside path: the order */
    char *path;
    int label;
} entry;

/* The folders read, each by the first path to it: one scan's, or the two
 * scans' of a dataset's splits (a link from one to the other is not
 * walked). */
typedef struct folder_read {
    folder_id id;
    char *path;
} folder_read;

typedef struct read_set {
    folder_read *items;
    int n, cap;
} read_set;

/* A walk below one root. */
typedef struct walk {
    const char *root;
    native_image_folder_skips *skipped;
    const char *outside; /* beside the dataset's folders: every picture's reason for not being used */
    entry *images;
    int n, cap;
    /* the root, the class folder and the folders below it being walked: a link to one is a loop */
    folder_id path[MAX_DEPTH + 2];
    int depth;
    /* every folder read (the root and the class folders first), from read->items[first] on in this scan */
    read_set *read;
    int first;
} walk;

static folder_id id_of(const struct stat *st) { return (folder_id){.dev = st->st_dev, .ino = st->st_ino}; }

static int same_folder(folder_id a, folder_id b) { return a.dev == b.dev && a.ino == b.ino; }

/* Whether the folder is among the n. */
static int among(const folder_id *folders, int n, folder_id f) {
    for (int i = 0; i < n; i++)
        if (same_folder(folders[i], f)) return 1;
    return 0;
}

/* Where the folder is among those read, or -1. */
static int read_index(const read_set *r, folder_id f) {
    for (int i = 0; i < r->n; i++)
        if (same_folder(r->items[i].id, f)) return i;
    return -1;
}

/* The folder counted as read, by path. */
static int mark_read(read_set *r, folder_id f, const char *path, sdfed_error *err) {
    folder_read *grown = sdfed_grow(r->items, &r->cap, r->n, sizeof *grown);
    if (grown) r->items = grown;
    char *copy = grown ? strdup(path) : NULL;
    if (!copy) return sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", path);
    r->items[r->n++] = (folder_read){.id = f, .path = copy};
    return SDFED_OK;
}

static void read_set_free(read_set *r) {
    for (int i = 0; i < r->n; i++) free(r->items[i].path);
    free(r->items);
    memset(r, 0, sizeof *r);
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int compare_entries(const void *a, const void *b) {
    const entry *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    return x->label != y->label ? x->label - y->label : strcmp(x->path, y->path);
}

int native_image_folder_skip_add(native_image_folder_skips *s, const char *path, const char *reason, int image,
                                 sdfed_error *err) {
    native_image_folder_skip *grown = sdfed_grow(s->items, &s->cap, s->n, sizeof *grown);
    if (!grown) return sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", path);
    s->items = grown;
    native_image_folder_skip one = {.path = native_path_text(path), .reason = strdup(reason), .image = image};
    if (!one.path || !one.reason) {
        free(one.path);
        free(one.reason);
        return sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", path);
    }
    s->items[s->n++] = one;
    return SDFED_OK;
}

void native_image_folder_skips_free(native_image_folder_skips *s) {
    for (int i = 0; i < s->n; i++) {
        free(s->items[i].path);
        free(s->items[i].reason);
    }
    free(s->items);
    memset(s, 0, sizeof *s);
}

/* The sorted names in folder dir (hidden ones too: the caller names them). */
static int list(const char *dir, char ***names, int *n, sdfed_error *err) {
    *names = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return sdfed_fail(err, SDFED_ERR_IO, "%s: %s", dir, strerror(errno));
    int cap = 0, rc = SDFED_OK;
    struct dirent *e;
    while (rc == SDFED_OK && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char **grown = sdfed_grow(*names, &cap, *n, sizeof *grown);
        char *name = grown ? strdup(e->d_name) : NULL;
        if (grown) *names = grown;
        if (!name)
            rc = sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", dir);
        else
            (*names)[(*n)++] = name;
    }
    closedir(d);
    if (rc == SDFED_OK) qsort(*names, (size_t)*n, sizeof **names, compare_names);
    return rc;
}

static void free_names(char **names, int n) {
    for (int i = 0; names && i < n; i++) free(names[i]);
    free(names);
}

/* path = a + "/" + b, malloc'ed */
static char *join(const char *a, const char *b) {
    size_t length = strlen(a) + strlen(b) + 2;
    char *path = malloc(length);
    if (path) snprintf(path, length, "%s/%s", a, b);
    return path;
}

/* Whether a file at rel is named as a picture: one not used is among the
 * images not used (--strict refuses those), whatever the reason. */
static int named_as_picture(const char *rel) {
    sdfed_folder_kind kind = sdfed_folder_classify(rel).kind;
    return kind == SDFED_FOLDER_IMAGE || kind == SDFED_FOLDER_UNSUPPORTED || kind == SDFED_FOLDER_LOOSE;
}

/* A file found at relative path rel (full path path) below class label. */
static int add_file(walk *w, char *path, const char *rel, int label, sdfed_error *err) {
    sdfed_folder_entry kind = sdfed_folder_classify(rel);
    if (w->outside && (kind.kind == SDFED_FOLDER_IMAGE || kind.kind == SDFED_FOLDER_LOOSE)) {
        int rc = native_image_folder_skip_add(w->skipped, path, w->outside, 1, err);
        free(path);
        return rc;
    }
    if (kind.kind == SDFED_FOLDER_IMAGE) {
        entry *grown = sdfed_grow(w->images, &w->cap, w->n, sizeof *grown);
        if (!grown) return sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", path);
        w->images = grown;
        const char *slash = strrchr(path, '/');
        w->images[w->n++] = (entry){.name = slash ? slash + 1 : path, .path = path, .label = label};
        return SDFED_OK;
    }
    char reason[64];
    if (kind.kind == SDFED_FOLDER_UNSUPPORTED)
        snprintf(reason, sizeof reason, "%s: %s", kind.format, sdfed_folder_kind_reason(kind.kind));
    else
        snprintf(reason, sizeof reason, "%s", sdfed_folder_kind_reason(kind.kind));
    int rc = native_image_folder_skip_add(w->skipped, path, reason, named_as_picture(rel), err);
    free(path);
    return rc;
}

static int walk_folder(walk *w, const char *rel, int label, sdfed_error *err);

/* One entry of a folder: a file, or a folder walked in turn. */
static int walk_entry(walk *w, const char *rel, int label, sdfed_error *err) {
    char *path = join(w->root, rel);
    if (!path) return sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", w->root);
    struct stat st;
    const char *name = strrchr(rel, '/');
    name = name ? name + 1 : rel;
    int rc = SDFED_OK;
    if (stat(path, &st) != 0) {
        char reason[128];
        snprintf(reason, sizeof reason, "cannot be read: %s", strerror(errno));
        rc = native_image_folder_skip_add(w->skipped, path, reason, named_as_picture(rel), err);
    } else if (S_ISDIR(st.st_mode) && sdfed_folder_name_hidden(name, strlen(name))) {
        rc = native_image_folder_skip_add(w->skipped, path, "hidden folder", 0, err);
    } else if (S_ISDIR(st.st_mode)) {
        folder_id f = id_of(&st);
        if (among(w->path, w->depth, f)) {
            rc = native_image_folder_skip_add(w->skipped, path, "a folder loop", 0, err);
        } else if (read_index(w->read, f) >= 0) {
            rc = native_image_folder_skip_add(w->skipped, path, "a folder read already by another path", 0, err);
        } else if (w->depth >= MAX_DEPTH + 2) {
            rc = native_image_folder_skip_add(w->skipped, path, "folders nested too deep", 0, err);
        } else {
            rc = mark_read(w->read, f, path, err);
            w->path[w->depth++] = f;
            if (rc == SDFED_OK) rc = walk_folder(w, rel, label, err);
            w->depth--;
        }
    } else if (!S_ISREG(st.st_mode)) {
        rc = native_image_folder_skip_add(w->skipped, path, "not a file", named_as_picture(rel), err);
    } else {
        return add_file(w, path, rel, label, err); /* keeps path */
    }
    free(path);
    return rc;
}

/* Every entry below the folder at rel (relative to the root). */
static int walk_folder(walk *w, const char *rel, int label, sdfed_error *err) {
    char *dir = join(w->root, rel);
    char **names = NULL;
    int n = 0, rc = dir ? list(dir, &names, &n, err) : sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", rel);
    for (int i = 0; i < n && rc == SDFED_OK; i++) {
        char *child = join(rel, names[i]);
        rc = child ? walk_entry(w, child, label, err) : sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", dir);
        free(child);
    }
    free_names(names, n);
    free(dir);
    return rc;
}

/* folder_of[c]: the folder of class c; an error names every class without
 * a folder and every folder without a class. */
static int match_classes(const char *dir, char **folders, int n_folders, const char *const *classes, int n_classes,
                         int some_classes, int *folder_of, sdfed_error *err) {
    char missing[1024] = "", extra[1024] = "";
    int *used = calloc((size_t)n_folders + 1, sizeof *used);
    if (!used) return sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", dir);
    for (int c = 0; c < n_classes; c++) {
        folder_of[c] = -1;
        for (int f = 0; f < n_folders && folder_of[c] < 0; f++)
            if (!used[f] && sdfed_folder_names_match(classes[c], strlen(classes[c]), folders[f], strlen(folders[f]))) {
                folder_of[c] = f;
                used[f] = 1;
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
    const char *between = missing[0] ? "; folders without a class: " : " folders without a class: ";
    return sdfed_fail(err, SDFED_ERR_FORMAT, "%s:%s%s%s%s", dir, missing[0] ? " classes without a folder: " : "",
                      missing, extra[0] ? between : "", extra);
}

/* The root's class folders (sorted; hidden ones named and left out), its
 * loose files named. */
static int root_folders(walk *w, char ***folders, int *n_folders, sdfed_error *err) {
    char **names = NULL;
    int n = 0, rc = list(w->root, &names, &n, err);
    *folders = NULL;
    *n_folders = 0;
    int cap = 0;
    for (int i = 0; i < n && rc == SDFED_OK; i++) {
        char *path = join(w->root, names[i]);
        struct stat st;
        if (!path) {
            rc = sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", w->root);
        } else if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
                   !sdfed_folder_name_hidden(names[i], strlen(names[i]))) {
            char **grown = sdfed_grow(*folders, &cap, *n_folders, sizeof *grown);
            if (!grown) {
                rc = sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", w->root);
            } else {
                *folders = grown;
                (*folders)[(*n_folders)++] = names[i];
                names[i] = NULL;
            }
        } else {
            rc = walk_entry(w, names[i], -1, err); /* hidden, loose or not a folder: named */
        }
        free(path);
    }
    free_names(names, n);
    return rc;
}

/* Every class folder's name is UTF-8: it is the class's, which every
 * volunteer is sent as text. */
static int names_text(const char *dir, char **folders, int n_folders, sdfed_error *err) {
    int rc = SDFED_OK;
    for (int f = 0; f < n_folders && rc == SDFED_OK; f++) {
        char *name = native_path_text(folders[f]), *path = join(dir, folders[f]),
             *text = path ? native_path_text(path) : NULL;
        if (!name || !text)
            rc = sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", dir);
        else if (strcmp(name, folders[f]) != 0)
            rc = sdfed_fail(err, SDFED_ERR_FORMAT,
                            "%s: the class folder's name is not UTF-8 text (its other bytes shown \\xNN; from an "
                            "archive or a disk in another encoding?): rename it, its name is the class's",
                            text);
        free(name);
        free(path);
        free(text);
    }
    return rc;
}

/* No two class folders mean one class (folder_rule.h: "Sea-Lion" and "sea
 * lion"): a task of their classes would name one class twice. */
static int distinct_classes(const char *dir, char **folders, int n_folders, sdfed_error *err) {
    for (int f = 0; f < n_folders; f++)
        for (int other = 0; other < f; other++)
            if (sdfed_folder_names_match(folders[other], strlen(folders[other]), folders[f], strlen(folders[f])))
                return sdfed_fail(err, SDFED_ERR_FORMAT,
                                  "%s: class folders '%s' and '%s' are one class (names match ignoring case, '_', '-' "
                                  "and spaces): merge them, or rename one",
                                  dir, folders[other], folders[f]);
    return SDFED_OK;
}

/* The folder at path is not one the other split's scan read (a link to
 * it): each split needs folders of its own. */
static int not_read_before(const walk *w, folder_id f, const char *path, sdfed_error *err) {
    int i = read_index(w->read, f);
    if (i < 0 || i >= w->first) return SDFED_OK;
    return sdfed_fail(err, SDFED_ERR_FORMAT,
                      "%s is %s, read already (a link): the test split would hold training images; give each split "
                      "folders of its own",
                      path, w->read->items[i].path);
}

/* The root and its class folders counted as read before any is walked, so
 * that a link below one to another is not walked; a class folder that is
 * the root or another class folder (a link), or either one the other
 * split read, is an error naming them. */
static int read_first(walk *w, char **folders, int n_folders, sdfed_error *err) {
    struct stat st;
    if (stat(w->root, &st) != 0) return sdfed_fail(err, SDFED_ERR_IO, "%s: %s", w->root, strerror(errno));
    int rc = not_read_before(w, id_of(&st), w->root, err);
    if (rc == SDFED_OK) rc = mark_read(w->read, id_of(&st), w->root, err);
    for (int f = 0; f < n_folders && rc == SDFED_OK; f++) {
        char *path = join(w->root, folders[f]);
        if (!path) return sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", w->root);
        if (stat(path, &st) != 0) rc = sdfed_fail(err, SDFED_ERR_IO, "%s: %s", path, strerror(errno));
        if (rc == SDFED_OK) rc = not_read_before(w, id_of(&st), path, err);
        for (int other = 0; other <= f && rc == SDFED_OK; other++) {
            if (!same_folder(w->read->items[w->first + other].id, id_of(&st))) continue;
            if (other == 0)
                rc = sdfed_fail(err, SDFED_ERR_FORMAT, "%s: the class folder is %s itself (a link to it)", path,
                                w->root);
            else
                rc = sdfed_fail(err, SDFED_ERR_FORMAT,
                                "%s: class folders '%s' and '%s' are one folder (a link): each class needs its own",
                                w->root, folders[other - 1], folders[f]);
        }
        if (rc == SDFED_OK) rc = mark_read(w->read, id_of(&st), path, err);
        free(path);
    }
    return rc;
}

/* A scan whose folders read join those in read (each read once). */
static int scan(const char *dir, const char *const *classes, int n_classes, int some_classes, read_set *read,
                native_image_folder *out, sdfed_error *err) {
    memset(out, 0, sizeof *out);
    walk w = {.root = dir, .skipped = &out->skipped, .read = read, .first = read->n};
    char **folders = NULL;
    int n_folders = 0, rc = root_folders(&w, &folders, &n_folders, err);
    if (rc == SDFED_OK && n_folders == 0)
        rc = sdfed_fail(err, SDFED_ERR_FORMAT, "%s: no class folders (one sub-folder per class)", dir);
    if (rc == SDFED_OK) rc = names_text(dir, folders, n_folders, err);
    if (rc == SDFED_OK) rc = distinct_classes(dir, folders, n_folders, err);
    int C = classes ? n_classes : n_folders;
    if (rc == SDFED_OK && C > IMAGE_FOLDER_MAX_CLASSES)
        rc = sdfed_fail(err, SDFED_ERR_FORMAT, "%s: %d classes, at most %d", dir, C, IMAGE_FOLDER_MAX_CLASSES);
    int *folder_of = rc == SDFED_OK ? malloc(sizeof *folder_of * (size_t)(C + 1)) : NULL;
    if (rc == SDFED_OK && !folder_of) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", dir);
    for (int c = 0; c < C && rc == SDFED_OK && !classes; c++) folder_of[c] = c;
    if (rc == SDFED_OK && classes)
        rc = match_classes(dir, folders, n_folders, classes, n_classes, some_classes, folder_of, err);
    if (rc == SDFED_OK) rc = read_first(&w, folders, n_folders, err);
    /* each class folder walked: one without images is an error naming it, as in ImageFolder */
    out->n_classes = C;
    if (rc == SDFED_OK && !(out->class_names = calloc((size_t)C + 1, sizeof *out->class_names)))
        rc = sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", dir);
    for (int c = 0; c < C && rc == SDFED_OK; c++) {
        out->class_names[c] = strdup(classes ? classes[c] : folders[c]);
        if (!out->class_names[c]) {
            rc = sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", dir);
            break;
        }
        for (char *p = out->class_names[c]; !classes && *p; p++)
            if (*p == '_') *p = ' ';
        if (folder_of[c] < 0) continue; /* a class the volunteer has no images of */
        int before = w.n;
        w.path[0] = read->items[w.first].id;
        w.path[1] = read->items[w.first + 1 + folder_of[c]].id;
        w.depth = 2;
        rc = walk_folder(&w, folders[folder_of[c]], c, err);
        if (rc == SDFED_OK && w.n == before)
            rc = sdfed_fail(err, SDFED_ERR_FORMAT, "%s/%s: class '%s' has no images (PNG or JPEG, at any depth)", dir,
                            folders[folder_of[c]], out->class_names[c]);
    }
    if (rc == SDFED_OK) {
        qsort(w.images, (size_t)w.n, sizeof *w.images, compare_entries);
        out->paths = malloc(sizeof *out->paths * (size_t)(w.n + 1));
        out->labels = malloc((size_t)w.n + 1);
        if (!out->paths || !out->labels) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", dir);
    }
    for (int i = 0; i < w.n; i++) {
        if (rc == SDFED_OK) {
            out->paths[i] = w.images[i].path;
            out->labels[i] = (uint8_t)w.images[i].label;
        } else {
            free(w.images[i].path);
        }
    }
    if (rc == SDFED_OK) out->n = w.n;
    free(w.images);
    free(folder_of);
    free_names(folders, n_folders);
    if (rc) native_image_folder_free(out);
    return rc;
}

int native_image_folder_scan(const char *dir, const char *const *classes, int n_classes, int some_classes,
                             native_image_folder *out, sdfed_error *err) {
    read_set read = {0};
    int rc = scan(dir, classes, n_classes, some_classes, &read, out, err);
    read_set_free(&read);
    return rc;
}

int native_image_folder_scan_splits(const char *train_dir, const char *test_dir, const char *const *classes,
                                    int n_classes, native_image_folder *train, native_image_folder *test,
                                    sdfed_error *err) {
    read_set read = {0};
    memset(test, 0, sizeof *test);
    int rc = scan(train_dir, classes, n_classes, 0, &read, train, err);
    if (rc == SDFED_OK)
        rc = scan(test_dir, (const char *const *)train->class_names, train->n_classes, 0, &read, test, err);
    if (rc) native_image_folder_free(train);
    read_set_free(&read);
    return rc;
}

int native_image_folder_beside(const char *dir, const char *const *read, int n_read, const char *reason,
                               native_image_folder_skips *skipped, sdfed_error *err) {
    read_set folders = {0};
    walk w = {.root = dir, .skipped = skipped, .outside = reason, .read = &folders};
    char **names = NULL;
    int n = 0, rc = list(dir, &names, &n, err);
    /* dir and the folders read are read already: a link to one is not walked again */
    for (int i = -1; i < n_read && rc == SDFED_OK; i++) {
        char *path = i < 0 ? strdup(dir) : join(dir, read[i]);
        struct stat st;
        if (!path)
            rc = sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", dir);
        else if (stat(path, &st) != 0)
            rc = sdfed_fail(err, SDFED_ERR_IO, "%s: %s", path, strerror(errno));
        else
            rc = mark_read(&folders, id_of(&st), path, err);
        free(path);
    }
    if (rc == SDFED_OK) w.path[w.depth++] = folders.items[0].id;
    for (int i = 0; i < n && rc == SDFED_OK; i++) {
        int is_read = 0;
        for (int j = 0; j < n_read && !is_read; j++) is_read = !strcmp(names[i], read[j]);
        if (!is_read) rc = walk_entry(&w, names[i], -1, err);
    }
    free_names(names, n);
    free(w.images);
    read_set_free(&folders);
    return rc;
}

int native_image_folder_hold_out(native_image_folder *all, double fraction, native_image_folder *train,
                                 native_image_folder *test, sdfed_error *err) {
    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    native_image_folder *split[2] = {train, test};
    int *seen = calloc((size_t)all->n_classes + 1, sizeof *seen);
    int *size = calloc((size_t)all->n_classes + 1, sizeof *size); /* each class's images */
    for (int s = 0; s < 2; s++)
        *split[s] = (native_image_folder){.n_classes = all->n_classes,
                                          .paths = malloc(sizeof(char *) * (size_t)(all->n + 1)),
                                          .labels = malloc((size_t)all->n + 1),
                                          .class_names = all->class_names};
    if (!seen || !size || !train->paths || !train->labels || !test->paths || !test->labels) {
        free(seen);
        free(size);
        native_image_folder_free_split(train);
        native_image_folder_free_split(test);
        return sdfed_fail(err, SDFED_ERR_NOMEM, "dataset: out of memory");
    }
    for (int i = 0; i < all->n; i++) size[all->labels[i]]++;
    for (int i = 0; i < all->n; i++) {
        int c = all->labels[i], k = seen[c]++, n = size[c];
        /* a class the rule gives no test image (2 <= n < 1 / fraction) gives its last */
        int held =
            (int)((k + 1) * fraction) > (int)(k * fraction) || (n >= 2 && (int)(n * fraction) == 0 && k == n - 1);
        native_image_folder *to = split[held];
        to->paths[to->n] = all->paths[i];
        to->labels[to->n++] = (uint8_t)c;
    }
    free(seen);
    free(size);
    all->n = 0; /* the paths are the splits' now */
    return SDFED_OK;
}

void native_image_folder_keep(native_image_folder *f, const uint8_t *keep) {
    int n = 0;
    for (int i = 0; i < f->n; i++) {
        if (!keep[i]) {
            free(f->paths[i]);
            continue;
        }
        f->paths[n] = f->paths[i];
        f->labels[n++] = f->labels[i];
    }
    f->n = n;
}

void native_image_folder_free_split(native_image_folder *f) {
    for (int i = 0; f->paths && i < f->n; i++) free(f->paths[i]);
    free(f->paths);
    free(f->labels);
    memset(f, 0, sizeof *f);
}

void native_image_folder_free(native_image_folder *f) {
    for (int c = 0; f->class_names && c < f->n_classes; c++) free(f->class_names[c]);
    free(f->class_names);
    native_image_folder_skips_free(&f->skipped);
    native_image_folder_free_split(f);
}
