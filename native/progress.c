/* Progress lines (see progress.h). */
#include "native/progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "native/clock.h"

static struct {
    int open;         /* a line on the terminal not yet cleared */
    int64_t start_ns; /* when the task's first state came; 0 none */
    int64_t last_ns;  /* when a line was last written */
} line;

void native_progress_show(const char *fmt, ...) {
    int terminal = isatty(fileno(stderr));
    int64_t now = native_clock_monotonic_ns(), every = terminal ? 250000000 : (int64_t)10000000000;
    if (!line.start_ns) line.start_ns = line.last_ns = now;
    if (now - line.last_ns < every && !(terminal && !line.open)) return;
    line.last_ns = now;
    va_list ap;
    va_start(ap, fmt);
    if (terminal) fputs("\r", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(terminal ? "\033[K" : "\n", stderr);
    va_end(ap);
    fflush(stderr);
    line.open = terminal;
}

void native_progress_end(void) {
    if (line.open) fputs("\r\033[K", stderr);
    fflush(stderr);
    line.open = 0;
    line.start_ns = 0;
}
