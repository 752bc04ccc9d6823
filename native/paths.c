/* Host paths: project-relative lookup, mkdir -p, files written whole (see paths.h). */
#include "native/paths.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/utf8.h"

char *native_path_text(const char *path) {
    size_t n = strlen(path), length = 0;
    char *text = malloc(4 * n + 1); /* \xNN for each byte at most */
    if (!text) return NULL;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = sdfed_utf8_read((const unsigned char *)path + i, n - i, &cp);
        if (k) { /* a well-formed sequence, as it is */
            memcpy(text + length, path + i, k);
            length += k;
            i += k;
        } else {
            length += (size_t)snprintf(text + length, 5, "\\x%02x", (unsigned)(unsigned char)path[i++]);
        }
    }
    text[length] = '\0';
    return text;
}

/* how far above the executable's folder the project folder is looked for */
#define RESOLVE_LEVELS 5

int native_make_dirs(const char *path, sdfed_error *err) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return sdfed_fail(err, SDFED_ERR_ARG, "%s: the path is too long", path);
    for (char *p = buf + 1;; p++)
        if (*p == '/' || *p == '\0') {
            char keep = *p;
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return sdfed_fail(err, SDFED_ERR_IO, "%s: %s", buf, strerror(errno));
            if (!(*p = keep)) break;
        }
    return SDFED_OK;
}

/* hops through links to links before a path is taken as it is (Linux's own limit) */
#define MAX_LINK_HOPS 40

/* The file a path names once its links are followed (a link's relative
 * target is read from the link's folder), into out; 0 when it does not fit.
 * A link to nothing, or one that cannot be read, is where it stops. */
static int link_target(const char *path, char *out, size_t cap) {
    if (snprintf(out, cap, "%s", path) >= (int)cap) return 0;
    struct stat st;
    for (int hop = 0; hop < MAX_LINK_HOPS && lstat(out, &st) == 0 && S_ISLNK(st.st_mode); hop++) {
        char to[4096];
        ssize_t n = readlink(out, to, sizeof to - 1);
        if (n <= 0) break;
        to[n] = '\0';
        const char *slash = strrchr(out, '/');
        int folder = to[0] == '/' || !slash ? 0 : (int)(slash - out + 1);
        char next[4096];
        if (snprintf(next, sizeof next, "%.*s%s", folder, out, to) >= (int)sizeof next ||
            snprintf(out, cap, "%s", next) >= (int)cap)
            return 0;
    }
    return 1;
}

int native_whole_file_open(native_whole_file *w, const char *path, sdfed_error *err) {
    struct stat st;
    w->temporary[0] = '\0';
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) { /* a device or a pipe: written in place */
        if (S_ISDIR(st.st_mode)) return sdfed_fail(err, SDFED_ERR_IO, "%s: is a folder", path);
        if (!(w->file = fopen(path, "wb"))) return sdfed_fail(err, SDFED_ERR_IO, "%s: %s", path, strerror(errno));
        return SDFED_OK;
    }
    /* a link to a file: the file it names */
    if (!link_target(path, w->target, sizeof w->target))
        return sdfed_fail(err, SDFED_ERR_ARG, "%s: the path is too long", path);
    /* 64 random bits: another writer's name (or a killed one's leftover) is never this one; O_EXCL makes sure */
    uint64_t r;
    if (getentropy(&r, sizeof r) != 0)
        return sdfed_fail(err, SDFED_ERR_IO, "%s: no random name for its temporary file: %s", path, strerror(errno));
    if (snprintf(w->temporary, sizeof w->temporary, "%s.%016" PRIx64 ".tmp", w->target, r) >= (int)sizeof w->temporary)
        return sdfed_fail(err, SDFED_ERR_ARG, "%s: the path is too long", path);
    int fd = open(w->temporary, O_WRONLY | O_CREAT | O_EXCL, 0666);
    if (fd < 0) return sdfed_fail(err, SDFED_ERR_IO, "%s: %s", path, strerror(errno));
    if (!(w->file = fdopen(fd, "wb"))) {
        int e = errno;
        close(fd);
        remove(w->temporary);
        return sdfed_fail(err, SDFED_ERR_IO, "%s: %s", path, strerror(e));
    }
    return SDFED_OK;
}

int native_whole_file_close(native_whole_file *w, const char *path, int complete, sdfed_error *err) {
    int rc = SDFED_OK, in_place = !w->temporary[0];
    if (fclose(w->file) != 0 && complete)
        rc = sdfed_fail(err, SDFED_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    else if (complete && !in_place && rename(w->temporary, w->target) != 0)
        rc = sdfed_fail(err, SDFED_ERR_IO, "%s: %s", path, strerror(errno));
    if ((rc || !complete) && !in_place) remove(w->temporary);
    return rc;
}

int native_write_file(const char *path, const char *text, sdfed_error *err) {
    native_whole_file w;
    int rc = native_whole_file_open(&w, path, err);
    if (rc) return rc;
    int written = fputs(text, w.file) >= 0;
    rc = native_whole_file_close(&w, path, written, err);
    if (rc == SDFED_OK && !written) rc = sdfed_fail(err, SDFED_ERR_IO, "%s: write failed", path);
    return rc;
}

const char *native_resolve_path(const char *path, char *buf, size_t cap) {
    if (path[0] == '/' || access(path, F_OK) == 0) return path;
#if defined(__linux__)
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        /* the folders above the executable's (build/, build/targets/clang/, ...), nearest first */
        for (int up = 0; up < RESOLVE_LEVELS; up++) {
            char *slash = strrchr(exe, '/');
            if (!slash || slash == exe) break;
            *slash = '\0';
            if (up == 0) continue; /* the executable's own folder */
            snprintf(buf, cap, "%s/%s", exe, path);
            if (access(buf, F_OK) == 0) return buf;
        }
    }
#endif
    (void)buf;
    (void)cap;
    return path;
}
