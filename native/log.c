/* Structured log lines (see log.h). */
#include "native/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/json_writer.h"
#include "native/clock.h"

/* One line: the time, the event, the fields and, when there is one, the
 * message; without memory, the event's name alone as the line. */
static void log_line(const char *event, const char *fields, const char *message) {
    int64_t ms = native_clock_ms(native_clock_wall_ns());
    sdfed_buffer b = {0};
    sdfed_json_writer w;
    sdfed_jw_begin(&w, &b, NULL);
    sdfed_jw_fixed(&w, "ts", (double)ms / 1000, 3);
    sdfed_jw_string(&w, "event", event);
    if (fields) sdfed_jw_raw(&w, NULL, fields, strlen(fields));
    if (message) sdfed_jw_string(&w, "message", message);
    if (sdfed_jw_end(&w, NULL) == SDFED_OK)
        fprintf(stderr, "%.*s\n", (int)b.size, (const char *)b.data);
    else
        fprintf(stderr, "{\"event\": \"%s\"}\n", event);
    fflush(stderr);
    sdfed_buffer_free(&b);
}

void native_log(const char *event, const char *fields) { log_line(event, fields, NULL); }

void native_logf(const char *event, const char *fields_format, ...) {
    char fields[2048];
    va_list ap;
    va_start(ap, fields_format);
    vsnprintf(fields, sizeof fields, fields_format, ap);
    va_end(ap);
    log_line(event, fields, NULL);
}

void native_log_message(const char *event, const char *fields, const char *message) {
    log_line(event, fields, message);
}
