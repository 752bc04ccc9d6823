/* Command-line option parsing and error printing (see args.h). */
#include "native/args.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/dispatch.h"
#include "native/progress.h"

static const char *program = "sdfed";
/* where the unknown-option error points the user */
static const char *help_hint = "see 'sdfed help'";

int native_cli_number(const char *text, const char *name, double lo, double hi, double *out) {
    char *end;
    double v = strtod(text, &end);
    if (!*text || *end || !(v >= lo && v <= hi))
        return native_cli_error(CLI_USAGE, "%s must be a number in [%g, %g], not '%s'", name, lo, hi, text);
    *out = v;
    return CLI_OK;
}

int native_cli_integer(const char *text, const char *name, long long lo, long long hi, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (!*text || *end || errno || v < lo || v > hi)
        return native_cli_error(CLI_USAGE, "%s must be an integer in [%lld, %lld], not '%s'", name, lo, hi, text);
    *out = v;
    return CLI_OK;
}

void native_cli_set_program(const char *name) {
    program = name;
    help_hint = "see --help";
}

int native_cli_error(int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    native_progress_end(); /* never on a progress line */
    fprintf(stderr, "%s: ", program);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return status;
}

int native_cli_parse(int argc, char **argv, const native_cli_option *options, int n_options, char ***positional,
                     int *n_positional) {
    return native_cli_parse_lists(argc, argv, options, n_options, NULL, 0, positional, n_positional);
}

int native_cli_parse_lists(int argc, char **argv, const native_cli_option *options, int n_options,
                           const native_cli_list *lists, int n_lists, char ***positional, int *n_positional) {
    if (n_positional) *n_positional = 0;
    for (int k = 0; k < n_lists; k++) *lists[k].count = 0;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0) {
            if (!positional && i + 1 < argc)
                return native_cli_error(CLI_USAGE, "unexpected argument '%s' (%s)", argv[i + 1], help_hint);
            while (++i < argc) (*positional)[(*n_positional)++] = argv[i];
            break;
        }
        if (strncmp(arg, "--", 2) != 0) {
            if (!positional) return native_cli_error(CLI_USAGE, "unexpected argument '%s' (%s)", arg, help_hint);
            (*positional)[(*n_positional)++] = argv[i];
            continue;
        }
        const native_cli_list *list = NULL;
        for (int k = 0; k < n_lists && !list; k++)
            if (strcmp(lists[k].name, arg) == 0) list = &lists[k];
        if (list) {
            if (i + 1 >= argc) return native_cli_error(CLI_USAGE, "option '%s' needs a value", arg);
            if (*list->count == list->max)
                return native_cli_error(CLI_USAGE, "option '%s' is given more than %d times", arg, list->max);
            list->values[(*list->count)++] = argv[++i];
            continue;
        }
        const native_cli_option *o = NULL;
        for (int k = 0; k < n_options && !o; k++)
            if (strcmp(options[k].name, arg) == 0) o = &options[k];
        if (!o) return native_cli_error(CLI_USAGE, "unknown option '%s' (%s)", arg, help_hint);
        if (o->flag) {
            *o->flag = 1;
        } else {
            if (i + 1 >= argc) return native_cli_error(CLI_USAGE, "option '%s' needs a value", arg);
            *o->value = argv[++i];
        }
    }
    return CLI_OK;
}

int native_cli_isa_cap(const char *isa) {
    int capped = sdfed_isa_by_name(isa), best = sdfed_isa_best_fma();
    if (capped < 0) return native_cli_error(CLI_USAGE, "--isa '%s' is not one of portable, avx2, avx512", isa);
    if (capped > best)
        return native_cli_error(CLI_USAGE, "--isa %s: this CPU does not run it (at most %s)", isa,
                                sdfed_isa_name(best));
    sdfed_isa_cap(capped);
    return CLI_OK;
}
