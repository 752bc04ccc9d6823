/* Shared pieces of the sdfed command line: option parsing, model loading,
 * error printing. Each subcommand lives in its own cmd_*.c file. */
#ifndef SDFED_CLI_H
#define SDFED_CLI_H

#include "base/arena.h"
#include "base/status.h"
#include "clip/clip_model.h"
#include "file_map.h"
#include "kernels/kernels.h"
#include "text/tokenizer.h"

/* Exit statuses: 0 success, 1 the work failed, 2 the command line is wrong. */
enum { CLI_OK = 0, CLI_FAILED = 1, CLI_USAGE = 2 };

typedef struct cli_option {
    const char *name;   /* "--model" */
    const char **value; /* receives the argument; NULL for flags */
    int *flag;          /* set to 1 when a flag is present */
} cli_option;

/* Parses argv (after the subcommand) into options and positional arguments
 * (*positional has room for argc of them). Prints one error line and returns
 * CLI_USAGE on an unknown option, a missing value, or any positional argument
 * when positional is NULL (a command that takes none). */
int cli_parse(int argc, char **argv, const cli_option *options, int n_options, char ***positional, int *n_positional);
/* Where the unknown-option error points the user ("see 'sdfed help'"). */
extern const char *cli_help_hint;

/* Prints "sdfed: <message>" to stderr and returns status. */
int cli_error(int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The default model, used by every command when --model is not given. */
#define CLI_DEFAULT_MODEL "models/fmnist-tiny-clip.q8_0.gguf"

/* A relative path that does not exist from the current directory is looked
 * up from the project folder (the parent of the folder holding the sdfed
 * executable), so `build/sdfed` finds models/ and tasks/ from anywhere. */
const char *cli_resolve_path(const char *path, char *buf, size_t cap);

/* mkdir -p path */
int cli_make_dirs(const char *path, sdfed_error *err);

/* Writes text to path through a temporary file in the same folder and a
 * rename: a reader sees no file or the whole text, never part of it. */
int cli_write_file(const char *path, const char *text, sdfed_error *err);

/* A model file loaded with its tokenizer. */
typedef struct cli_model {
    file_map file;
    sdfed_clip_model clip;
    sdfed_tokenizer tokenizer;
} cli_model;

int cli_model_open(cli_model *m, const char *path, sdfed_error *err);
void cli_model_close(cli_model *m);

/* The kernel backend named by --backend, or the default when name is NULL. */
const sdfed_kernels *cli_backend(const char *name);

int cmd_convert(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_encode_text(int argc, char **argv);
int cmd_encode_image(int argc, char **argv);
int cmd_check_reference(int argc, char **argv);
int cmd_sim(int argc, char **argv);

#endif
