/* The table of the protocol's error codes (see errors.h). */
#include "fed/errors.h"

#include <assert.h>
#include <string.h>

const sdfed_code_info sdfed_codes[] = {
    [SDFED_CODE_BAD_JSON] = {.name = "bad_json",
                             .meaning = "a text frame that is not JSON (`NaN` and `Infinity` are not JSON)"},
    [SDFED_CODE_BAD_MESSAGE] = {.name = "bad_message",
                                .meaning = "a JSON message with missing or ill-typed fields, or out of order"},
    [SDFED_CODE_UNKNOWN_TYPE] = {.name = "unknown_type", .meaning = "a `type` the server does not know"},
    [SDFED_CODE_BAD_PROTOCOL] = {.name = "bad_protocol", .meaning = "`hello` for another protocol version"},
    [SDFED_CODE_BAD_JOIN_KEY] = {.name = "bad_join_key", .meaning = "the join key is missing or wrong"},
    [SDFED_CODE_BAD_TOKEN] = {.name = "bad_token", .meaning = "a rejoin token the server never issued"},
    [SDFED_CODE_BAD_FRAME] = {.name = "bad_frame", .meaning = "a binary frame whose header or size is wrong"},
    [SDFED_CODE_BAD_CRC] = {.name = "bad_crc", .meaning = "a binary frame whose CRC-32 does not match"},
    [SDFED_CODE_BAD_SHAPE] = {.name = "bad_shape", .meaning = "an update whose shape is not the global parameters'"},
    [SDFED_CODE_NOT_FINITE] = {.name = "not_finite",
                               .meaning =
                                   "NaN or Inf in an update, or a JSON value beyond float range (`1e39`, `1e999`)"},
    [SDFED_CODE_NORM_TOO_LARGE] = {.name = "norm_too_large",
                                   .meaning = "an update whose change exceeds the server's norm bound"},
    [SDFED_CODE_BAD_SAMPLES] = {.name = "bad_samples", .meaning = "a sample count of 0 or above the server's bound"},
    [SDFED_CODE_WRONG_ROUND] = {.name = "wrong_round",
                                .meaning = "an update for a round that is not open (late or stale)"},
    [SDFED_CODE_NOT_IN_ROUND] = {.name = "not_in_round",
                                 .meaning = "an update from a client not sampled for the round, or metrics for "
                                            "a round without the client's accepted update"},
    [SDFED_CODE_DUPLICATE_UPDATE] = {.name = "duplicate_update", .meaning = "a second update for the same round"},
    [SDFED_CODE_TOO_LARGE] = {.name = "too_large", .meaning = "a message above the size limit"},
    [SDFED_CODE_RATE_LIMITED] = {.name = "rate_limited",
                                 .meaning = "more messages than the rate limit allows in its window"},
    [SDFED_CODE_SERVER_ERROR] = {.name = "server_error", .meaning = "the server could not store the update; resend it"},
    [SDFED_CODE_TOO_MANY_REFUSALS] = {.name = "too_many_refusals",
                                      .meaning =
                                          "the last message on a connection refused too often; it closes (1008)"},
    [SDFED_CODE_SECAGG_OFF] = {.name = "secagg_off",
                               .meaning = "a secure-aggregation frame or message while the task's rounds are not "
                                          "secure"},
    [SDFED_CODE_SECAGG_WRONG_STAGE] = {.name = "secagg_wrong_stage",
                                       .meaning = "a secure round's message for another stage than the round's (or "
                                                  "no secure round is open)"},
    [SDFED_CODE_SECAGG_NOT_IN_ROUND] = {.name = "secagg_not_in_round",
                                        .meaning = "a secure round's message from a client not sampled for it, or "
                                                   "one that left it"},
    [SDFED_CODE_SECAGG_REPEATED] = {.name = "secagg_repeated",
                                    .meaning = "a client's second message in one stage, or an entry named twice"},
    [SDFED_CODE_SECAGG_MISSED_STAGE] = {.name = "secagg_missed_stage",
                                        .meaning = "a secure round's message from a client that did not complete "
                                                   "the stage before"},
    [SDFED_CODE_SECAGG_BAD_KEYS] = {.name = "secagg_bad_keys",
                                    .meaning = "an `advertise` whose public keys are malformed, all zeros, or "
                                               "already advertised in the round"},
    [SDFED_CODE_SECAGG_BAD_SHARES] = {.name = "secagg_bad_shares",
                                      .meaning = "a `shares` message that is malformed or misses a neighbour"},
    [SDFED_CODE_SECAGG_NOT_NEIGHBOUR] = {.name = "secagg_not_neighbour",
                                         .meaning = "shares or unmasking answers for a client that is not a "
                                                    "neighbour (or a request naming one, refused by a client)"},
    [SDFED_CODE_SECAGG_BAD_MASKED] = {.name = "secagg_bad_masked",
                                      .meaning = "a masked input of the wrong length, or bits set past its last value"},
    [SDFED_CODE_SECAGG_BAD_UNMASK] = {.name = "secagg_bad_unmask",
                                      .meaning = "an `unmask` answer that is malformed, misses shares or holds a "
                                                 "share that is no field element"},
    [SDFED_CODE_SECAGG_INCONSISTENT] = {.name = "secagg_inconsistent",
                                        .meaning = "unmasking answers for other clients or secrets than asked; a "
                                                   "request that disagrees with what the client masked with "
                                                   "(refused by the client)"},
    [SDFED_CODE_SECAGG_BOTH_SETS] = {.name = "secagg_both_sets",
                                     .meaning = "an unmasking request naming a client both alive and dropped "
                                                "(refused by the client)"},
    [SDFED_CODE_SECAGG_SELF_NOT_ALIVE] = {.name = "secagg_self_not_alive",
                                          .meaning = "an unmasking request that does not name its own client alive "
                                                     "(refused by the client)"},
    [SDFED_CODE_SECAGG_TOO_FEW] = {.name = "secagg_too_few",
                                   .meaning = "an unmasking request for fewer inputs than the round accepts "
                                              "(refused by the client)"},
    [SDFED_CODE_SECAGG_AUTH_FAILED] = {.name = "secagg_auth_failed",
                                       .meaning = "a relayed share pair that fails authentication (AES-GCM), "
                                                  "reported by its recipient"},
    [SDFED_CODE_SECAGG_BAD_REQUEST] = {.name = "secagg_bad_request",
                                       .meaning = "a server's request a client could not read or that disagrees "
                                                  "with the round's plan (reported by the client)"},
};
static_assert(sizeof sdfed_codes / sizeof sdfed_codes[0] == SDFED_CODE_COUNT, "one entry per sdfed_code");

const char *sdfed_code_name(int code) { return code >= 0 && code < SDFED_CODE_COUNT ? sdfed_codes[code].name : NULL; }

sdfed_code sdfed_code_from_name(const char *name) {
    for (int c = 0; c < SDFED_CODE_COUNT; c++)
        if (name && strcmp(name, sdfed_codes[c].name) == 0) return (sdfed_code)c;
    return SDFED_CODE_NONE;
}
