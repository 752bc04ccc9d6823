/* sdfed.v1: frames, CRC-32, message parsing and building. */
#include "fed/protocol.h"

#include <assert.h>
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/names.h"
#include "fed/secagg_message.h"

/* CRC-32 (reflected polynomial 0xEDB88320), eight bytes a step ("slicing
 * by 8"): crc_table[k][b] is the CRC of byte b followed by k zero bytes.
 * The tables are built on first use, by one thread while any other waits. */
static uint32_t crc_table[8][256];
static atomic_int crc_tables_state; /* 0: not built, 1: being built, 2: built */

static void crc_tables_build(void) {
    int unbuilt = 0;
    if (atomic_load_explicit(&crc_tables_state, memory_order_acquire) == 2) return;
    if (!atomic_compare_exchange_strong(&crc_tables_state, &unbuilt, 1)) {
        while (atomic_load_explicit(&crc_tables_state, memory_order_acquire) != 2) continue;
        return;
    }
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int bit = 0; bit < 8; bit++) c = c >> 1 ^ (0xedb88320u & (0u - (c & 1)));
        crc_table[0][b] = c;
    }
    for (int k = 1; k < 8; k++)
        for (int b = 0; b < 256; b++)
            crc_table[k][b] = crc_table[k - 1][b] >> 8 ^ crc_table[0][crc_table[k - 1][b] & 0xff];
    atomic_store_explicit(&crc_tables_state, 2, memory_order_release);
}

uint32_t sdfed_crc32(uint32_t crc, const void *data, size_t n) {
    const unsigned char *p = data;
    crc_tables_build();
    crc = ~crc;
    for (; n >= 8; p += 8, n -= 8) {
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        crc = crc_table[7][lo & 0xff] ^ crc_table[6][lo >> 8 & 0xff] ^ crc_table[5][lo >> 16 & 0xff] ^
              crc_table[4][lo >> 24] ^ crc_table[3][p[4]] ^ crc_table[2][p[5]] ^ crc_table[1][p[6]] ^
              crc_table[0][p[7]];
    }
    for (; n; p++, n--) crc = crc >> 8 ^ crc_table[0][(crc ^ *p) & 0xff];
    return ~crc;
}

static void put32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

size_t sdfed_frame_size(int n_dims, const uint32_t *shape) {
    size_t n = 1;
    for (int d = 0; d < n_dims; d++) n *= shape[d];
    return 16 + 4 * (size_t)n_dims + 4 * n + 4;
}

int sdfed_frame_encode(int kind, uint32_t round, uint32_t samples, int n_dims, const uint32_t *shape,
                       const float *values, sdfed_buffer *out, sdfed_error *err) {
    if ((kind != SDFED_FRAME_GLOBAL && kind != SDFED_FRAME_UPDATE) || n_dims < 1 || n_dims > SDFED_FRAME_MAX_DIMS)
        return sdfed_fail(err, SDFED_ERR_ARG, "frame: bad kind or dimensions");
    size_t size = sdfed_frame_size(n_dims, shape), n = (size - 20 - 4 * (size_t)n_dims) / 4;
    unsigned char *p = malloc(size);
    if (!p) return sdfed_fail(err, SDFED_ERR_NOMEM, "frame: out of memory");
    memcpy(p, SDFED_FRAME_MAGIC, 4);
    p[4] = SDFED_FRAME_VERSION;
    p[5] = (unsigned char)kind;
    p[6] = 0;
    p[7] = (unsigned char)n_dims;
    put32(p + 8, round);
    put32(p + 12, samples);
    for (int d = 0; d < n_dims; d++) put32(p + 16 + 4 * d, shape[d]);
    unsigned char *data = p + 16 + 4 * n_dims;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &values[i], 4);
        put32(data + 4 * i, u);
    }
    put32(p + size - 4, sdfed_crc32(0, p, size - 4));
    sdfed_sink sink = sdfed_buffer_sink(out);
    int failed = sink.write(sink.ctx, p, size);
    free(p);
    return failed ? sdfed_fail(err, SDFED_ERR_NOMEM, "frame: out of memory") : SDFED_OK;
}

