/* Structured logging for native servers: one JSON object per line on
 * stderr, {"ts": <unix seconds with milliseconds>, "event": NAME, fields},
 * written whole and flushed, so that a log can be read line by line while
 * it grows (the tests do). */
#ifndef SDFED_NATIVE_LOG_H
#define SDFED_NATIVE_LOG_H

/* fields: JSON members without braces ("a": 1, "b": "x"), or "" */
void native_log(const char *event, const char *fields);
/* The same with the fields formatted printf-style. */
void native_logf(const char *event, const char *fields_format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* fields (or "") and then "message": MESSAGE, escaped as a JSON string
 * (a message may hold quotes, paths, anything). */
void native_log_message(const char *event, const char *fields, const char *message);

#endif
