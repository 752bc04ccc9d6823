/* The sdfed.v1 protocol's error codes: one table (name, number, meaning)
 * from which the C enum's names, the aggregator's refusal counters, the
 * page's web/errors.js and the list in docs/protocol.md all come (the last
 * two are written by tools/errors and checked by the ctest error_codes).
 * The wire carries the name; the number is the enum's value, stable, for
 * arrays indexed by code. */
#ifndef SDFED_ERRORS_H
#define SDFED_ERRORS_H

typedef enum sdfed_code {
    SDFED_CODE_NONE = -1, /* no refusal: accepted */
    SDFED_CODE_BAD_JSON,
    SDFED_CODE_BAD_MESSAGE,
    SDFED_CODE_UNKNOWN_TYPE,
    SDFED_CODE_BAD_PROTOCOL,
    SDFED_CODE_BAD_JOIN_KEY,
    SDFED_CODE_BAD_TOKEN,
    SDFED_CODE_BAD_FRAME,
    SDFED_CODE_BAD_CRC,
    SDFED_CODE_BAD_SHAPE,
    SDFED_CODE_NOT_FINITE,
    SDFED_CODE_NORM_TOO_LARGE,
    SDFED_CODE_BAD_SAMPLES,
    SDFED_CODE_WRONG_ROUND,
    SDFED_CODE_NOT_IN_ROUND,
    SDFED_CODE_DUPLICATE_UPDATE,
    SDFED_CODE_TOO_LARGE,
    SDFED_CODE_RATE_LIMITED,
    SDFED_CODE_SERVER_ERROR,
    SDFED_CODE_TOO_MANY_REFUSALS,
    SDFED_CODE_SECAGG_OFF,
    SDFED_CODE_SECAGG_WRONG_STAGE,
    SDFED_CODE_SECAGG_NOT_IN_ROUND,
    SDFED_CODE_SECAGG_REPEATED,
    SDFED_CODE_SECAGG_MISSED_STAGE,
    SDFED_CODE_SECAGG_BAD_KEYS,
    SDFED_CODE_SECAGG_BAD_SHARES,
    SDFED_CODE_SECAGG_NOT_NEIGHBOUR,
    SDFED_CODE_SECAGG_BAD_MASKED,
    SDFED_CODE_SECAGG_BAD_UNMASK,
    SDFED_CODE_SECAGG_INCONSISTENT,
    SDFED_CODE_SECAGG_BOTH_SETS,
    SDFED_CODE_SECAGG_SELF_NOT_ALIVE,
    SDFED_CODE_SECAGG_TOO_FEW,
    SDFED_CODE_SECAGG_AUTH_FAILED,
    SDFED_CODE_SECAGG_BAD_REQUEST,
    SDFED_CODE_COUNT
} sdfed_code;

typedef struct sdfed_code_info {
    const char *name;    /* on the wire: the error message's "code" */
    const char *meaning; /* one line, for docs/protocol.md */
} sdfed_code_info;

/* Indexed by sdfed_code, SDFED_CODE_COUNT entries. */
extern const sdfed_code_info sdfed_codes[SDFED_CODE_COUNT];

/* The wire name of a code; NULL outside 0..SDFED_CODE_COUNT-1. */
const char *sdfed_code_name(int code);
/* The code with this wire name, SDFED_CODE_NONE for none. */
sdfed_code sdfed_code_from_name(const char *name);

#endif
