/* The instruction sets this CPU runs, and its L2 cache (see dispatch.h). */
#include "kernels/dispatch.h"

#include <assert.h>
#include <stdatomic.h>
#include <unistd.h>

#include "base/names.h"

static const sdfed_name isa_names[] = {
    [SDFED_ISA_PORTABLE] = {.name = "portable", .value = SDFED_ISA_PORTABLE},
    [SDFED_ISA_AVX2] = {.name = "avx2", .value = SDFED_ISA_AVX2},
    [SDFED_ISA_AVX512] = {.name = "avx512", .value = SDFED_ISA_AVX512},
};
static_assert(sizeof isa_names / sizeof isa_names[0] == SDFED_ISA_COUNT, "a name per instruction set");

/* the host's cap (sdfed_isa_cap), none until it sets one */
static int isa_cap = SDFED_ISA_COUNT - 1;

/* the FMA tiles' best on this CPU, before the cap */
static int cpu_best_fma(void) {
#if defined(SDFED_X86_TILES)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return SDFED_ISA_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return SDFED_ISA_AVX2;
#endif
    return SDFED_ISA_PORTABLE;
}

int sdfed_isa_best_fma(void) {
    int best = cpu_best_fma();
    return best < isa_cap ? best : isa_cap;
}

int sdfed_isa_best_int8(void) {
#if defined(SDFED_X86_TILES)
    __builtin_cpu_init();
    if (isa_cap >= SDFED_ISA_AVX512 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vnni"))
        return SDFED_ISA_AVX512;
    if (isa_cap >= SDFED_ISA_AVX2 && __builtin_cpu_supports("avx2")) return SDFED_ISA_AVX2;
#endif
    return SDFED_ISA_PORTABLE;
}

size_t sdfed_cpu_l2_bytes(void) {
    /* asked once (under a hypervisor the CPU's answer costs an exit); any
     * thread may ask first, and all of them store the same value */
    static atomic_long l2_bytes;
    long bytes = atomic_load_explicit(&l2_bytes, memory_order_relaxed);
    if (bytes > 0) return (size_t)bytes;
#if defined(_SC_LEVEL2_CACHE_SIZE)
    bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    if (bytes <= 0) bytes = 512 * 1024;
    atomic_store_explicit(&l2_bytes, bytes, memory_order_relaxed);
    return (size_t)bytes;
}

void sdfed_isa_cap(int isa) { isa_cap = isa; }

int sdfed_isa_capped(void) { return isa_cap; }

const char *sdfed_isa_name(int isa) { return sdfed_name_of(isa_names, SDFED_ISA_COUNT, isa); }

int sdfed_isa_by_name(const char *name) { return sdfed_name_value(isa_names, SDFED_ISA_COUNT, name); }
