/* The layers' exponential and erf (base/vectors.h): each within one unit
 * in the last place of the exact value (libm's exp and erf in double) over
 * its sweep (e^x: [-87, 88]; erf: [-4.5, 4.5], where it goes from -1 to 1,
 * and the subnormals), its edges, and the same bits on every target: a
 * hash of its values over the sweep is one constant, checked here on each
 * x86-64 instruction set the CPU runs and by the same test in the wasm and
 * sanitizer builds. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/vectors.h"
#include "check.h"

/* FNV-1a of the sweeps' results, as every target must compute them */
#define EXP_HASH 0x38330dcd6c687d57ull
#define ERF_HASH 0x73c65d0fa3786338ull

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* A sweep is every float in [lo, hi] whose bits are a multiple of `step`
 * apart (some round values among them): its x values in order, `at` the
 * next index (returns 0 when done). */
static int sweep_next(uint32_t *at, uint32_t step, float *x, float lo, float hi) {
    while (*at < 0xff800000u) {
        uint32_t u = *at;
        *at += step;
        memcpy(x, &u, sizeof *x);
        if (*x >= lo && *x <= hi) return 1;
    }
    return 0;
}

typedef struct sweep_result {
    uint64_t hash;
    long values;
    double worst_ulps; /* the largest |y - f(x)| in units of f(x)'s last place */
    float worst_x;
} sweep_result;

static void fold(sweep_result *r, const float *x, const float *y, int count, double (*exact_f)(double)) {
    for (int l = 0; l < count; l++) {
        uint32_t u = bits_of(y[l]);
        for (int b = 0; b < 4; b++) r->hash = (r->hash ^ ((u >> (8 * b)) & 0xff)) * 0x100000001b3ull;
        double exact = exact_f((double)x[l]);
        int exponent;
        frexp(exact, &exponent);
        /* a float's last place, down to the subnormals' */
        double ulps = fabs((double)y[l] - exact) / ldexp(1.0, exponent - 24 > -149 ? exponent - 24 : -149);
        if (ulps > r->worst_ulps) {
            r->worst_ulps = ulps;
            r->worst_x = x[l];
        }
        r->values++;
    }
}

/* The sweep of [lo, hi] through the vector function `fn`, 8 values a call
 * (the last call partial, its other lanes zero), compiled for the
 * instruction set the attribute names (`fn` inlined into it). */
#define SWEEP_FUNCTION(name, attribute, fn)                                                                            \
    attribute static sweep_result name(uint32_t step, float lo, float hi, double (*exact_f)(double)) {                 \
        sweep_result r = {0xcbf29ce484222325ull, 0, 0.0, 0.0f};                                                        \
        uint32_t at = 0;                                                                                               \
        for (;;) {                                                                                                     \
            float x[8], y[8];                                                                                          \
            int count = 0;                                                                                             \
            while (count < 8 && sweep_next(&at, step, &x[count], lo, hi)) count++;                                     \
            if (count == 0) return r;                                                                                  \
            sdfed_f32x8 v;                                                                                             \
            sdfed_load_f32x8(&v, x, count, 0.0f);                                                                      \
            fn(&v);                                                                                                    \
            sdfed_store_f32x8(y, &v, count);                                                                           \
            fold(&r, x, y, count, exact_f);                                                                            \
        }                                                                                                              \
    }

