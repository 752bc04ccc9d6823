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
    const char *usage;
} commands[] = {
    {"convert", cmd_convert,
     "convert --in MODEL.safetensors --vocab bpe_simple_vocab_16e6.txt[.gz] --out MODEL.gguf "
     "[--type f32|f16|q8_0] [--activation quick_gelu|gelu]"},
    {"info", cmd_info, "info [MODEL.gguf]"},
    {"tokenize", cmd_tokenize, "tokenize [--model MODEL.gguf] [--tokens] TEXT..."},
    {"encode-text", cmd_encode_text, "encode-text [--model MODEL.gguf] [--normalize] [--backend NAME] TEXT..."},
    {"encode-image", cmd_encode_image, "encode-image [--model MODEL.gguf] [--normalize] [--backend NAME] IMAGE..."},
    {"check-reference", cmd_check_reference,
     "check-reference --model MODEL.gguf --reference REFERENCE.safetensors [--backend NAME]"},
#if !defined(__wasm__) /* the simulator reads datasets and caches from disk natively */
    {"sim", cmd_sim,
     "sim --task TASK.json [--method M] [--seed S] [--rounds N] [--lr X] [--out DIR] [--cache DIR] [--data DIR] "
     "[--backend NAME] [--isa portable|avx2|avx512] [--validation] [--f32-images]"},
    {"task", cmd_task,
     "task init DIR [--clients N] [--model M.gguf] [--out TASK.json]  |  task check TASK.json [--cache DIR] [--data "
     "DIR] [--backend "
     "NAME]"},
#endif
};

static void usage(FILE *out) {
    fprintf(out, "usage: sdfed COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) fprintf(out, "  sdfed %s\n", commands[i].usage);
    fprintf(out, "\nkernel backends in this build:");
    for (const sdfed_kernels *const *k = sdfed_kernels_all(); *k; k++) fprintf(out, " %s", (*k)->name);
    fprintf(out, " (default %s)\n", sdfed_kernels_default()->name);
    fprintf(out, "default model: %s\n", NATIVE_DEFAULT_MODEL);
}

int main(int argc, char **argv) {
#if defined(__wasi__)
    /* WASI programs start in "/": make relative paths mean what the user meant */
    const char *pwd = getenv("PWD");
    if (pwd) chdir(pwd);
#endif
    if (argc < 2) return cli_error(CLI_USAGE, "no command given (see 'sdfed help')");
    if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return CLI_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(argv[1], commands[i].name)) continue;
        if (argc == 3 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
            printf("usage: sdfed %s\n", commands[i].usage);
            return CLI_OK;
        }
        return commands[i].run(argc - 2, argv + 2);
    }
    return cli_error(CLI_USAGE, "unknown command '%s' (see 'sdfed help')", argv[1]);
}
