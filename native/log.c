/* Structured log lines (see log.h). */
#include "native/log.h"

#include <stdarg.h>
#include <stdio.h>

#include "fed/protocol.h"
#include "native/clock.h"

void native_log(const char *event, const char *fields) {
    int64_t ms = native_clock_ms(native_clock_wall_ns());
    fprintf(stderr, "{\"ts\": %lld.%03d, \"event\": \"%s\"%s%s}\n", (long long)(ms / 1000), (int)(ms % 1000), event,
            fields && fields[0] ? ", " : "", fields ? fields : "");
    fflush(stderr);
}

void native_logf(const char *event, const char *fields_format, ...) {
    char fields[2048];
    va_list ap;
    va_start(ap, fields_format);
    vsnprintf(fields, sizeof fields, fields_format, ap);
    va_end(ap);
    native_log(event, fields);
}

void native_log_message(const char *event, const char *fields, const char *message) {
    sdfed_buffer b = {0};
    sdfed_json_writer w;
    sdfed_jw_begin(&w, &b, NULL);
    sdfed_jw_string(&w, "message", message);
    if (sdfed_jw_end(&w, NULL) != SDFED_OK) { /* out of memory: the event without its message */
        native_log(event, fields);
        return;
    }
    b.data[b.size - 1] = '\0'; /* the member without the object's braces */
    native_logf(event, "%s%s%s", fields, fields[0] ? ", " : "", (const char *)b.data + 1);
    sdfed_buffer_free(&b);
}
