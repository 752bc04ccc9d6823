/* The sdfed.v1 wire protocol (docs/protocol.md): binary tensor frames with a
 * CRC-32, and the JSON control messages, parsed into one struct (written by
 * base/json_writer.h). Every decoder validates what it reads and names the
 * protocol error code to send back (fed/errors.h). */
#ifndef SDFED_PROTOCOL_H
#define SDFED_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#include "base/io.h"
#include "base/status.h"
#include "fed/local_prompt.h"
#include "fed/errors.h"

#define SDFED_PROTOCOL "sdfed.v1"
#define SDFED_WEBSOCKET_PATH "/ws" /* the one path the protocol's WebSocket upgrades at */
#define SDFED_FRAME_MAGIC "SDFT"
#define SDFED_FRAME_VERSION 1
#define SDFED_FRAME_MAX_DIMS 4

enum { SDFED_FRAME_GLOBAL = 1, SDFED_FRAME_UPDATE = 2 };

uint32_t sdfed_crc32(uint32_t crc, const void *data, size_t n);

/* A decoded frame; data points into the caller's buffer (unaligned: read it
 * with sdfed_frame_values). */
typedef struct sdfed_frame {
    int kind;
    uint32_t round, samples;
    int n_dims;
    uint32_t shape[SDFED_FRAME_MAX_DIMS];
    size_t n_values;
    const unsigned char *data;
} sdfed_frame;

/* Bytes of a frame with this shape. */
size_t sdfed_frame_size(int n_dims, const uint32_t *shape);
int sdfed_frame_encode(int kind, uint32_t round, uint32_t samples, int n_dims, const uint32_t *shape,
                       const float *values, sdfed_buffer *out, sdfed_error *err);
/* Checks magic, version, kind, dtype, dims, size (at most max_values
 * values), CRC and finiteness. *code receives the protocol error code. */
int sdfed_frame_decode(const void *buf, size_t len, size_t max_values, sdfed_frame *f, sdfed_code *code,
                       sdfed_error *err);
void sdfed_frame_values(const sdfed_frame *f, float *out);

/* Secure aggregation's frames (docs/protocol.md, "Secure rounds"): magic
 * SDFS, version 1, then one message of fed/secagg_message.h exactly as it
 * writes it (its kind, round and body), then the CRC-32 of every byte
 * before it (little-endian, as a tensor frame's). */
#define SDFED_SECURE_MAGIC "SDFS"
#define SDFED_SECURE_VERSION 1
#define SDFED_SECURE_OVERHEAD 9 /* magic, version, CRC-32 */

/* Whether a binary message claims to be a secure frame (its magic). */
int sdfed_secure_frame_is(const void *buf, size_t len);
/* out = the frame carrying msg (len bytes, a whole secagg message). */
int sdfed_secure_frame_encode(const unsigned char *msg, size_t len, sdfed_buffer *out, sdfed_error *err);
/* *msg, *msg_len = the message inside (a view into buf) after checking
 * magic, version, size (a secagg header at least, a known kind) and CRC
 * (bad_frame, bad_crc in *code). */
int sdfed_secure_frame_decode(const void *buf, size_t len, const unsigned char **msg, size_t *msg_len, sdfed_code *code,
                              sdfed_error *err);

/* JSON messages, both directions. */
enum {
    SDFED_MSG_HELLO,
    SDFED_MSG_UPDATE,
    SDFED_MSG_METRICS,
    SDFED_MSG_HEARTBEAT,
    SDFED_MSG_LEAVE,
    SDFED_MSG_WELCOME,
    SDFED_MSG_ROUND_START,
    SDFED_MSG_ACK,
    SDFED_MSG_ROUND_END,
    SDFED_MSG_WAIT,
    SDFED_MSG_DONE,
    SDFED_MSG_ERROR,
    SDFED_MSG_SECAGG_ACK,     /* server: a secure round's stage message stored (round, stage) */
    SDFED_MSG_SECAGG_REFUSAL, /* client: it refuses the server's request of a secure round (round, code, message) */
    SDFED_MSG_COUNT
};

#define SDFED_MSG_TEXT 128
/* a metrics message's loss: every method's training loss is a sum of
 * non-negative terms; past this it is no loss a client computed */
#define SDFED_METRICS_MAX_LOSS 1e6
/* a metrics message's step time (step_ms): past an hour a step is no
 * device's measurement */
#define SDFED_METRICS_MAX_STEP_MS 3.6e6
enum { SDFED_METRICS_MAX_THREADS = 1024 };

typedef struct sdfed_message {
    int type;
    /* hello */
    char token[SDFED_MSG_TEXT], join_key[SDFED_MSG_TEXT], kind[32];
    /* join_key as sent: its bytes in join_key, a NUL among them kept; -1
     * when hello has none, SDFED_MSG_TEXT when it is longer than join_key
     * holds (then empty: no key is that long, it is a wrong one) */
    int join_key_len;
    int binary; /* encoding: 1 binary (default), 0 json */
    int shard;  /* -1: none */
    /* update, round_start, ack, round_end, wait, metrics, error */
    int64_t round, next_round;
    int64_t samples, participants, client_id, rounds, deadline_ms;
    int64_t retry_after_ms; /* error, wait: the server's floor before trying again (0: none) */
    int n_dims;
    uint32_t shape[SDFED_FRAME_MAX_DIMS];
    float *values; /* update / round_start in JSON: heap (caller frees), n_values */
    size_t n_values;
    double accuracy, loss;
    int64_t test_samples;
    /* metrics: the device (n_step_ms 0: none sent), its ms a step at each
     * of the task's local prompt lengths, its threads and kernels */
    int n_step_ms;
    double step_ms[SDFED_LOCAL_PROMPT_MAX_LENGTHS];
    int64_t threads;
    char kernels[32];
    char code[48], message[SDFED_MSG_TEXT * 2], reason[48], mode[16], global_sha256[65];
    /* welcome: the task object's JSON text (heap, caller frees; the
     * task-file format) and the model's url, hash and size */
    char *task_json;
    char model_url[SDFED_MSG_TEXT], model_sha256[65];
    int64_t model_size;
    /* round_start of a secure round: the client's place and the plan's
     * settings (secure 0 for a plain round); secagg_ack: the stage */
    int secure;
    int place, secure_n, secure_k, secure_t, secure_min_inputs;
    char stage[16];
} sdfed_message;

/* Who sent a message. */
enum { SDFED_SENT_BY_CLIENT = 1, SDFED_SENT_BY_SERVER = 2 };

/* Parses one JSON message from sender (SDFED_SENT_BY_*): a type the other
 * side sends is refused (bad_message) before its fields are read;
 * max_values bounds inline tensors. *code receives the protocol error
 * code on failure. */
int sdfed_message_parse(const char *text, size_t len, int sender, size_t max_values, sdfed_message *m, sdfed_code *code,
                        sdfed_error *err);
void sdfed_message_free(sdfed_message *m);
const char *sdfed_message_type_name(int type);

#endif
