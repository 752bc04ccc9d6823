/* The page's reconnection schedule from the C's (shared/fed/backoff.c):
 * web/backoff_windows.js holds its windows, one for each attempt until the
 * cap; the page's test compares the page's delays with the C's.
 *   sdfed-backoff check web/backoff_windows.js   exit 1 if it differs
 *   sdfed-backoff write web/backoff_windows.js   rewrites it
 *   sdfed-backoff delays                         "attempt u floor delay" lines on a grid */
#include <stdio.h>
#include <string.h>

#include "base/io.h"
#include "fed/backoff.h"
#include "native/generated_file.h"

/* The module's text, NUL-terminated; non-zero when memory ran out. */
static int windows_js(sdfed_buffer *b) {
    sdfed_sink sink = sdfed_buffer_sink(b);
    int failed =
        sdfed_sink_printf(sink, "// The page's reconnection windows (ms) by attempt since the last welcome, the\n"
                                "// last one for every later attempt: shared/fed/backoff.c's, written by\n"
                                "// `build/sdfed-backoff write web/backoff_windows.js`; the ctest\n"
                                "// backoff_windows fails when this file differs.\n"
                                "export const WINDOWS_MS = Object.freeze([");
    int64_t window = 0;
    for (int attempt = 0; window < SDFED_BACKOFF_CAP_MS; attempt++) {
        window = sdfed_backoff_window_ms(attempt);
        failed |= sdfed_sink_printf(sink, "%s%lld", attempt ? ", " : "", (long long)window);
    }
    return failed | sdfed_sink_printf(sink, "]);\n") | sink.write(sink.ctx, "", 1);
}

/* The C's delays on a grid of attempts, draws and floors, for the page's test to compare its own with. */
static void delays(void) {
    static const double draws[] = {0.0, 1e-9, 0.25, 0.5, 0.7071067811865476, 0.999999, 0.9999999999999999};
    static const int64_t floors[] = {-3, 0, 2500, 30000};
    for (int attempt = 0; attempt <= 40; attempt++)
        for (size_t u = 0; u < sizeof draws / sizeof draws[0]; u++)
            for (size_t f = 0; f < sizeof floors / sizeof floors[0]; f++)
                printf("%d %.17g %lld %lld\n", attempt, draws[u], (long long)floors[f],
                       (long long)sdfed_backoff_delay_ms(attempt, draws[u], floors[f]));
}

int main(int argc, char **argv) {
    static const char usage[] = "usage: sdfed-backoff check|write web/backoff_windows.js | sdfed-backoff delays\n";
    if (argc == 2 && !strcmp(argv[1], "--help")) {
        fputs(usage, stdout);
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "delays")) {
        delays();
        return 0;
    }
    int write = argc == 3 && !strcmp(argv[1], "write");
    if (argc != 3 || (!write && strcmp(argv[1], "check"))) {
        fputs(usage, stderr);
        return 2;
    }
    const char *path = argv[2];
    sdfed_buffer js = {0};
    sdfed_error err;
    int same = 0;
    if (windows_js(&js)) {
        fprintf(stderr, "sdfed-backoff: out of memory\n");
        return 2;
    }
    int rc = native_generated_file(path, (const char *)js.data, write, &same, &err);
    sdfed_buffer_free(&js);
    if (rc) {
        fprintf(stderr, "sdfed-backoff: %s\n", err.message);
        return 2;
    }
    if (write || same) return 0;
    fprintf(stderr, "sdfed-backoff: %s is not shared/fed/backoff.c's schedule; run `build/sdfed-backoff write %s`\n",
            path, path);
    return 1;
}
