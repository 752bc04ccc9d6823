// The sdfed.v1 protocol's error codes (docs/protocol.md), written from their
// one table, shared/fed/errors.c, by `build/sdfed-errors write web/errors.js
// docs/protocol.md`; the ctest error_codes fails when this file differs.

// name (on the wire), number and meaning of each, in number order
export const ERROR_CODES = Object.freeze([
  Object.freeze({ name: 'bad_json', number: 0, meaning: 'a text frame that is not JSON (`NaN` and `Infinity` are not JSON)' }),
  Object.freeze({ name: 'bad_message', number: 1, meaning: 'a JSON message with missing or ill-typed fields, or out of order' }),
  Object.freeze({ name: 'unknown_type', number: 2, meaning: 'a `type` the server does not know' }),
  Object.freeze({ name: 'bad_protocol', number: 3, meaning: '`hello` for another protocol version' }),
  Object.freeze({ name: 'bad_join_key', number: 4, meaning: 'the join key is missing or wrong' }),
  Object.freeze({ name: 'bad_token', number: 5, meaning: 'a rejoin token the server never issued' }),
  Object.freeze({ name: 'bad_frame', number: 6, meaning: 'a binary frame whose header or size is wrong' }),
  Object.freeze({ name: 'bad_crc', number: 7, meaning: 'a binary frame whose CRC-32 does not match' }),
  Object.freeze({ name: 'bad_shape', number: 8, meaning: 'an update whose shape is not the global parameters\'' }),
  Object.freeze({ name: 'not_finite', number: 9, meaning: 'NaN or Inf in an update, or a JSON value beyond float range (`1e39`, `1e999`)' }),
  Object.freeze({ name: 'norm_too_large', number: 10, meaning: 'an update whose change exceeds the server\'s norm bound' }),
  Object.freeze({ name: 'bad_samples', number: 11, meaning: 'a sample count of 0 or above the server\'s bound' }),
  Object.freeze({ name: 'wrong_round', number: 12, meaning: 'an update for a round that is not open (late or stale)' }),
  Object.freeze({ name: 'not_in_round', number: 13, meaning: 'an update from a client not sampled for the round, or metrics for a round without the client\'s accepted update' }),
  Object.freeze({ name: 'duplicate_update', number: 14, meaning: 'a second update for the same round' }),
  Object.freeze({ name: 'too_large', number: 15, meaning: 'a message above the size limit' }),
  Object.freeze({ name: 'rate_limited', number: 16, meaning: 'more messages than the rate limit allows in its window' }),
  Object.freeze({ name: 'server_error', number: 17, meaning: 'the server could not store the update; resend it' }),
  Object.freeze({ name: 'too_many_refusals', number: 18, meaning: 'the last message on a connection refused too often; it closes (1008)' }),
  Object.freeze({ name: 'secagg_off', number: 19, meaning: 'a secure-aggregation frame or message while the task\'s rounds are not secure' }),
  Object.freeze({ name: 'secagg_wrong_stage', number: 20, meaning: 'a secure round\'s message for another stage than the round\'s (or no secure round is open)' }),
  Object.freeze({ name: 'secagg_not_in_round', number: 21, meaning: 'a secure round\'s message from a client not sampled for it, or one that left it' }),
  Object.freeze({ name: 'secagg_repeated', number: 22, meaning: 'a client\'s second message in one stage, or an entry named twice' }),
  Object.freeze({ name: 'secagg_missed_stage', number: 23, meaning: 'a secure round\'s message from a client that did not complete the stage before' }),
  Object.freeze({ name: 'secagg_bad_keys', number: 24, meaning: 'an `advertise` whose public keys are malformed, all zeros, or already advertised in the round' }),
  Object.freeze({ name: 'secagg_bad_shares', number: 25, meaning: 'a `shares` message that is malformed or misses a neighbour' }),
  Object.freeze({ name: 'secagg_not_neighbour', number: 26, meaning: 'shares or unmasking answers for a client that is not a neighbour (or a request naming one, refused by a client)' }),
  Object.freeze({ name: 'secagg_bad_masked', number: 27, meaning: 'a masked input of the wrong length, or bits set past its last value' }),
  Object.freeze({ name: 'secagg_bad_unmask', number: 28, meaning: 'an `unmask` answer that is malformed, misses shares or holds a share that is no field element' }),
  Object.freeze({ name: 'secagg_inconsistent', number: 29, meaning: 'unmasking answers for other clients or secrets than asked; a request that disagrees with what the client masked with (refused by the client)' }),
  Object.freeze({ name: 'secagg_both_sets', number: 30, meaning: 'an unmasking request naming a client both alive and dropped (refused by the client)' }),
  Object.freeze({ name: 'secagg_self_not_alive', number: 31, meaning: 'an unmasking request that does not name its own client alive (refused by the client)' }),
  Object.freeze({ name: 'secagg_too_few', number: 32, meaning: 'an unmasking request for fewer inputs than the round accepts (refused by the client)' }),
  Object.freeze({ name: 'secagg_auth_failed', number: 33, meaning: 'a relayed share pair that fails authentication (AES-GCM), reported by its recipient' }),
  Object.freeze({ name: 'secagg_bad_request', number: 34, meaning: 'a server\'s request a client could not read or that disagrees with the round\'s plan (reported by the client)' }),
]);

// each code's name, to compare an error message's `code` with
export const BAD_JSON = 'bad_json';
export const BAD_MESSAGE = 'bad_message';
export const UNKNOWN_TYPE = 'unknown_type';
export const BAD_PROTOCOL = 'bad_protocol';
export const BAD_JOIN_KEY = 'bad_join_key';
export const BAD_TOKEN = 'bad_token';
export const BAD_FRAME = 'bad_frame';
export const BAD_CRC = 'bad_crc';
export const BAD_SHAPE = 'bad_shape';
export const NOT_FINITE = 'not_finite';
export const NORM_TOO_LARGE = 'norm_too_large';
export const BAD_SAMPLES = 'bad_samples';
export const WRONG_ROUND = 'wrong_round';
export const NOT_IN_ROUND = 'not_in_round';
export const DUPLICATE_UPDATE = 'duplicate_update';
export const TOO_LARGE = 'too_large';
export const RATE_LIMITED = 'rate_limited';
export const SERVER_ERROR = 'server_error';
export const TOO_MANY_REFUSALS = 'too_many_refusals';
export const SECAGG_OFF = 'secagg_off';
export const SECAGG_WRONG_STAGE = 'secagg_wrong_stage';
export const SECAGG_NOT_IN_ROUND = 'secagg_not_in_round';
export const SECAGG_REPEATED = 'secagg_repeated';
export const SECAGG_MISSED_STAGE = 'secagg_missed_stage';
export const SECAGG_BAD_KEYS = 'secagg_bad_keys';
export const SECAGG_BAD_SHARES = 'secagg_bad_shares';
export const SECAGG_NOT_NEIGHBOUR = 'secagg_not_neighbour';
export const SECAGG_BAD_MASKED = 'secagg_bad_masked';
export const SECAGG_BAD_UNMASK = 'secagg_bad_unmask';
export const SECAGG_INCONSISTENT = 'secagg_inconsistent';
export const SECAGG_BOTH_SETS = 'secagg_both_sets';
export const SECAGG_SELF_NOT_ALIVE = 'secagg_self_not_alive';
export const SECAGG_TOO_FEW = 'secagg_too_few';
export const SECAGG_AUTH_FAILED = 'secagg_auth_failed';
export const SECAGG_BAD_REQUEST = 'secagg_bad_request';
