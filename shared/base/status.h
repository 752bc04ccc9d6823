/* Status codes and error messages shared by every module of the core.
 *
 * Every public function returns one of the codes below; when it fails it also
 * writes a human-readable message into the caller's sdfed_error (which may be
 * NULL when the caller only wants the code). The pattern is SQLite's: branch
 * on the code, show the text. */
#ifndef SDFED_STATUS_H
#define SDFED_STATUS_H

enum {
    SDFED_OK = 0,
    SDFED_ERR_ARG,         /* a caller passed an invalid argument */
    SDFED_ERR_FORMAT,      /* malformed input data (file, message, tensor) */
    SDFED_ERR_UNSUPPORTED, /* well-formed but not something this build handles */
    SDFED_ERR_NOMEM,       /* an allocation failed */
    SDFED_ERR_IO,          /* the I/O interface reported a failure */
    SDFED_ERR_NOT_FOUND,   /* a named key, tensor or entry does not exist */
    SDFED_ERR_NUMERIC,     /* NaN/Inf in inputs or results */
};

#define SDFED_ERROR_MESSAGE_MAX 512

typedef struct sdfed_error {
    int code;
    char message[SDFED_ERROR_MESSAGE_MAX];
} sdfed_error;

/* Records code and a printf-style message in err (if not NULL); returns code
 * so that call sites read `return sdfed_fail(err, SDFED_ERR_FORMAT, "...")`. */
int sdfed_fail(sdfed_error *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Prefixes the message already in err with more context ("loading x: ...")
 * and returns code, the status being passed up. */
int sdfed_fail_context(sdfed_error *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

const char *sdfed_status_name(int code);

#endif
