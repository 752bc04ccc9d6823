/* The clocks of native programs: one monotonic (for durations, deadlines and
 * timeouts), one wall clock (for timestamps people and files read) and the
 * CPU time of the calling thread or of the whole process (for benchmarks on
 * a loaded machine), all in integer nanoseconds so that callers round as
 * they need. */
#ifndef SDFED_NATIVE_CLOCK_H
#define SDFED_NATIVE_CLOCK_H

#include <stdint.h>

/* Nanoseconds since an arbitrary fixed point; never goes back. */
int64_t native_clock_monotonic_ns(void);
/* Nanoseconds since the Unix epoch (may jump when the system clock is set). */
int64_t native_clock_wall_ns(void);
/* Nanoseconds of CPU the calling thread has run. */
int64_t native_clock_thread_cpu_ns(void);
/* Nanoseconds of CPU all the process's threads have run (work split over a
 * thread pool). */
int64_t native_clock_process_cpu_ns(void);

/* ns in seconds and in whole milliseconds */
static inline double native_clock_seconds(int64_t ns) { return 1e-9 * (double)ns; }
static inline int64_t native_clock_ms(int64_t ns) { return ns / 1000000; }

#endif
