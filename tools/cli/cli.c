/* Option parsing, error printing and model loading for the subcommands. */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cli_error(int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("sdfed: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return status;
}

const char *cli_help_hint = "see 'sdfed help'";

int cli_parse(int argc, char **argv, const cli_option *options, int n_options, char ***positional, int *n_positional) {
    if (n_positional) *n_positional = 0;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0) {
            if (!positional && i + 1 < argc)
                return cli_error(CLI_USAGE, "unexpected argument '%s' (%s)", argv[i + 1], cli_help_hint);
            while (++i < argc) (*positional)[(*n_positional)++] = argv[i];
            break;
        }
        if (strncmp(arg, "--", 2) != 0) {
            if (!positional) return cli_error(CLI_USAGE, "unexpected argument '%s' (%s)", arg, cli_help_hint);
            (*positional)[(*n_positional)++] = argv[i];
            continue;
        }
        const cli_option *o = NULL;
        for (int k = 0; k < n_options && !o; k++)
            if (strcmp(options[k].name, arg) == 0) o = &options[k];
        if (!o) return cli_error(CLI_USAGE, "unknown option '%s' (%s)", arg, cli_help_hint);
        if (o->flag) {
            *o->flag = 1;
        } else {
            if (i + 1 >= argc) return cli_error(CLI_USAGE, "option '%s' needs a value", arg);
            *o->value = argv[++i];
        }
    }
    return CLI_OK;
}

int cli_make_dirs(const char *path, sdfed_error *err) {
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

int cli_write_file(const char *path, const char *text, sdfed_error *err) {
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

const char *cli_resolve_path(const char *path, char *buf, size_t cap) {
    if (path[0] == '/' || access(path, F_OK) == 0) return path;
#if defined(__linux__)
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0'; /* the folder of the executable (build/) */
        snprintf(buf, cap, "%s/../%s", exe, path);
        if (access(buf, F_OK) == 0) return buf;
    }
#endif
    (void)buf, (void)cap;
    return path;
}

int cli_model_open(cli_model *m, const char *path, sdfed_error *err) {
    memset(m, 0, sizeof *m);
    char resolved[4096];
    if (!path) path = CLI_DEFAULT_MODEL;
    path = cli_resolve_path(path, resolved, sizeof resolved);
    int rc = file_map_open(&m->file, path, err);
    if (rc) return rc;
    rc = sdfed_clip_load(&m->clip, m->file.data, m->file.size, err);
    if (rc == SDFED_OK) {
        rc = sdfed_tokenizer_init_gguf(&m->tokenizer, &m->clip.file, err);
        if (rc) sdfed_clip_free(&m->clip);
    }
    if (rc) {
        file_map_close(&m->file);
        return sdfed_fail_context(err, rc, "%s", path);
    }
    return SDFED_OK;
}

void cli_model_close(cli_model *m) {
    sdfed_tokenizer_free(&m->tokenizer);
    sdfed_clip_free(&m->clip);
    file_map_close(&m->file);
}

const sdfed_kernels *cli_backend(const char *name) {
    const sdfed_kernels *k = name ? sdfed_kernels_by_name(name) : sdfed_kernels_default();
#if defined(SDFED_HAVE_BLAS)
    /* natively, split over the cores this process may use */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (k) k = sdfed_kernels_threaded(k, cores > 1 ? (int)cores : 1);
#endif
    return k;
}
