/* Structured log lines (see log.h). */
#include "native/log.h"

#include <stdint.h>
#include <stdio.h>

#include "native/clock.h"

void native_log_open(native_log_line *line, const char *event) {
    int64_t ms = native_clock_ms(native_clock_wall_ns());
    *line = (native_log_line){.event = event};
    sdfed_jw_begin(&line->w, &line->text, NULL);
    sdfed_jw_fixed(&line->w, "ts", (double)ms / 1000, 3);
    sdfed_jw_string(&line->w, "event", event);
}

void native_log_close(native_log_line *line) {
    if (sdfed_jw_end(&line->w, NULL) == SDFED_OK)
        fprintf(stderr, "%.*s\n", (int)line->text.size, (const char *)line->text.data);
    else
        fprintf(stderr, "{\"event\": \"%s\"}\n", line->event);
    fflush(stderr);
    sdfed_buffer_free(&line->text);
}

void native_log(const char *event) {
    native_log_line line;
    native_log_open(&line, event);
    native_log_close(&line);
}