/* a sweep of each function on each instruction set */
#define SWEEP_FUNCTIONS(fn)                                                                                            \
    SWEEP_FUNCTION(fn##_baseline, , fn)                                                                                \
    SWEEP_FUNCTIONS_X86(fn)
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SWEEP_FUNCTIONS_X86(fn)                                                                                        \
    SWEEP_FUNCTION(fn##_avx2, __attribute__((target("avx2"))), fn)                                                     \
    SWEEP_FUNCTION(fn##_avx512, __attribute__((target("avx512f"))), fn)
#else
#define SWEEP_FUNCTIONS_X86(fn)
#endif
SWEEP_FUNCTIONS(sdfed_exp_f32x8)
SWEEP_FUNCTIONS(sdfed_erf_f32x8)

static void check_sweep(const char *what, const char *where, sweep_result r, long at_least, uint64_t expected_hash) {
    CHECK(r.values > at_least, "%s %s: the sweep has %ld values", what, where, r.values);
    CHECK(r.worst_ulps <= 1.0, "%s %s: off by %.3f units in the last place at x = %.9g", what, where, r.worst_ulps,
          (double)r.worst_x);
    CHECK(r.hash == expected_hash, "%s %s: the sweep's hash is 0x%016llx, every target's is 0x%016llx", what, where,
          (unsigned long long)r.hash, (unsigned long long)expected_hash);
    printf("%s %s: %ld values, worst %.3f units in the last place (x = %.9g), hash 0x%016llx\n", what, where, r.values,
           r.worst_ulps, (double)r.worst_x, (unsigned long long)r.hash);
}

/* both functions' sweeps on one instruction set */
#define CHECK_SWEEPS(where, suffix)                                                                                    \
    do {                                                                                                               \
        check_sweep("e^x", where, sdfed_exp_f32x8##suffix(4099, -87.0f, 88.0f, exp), 200000, EXP_HASH);                \
        check_sweep("erf", where, sdfed_erf_f32x8##suffix(1031, -4.5f, 4.5f, erf), 2000000, ERF_HASH);                 \
    } while (0)

/* e^x's edges: 0 below -87 and for -inf, infinity above 88, NaN for NaN,
 * exactly 1 at 0; each in every lane position */
static void check_exp_edges(void) {
    const float in[8] = {-87.5f, -INFINITY, 88.5f, INFINITY, NAN, 0.0f, -0.0f, -1000.0f};
    for (int shift = 0; shift < 8; shift++) {
        float x[8], y[8];
        for (int l = 0; l < 8; l++) x[l] = in[(l + shift) % 8];
        sdfed_f32x8 v;
        sdfed_load_f32x8(&v, x, 8, 0.0f);
        sdfed_exp_f32x8(&v);
        sdfed_store_f32x8(y, &v, 8);
        for (int l = 0; l < 8; l++) {
            float want = x[l] > 88.0f ? INFINITY : 1.0f;
            if (x[l] < -87.0f) want = 0.0f;
            if (isnan(x[l]))
                CHECK(isnan(y[l]), "e^NaN is %g, not NaN", (double)y[l]);
            else
                CHECK(y[l] == want, "e^%g is %g, not %g", (double)x[l], (double)y[l], (double)want);
        }
    }
}

/* erf's edges: odd (-0 to -0), 1 from 4 on and at infinity, NaN for NaN;
 * each in every lane position */
static void check_erf_edges(void) {
    const float in[8] = {0.0f, -0.0f, 4.0f, -4.5f, INFINITY, -INFINITY, NAN, 1e30f};
    const float want[8] = {0.0f, -0.0f, 1.0f, -1.0f, 1.0f, -1.0f, NAN, 1.0f};
    for (int shift = 0; shift < 8; shift++) {
        float x[8], y[8], w[8];
        for (int l = 0; l < 8; l++) {
            x[l] = in[(l + shift) % 8];
            w[l] = want[(l + shift) % 8];
        }
        sdfed_f32x8 v;
        sdfed_load_f32x8(&v, x, 8, 0.0f);
        sdfed_erf_f32x8(&v);
        sdfed_store_f32x8(y, &v, 8);
        for (int l = 0; l < 8; l++) {
            if (isnan(w[l]))
                CHECK(isnan(y[l]), "erf(NaN) is %g, not NaN", (double)y[l]);
            else
                CHECK(bits_of(y[l]) == bits_of(w[l]), "erf(%g) is %g, not %g", (double)x[l], (double)y[l],
                      (double)w[l]);
        }
    }
}

int main(void) {
    CHECK_SWEEPS("baseline", _baseline);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) CHECK_SWEEPS("avx2", _avx2);
    if (__builtin_cpu_supports("avx512f")) CHECK_SWEEPS("avx512f", _avx512);
#endif
    check_exp_edges();
    check_erf_edges();
    return check_report("test_vectors");
}
