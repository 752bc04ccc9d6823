/* The command-line conventions every native program shares: exit
 * statuses, options parsed from argv, one-line error messages, --isa. */
#ifndef SDFED_NATIVE_ARGS_H
#define SDFED_NATIVE_ARGS_H

/* Exit statuses: 0 success, 1 the work failed, 2 the command line is wrong. */
enum { CLI_OK = 0, CLI_FAILED = 1, CLI_USAGE = 2 };

typedef struct native_cli_option {
    const char *name;   /* "--model" */
    const char **value; /* receives the argument; NULL for flags */
    int *flag;          /* set to 1 when a flag is present */
} native_cli_option;

/* An option that may be given several times: each value goes to values[],
 * in order, at most max of them; *count says how many came. */
typedef struct native_cli_list {
    const char *name;
    const char **values;
    int max;
    int *count;
} native_cli_list;

/* Parses argv (after the subcommand) into options and positional arguments
 * (*positional has room for argc of them). Prints one error line and returns
 * CLI_USAGE on an unknown option, a missing value, or any positional argument
 * when positional is NULL (a command that takes none). */
int native_cli_parse(int argc, char **argv, const native_cli_option *options, int n_options, char ***positional,
                     int *n_positional);
/* native_cli_parse with options that may be repeated (lists): one given more than
 * its max times is an error too. */
int native_cli_parse_lists(int argc, char **argv, const native_cli_option *options, int n_options,
                           const native_cli_list *lists, int n_lists, char ***positional, int *n_positional);
/* text, all of it, as a number in [lo, hi] ("12x" and "" are none); else
 * prints "NAME must be a number in [lo, hi], not 'text'" and returns
 * CLI_USAGE. */
int native_cli_number(const char *text, const char *name, double lo, double hi, double *out);
/* text, all of it, as a decimal integer in [lo, hi]; else prints why, as
 * native_cli_number does, and returns CLI_USAGE. */
int native_cli_integer(const char *text, const char *name, long long lo, long long hi, long long *out);

/* A program of its own, not a subcommand of sdfed (sdfed-aggregator, say):
 * its error lines start with its name and point the user to its --help. */
void native_cli_set_program(const char *name);

/* Applies an --isa option: caps the native tiles' instruction set for the
 * process (sdfed_isa_cap) at isa ("portable", "avx2", "avx512"), or
 * prints why it cannot and returns CLI_USAGE. */
int native_cli_isa_cap(const char *isa);

/* Prints "<program>: <message>" to stderr ("sdfed: " unless
 * native_cli_set_program named another) and returns status. */
int native_cli_error(int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
