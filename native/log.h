/* Structured logging for native servers: one JSON object per line on
 * stderr, {"ts": <unix seconds with milliseconds>, "event": NAME, fields},
 * written whole and flushed, so that a log can be read line by line while
 * it grows (the tests do). The fields are written with the one JSON writer
 * (base/json_writer.h), which escapes any text they hold:
 *     native_log_line line;
 *     native_log_open(&line, "round_end");
 *     sdfed_jw_int(&line.w, "round", round);
 *     sdfed_jw_string(&line.w, "rule", rule);
 *     native_log_close(&line); */
#ifndef SDFED_NATIVE_LOG_H
#define SDFED_NATIVE_LOG_H

#include "base/io.h"
#include "base/json_writer.h"

typedef struct native_log_line {
    sdfed_buffer text;
    sdfed_json_writer w; /* the line's object, its "ts" and "event" written */
    const char *event;
} native_log_line;

/* Starts a line at the time now for EVENT; its fields follow through line->w. */
void native_log_open(native_log_line *line, const char *event);
/* Writes the line whole on stderr, flushed, and frees it; when memory ran
 * out, the event's name alone as the line. */
void native_log_close(native_log_line *line);
/* A line of EVENT alone, without fields. */
void native_log(const char *event);

#endif
