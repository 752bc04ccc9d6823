/* sdfed info: what a model file holds. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/dtype.h"
#include "cli.h"

const char cmd_info_help[] =
    "usage: sdfed info [MODEL.gguf]\n"
    "\n"
    "Prints what a model file holds: its architecture (image size, patches, widths, layers, heads,\n"
    "embedding), its tokenizer and its tensors' types and sizes. Without a file, the default model.\n";

int cmd_info(int argc, char **argv) {
    char **pos = calloc((size_t)argc + 1, sizeof *pos);
    int n_pos = 0, status = pos ? native_cli_parse(argc, argv, NULL, 0, &pos, &n_pos) : CLI_FAILED;
    const char *path = n_pos == 1 ? pos[0] : NATIVE_DEFAULT_MODEL;
    free(pos);
    if (status) return status;
    if (n_pos > 1) return native_cli_error(CLI_USAGE, "info: give one model file (or none for the default model)");
    native_model m;
    sdfed_error err = {0};
    if (native_model_open(&m, path, &err)) return native_cli_error(CLI_FAILED, "info: %s", err.message);
    const sdfed_clip_config *c = &m.clip.cfg;
    const sdfed_gguf *g = &m.clip.file;
    uint64_t counts[16] = {0}, params = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        if (g->tensors[i].type < 16) counts[g->tensors[i].type]++;
        params += g->tensors[i].n_elements;
    }
    printf("model: %s (%.2f MB, GGUF v%u)\n", path, (double)m.file.size / 1e6, g->version);
    printf("architecture: clip, ViT image tower\n");
    printf("embed dim: %d\n", c->embed_dim);
    printf("text: width %d, layers %d, heads %d, context %d, vocabulary %d\n", c->text_width, c->text_layers,
           c->text_heads, c->context_length, c->vocab_size);
    printf("image: width %d, layers %d, heads %d, patch %d, resolution %d\n", c->vision_width, c->vision_layers,
           c->vision_heads, c->patch_size, c->image_size);
    printf("activation: %s, layer norm eps %g\n", sdfed_activation_name(c->activation), c->layer_norm_eps);
    printf("image mean: %.8g %.8g %.8g, std: %.8g %.8g %.8g\n", c->image_mean[0], c->image_mean[1], c->image_mean[2],
           c->image_std[0], c->image_std[1], c->image_std[2]);
    printf("logit scale: %.6g (exp %.6g)\n", m.clip.logit_scale, exp(m.clip.logit_scale));
    printf("tensors: %llu (", (unsigned long long)g->n_tensors);
    const char *sep = "";
    for (int t = 0; t < 16; t++)
        if (counts[t]) {
            printf("%s%s %llu", sep, sdfed_type_name(t), (unsigned long long)counts[t]);
            sep = ", ";
        }
    printf("), parameters %.3f M, matrices %s\n", (double)params / 1e6, sdfed_type_name(m.clip.weight_type));
    native_model_close(&m);
    return CLI_OK;
}
