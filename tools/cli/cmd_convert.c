/* sdfed convert: a CLIP safetensors checkpoint + the BPE vocabulary -> GGUF.
 * The output is written whole or not at all (native/paths.h), so a failed
 * conversion never leaves a partial model behind. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "cli.h"
#include "clip/clip_convert.h"

#if !defined(__wasm__)
#include "native/gzip.h"
#endif

/* Reads the vocabulary text: natively through native/gzip.h, which uncompresses gzip
 * and passes plain text through; the wasm builds have no gzip and take the
 * plain text only. */
static int read_vocab(const char *path, char **text, size_t *len, sdfed_error *err) {
#if defined(__wasm__)
    native_file_map f;
    int rc = native_file_map_open(&f, path, err);
    if (rc) return rc;
    if (f.size >= 2 && f.data[0] == 0x1f && f.data[1] == 0x8b)
        rc = sdfed_fail(err, SDFED_ERR_UNSUPPORTED,
                        "%s: gzip vocabularies need the native build; pass the uncompressed text", path);
    else if (!(*text = malloc(f.size + 1)))
        rc = sdfed_fail(err, SDFED_ERR_NOMEM, "%s: out of memory", path);
    else {
        memcpy(*text, f.data, f.size);
        *len = f.size;
    }
    native_file_map_close(&f);
    return rc;
#else
    return native_read_gz_file(path, (size_t)256 << 20, (uint8_t **)text, len, err);
#endif
}

/* OpenAI's CLIP vocabulary, which ships with the project (MIT, its LICENSE beside it) */
#define DEFAULT_VOCAB "models/openai-clip/bpe_simple_vocab_16e6.txt.gz"

/* the model's bytes into the output file; the first write's errno kept, for the error to name */
typedef struct {
    FILE *file;
    int error;
} output_file;

static int file_write(void *ctx, const void *data, size_t n) {
    output_file *o = ctx;
    if (fwrite(data, 1, n, o->file) == n) return 0;
    if (!o->error) o->error = errno ? errno : EIO;
    return 1;
}

const char cmd_convert_help[] =
    "usage: sdfed convert --in MODEL.safetensors --out MODEL.gguf [--vocab VOCAB] [--type f32|f16|q8_0] [--activation "
    "quick_gelu|gelu]\n"
    "\n"
    "Converts a CLIP checkpoint (safetensors, under OpenAI/OpenCLIP or Hugging Face names) and CLIP's BPE\n"
    "vocabulary into one GGUF model file, written whole or not at all.\n"
    "\n"
    "  --in FILE        the checkpoint: Hugging Face's model.safetensors (openai/clip-vit-base-patch32,\n"
    "                   openai/clip-vit-base-patch16) or OpenCLIP's open_clip_model.safetensors\n"
    "  --out FILE       the GGUF file to write\n"
    "  --vocab FILE     the BPE vocabulary, gzip or text (default: models/openai-clip/bpe_simple_vocab_16e6.txt.gz,\n"
    "                   OpenAI's, which ships with sdfed)\n"
    "  --type T         the large matrices: f32 (the default), f16, or q8_0 (a little over a quarter of f32's size)\n"
    "  --activation A   quick_gelu (OpenAI's models; the default) or gelu (OpenCLIP models trained with GELU)\n";

int cmd_convert(int argc, char **argv) {
    const char *in = NULL, *vocab = NULL, *out = NULL, *type = "f32", *activation = "quick_gelu";
    const native_cli_option options[] = {{.name = "--in", .value = &in, .flag = NULL},
                                         {.name = "--vocab", .value = &vocab, .flag = NULL},
                                         {.name = "--out", .value = &out, .flag = NULL},
                                         {.name = "--type", .value = &type, .flag = NULL},
                                         {.name = "--activation", .value = &activation, .flag = NULL}};
    int status = native_cli_parse(argc, argv, options, 5, NULL, NULL);
    if (status) return status;
    if (!in || !out)
        return native_cli_error(CLI_USAGE, "convert: --in and --out are required (see 'sdfed convert --help')");
    char vocab_path[4096];
    if (!vocab) vocab = native_resolve_path(DEFAULT_VOCAB, vocab_path, sizeof vocab_path);
    sdfed_convert_options opt = {.weight_type = sdfed_type_from_name(type),
                                 .activation = sdfed_activation_from_name(activation),
                                 .vocab_text = NULL,
                                 .vocab_len = 0};
    if (opt.weight_type < 0)
        return native_cli_error(CLI_USAGE, "convert: --type must be f32, f16 or q8_0, not '%s'", type);
    if (opt.activation < 0)
        return native_cli_error(CLI_USAGE, "convert: --activation must be quick_gelu or gelu, not '%s'", activation);

    sdfed_error err = {0};
    char *vocab_text = NULL;
    native_file_map model;
    int rc = read_vocab(vocab, &vocab_text, &opt.vocab_len, &err);
    if (rc) return native_cli_error(CLI_FAILED, "convert: vocabulary %s", err.message);
    opt.vocab_text = vocab_text;
    if ((rc = native_file_map_open(&model, in, &err))) {
        free(vocab_text);
        return native_cli_error(CLI_FAILED, "convert: %s", err.message);
    }
    sdfed_safetensors st;
    rc = sdfed_safetensors_open(&st, model.data, model.size, &err);
    if (rc) {
        sdfed_fail_context(&err, rc, "%s", in);
    } else {
        native_whole_file w;
        rc = native_whole_file_open(&w, out, &err);
        if (rc == SDFED_OK) {
            output_file o = {.file = w.file, .error = 0};
            sdfed_sink sink = {.write = file_write, .ctx = &o};
            sdfed_convert_report report;
            rc = sdfed_clip_convert(&st, &opt, &sink, &report, &err);
            if (rc && o.error)
                rc = sdfed_fail(&err, SDFED_ERR_IO, "%s: %s", out, strerror(o.error));
            else if (rc)
                sdfed_fail_context(&err, rc, "%s", in);
            int closed = native_whole_file_close(&w, out, rc == SDFED_OK, &err);
            if (rc == SDFED_OK) rc = closed;
            if (rc == SDFED_OK)
                printf("converted %s (%s names) -> %s: %d tensors, matrices %s%s\n", in, report.naming, out,
                       report.n_tensors, type, report.n_fallback ? " (some rows not a multiple of 32 kept f16)" : "");
        }
        sdfed_safetensors_close(&st);
    }
    native_file_map_close(&model);
    free(vocab_text);
    return rc ? native_cli_error(CLI_FAILED, "convert: %s", err.message) : CLI_OK;
}
