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
