/* The type of a clock the host gives the core. The core has no clock of its
 * own (the same inputs give the same bits on every host): where it times
 * something that changes only its speed, never a result (the thread pool's
 * polling, the browser kernels' choice of int8 path, the objective's
 * profile), it reads the clock its caller passes: native/clock.h's
 * native_clock_monotonic_ns natively, wasm-client's in the module. */
#ifndef SDFED_BASE_CLOCK_H
#define SDFED_BASE_CLOCK_H

#include <stdint.h>

/* Nanoseconds since an arbitrary fixed point; never goes back. */
typedef int64_t sdfed_clock_fn(void);

#endif