/* A frame refused: *code says how (the wire's code), err says why. */
static int refuse(sdfed_code *code, sdfed_code how, sdfed_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static int refuse(sdfed_code *code, sdfed_code how, sdfed_error *err, const char *fmt, ...) {
    char why[sizeof err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    *code = how;
    return sdfed_fail(err, SDFED_ERR_FORMAT, "%s", why);
}

int sdfed_frame_decode(const void *buf, size_t len, size_t max_values, sdfed_frame *f, sdfed_code *code,
                       sdfed_error *err) {
    const unsigned char *p = buf;
    memset(f, 0, sizeof *f);
    if (len < 20 || memcmp(p, SDFED_FRAME_MAGIC, 4) != 0)
        return refuse(code, SDFED_CODE_BAD_FRAME, err, "frame: not an sdfed frame");
    if (p[4] != SDFED_FRAME_VERSION)
        return refuse(code, SDFED_CODE_BAD_FRAME, err, "frame: version %d (expected %d)", p[4], SDFED_FRAME_VERSION);
    if (p[5] != SDFED_FRAME_GLOBAL && p[5] != SDFED_FRAME_UPDATE)
        return refuse(code, SDFED_CODE_BAD_FRAME, err, "frame: unknown kind %d", p[5]);
    if (p[6] != 0) return refuse(code, SDFED_CODE_BAD_FRAME, err, "frame: dtype %d is not f32", p[6]);
    if (p[7] < 1 || p[7] > SDFED_FRAME_MAX_DIMS)
        return refuse(code, SDFED_CODE_BAD_FRAME, err, "frame: %d dimensions", p[7]);
    f->kind = p[5];
    f->n_dims = p[7];
    f->round = get32(p + 8);
    f->samples = get32(p + 12);
    if (len < 20 + 4 * (size_t)f->n_dims) return refuse(code, SDFED_CODE_BAD_FRAME, err, "frame: truncated header");
    size_t n = 1;
    for (int d = 0; d < f->n_dims; d++) {
        f->shape[d] = get32(p + 16 + 4 * d);
        if (f->shape[d] == 0 || n > max_values / f->shape[d])
            return refuse(code, f->shape[d] ? SDFED_CODE_TOO_LARGE : SDFED_CODE_BAD_FRAME, err,
                          "frame: shape holds more than %zu values or a zero", max_values);
        n *= f->shape[d];
    }
    if (len != sdfed_frame_size(f->n_dims, f->shape))
        return refuse(code, SDFED_CODE_BAD_FRAME, err, "frame: %zu bytes, its header says %zu", len,
                      sdfed_frame_size(f->n_dims, f->shape));
    if (get32(p + len - 4) != sdfed_crc32(0, p, len - 4))
        return refuse(code, SDFED_CODE_BAD_CRC, err, "frame: CRC-32 mismatch");
    f->n_values = n;
    f->data = p + 16 + 4 * f->n_dims;
    for (size_t i = 0; i < n; i++) {
        uint32_t u = get32(f->data + 4 * i);
        if ((u & 0x7f800000u) == 0x7f800000u)
            return refuse(code, SDFED_CODE_NOT_FINITE, err, "frame: value %zu is NaN or Inf", i);
    }
    return SDFED_OK;
}

void sdfed_frame_values(const sdfed_frame *f, float *out) {
    for (size_t i = 0; i < f->n_values; i++) {
        uint32_t u = get32(f->data + 4 * i);
        memcpy(&out[i], &u, 4);
    }
}

/* ------------------------------------------------------- secure frames */

int sdfed_secure_frame_is(const void *buf, size_t len) { return len >= 4 && memcmp(buf, SDFED_SECURE_MAGIC, 4) == 0; }

int sdfed_secure_frame_encode(const unsigned char *msg, size_t len, sdfed_buffer *out, sdfed_error *err) {
    const size_t size = len + SDFED_SECURE_OVERHEAD;
    unsigned char *p = malloc(size);
    if (!p) return sdfed_fail(err, SDFED_ERR_NOMEM, "secure frame: out of memory");
    memcpy(p, SDFED_SECURE_MAGIC, 4);
    p[4] = SDFED_SECURE_VERSION;
    memcpy(p + 5, msg, len);
    put32(p + size - 4, sdfed_crc32(0, p, size - 4));
    out->size = 0;
    sdfed_sink sink = sdfed_buffer_sink(out);
    int failed = sink.write(sink.ctx, p, size);
    free(p);
    return failed ? sdfed_fail(err, SDFED_ERR_NOMEM, "secure frame: out of memory") : SDFED_OK;
}

int sdfed_secure_frame_decode(const void *buf, size_t len, const unsigned char **msg, size_t *msg_len, sdfed_code *code,
                              sdfed_error *err) {
    const unsigned char *p = buf;
    *msg = NULL;
    *msg_len = 0;
    if (!sdfed_secure_frame_is(buf, len))
        return refuse(code, SDFED_CODE_BAD_FRAME, err, "secure frame: not an SDFS frame");
    if (len < SDFED_SECURE_OVERHEAD + SDFED_SECAGG_MSG_HEADER)
        return refuse(code, SDFED_CODE_BAD_FRAME, err, "secure frame: %zu bytes, shorter than a header", len);
    if (p[4] != SDFED_SECURE_VERSION)
        return refuse(code, SDFED_CODE_BAD_FRAME, err, "secure frame: version %d (expected %d)", p[4],
                      SDFED_SECURE_VERSION);
    if (get32(p + len - 4) != sdfed_crc32(0, p, len - 4))
        return refuse(code, SDFED_CODE_BAD_CRC, err, "secure frame: CRC-32 mismatch");
    if (!sdfed_secagg_msg_name(p[5]))
        return refuse(code, SDFED_CODE_BAD_FRAME, err, "secure frame: unknown message kind %d", p[5]);
    *msg = p + 5;
    *msg_len = len - SDFED_SECURE_OVERHEAD;
    return SDFED_OK;
}

/* ------------------------------------------------------------- messages */

static const sdfed_name type_names[] = {
    [SDFED_MSG_HELLO] = {.name = "hello", .value = SDFED_MSG_HELLO},
    [SDFED_MSG_UPDATE] = {.name = "update", .value = SDFED_MSG_UPDATE},
    [SDFED_MSG_METRICS] = {.name = "metrics", .value = SDFED_MSG_METRICS},
    [SDFED_MSG_HEARTBEAT] = {.name = "heartbeat", .value = SDFED_MSG_HEARTBEAT},
    [SDFED_MSG_LEAVE] = {.name = "leave", .value = SDFED_MSG_LEAVE},
    [SDFED_MSG_WELCOME] = {.name = "welcome", .value = SDFED_MSG_WELCOME},
    [SDFED_MSG_ROUND_START] = {.name = "round_start", .value = SDFED_MSG_ROUND_START},
    [SDFED_MSG_ACK] = {.name = "ack", .value = SDFED_MSG_ACK},
    [SDFED_MSG_ROUND_END] = {.name = "round_end", .value = SDFED_MSG_ROUND_END},
    [SDFED_MSG_WAIT] = {.name = "wait", .value = SDFED_MSG_WAIT},
    [SDFED_MSG_DONE] = {.name = "done", .value = SDFED_MSG_DONE},
    [SDFED_MSG_ERROR] = {.name = "error", .value = SDFED_MSG_ERROR},
    [SDFED_MSG_SECAGG_ACK] = {.name = "secagg_ack", .value = SDFED_MSG_SECAGG_ACK},
    [SDFED_MSG_SECAGG_REFUSAL] = {.name = "secagg_refusal", .value = SDFED_MSG_SECAGG_REFUSAL},
};
static_assert(sizeof type_names / sizeof type_names[0] == SDFED_MSG_COUNT, "a name per message type");

/* who sends each type: SDFED_SENT_BY_CLIENT, SDFED_SENT_BY_SERVER or both */
static const int type_senders[] = {
    [SDFED_MSG_HELLO] = SDFED_SENT_BY_CLIENT,
    [SDFED_MSG_UPDATE] = SDFED_SENT_BY_CLIENT,
    [SDFED_MSG_METRICS] = SDFED_SENT_BY_CLIENT,
    [SDFED_MSG_HEARTBEAT] = SDFED_SENT_BY_CLIENT | SDFED_SENT_BY_SERVER, /* asked and answered */
    [SDFED_MSG_LEAVE] = SDFED_SENT_BY_CLIENT,
    [SDFED_MSG_WELCOME] = SDFED_SENT_BY_SERVER,
    [SDFED_MSG_ROUND_START] = SDFED_SENT_BY_SERVER,
    [SDFED_MSG_ACK] = SDFED_SENT_BY_SERVER,
    [SDFED_MSG_ROUND_END] = SDFED_SENT_BY_SERVER,
    [SDFED_MSG_WAIT] = SDFED_SENT_BY_SERVER,
    [SDFED_MSG_DONE] = SDFED_SENT_BY_SERVER,
    [SDFED_MSG_ERROR] = SDFED_SENT_BY_SERVER,
    [SDFED_MSG_SECAGG_ACK] = SDFED_SENT_BY_SERVER,
    [SDFED_MSG_SECAGG_REFUSAL] = SDFED_SENT_BY_CLIENT,
};
static_assert(sizeof type_senders / sizeof type_senders[0] == SDFED_MSG_COUNT, "a sender per message type");

const char *sdfed_message_type_name(int type) { return sdfed_name_of(type_names, SDFED_MSG_COUNT, type); }

void sdfed_message_free(sdfed_message *m) {
    free(m->values);
    free(m->task_json);
    m->values = NULL;
    m->task_json = NULL;
}

typedef struct reader {
    const sdfed_json *j;
    int obj;
    sdfed_code *code;
    sdfed_error *err;
} reader;

/* Optional integer field in [lo, hi]; absent leaves *out alone. */
static int get_int(reader *r, const char *key, int64_t lo, int64_t hi, int required, int64_t *out) {
    int node = sdfed_json_get(r->j, r->obj, key);
    int64_t v;
    if (node < 0) {
        if (!required) return SDFED_OK;
        *r->code = SDFED_CODE_BAD_MESSAGE;
        return sdfed_fail(r->err, SDFED_ERR_FORMAT, "message: '%s' is missing", key);
    }
    if (sdfed_json_integer(r->j, node, &v) || v < lo || v > hi) {
        *r->code = SDFED_CODE_BAD_MESSAGE;
        return sdfed_fail(r->err, SDFED_ERR_FORMAT, "message: '%s' must be an integer in %lld..%lld", key,
                          (long long)lo, (long long)hi);
    }
    *out = v;
    return SDFED_OK;
}

static int get_real(reader *r, const char *key, double *out) {
    int node = sdfed_json_get(r->j, r->obj, key);
    if (node < 0) return SDFED_OK;
    if (sdfed_json_number(r->j, node, out) || !isfinite(*out)) {
        *r->code = SDFED_CODE_BAD_MESSAGE;
        return sdfed_fail(r->err, SDFED_ERR_FORMAT, "message: '%s' must be a finite number", key);
    }
    return SDFED_OK;
}

static int get_text(reader *r, const char *key, char *out, size_t cap) {
    int node = sdfed_json_get(r->j, r->obj, key);
    if (node < 0) return SDFED_OK;
    if (sdfed_json_string(r->j, node, out, cap) < 0) {
        *r->code = SDFED_CODE_BAD_MESSAGE;
        return sdfed_fail(r->err, SDFED_ERR_FORMAT,
                          "message: '%s' must be a string of at most %zu bytes, with no \\u0000 in it", key, cap - 1);
    }
    return SDFED_OK;
}

/* A secret (join_key): kept with its length, a NUL in it too; one longer
 * than cap - 1 bytes is no secret of this server's (*len = cap, out empty),
 * not an error; *len -1 when there is none. */
static int get_secret(reader *r, const char *key, char *out, size_t cap, int *len) {
    int node = sdfed_json_get(r->j, r->obj, key);
    *len = -1;
    if (node < 0) return SDFED_OK;
    if (r->j->nodes[node].type != SDFED_JSON_STRING) {
        *r->code = SDFED_CODE_BAD_MESSAGE;
        return sdfed_fail(r->err, SDFED_ERR_FORMAT, "message: '%s' must be a string", key);
    }
    long n = sdfed_json_bytes(r->j, node, out, cap);
    *len = n < 0 ? (int)cap : (int)n;
    if (n < 0) memset(out, 0, cap);
    return SDFED_OK;
}

/* metrics' optional device: step_ms, 1..SDFED_LOCAL_PROMPT_MAX_LENGTHS
 * numbers in (0, SDFED_METRICS_MAX_STEP_MS], threads 1..
 * SDFED_METRICS_MAX_THREADS, kernels a short name (letters, digits, - _ . +:
 * it becomes a label of /metrics). */
static int get_device(reader *r, sdfed_message *m) {
    int list = sdfed_json_get(r->j, r->obj, "step_ms"), rc;
    if ((rc = get_int(r, "threads", 1, SDFED_METRICS_MAX_THREADS, 0, &m->threads)) ||
        (rc = get_text(r, "kernels", m->kernels, sizeof m->kernels)))
        return rc;
    for (const char *c = m->kernels; *c; c++)
        if (!isalnum((unsigned char)*c) && !strchr("-_.+", *c)) {
            *r->code = SDFED_CODE_BAD_MESSAGE;
            return sdfed_fail(r->err, SDFED_ERR_FORMAT,
                              "message: 'kernels' must be a name of letters, digits, - _ . +");
        }
    if (list < 0) return SDFED_OK;
    const sdfed_json *j = r->j;
    int n = j->nodes[list].type == SDFED_JSON_ARRAY ? j->nodes[list].size : 0;
    for (int i = 0; i < n && n <= SDFED_LOCAL_PROMPT_MAX_LENGTHS; i++) {
        double v;
        if (sdfed_json_number(j, sdfed_json_at(j, list, i), &v) || !(v > 0 && v <= SDFED_METRICS_MAX_STEP_MS)) {
            n = 0;
            break;
        }
        m->step_ms[i] = v;
    }
    if (n < 1 || n > SDFED_LOCAL_PROMPT_MAX_LENGTHS) {
        *r->code = SDFED_CODE_BAD_MESSAGE;
        return sdfed_fail(r->err, SDFED_ERR_FORMAT, "message: 'step_ms' must be a list of 1..%d numbers in (0, %g]",
                          SDFED_LOCAL_PROMPT_MAX_LENGTHS, SDFED_METRICS_MAX_STEP_MS);
    }
    m->n_step_ms = n;
    return SDFED_OK;
}

/* Optional inline tensor: "shape", 1..4 positive integers, and "data", a
 * flat list of numbers (row-major), each within float range. */
static int get_tensor(reader *r, size_t max_values, sdfed_message *m) {
    int shape = sdfed_json_get(r->j, r->obj, "shape"), data = sdfed_json_get(r->j, r->obj, "data");
    if (shape < 0 && data < 0) return SDFED_OK;
    const sdfed_json *j = r->j;
    *r->code = SDFED_CODE_BAD_SHAPE;
    if (shape < 0 || data < 0 || j->nodes[shape].type != SDFED_JSON_ARRAY || j->nodes[shape].size < 1 ||
        j->nodes[shape].size > SDFED_FRAME_MAX_DIMS)
        return sdfed_fail(r->err, SDFED_ERR_FORMAT, "message: a tensor needs 'shape' (1..4 sizes) and 'data'");
    if (j->nodes[data].type != SDFED_JSON_ARRAY) {
        *r->code = SDFED_CODE_BAD_MESSAGE;
        return sdfed_fail(r->err, SDFED_ERR_FORMAT, "message: 'data' must be a flat list of numbers");
    }
    size_t n = 1;
    m->n_dims = j->nodes[shape].size;
    for (int d = 0; d < m->n_dims; d++) {
        int64_t v;
        if (sdfed_json_integer(j, sdfed_json_at(j, shape, d), &v) || v < 1) {
            *r->code = SDFED_CODE_BAD_MESSAGE;
            return sdfed_fail(r->err, SDFED_ERR_FORMAT, "message: 'shape' must be a list of positive integers");
        }
        if (v > (int64_t)max_values || n > max_values / (size_t)v) {
            *r->code = SDFED_CODE_TOO_LARGE;
            return sdfed_fail(r->err, SDFED_ERR_FORMAT, "message: 'shape' holds more than %zu values", max_values);
        }
        m->shape[d] = (uint32_t)v;
        n *= (size_t)v;
    }
    int node = data + 1;
    for (int i = 0; i < j->nodes[data].size; i++, node = j->nodes[node].next)
        if (j->nodes[node].type != SDFED_JSON_NUMBER) {
            *r->code = SDFED_CODE_BAD_MESSAGE;
            return sdfed_fail(r->err, SDFED_ERR_FORMAT,
                              "message: 'data' must be a flat list of numbers; value %d is not a number", i);
        }
    if ((size_t)j->nodes[data].size != n)
        return sdfed_fail(r->err, SDFED_ERR_FORMAT, "message: 'data' holds %d values, 'shape' says %zu",
                          j->nodes[data].size, n);
    m->values = malloc(sizeof *m->values * n);
    if (!m->values) return sdfed_fail(r->err, SDFED_ERR_NOMEM, "message: out of memory");
    m->n_values = n;
    node = data + 1;
    for (size_t i = 0; i < n; i++, node = j->nodes[node].next) {
        double v;
        if (sdfed_json_number(j, node, &v) || !isfinite((float)v)) {
            *r->code = SDFED_CODE_NOT_FINITE;
            return sdfed_fail(r->err, SDFED_ERR_FORMAT, "message: data value %zu is not a finite number", i);
        }
        m->values[i] = (float)v;
    }
    return SDFED_OK;
}

/* round_start's "secure" object, when there is one: the client's place
 * and the plan's n, k, t and min_inputs */
static int get_secure(const sdfed_json *j, sdfed_message *m, sdfed_code *code, sdfed_error *err) {
    reader s = {.j = j, .obj = sdfed_json_get(j, 0, "secure"), .code = code, .err = err};
    if (s.obj < 0) return SDFED_OK;
    if (j->nodes[s.obj].type != SDFED_JSON_OBJECT) {
        *code = SDFED_CODE_BAD_MESSAGE;
        return sdfed_fail(err, SDFED_ERR_FORMAT, "message: 'secure' must be an object");
    }
    const int64_t most = 1 << 24;
    int64_t v[5] = {0};
    const char *keys[5] = {"place", "n", "k", "t", "min_inputs"};
    for (int i = 0; i < 5; i++) {
        int rc = get_int(&s, keys[i], 0, most, 1, &v[i]);
        if (rc) return rc;
    }
    m->secure = 1;
    m->place = (int)v[0];
    m->secure_n = (int)v[1];
    m->secure_k = (int)v[2];
    m->secure_t = (int)v[3];
    m->secure_min_inputs = (int)v[4];
    return SDFED_OK;
}

int sdfed_message_parse(const char *text, size_t len, int sender, size_t max_values, sdfed_message *m, sdfed_code *code,
                        sdfed_error *err) {
    memset(m, 0, sizeof *m);
    m->shard = -1;
    m->join_key_len = -1;
    m->binary = 1;
    m->round = m->next_round = -1;
    sdfed_json j;
    if (sdfed_json_parse(&j, text, len, err)) {
        *code = SDFED_CODE_BAD_JSON;
        return SDFED_ERR_FORMAT;
    }
    reader r = {.j = &j, .obj = 0, .code = code, .err = err};
    char type[32] = "", encoding[16] = "";
    int rc = SDFED_OK;
    int type_node = sdfed_json_get(&j, 0, "type");
    if (j.nodes[0].type != SDFED_JSON_OBJECT || type_node < 0 || j.nodes[type_node].type != SDFED_JSON_STRING) {
        *code = SDFED_CODE_BAD_MESSAGE;
        rc = sdfed_fail(err, SDFED_ERR_FORMAT, "message: not an object with a string 'type'");
    } else if (sdfed_json_string(&j, type_node, type, sizeof type) < 0) {
        *code = SDFED_CODE_BAD_MESSAGE;
        rc = sdfed_fail(err, SDFED_ERR_FORMAT,
                        "message: 'type' must be a name of at most %zu bytes, with no \\u0000 in it", sizeof type - 1);
    }
    m->type = rc == SDFED_OK ? sdfed_name_value(type_names, SDFED_MSG_COUNT, type) : -1;
    if (rc == SDFED_OK && m->type < 0) {
        *code = SDFED_CODE_UNKNOWN_TYPE;
        rc = sdfed_fail(err, SDFED_ERR_FORMAT, "message: unknown type '%.31s'", type);
    } else if (rc == SDFED_OK && !(type_senders[m->type] & sender)) {
        /* the other side's message: refused as such, before its fields are read */
        *code = SDFED_CODE_BAD_MESSAGE;
        rc = sdfed_fail(err, SDFED_ERR_FORMAT, "message: %s do not send '%s'",
                        sender == SDFED_SENT_BY_CLIENT ? "clients" : "servers", type);
    }
    int64_t shard = -1, samples = 0;
    char protocol[32] = "";
    const int64_t big = (int64_t)1 << 53;
    switch (rc ? -1 : m->type) {
    case SDFED_MSG_HELLO:
        if ((rc = get_text(&r, "protocol", protocol, sizeof protocol)) ||
            (rc = get_text(&r, "token", m->token, sizeof m->token)) ||
            (rc = get_secret(&r, "join_key", m->join_key, sizeof m->join_key, &m->join_key_len)) ||
            (rc = get_text(&r, "kind", m->kind, sizeof m->kind)) ||
            (rc = get_text(&r, "encoding", encoding, sizeof encoding)) ||
            (rc = get_int(&r, "shard", 0, 1 << 20, 0, &shard)))
            break;
        if (strcmp(protocol, SDFED_PROTOCOL) != 0) {
            *code = SDFED_CODE_BAD_PROTOCOL;
            rc = sdfed_fail(err, SDFED_ERR_UNSUPPORTED, "message: protocol '%s' (this server speaks %s)", protocol,
                            SDFED_PROTOCOL);
        } else if (encoding[0] && strcmp(encoding, "binary") && strcmp(encoding, "json")) {
            *code = SDFED_CODE_BAD_MESSAGE;
            rc = sdfed_fail(err, SDFED_ERR_FORMAT, "message: 'encoding' must be \"binary\" or \"json\"");
        }
        m->binary = strcmp(encoding, "json") != 0;
        m->shard = (int)shard;
        break;
    case SDFED_MSG_UPDATE:
        if ((rc = get_int(&r, "round", 0, big, 1, &m->round)) || (rc = get_int(&r, "samples", 0, big, 1, &samples)))
            break;
        m->samples = samples;
        rc = get_tensor(&r, max_values, m);
        if (rc == SDFED_OK && !m->values) {
            *code = SDFED_CODE_BAD_MESSAGE;
            rc = sdfed_fail(err, SDFED_ERR_FORMAT, "message: a JSON update needs 'shape' and 'data'");
        }
        break;
    case SDFED_MSG_METRICS:
        m->accuracy = NAN; /* required */
        if ((rc = get_int(&r, "round", 0, big, 1, &m->round)) || (rc = get_real(&r, "accuracy", &m->accuracy)) ||
            (rc = get_real(&r, "loss", &m->loss)) || (rc = get_int(&r, "test_samples", 0, big, 0, &m->test_samples)) ||
            (rc = get_device(&r, m)))
            break;
        if (!(m->accuracy >= 0 && m->accuracy <= 1)) {
            *code = SDFED_CODE_BAD_MESSAGE;
            rc = sdfed_fail(err, SDFED_ERR_FORMAT, "message: 'accuracy' must be in [0, 1]");
        } else if (m->loss < 0 || m->loss > SDFED_METRICS_MAX_LOSS) {
            *code = SDFED_CODE_BAD_MESSAGE;
            rc = sdfed_fail(err, SDFED_ERR_FORMAT, "message: 'loss' must be in [0, %g]", SDFED_METRICS_MAX_LOSS);
        }
        break;
    case SDFED_MSG_WELCOME: {
        int task = sdfed_json_get(&j, 0, "task");
        if ((rc = get_int(&r, "client_id", 0, big, 1, &m->client_id)) ||
            (rc = get_int(&r, "round", 0, big, 0, &m->round)) ||
            (rc = get_text(&r, "token", m->token, sizeof m->token)) ||
            (rc = get_text(&r, "mode", m->mode, sizeof m->mode)))
            break;
        if (task < 0 || j.nodes[task].type != SDFED_JSON_OBJECT) {
            *code = SDFED_CODE_BAD_MESSAGE;
            rc = sdfed_fail(err, SDFED_ERR_FORMAT, "message: welcome without a 'task' object");
            break;
        }
        size_t n = j.nodes[task].end - j.nodes[task].start;
        if (!(m->task_json = malloc(n + 1))) {
            rc = sdfed_fail(err, SDFED_ERR_NOMEM, "message: out of memory");
            break;
        }
        memcpy(m->task_json, text + j.nodes[task].start, n);
        m->task_json[n] = '\0';
        reader model = {.j = &j, .obj = sdfed_json_get(&j, 0, "model"), .code = code, .err = err};
        if (model.obj < 0 || j.nodes[model.obj].type != SDFED_JSON_OBJECT) {
            *code = SDFED_CODE_BAD_MESSAGE;
            rc = sdfed_fail(err, SDFED_ERR_FORMAT, "message: welcome without a 'model' object");
        } else if ((rc = get_text(&model, "url", m->model_url, sizeof m->model_url)) == SDFED_OK &&
                   (rc = get_text(&model, "sha256", m->model_sha256, sizeof m->model_sha256)) == SDFED_OK) {
            rc = get_int(&model, "size", 0, big, 0, &m->model_size);
        }
        break;
    }
    case SDFED_MSG_ROUND_START:
        if ((rc = get_int(&r, "round", 0, big, 1, &m->round)) ||
            (rc = get_int(&r, "deadline_ms", 0, big, 0, &m->deadline_ms)) ||
            (rc = get_text(&r, "global_sha256", m->global_sha256, sizeof m->global_sha256)) ||
            (rc = get_secure(&j, m, code, err)))
            break;
        rc = get_tensor(&r, max_values, m);
        break;
    case SDFED_MSG_SECAGG_ACK:
        if ((rc = get_int(&r, "round", 0, big, 1, &m->round))) break;
        rc = get_text(&r, "stage", m->stage, sizeof m->stage);
        if (rc == SDFED_OK && !m->stage[0]) {
            *code = SDFED_CODE_BAD_MESSAGE;
            rc = sdfed_fail(err, SDFED_ERR_FORMAT, "message: secagg_ack without a 'stage'");
        }
        break;
    case SDFED_MSG_SECAGG_REFUSAL:
        if ((rc = get_int(&r, "round", 0, big, 1, &m->round)) || (rc = get_text(&r, "code", m->code, sizeof m->code)) ||
            (rc = get_text(&r, "message", m->message, sizeof m->message)))
            break;
        if (sdfed_code_from_name(m->code) < SDFED_CODE_SECAGG_OFF) {
            *code = SDFED_CODE_BAD_MESSAGE;
            rc = sdfed_fail(err, SDFED_ERR_FORMAT, "message: secagg_refusal's 'code' must be a secagg_ code");
        }
        break;
    case SDFED_MSG_ACK: rc = get_int(&r, "round", 0, big, 1, &m->round); break;
    case SDFED_MSG_ROUND_END:
        if ((rc = get_int(&r, "round", 0, big, 1, &m->round)) ||
            (rc = get_int(&r, "next_round", 0, big, 0, &m->next_round)) ||
            (rc = get_int(&r, "participants", 0, big, 0, &m->participants)))
            break;
        rc = get_text(&r, "global_sha256", m->global_sha256, sizeof m->global_sha256);
        break;
    case SDFED_MSG_WAIT:
        if ((rc = get_int(&r, "round", 0, big, 0, &m->round)) ||
            (rc = get_int(&r, "retry_after", 0, big, 0, &m->retry_after_ms)))
            break;
        rc = get_text(&r, "reason", m->reason, sizeof m->reason);
        break;
    case SDFED_MSG_DONE: rc = get_int(&r, "rounds", 0, big, 0, &m->rounds); break;
    case SDFED_MSG_ERROR:
        if ((rc = get_text(&r, "code", m->code, sizeof m->code)) ||
            (rc = get_text(&r, "message", m->message, sizeof m->message)) ||
            (rc = get_int(&r, "round", 0, big, 0, &m->round)) ||
            (rc = get_int(&r, "retry_after", 0, big, 0, &m->retry_after_ms)))
            break;
        rc = get_int(&r, "next_round", 0, big, 0, &m->next_round);
        break;
    default: break; /* heartbeat, leave: no fields */
    }
    sdfed_json_free(&j);
    if (rc) sdfed_message_free(m);
    return rc;
}
