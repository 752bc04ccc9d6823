/* Times one SDFed local step (batch of cached image features, global and
 * local prompt, C classes) on a model, split into SVD, projection, forward
 * and backward, and prints the medians over the timed steps, on every
 * core (image features are bench_features' to time):
 *   bench_step --model M.gguf --classes FILE [--n-classes C] [--batch 16]
 *              [--global 8] [--local 16] [--steps 5] [--backend NAME]
 * The last line is machine-readable: "result step_ms=... svd_ms=... ...". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "method/methods.h"
#include "native/args.h"
#include "native/clock.h"
#include "native/model.h"

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, compare_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Reads up to max lines of a class-name file. */
static int read_names(const char *path, char **names, int max) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[256];
    int n = 0;
    while (n < max && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0]) names[n++] = strdup(line);
    }
    fclose(f);
    return n;
}

static double gauss(void) {
    double u = ((double)rand() + 1) / ((double)RAND_MAX + 2), v = ((double)rand() + 1) / ((double)RAND_MAX + 2);
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *classes_path = NULL, *backend = NULL;
    const char *n_classes_s = "10", *batch_s = "16", *global_s = "8", *local_s = "16", *steps_s = "5";
    static const char usage[] = "usage: bench_step --model M.gguf --classes FILE [--n-classes C (10)] [--batch B (16)] "
                                "[--global S (8)] [--local S (16)] [--steps N (5)] [--backend NAME]\n";
    int help = 0;
    const native_cli_option options[] = {{.name = "--model", .value = &model_path, .flag = NULL},
                                         {.name = "--classes", .value = &classes_path, .flag = NULL},
                                         {.name = "--n-classes", .value = &n_classes_s, .flag = NULL},
                                         {.name = "--batch", .value = &batch_s, .flag = NULL},
                                         {.name = "--global", .value = &global_s, .flag = NULL},
                                         {.name = "--local", .value = &local_s, .flag = NULL},
                                         {.name = "--steps", .value = &steps_s, .flag = NULL},
                                         {.name = "--backend", .value = &backend, .flag = NULL},
                                         {.name = "--help", .value = NULL, .flag = &help}};
    native_cli_set_program("bench_step");
    if (native_cli_parse(argc - 1, argv + 1, options, sizeof options / sizeof options[0], NULL, NULL)) return CLI_USAGE;
    if (help || !model_path || !classes_path) {
        fputs(usage, help ? stdout : stderr);
        return help ? CLI_OK : CLI_USAGE;
    }
    long long counts[5];
    if (native_cli_integer(n_classes_s, "--n-classes", 1, 1024, &counts[0]) ||
        native_cli_integer(batch_s, "--batch", 1, 1 << 20, &counts[1]) ||
        native_cli_integer(global_s, "--global", 0, 1024, &counts[2]) ||
        native_cli_integer(local_s, "--local", 0, 1024, &counts[3]) ||
        native_cli_integer(steps_s, "--steps", 1, 1 << 20, &counts[4]))
        return CLI_USAGE;
    int C = (int)counts[0], B = (int)counts[1], S_s = (int)counts[2], S_l = (int)counts[3], steps = (int)counts[4];
    const sdfed_kernels *k = native_backend(backend);
    char *names[1024];
    native_model m;
    sdfed_error err = {0};
    if (!k || C < 1 || C > 1024 || B < 1 || steps < 1 || read_names(classes_path, names, C) != C)
        return native_cli_error(CLI_USAGE, "bad backend, sizes or class file (need %d names)", C);
    if (native_model_open(&m, model_path, &err)) return native_cli_error(CLI_FAILED, "%s", err.message);
    sdfed_clip_pack(&m.clip, k, SDFED_CLIP_TEXT);
    int W = m.clip.cfg.text_width, D = m.clip.cfg.embed_dim;
    sdfed_classes cls;
    if (sdfed_classes_init(&cls, &m.tokenizer, m.clip.cfg.context_length, (const char *const *)names, C, &err))
        return native_cli_error(CLI_FAILED, "%s", err.message);

    srand(1);
    float *Gs = malloc(sizeof *Gs * S_s * W), *Gc = malloc(sizeof *Gc * S_l * W);
    float *img = malloc(sizeof *img * B * D);
    int32_t *labels = malloc(sizeof *labels * B);
    for (int i = 0; i < S_s * W; i++) Gs[i] = (float)(0.02 * gauss());
    for (int i = 0; i < S_l * W; i++) Gc[i] = (float)(0.02 * gauss());
    for (int b = 0; b < B; b++) {
        double n = 0;
        for (int d = 0; d < D; d++) n += pow(img[b * D + d] = (float)gauss(), 2);
        for (int d = 0; d < D; d++) img[b * D + d] /= (float)sqrt(n);
        labels[b] = b % C;
    }
    sdfed_method_params p = {.width = W,
                             .global_rows = S_s,
                             .local_rows = S_l,
                             .global = Gs,
                             .local = Gc,
                             .global_momentum = NULL,
                             .local_momentum = NULL};
    sdfed_batch batch = {.features = img, .labels = labels, .n = B};
    sdfed_method_config cfg = sdfed_method_defaults(SDFED_METHOD_SDFED); /* what every client runs */
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    double *t_total = malloc(sizeof(double) * steps), *t_phase[4];
    for (int i = 0; i < 4; i++) t_phase[i] = malloc(sizeof(double) * steps);
    for (int s = -1; s < steps; s++) { /* one untimed warm-up step */
        sdfed_profile prof = {.clock = native_clock_monotonic_ns};
        sdfed_losses losses;
        sdfed_arena_reset(&arena);
        double t0 = native_clock_seconds(native_clock_monotonic_ns());
        if (sdfed_method_step(&cfg, &m.clip, k, &cls, &p, &batch, &losses, &prof, &arena, &err))
            return native_cli_error(CLI_FAILED, "%s", err.message);
        if (s < 0) continue;
        t_total[s] = native_clock_seconds(native_clock_monotonic_ns()) - t0;
        t_phase[0][s] = prof.svd;
        t_phase[1][s] = prof.projection;
        t_phase[2][s] = prof.forward;
        t_phase[3][s] = prof.backward;
    }
    double total = median(t_total, steps) * 1e3;
    double svd = median(t_phase[0], steps) * 1e3, proj = median(t_phase[1], steps) * 1e3;
    double fwd = median(t_phase[2], steps) * 1e3, bwd = median(t_phase[3], steps) * 1e3;
    printf("%s, %s kernels, %d threads, C=%d, batch %d, S_s %d, S_l %d: step %.1f ms (svd %.2f, projection %.2f, "
           "forward %.1f, backward %.1f) median of %d\n",
           model_path, k->name, sdfed_kernels_thread_count(), C, B, S_s, S_l, total, svd, proj, fwd, bwd, steps);
    printf("result step_ms=%.3f svd_ms=%.3f projection_ms=%.3f forward_ms=%.3f backward_ms=%.3f\n", total, svd, proj,
           fwd, bwd);
    sdfed_arena_free(&arena);
    sdfed_classes_free(&cls);
    native_model_close(&m);
    return 0;
}
