/* sdfed tokenize: the ids CLIP's tokenizer gives a text ([SOT] ... [EOT],
 * truncated to the context length), one line per text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char cmd_tokenize_help[] =
    "usage: sdfed tokenize [--model MODEL.gguf] [--tokens] TEXT...\n"
    "\n"
    "Prints the token ids CLIP's tokenizer gives each text ([SOT] ... [EOT], truncated to the context\n"
    "length), one line per text.\n"
    "\n"
    "  --model FILE   the model whose tokenizer is used (the default model)\n"
    "  --tokens       each id with its token\n";

int cmd_tokenize(int argc, char **argv) {
    const char *model = NULL;
    int show_tokens = 0;
    const native_cli_option options[] = {{.name = "--model", .value = &model, .flag = NULL},
                                         {.name = "--tokens", .value = NULL, .flag = &show_tokens}};
    char **pos = calloc((size_t)argc + 1, sizeof *pos);
    int n_pos = 0, status = pos ? native_cli_parse(argc, argv, options, 2, &pos, &n_pos) : CLI_FAILED;
    if (status == CLI_OK && n_pos == 0) status = native_cli_error(CLI_USAGE, "tokenize: give at least one text");
    native_model m;
    sdfed_error err = {0};
    if (status == CLI_OK && native_model_open(&m, model, &err))
        status = native_cli_error(CLI_FAILED, "tokenize: %s", err.message);
    if (status) {
        free(pos);
        return status;
    }
    int ctx = m.clip.cfg.context_length;
    int32_t *ids = malloc(sizeof *ids * (size_t)ctx);
    for (int i = 0; i < n_pos && status == CLI_OK; i++) {
        int n = 0;
        if (!ids || sdfed_tokenize(&m.tokenizer, pos[i], strlen(pos[i]), ctx, ids, &n, &err)) {
            status = native_cli_error(CLI_FAILED, "tokenize: %s", ids ? err.message : "out of memory");
            break;
        }
        for (int j = 0; j < n; j++) {
            if (show_tokens) {
                size_t len;
                const char *tok = sdfed_tokenizer_token(&m.tokenizer, ids[j], &len);
                printf("%s%d:%.*s", j ? " " : "", ids[j], (int)len, tok);
            } else {
                printf("%s%d", j ? " " : "", ids[j]);
            }
        }
        printf("\n");
    }
    free(ids);
    free(pos);
    native_model_close(&m);
    return status;
}
