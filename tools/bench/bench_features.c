/* make bench's one native timer of image features (tools/bench/peers.sh,
 * peak.sh, run.sh): on a chosen number of threads, with --check the
 * unit-length features of the given RGB images (N x S x S x 3 bytes, the
 * model's input size), one line of numbers per image; then the images per
 * second of a random image, one at a time (after one untimed image), the
 * median of --repeats runs of --images images each. --int8-images 0 keeps
 * a Q8_0 model's image tower on f32 activations (default 1: the integer
 * path, clip_model.h's int8_images); --isa caps the native tiles' instruction
 * set (as sdfed sim's does):
 *   bench_features --model M.gguf [--threads 2] [--images 8] [--repeats 3]
 *                  [--int8-images 1] [--isa avx2] [--check FILE.rgb]
 * The last line is machine-readable:
 *   "result images_per_s=... threads=... int8_images=0|1 isa=..."
 * (int8_images: whether the features came from integer products; isa: the
 * instruction set of the tiles that ran their linears, the integer ones or
 * the FMA ones, the best the CPU has within the cap). The WASI build (make
 * build-wasi; run under Node, one thread) times the browser's SIMD128
 * kernels in V8 without a browser: isa=simd128. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clip/image_encoder.h"
#include "kernels/dispatch.h"
#include "native/args.h"
#include "native/clock.h"
#include "native/model.h"

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Reads the whole file into *data; returns its size, or -1. */
static long read_file(const char *path, unsigned char **data) {
    FILE *f = fopen(path, "rb");
    long size = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (*data = malloc(size ? (size_t)size : 1)) && fread(*data, 1, (size_t)size, f) != (size_t)size) {
        free(*data);
        size = -1;
    }
    if (f) fclose(f);
    return size;
}

/* Features of image i of an (n, S, S, 3) RGB buffer into features (E). */
static int features_of(const sdfed_clip_model *m, const sdfed_kernels *k, const unsigned char *rgb, float *features,
                       sdfed_arena *arena, sdfed_error *err) {
    int S = m->cfg.image_size;
    sdfed_image img = {.pixels = rgb, .width = S, .height = S, .channels = 3, .stride = (size_t)S * 3};
    sdfed_arena_reset(arena);
    return sdfed_image_features(m, k, &img, 1, features, arena, err);
}

#if defined(SDFED_HAVE_NATIVE_KERNELS)
#define DEFAULT_THREADS "2"
#else
#define DEFAULT_THREADS "1" /* the WASI build has no threads */
#endif

