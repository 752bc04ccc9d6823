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

/* sysconf's answer for `name` (-1: a C library without it), asked once
 * into *cache (under a hypervisor the CPU's answer costs an exit); any
 * thread may ask first, and all of them store the same value; `fallback`
 * where it does not say */
static long cpu_cache_fact(atomic_long *cache, int name, long fallback) {
    long value = atomic_load_explicit(cache, memory_order_relaxed);
    if (value > 0) return value;
    value = name >= 0 ? sysconf(name) : -1;
    if (value <= 0) value = fallback;
    atomic_store_explicit(cache, value, memory_order_relaxed);
    return value;
}

/* glibc's names of the two facts (other C libraries have neither) */
#if defined(_SC_LEVEL2_CACHE_SIZE) && defined(_SC_LEVEL1_DCACHE_ASSOC)
#define L2_BYTES_NAME _SC_LEVEL2_CACHE_SIZE
#define L1_WAYS_NAME _SC_LEVEL1_DCACHE_ASSOC
#else
#define L2_BYTES_NAME (-1)
#define L1_WAYS_NAME (-1)
#endif

size_t sdfed_cpu_l2_bytes(void) {
    static atomic_long l2_bytes;
    return (size_t)cpu_cache_fact(&l2_bytes, L2_BYTES_NAME, 512 * 1024);
}

int sdfed_cpu_l1_ways(void) {
    static atomic_long l1_ways;
    return (int)cpu_cache_fact(&l1_ways, L1_WAYS_NAME, 8);
}

void sdfed_isa_cap(int isa) { isa_cap = isa; }

int sdfed_isa_capped(void) { return isa_cap; }

const char *sdfed_isa_name(int isa) { return sdfed_name_of(isa_names, SDFED_ISA_COUNT, isa); }

int sdfed_isa_by_name(const char *name) { return sdfed_name_value(isa_names, SDFED_ISA_COUNT, name); }
