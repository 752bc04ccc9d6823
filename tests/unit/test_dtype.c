/* Element types: f16 conversion against the exact rounding rule, Q8_0
 * quantisation error bounds. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "check.h"

/* f32 -> f16 by the definition: the nearest representable half, ties to
 * even, computed in double over the finite halves. */
static uint16_t f16_nearest(float f, const double *halves) {
    if (isnan(f)) return 0x7e00;
    double x = fabs((double)f);
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    if (x >= 65520.0) return sign | 0x7c00; /* beyond max + half ulp: inf */
    /* binary search over the 31744 non-negative finite halves (ascending) */
    int lo = 0, hi = 0x7bff;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (halves[mid] <= x)
            lo = mid;
        else
            hi = mid - 1;
    }
    int best = lo;
    if (lo < 0x7bff) {
        double dl = x - halves[lo], dh = halves[lo + 1] - x;
        if (dh < dl || (dh == dl && (lo & 1))) best = lo + 1;
    }
    return sign | (uint16_t)best;
}

static void test_f16(void) {
    static double halves[0x7c00];
    int roundtrip_ok = 1;
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = sdfed_f16_to_f32((uint16_t)h);
        int exp = (h >> 10) & 0x1f, man = h & 0x3ff;
        double want = exp == 0 ? ldexp(man, -24) : ldexp(1024 + man, exp - 25);
        if (exp == 0x1f) {
            if (man == 0 ? !isinf(f) : !isnan(f)) roundtrip_ok = 0;
            continue;
        }
        if ((h & 0x8000) ? f != -want : f != want) roundtrip_ok = 0;
        if (!(h & 0x8000)) halves[h] = want;
        if (sdfed_f32_to_f16(f) != h) roundtrip_ok = 0;
    }
    CHECK(roundtrip_ok, "every half converts to its exact f32 and back");

    srand(1);
    int mismatches = 0;
    for (int i = 0; i < 200000; i++) {
        uint32_t u = (uint32_t)rand() << 16 ^ (uint32_t)rand();
        /* bias towards the f16 range so that most samples are interesting */
        u = (u & 0x80000000u) | (0x30000000u + (u & 0x0fffffffu) % 0x18000000u);
        float f;
        memcpy(&f, &u, 4);
        if (sdfed_f32_to_f16(f) != f16_nearest(f, halves)) mismatches++;
    }
    CHECK(mismatches == 0, "%d of 200000 random floats rounded differently from nearest-even", mismatches);
    /* ties: exactly between two halves */
    CHECK(sdfed_f32_to_f16(1.0f + 1.0f / 2048) == 0x3c00, "tie rounds to even (down)");
    CHECK(sdfed_f32_to_f16(1.0f + 3.0f / 2048) == 0x3c02, "tie rounds to even (up)");
    CHECK(sdfed_f32_to_f16(65519.0f) == 0x7bff, "just below the overflow threshold");
    CHECK(sdfed_f32_to_f16(65520.0f) == 0x7c00, "overflow to infinity");
    CHECK(sdfed_f32_to_f16(-INFINITY) == 0xfc00, "negative infinity");
    CHECK((sdfed_f32_to_f16(NAN) & 0x7fff) > 0x7c00, "nan stays nan");
    CHECK(sdfed_f32_to_f16(ldexpf(1.0f, -25)) == 0x0000, "half of the smallest subnormal ties to zero");
    CHECK(sdfed_f32_to_f16(ldexpf(1.5f, -25)) == 0x0001, "above the tie rounds to the smallest subnormal");
    CHECK(sdfed_bf16_to_f32(0x3f80) == 1.0f && sdfed_bf16_to_f32(0xc000) == -2.0f, "bf16 to f32");
}

static void test_q8_0(void) {
    enum { N = 4 * SDFED_Q8_0_BLOCK };
    float x[N], y[N];
    sdfed_block_q8_0 q[N / SDFED_Q8_0_BLOCK];
    srand(2);
    for (int i = 0; i < N; i++) {
        float scale = i < 32 ? 1e-3f : 1.0f; /* small values, then large ones, then ordinary ones */
        if (i >= 32 && i < 64) scale = 10.0f;
        x[i] = ((float)((double)rand() / RAND_MAX) - 0.5f) * scale;
    }
    for (int i = 96; i < N; i++) x[i] = 0.0f; /* an all-zero block */
    CHECK(sdfed_type_row_bytes(SDFED_TYPE_Q8_0, N) == sizeof q, "row bytes of q8_0");
    sdfed_row_from_f32(SDFED_TYPE_Q8_0, q, x, N);
    sdfed_row_to_f32(SDFED_TYPE_Q8_0, y, q, N);
    int within = 1;
    for (int b = 0; b < N / SDFED_Q8_0_BLOCK; b++) {
        float amax = 0.0f;
        for (int i = 0; i < SDFED_Q8_0_BLOCK; i++) amax = fmaxf(amax, fabsf(x[b * 32 + i]));
        float d = amax / 127, d16 = sdfed_f16_to_f32(sdfed_f32_to_f16(d));
        /* half a quantisation step, plus the scale's own f16 rounding times |q| <= 127 */
        double bound = 0.5 * d + fabs((double)d16 - d) * 127 + 1e-12;
        for (int i = 0; i < SDFED_Q8_0_BLOCK; i++)
            if (fabsf(y[b * 32 + i] - x[b * 32 + i]) > bound) within = 0;
    }
    CHECK(within, "q8_0 round trip within half a quantisation step");
    int zeros = 1;
    for (int i = 96; i < N; i++) zeros &= y[i] == 0.0f;
    CHECK(zeros, "an all-zero block stays zero");
    int extreme = 0;
    for (int i = 32; i < 64; i++) extreme |= q[1].qs[i - 32] == 127 || q[1].qs[i - 32] == -127;
    CHECK(extreme, "the largest value of a block maps to +-127");
}

static void test_names(void) {
    CHECK(sdfed_type_from_name("q8_0") == SDFED_TYPE_Q8_0 && sdfed_type_from_name("f16") == SDFED_TYPE_F16 &&
              sdfed_type_from_name("f32") == SDFED_TYPE_F32,
          "type names");
    CHECK(sdfed_type_from_name("q4_0") == -1 && sdfed_type_name(2) == NULL, "unknown types");
    CHECK(sdfed_type_row_bytes(SDFED_TYPE_F16, 10) == 20 && sdfed_type_block_size(SDFED_TYPE_Q8_0) == 32, "sizes");
}

int main(void) {
    test_f16();
    test_q8_0();
    test_names();
    return check_report("test_dtype");
}
