/* The layers' exponential (base/vectors.h): within one unit in the last
 * place of e^x (libm's exp in double, rounded) over [-87, 88], its edges,
 * and the same bits on every target: a hash of its values over a sweep is
 * one constant, checked here on each x86-64 instruction set the CPU runs and
 * by the same test in the wasm and sanitizer builds. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/vectors.h"
#include "check.h"

/* the sweep: every float in [-87, 88] whose bits are a multiple of STEP
 * apart, and some round values */
#define STEP 4099u
/* FNV-1a of the sweep's results, as every target must compute them */
#define EXPECTED_HASH 0x3679c37949d7be67ull

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* the sweep's x values in order, `at` the next index (returns 0 when done) */
static int sweep_next(uint32_t *at, float *x) {
    while (*at < 0xff800000u) {
        uint32_t u = *at;
        *at += STEP;
        memcpy(x, &u, sizeof *x);
        if (*x >= -87.0f && *x <= 88.0f) return 1;
    }
    return 0;
}

typedef struct sweep_result {
    uint64_t hash;
    long values;
    double worst_ulps; /* the largest |y - e^x| in units of e^x's last place */
    float worst_x;
} sweep_result;

static void fold(sweep_result *r, const float *x, const float *y, int count) {
    for (int l = 0; l < count; l++) {
        uint32_t u = bits_of(y[l]);
        for (int b = 0; b < 4; b++) r->hash = (r->hash ^ ((u >> (8 * b)) & 0xff)) * 0x100000001b3ull;
        double exact = exp((double)x[l]);
        int exponent;
        frexp(exact, &exponent);
        double ulps = fabs((double)y[l] - exact) / ldexp(1.0, exponent - 24);
        if (ulps > r->worst_ulps) r->worst_ulps = ulps, r->worst_x = x[l];
        r->values++;
    }
}

/* The sweep through sdfed_exp_f32x8, 8 values a call (the last call
 * partial, its other lanes zero), compiled for the instruction set the
 * attribute names. */
#define SWEEP_FUNCTION(name, attribute)                                                                                \
    attribute static sweep_result name(void) {                                                                         \
        sweep_result r = {0xcbf29ce484222325ull, 0, 0.0, 0.0f};                                                        \
        uint32_t at = 0;                                                                                               \
        for (;;) {                                                                                                     \
            float x[8], y[8];                                                                                          \
            int count = 0;                                                                                             \
            while (count < 8 && sweep_next(&at, &x[count])) count++;                                                   \
            if (count == 0) return r;                                                                                  \
            f32x8 v;                                                                                                   \
            sdfed_load_f32x8(&v, x, count, 0.0f);                                                                      \
            sdfed_exp_f32x8(&v);                                                                                       \
            sdfed_store_f32x8(y, &v, count);                                                                           \
            fold(&r, x, y, count);                                                                                     \
        }                                                                                                              \
    }

SWEEP_FUNCTION(sweep_baseline, )
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
SWEEP_FUNCTION(sweep_avx2, __attribute__((target("avx2"))))
SWEEP_FUNCTION(sweep_avx512, __attribute__((target("avx512f"))))
#endif

static void check_sweep(const char *where, sweep_result r) {
    CHECK(r.values > 200000, "%s: the sweep has %ld values", where, r.values);
    CHECK(r.worst_ulps <= 1.0, "%s: e^x off by %.3f units in the last place at x = %.9g", where, r.worst_ulps,
          (double)r.worst_x);
    CHECK(r.hash == EXPECTED_HASH, "%s: the sweep's hash is 0x%016llx, every target's is 0x%016llx", where,
          (unsigned long long)r.hash, (unsigned long long)EXPECTED_HASH);
    printf("%s: %ld values, worst %.3f units in the last place (x = %.9g), hash 0x%016llx\n", where, r.values,
           r.worst_ulps, (double)r.worst_x, (unsigned long long)r.hash);
}

/* the edges: 0 below -87 and for -inf, infinity above 88, NaN for NaN,
 * exactly 1 at 0; each in every lane position */
static void check_edges(void) {
    const float in[8] = {-87.5f, -INFINITY, 88.5f, INFINITY, NAN, 0.0f, -0.0f, -1000.0f};
    for (int shift = 0; shift < 8; shift++) {
        float x[8], y[8];
        for (int l = 0; l < 8; l++) x[l] = in[(l + shift) % 8];
        f32x8 v;
        sdfed_load_f32x8(&v, x, 8, 0.0f);
        sdfed_exp_f32x8(&v);
        sdfed_store_f32x8(y, &v, 8);
        for (int l = 0; l < 8; l++) {
            float want = x[l] < -87.0f ? 0.0f : x[l] > 88.0f ? INFINITY : 1.0f;
            if (isnan(x[l]))
                CHECK(isnan(y[l]), "e^NaN is %g, not NaN", (double)y[l]);
            else
                CHECK(y[l] == want, "e^%g is %g, not %g", (double)x[l], (double)y[l], (double)want);
        }
    }
}

int main(void) {
    check_sweep("baseline", sweep_baseline());
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) check_sweep("avx2", sweep_avx2());
    if (__builtin_cpu_supports("avx512f")) check_sweep("avx512f", sweep_avx512());
#endif
    check_edges();
    return check_report("test_vectors");
}