int main(int argc, char **argv) {
    static const char usage[] = "usage: bench_features --model M.gguf [--threads N (" DEFAULT_THREADS ")] [--images N "
                                "(8)] [--repeats N (3)] [--int8-images 0|1 (1)] [--isa portable|avx2|avx512] "
                                "[--check FILE.rgb]\n";
    const char *model_path = NULL, *threads_s = DEFAULT_THREADS, *images_s = "8", *repeats_s = "3", *int8_s = "1",
               *check = NULL, *isa = NULL;
    int help = 0;
    const native_cli_option options[] = {{.name = "--model", .value = &model_path, .flag = NULL},
                                         {.name = "--threads", .value = &threads_s, .flag = NULL},
                                         {.name = "--images", .value = &images_s, .flag = NULL},
                                         {.name = "--repeats", .value = &repeats_s, .flag = NULL},
                                         {.name = "--int8-images", .value = &int8_s, .flag = NULL},
                                         {.name = "--check", .value = &check, .flag = NULL},
                                         {.name = "--isa", .value = &isa, .flag = NULL},
                                         {.name = "--help", .value = NULL, .flag = &help}};
    native_cli_set_program("bench_features");
    if (native_cli_parse(argc - 1, argv + 1, options, sizeof options / sizeof options[0], NULL, NULL)) return CLI_USAGE;
    if (help || !model_path) {
        fputs(usage, help ? stdout : stderr);
        return help ? CLI_OK : CLI_USAGE;
    }
    long long counts[3];
    if (native_cli_integer(threads_s, "--threads", 1, 1024, &counts[0]) ||
        native_cli_integer(images_s, "--images", 1, 1 << 20, &counts[1]) ||
        native_cli_integer(repeats_s, "--repeats", 1, 1 << 20, &counts[2]))
        return CLI_USAGE;
    int threads = (int)counts[0], n_images = (int)counts[1], repeats = (int)counts[2];
    if (strcmp(int8_s, "0") != 0 && strcmp(int8_s, "1") != 0)
        return native_cli_error(CLI_USAGE, "--int8-images must be 0 or 1, not '%s'", int8_s);
    if (isa && native_cli_isa_cap(isa)) return CLI_USAGE;
    native_model m;
    sdfed_error err = {0};
    if (native_model_open(&m, model_path, &err)) return native_cli_error(CLI_FAILED, "%s", err.message);
    m.clip.int8_images = int8_s[0] == '1';
    int int8 = sdfed_clip_int8_image_features(&m.clip);
#if defined(SDFED_HAVE_NATIVE_KERNELS)
    const sdfed_kernels *k = sdfed_kernels_threaded(sdfed_kernels_default(), threads, native_clock_monotonic_ns);
    if (threads > 1 && sdfed_kernels_thread_count() != threads)
        return native_cli_error(CLI_FAILED, "could not start %d threads", threads);
    const char *kernels = sdfed_isa_name(int8 ? sdfed_isa_best_int8() : sdfed_isa_best_fma());
#else
    /* the WASI build: the browser's kernels (SIMD128) on this one thread, under Node's V8 */
    const sdfed_kernels *k = sdfed_kernels_default();
    if (threads > 1)
        return native_cli_error(CLI_USAGE, "--threads %d: this build has no threads (--threads 1)", threads);
    const char *kernels = k->name;
#endif
    sdfed_clip_pack(&m.clip, k, SDFED_CLIP_IMAGE);
    int S = m.clip.cfg.image_size, E = m.clip.cfg.embed_dim;
    size_t per_image = (size_t)S * S * 3;
    float *features = malloc(sizeof *features * (size_t)E);
    sdfed_arena arena;
    sdfed_arena_init(&arena);

    if (check) {
        unsigned char *rgb = NULL;
        long size = read_file(check, &rgb);
        if (size <= 0 || size % (long)per_image != 0)
            return native_cli_error(CLI_FAILED, "%s: not a whole number of %d x %d RGB images", check, S, S);
        for (long i = 0; i < size / (long)per_image; i++) {
            if (features_of(&m.clip, k, rgb + i * per_image, features, &arena, &err))
                return native_cli_error(CLI_FAILED, "%s", err.message);
            for (int d = 0; d < E; d++) printf(d ? " %.9g" : "%.9g", features[d]);
            printf("\n");
        }
        free(rgb);
    }

    unsigned char *rgb = malloc(per_image);
    srand(1);
    for (size_t i = 0; i < per_image; i++) rgb[i] = (unsigned char)(rand() & 255);
    double *rates = malloc(sizeof *rates * (size_t)repeats);
    for (int r = 0; r < repeats; r++) {
        double t0 = 0;
        for (int i = -1; i < n_images; i++) {
            if (i == 0) t0 = native_clock_seconds(native_clock_monotonic_ns());
            if (features_of(&m.clip, k, rgb, features, &arena, &err))
                return native_cli_error(CLI_FAILED, "%s", err.message);
        }
        rates[r] = n_images / (native_clock_seconds(native_clock_monotonic_ns()) - t0);
    }
    qsort(rates, (size_t)repeats, sizeof *rates, compare_double);
    printf("result images_per_s=%.4f threads=%d int8_images=%d isa=%s\n", rates[repeats / 2], threads, int8, kernels);
    free(rates);
    free(rgb);
    free(features);
    sdfed_arena_free(&arena);
    native_model_close(&m);
    return CLI_OK;
}
