/* Host paths: project-relative lookup, mkdir -p, atomic writes (see paths.h). */
#include "native/paths.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

int native_write_file(const char *path, const char *text, sdfed_error *err) {
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return sdfed_fail(err, SDFED_ERR_ARG, "%s: the path is too long", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return sdfed_fail(err, SDFED_ERR_IO, "%s: %s", tmp, strerror(errno));
    int written = fputs(text, f) >= 0;
    if (fclose(f) != 0 || !written) {
        remove(tmp);
        return sdfed_fail(err, SDFED_ERR_IO, "%s: write failed", tmp);
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return sdfed_fail(err, SDFED_ERR_IO, "%s: %s", path, strerror(e));
    }
    return SDFED_OK;
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
