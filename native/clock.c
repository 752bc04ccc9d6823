/* The monotonic, wall, thread and process CPU clocks (see clock.h), from clock_gettime. */
#include "native/clock.h"

#include <time.h>

static int64_t read_clock(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t native_clock_monotonic_ns(void) { return read_clock(CLOCK_MONOTONIC); }

int64_t native_clock_wall_ns(void) { return read_clock(CLOCK_REALTIME); }

int64_t native_clock_thread_cpu_ns(void) { return read_clock(CLOCK_THREAD_CPUTIME_ID); }

int64_t native_clock_process_cpu_ns(void) { return read_clock(CLOCK_PROCESS_CPUTIME_ID); }
