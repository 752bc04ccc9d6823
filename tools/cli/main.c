/* sdfed: the command line of the core (model conversion and inspection,
 * tokenising, encoding, checking against the reference CLIP). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help; /* its first line: "usage: sdfed ..." */
} commands[] = {
    {"convert", cmd_convert, cmd_convert_help},
    {"info", cmd_info, cmd_info_help},
    {"tokenize", cmd_tokenize, cmd_tokenize_help},
    {"encode-text", cmd_encode_text, cmd_encode_text_help},
    {"encode-image", cmd_encode_image, cmd_encode_image_help},
    {"check-reference", cmd_check_reference, cmd_check_reference_help},
#if !defined(__wasm__) /* the simulator reads datasets and caches from disk natively */
    {"sim", cmd_sim, cmd_sim_help},
    {"task", cmd_task, cmd_task_help},
#endif
};

static void usage(FILE *out) {
    fprintf(out, "usage: sdfed COMMAND [ARGS]   (sdfed COMMAND --help: what it does, its options)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        const char *line = commands[i].help + strlen("usage: "), *end = strchr(line, '\n');
        fprintf(out, "  %.*s\n", (int)(end - line), line);
    }
    fprintf(out, "\nkernel backends in this build:");
    for (const sdfed_kernels *const *k = sdfed_kernels_all(); *k; k++) fprintf(out, " %s", (*k)->name);
    fprintf(out, " (default %s)\n", sdfed_kernels_default()->name);
    fprintf(out, "default model: %s\n", NATIVE_DEFAULT_MODEL);
}

static int wants_help(const char *arg) { return !strcmp(arg, "--help") || !strcmp(arg, "-h"); }

int main(int argc, char **argv) {
#if defined(__wasi__)
    /* WASI programs start in "/": make relative paths mean what the user meant */
    const char *pwd = getenv("PWD");
    if (pwd) chdir(pwd);
#endif
    if (argc < 2) return native_cli_error(CLI_USAGE, "no command given (see 'sdfed help')");
    /* sdfed help [COMMAND] is sdfed [COMMAND] --help */
    int help = strcmp(argv[1], "help") == 0 || wants_help(argv[1]);
    const char *name = argv[1];
    if (help) name = argc > 2 ? argv[2] : NULL;
    if (!name) {
        usage(stdout);
        return CLI_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(name, commands[i].name)) continue;
        if (help || (argc == 3 && wants_help(argv[2])))
            return fputs(commands[i].help, stdout) < 0 ? CLI_FAILED : CLI_OK;
        return commands[i].run(argc - 2, argv + 2);
    }
    if (help) return native_cli_error(CLI_USAGE, "no command '%s' (see 'sdfed help')", name);
    return native_cli_error(CLI_USAGE, "unknown command '%s' (see 'sdfed help')", argv[1]);
}
