/* Error reporting: status codes with a message kept on the caller's handle. */
#include "base/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int sdfed_fail(sdfed_error *err, int code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

int sdfed_fail_context(sdfed_error *err, int code, const char *fmt, ...) {
    if (!err) return code;
    char old[SDFED_ERROR_MESSAGE_MAX];
    memcpy(old, err->message, sizeof old);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    size_t used = 0; /* what vsnprintf wrote, at most what the message holds */
    if (n > 0) used = (size_t)n < sizeof err->message ? (size_t)n : sizeof err->message - 1;
    /* append ": old", truncated to what is left */
    size_t left = sizeof err->message - 1 - used;
    const char *sep = ": ";
    for (size_t i = 0; i < 2 && left > 0; i++, left--) err->message[used++] = sep[i];
    size_t old_len = strnlen(old, sizeof old - 1);
    if (old_len > left) old_len = left;
    memcpy(err->message + used, old, old_len);
    err->message[used + old_len] = '\0';
    err->code = code;
    return code;
}

const char *sdfed_status_name(int code) {
    switch (code) {
    case SDFED_OK: return "ok";
    case SDFED_ERR_ARG: return "invalid argument";
    case SDFED_ERR_FORMAT: return "malformed data";
    case SDFED_ERR_UNSUPPORTED: return "unsupported";
    case SDFED_ERR_NOMEM: return "out of memory";
    case SDFED_ERR_IO: return "i/o error";
    case SDFED_ERR_NOT_FOUND: return "not found";
    case SDFED_ERR_NUMERIC: return "non-finite number";
    }
    return "unknown error";
}
