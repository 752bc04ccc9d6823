/* Secure aggregation's messages as bytes (see secagg_message.h). */
#include "fed/secagg_message.h"

#include <stdlib.h>
#include <string.h>

#include "fed/secagg_layout.h"

static const char *const NAMES[SDFED_SECAGG_MSG_KIND_END] = {
    [SDFED_SECAGG_MSG_ADVERTISE] = "advertise", [SDFED_SECAGG_MSG_SHARE_REQUEST] = "share_request",
    [SDFED_SECAGG_MSG_SHARES] = "shares",       [SDFED_SECAGG_MSG_MASKED_REQUEST] = "masked_request",
    [SDFED_SECAGG_MSG_MASKED] = "masked",       [SDFED_SECAGG_MSG_UNMASK_REQUEST] = "unmask_request",
    [SDFED_SECAGG_MSG_UNMASK] = "unmask",
};
_Static_assert(sizeof NAMES / sizeof NAMES[0] == SDFED_SECAGG_MSG_KIND_END, "a name for every message");
_Static_assert(SDFED_SECAGG_RELAYED_BYTES == 4 + SDFED_SECAGG_SEALED_BYTES, "a client and a sealed pair");
_Static_assert(SDFED_SECAGG_ANSWER_BYTES == 4 + 1 + SDFED_SHAMIR_SHARE_BYTES, "an owner, which secret, its share");

const char *sdfed_secagg_msg_name(int kind) {
    return kind >= SDFED_SECAGG_MSG_ADVERTISE && kind < SDFED_SECAGG_MSG_KIND_END ? NAMES[kind] : NULL;
}

int sdfed_secagg_msg_kind_of(const unsigned char *msg, size_t len) {
    return len >= SDFED_SECAGG_MSG_HEADER ? msg[0] : 0;
}

uint32_t sdfed_secagg_be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void sdfed_secagg_put_be32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (24 - 8 * i));
}

/* ---- writing ------------------------------------------------------------ */

typedef struct writer {
    sdfed_buffer *out;
    sdfed_sink sink;
    int failed;
} writer;

static void put(writer *w, const void *data, size_t n) {
    if (!w->failed && n && w->sink.write(w->sink.ctx, data, n)) w->failed = 1;
}

static void put_u32(writer *w, uint32_t v) {
    unsigned char b[4];
    sdfed_secagg_put_be32(b, v);
    put(w, b, sizeof b);
}

static writer begin(sdfed_buffer *out, int kind, int64_t round) {
    out->size = 0;
    writer w = {.out = out, .sink = sdfed_buffer_sink(out), .failed = 0};
    unsigned char head[SDFED_SECAGG_MSG_HEADER] = {(unsigned char)kind};
    for (int i = 0; i < 8; i++) head[1 + i] = (unsigned char)((uint64_t)round >> (56 - 8 * i));
    put(&w, head, sizeof head);
    return w;
}

static int finish(writer *w, int kind, sdfed_error *err) {
    if (!w->failed) return SDFED_OK;
    w->out->size = 0;
    return sdfed_fail(err, SDFED_ERR_NOMEM, "secagg %s: out of memory", sdfed_secagg_msg_name(kind));
}

int sdfed_secagg_write_advertise(sdfed_buffer *out, int64_t round, const unsigned char mask_key[32],
                                 const unsigned char share_key[32], sdfed_error *err) {
    writer w = begin(out, SDFED_SECAGG_MSG_ADVERTISE, round);
    put(&w, mask_key, 32);
    put(&w, share_key, 32);
    return finish(&w, SDFED_SECAGG_MSG_ADVERTISE, err);
}

int sdfed_secagg_write_share_request(sdfed_buffer *out, int64_t round, int n, int self, int k, int t, int min_inputs,
                                     const unsigned char session[32], const int *holders, const unsigned char *keys,
                                     sdfed_error *err) {
    writer w = begin(out, SDFED_SECAGG_MSG_SHARE_REQUEST, round);
    const int fields[5] = {n, self, k, t, min_inputs};
    for (int i = 0; i < 5; i++) put_u32(&w, (uint32_t)fields[i]);
    put(&w, session, 32);
    for (int s = 0; s <= k; s++) {
        put_u32(&w, (uint32_t)holders[s]);
        put(&w, keys + (size_t)64 * s, 64);
    }
    return finish(&w, SDFED_SECAGG_MSG_SHARE_REQUEST, err);
}

int sdfed_secagg_write_relayed(sdfed_buffer *out, int kind, int64_t round, int count, const int *clients,
                               const unsigned char *sealed, sdfed_error *err) {
    if (kind != SDFED_SECAGG_MSG_SHARES && kind != SDFED_SECAGG_MSG_MASKED_REQUEST)
        return sdfed_fail(err, SDFED_ERR_ARG, "secagg: message %d relays no sealed pairs", kind);
    writer w = begin(out, kind, round);
    put_u32(&w, (uint32_t)count);
    for (int i = 0; i < count; i++) {
        put_u32(&w, (uint32_t)clients[i]);
        put(&w, sealed + (size_t)SDFED_SECAGG_SEALED_BYTES * i, SDFED_SECAGG_SEALED_BYTES);
    }
    return finish(&w, kind, err);
}

/* B from 2 to 64 (a masked input's ring) */
static int ring_bits_in_range(int ring_bits, sdfed_error *err) {
    if (ring_bits >= 2 && ring_bits <= 64) return 1;
    sdfed_fail(err, SDFED_ERR_ARG, "secagg masked: ring_bits %d", ring_bits);
    return 0;
}

size_t sdfed_secagg_masked_bytes(int ring_bits, size_t len) { return (len * (size_t)ring_bits + 7) / 8; }

int sdfed_secagg_write_masked(sdfed_buffer *out, int64_t round, int ring_bits, const uint64_t *v, size_t len,
                              sdfed_error *err) {
    if (!ring_bits_in_range(ring_bits, err)) return SDFED_ERR_ARG;
    size_t bytes = sdfed_secagg_masked_bytes(ring_bits, len);
    unsigned char *packed = calloc(bytes ? bytes : 1, 1);
    if (!packed) return sdfed_fail(err, SDFED_ERR_NOMEM, "secagg masked: out of memory");
    size_t at = 0; /* the next bit */
    for (size_t j = 0; j < len; j++) {
        uint64_t e = v[j];
        for (int left = ring_bits; left > 0;) { /* the element's low bits into the rest of the byte at `at` */
            int shift = (int)(at % 8), take = 8 - shift < left ? 8 - shift : left;
            packed[at / 8] |= (unsigned char)((e & ((1u << take) - 1)) << shift);
            e >>= take;
            at += (size_t)take;
            left -= take;
        }
    }
    writer w = begin(out, SDFED_SECAGG_MSG_MASKED, round);
    put_u32(&w, (uint32_t)len);
    put(&w, packed, bytes);
    free(packed);
    return finish(&w, SDFED_SECAGG_MSG_MASKED, err);
}

int sdfed_secagg_write_unmask_request(sdfed_buffer *out, int64_t round, int inputs, const int *alive, int n_alive,
                                      const int *dropped, int n_dropped, sdfed_error *err) {
    writer w = begin(out, SDFED_SECAGG_MSG_UNMASK_REQUEST, round);
    put_u32(&w, (uint32_t)inputs);
    put_u32(&w, (uint32_t)n_alive);
    for (int i = 0; i < n_alive; i++) put_u32(&w, (uint32_t)alive[i]);
    put_u32(&w, (uint32_t)n_dropped);
    for (int i = 0; i < n_dropped; i++) put_u32(&w, (uint32_t)dropped[i]);
    return finish(&w, SDFED_SECAGG_MSG_UNMASK_REQUEST, err);
}

int sdfed_secagg_write_unmask(sdfed_buffer *out, int64_t round, int count, const int *owners,
                              const unsigned char *which, const unsigned char *shares, sdfed_error *err) {
    writer w = begin(out, SDFED_SECAGG_MSG_UNMASK, round);
    put_u32(&w, (uint32_t)count);
    for (int i = 0; i < count; i++) {
        put_u32(&w, (uint32_t)owners[i]);
        put(&w, &which[i], 1);
        put(&w, shares + (size_t)SDFED_SHAMIR_SHARE_BYTES * i, SDFED_SHAMIR_SHARE_BYTES);
    }
    return finish(&w, SDFED_SECAGG_MSG_UNMASK, err);
}

/* ---- reading ------------------------------------------------------------ */

/* What a message that is not the one expected is, in words. */
static const char *message_kind_words(const unsigned char *msg, size_t len) {
    if (len < SDFED_SECAGG_MSG_HEADER) return "too short";
    const char *kind = sdfed_secagg_msg_name(msg[0]);
    return kind ? kind : "unknown kind";
}

int sdfed_secagg_read_header(const unsigned char *msg, size_t len, int kind, int64_t round, sdfed_error *err) {
    const char *name = sdfed_secagg_msg_name(kind);
    if (len < SDFED_SECAGG_MSG_HEADER || msg[0] != kind)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "secagg: not a %s message (%s, %zu bytes)", name,
                          message_kind_words(msg, len), len);
    uint64_t r = 0;
    for (int i = 0; i < 8; i++) r = r << 8 | msg[1 + i];
    if ((int64_t)r != round)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "secagg %s: round %lld, not %lld", name, (long long)(int64_t)r,
                          (long long)round);
    return SDFED_OK;
}

/* the message's size must be exactly `want` */
static int sized(const char *name, size_t len, size_t want, sdfed_error *err) {
    if (len == want) return SDFED_OK;
    return sdfed_fail(err, SDFED_ERR_FORMAT, "secagg %s: %zu bytes, its counts say %zu", name, len, want);
}

/* a count at `at` (the message holding at least at + 4 bytes) of at most max */
static int read_count(const unsigned char *msg, size_t len, size_t at, const char *name, int max, int *count,
                      sdfed_error *err) {
    if (len < at + 4) return sdfed_fail(err, SDFED_ERR_FORMAT, "secagg %s: cut short (%zu bytes)", name, len);
    uint32_t c = sdfed_secagg_be32(msg + at);
    if (c > (uint32_t)max) return sdfed_fail(err, SDFED_ERR_FORMAT, "secagg %s: %u entries, at most %d", name, c, max);
    *count = (int)c;
    return SDFED_OK;
}

int sdfed_secagg_read_advertise(const unsigned char *msg, size_t len, int64_t round, const unsigned char **mask_key,
                                const unsigned char **share_key, sdfed_error *err) {
    int rc = sdfed_secagg_read_header(msg, len, SDFED_SECAGG_MSG_ADVERTISE, round, err);
    if (rc == SDFED_OK) rc = sized("advertise", len, SDFED_SECAGG_MSG_HEADER + 64, err);
    if (rc) return rc;
    *mask_key = msg + SDFED_SECAGG_MSG_HEADER;
    *share_key = msg + SDFED_SECAGG_MSG_HEADER + 32;
    return SDFED_OK;
}

int sdfed_secagg_read_share_request(const unsigned char *msg, size_t len, int64_t round, int max_clients,
                                    sdfed_secagg_share_request *out, sdfed_error *err) {
    const size_t fixed = SDFED_SECAGG_MSG_HEADER + 20 + 32;
    int rc = sdfed_secagg_read_header(msg, len, SDFED_SECAGG_MSG_SHARE_REQUEST, round, err);
    if (rc) return rc;
    if (len < fixed) return sdfed_fail(err, SDFED_ERR_FORMAT, "secagg share_request: cut short (%zu bytes)", len);
    uint32_t f[5];
    for (int i = 0; i < 5; i++) f[i] = sdfed_secagg_be32(msg + SDFED_SECAGG_MSG_HEADER + 4 * i);
    /* n, self, k, t, min_inputs */
    if (f[0] < 2 || f[0] > (uint32_t)max_clients || f[1] >= f[0] || f[2] < 1 || f[2] >= f[0] || f[3] < 2 ||
        f[3] > f[2] + 1 || f[4] < 1 || f[4] > f[0])
        return sdfed_fail(err, SDFED_ERR_FORMAT,
                          "secagg share_request: n %u (at most %d), client %u, k %u, t %u, min_inputs %u do not hold "
                          "together",
                          f[0], max_clients, f[1], f[2], f[3], f[4]);
    *out = (sdfed_secagg_share_request){.n = (int)f[0],
                                        .self = (int)f[1],
                                        .k = (int)f[2],
                                        .t = (int)f[3],
                                        .min_inputs = (int)f[4],
                                        .session = msg + SDFED_SECAGG_MSG_HEADER + 20,
                                        .holders = msg + fixed};
    rc = sized("share_request", len, fixed + (size_t)SDFED_SECAGG_HOLDER_BYTES * (f[2] + 1), err);
    int found_self = 0;
    for (uint32_t s = 0; s <= f[2] && rc == SDFED_OK; s++) {
        uint32_t h = sdfed_secagg_be32(out->holders + (size_t)SDFED_SECAGG_HOLDER_BYTES * s);
        if (h >= f[0]) rc = sdfed_fail(err, SDFED_ERR_FORMAT, "secagg share_request: holder %u of %u clients", h, f[0]);
        found_self |= h == f[1];
    }
    if (rc == SDFED_OK && !found_self)
        rc = sdfed_fail(err, SDFED_ERR_FORMAT, "secagg share_request: client %u is not among its own holders", f[1]);
    return rc;
}

/* The layout before this one (sdfed/secagg/v1) relayed entries of 4 + 108
 * bytes (a 12-byte nonce sent, 40-byte shares of 32-byte secrets): a sender
 * still of it (a page left open over its server's upgrade) is told so. */
#define V1_RELAYED_BYTES 112

int sdfed_secagg_read_relayed(const unsigned char *msg, size_t len, int kind, int64_t round, int max_count,
                              sdfed_secagg_list *out, sdfed_error *err) {
    const char *name = sdfed_secagg_msg_name(kind);
    if (kind != SDFED_SECAGG_MSG_SHARES && kind != SDFED_SECAGG_MSG_MASKED_REQUEST)
        return sdfed_fail(err, SDFED_ERR_ARG, "secagg: message %d relays no sealed pairs", kind);
    int rc = sdfed_secagg_read_header(msg, len, kind, round, err);
    if (rc == SDFED_OK) rc = read_count(msg, len, SDFED_SECAGG_MSG_HEADER, name, max_count, &out->count, err);
    if (rc == SDFED_OK && out->count > 0 && len == SDFED_SECAGG_MSG_HEADER + 4 + (size_t)V1_RELAYED_BYTES * out->count)
        return sdfed_fail(err, SDFED_ERR_FORMAT,
                          "secagg %s: %d sealed pairs of %d bytes, the layout before this one (sdfed/secagg/v1); "
                          "its sender is older than %s (a page left open: reload it)",
                          name, out->count, V1_RELAYED_BYTES, SDFED_SECAGG_LABEL);
    if (rc == SDFED_OK)
        rc = sized(name, len, SDFED_SECAGG_MSG_HEADER + 4 + (size_t)SDFED_SECAGG_RELAYED_BYTES * out->count, err);
    out->entries = msg + SDFED_SECAGG_MSG_HEADER + 4;
    return rc;
}

int sdfed_secagg_read_masked(const unsigned char *msg, size_t len, int64_t round, int ring_bits, uint64_t *v,
                             size_t count, sdfed_error *err) {
    int rc = sdfed_secagg_read_header(msg, len, SDFED_SECAGG_MSG_MASKED, round, err);
    if (rc) return rc;
    if (!ring_bits_in_range(ring_bits, err)) return SDFED_ERR_ARG;
    if (len < SDFED_SECAGG_MSG_HEADER + 4) return sdfed_fail(err, SDFED_ERR_FORMAT, "secagg masked: cut short");
    uint32_t c = sdfed_secagg_be32(msg + SDFED_SECAGG_MSG_HEADER);
    if (c != count) return sdfed_fail(err, SDFED_ERR_FORMAT, "secagg masked: %u values, the round's are %zu", c, count);
    const size_t bytes = sdfed_secagg_masked_bytes(ring_bits, count);
    rc = sized("masked", len, SDFED_SECAGG_MSG_HEADER + 4 + bytes, err);
    if (rc) return rc;
    const unsigned char *packed = msg + SDFED_SECAGG_MSG_HEADER + 4;
    size_t at = 0; /* the next bit */
    for (size_t j = 0; j < count; j++) {
        uint64_t e = 0;
        for (int got = 0; got < ring_bits;) {
            int shift = (int)(at % 8), take = 8 - shift < ring_bits - got ? 8 - shift : ring_bits - got;
            e |= (uint64_t)((packed[at / 8] >> shift) & ((1u << take) - 1)) << got;
            at += (size_t)take;
            got += take;
        }
        v[j] = e;
    }
    if (at % 8 && packed[bytes - 1] >> (at % 8)) /* one encoding per input: the last byte's spare bits are zeros */
        return sdfed_fail(err, SDFED_ERR_FORMAT, "secagg masked: the bits past the last value are not zeros");
    return SDFED_OK;
}

int sdfed_secagg_read_unmask_request(const unsigned char *msg, size_t len, int64_t round, int max_count,
                                     sdfed_secagg_unmask_request *out, sdfed_error *err) {
    const char *name = "unmask_request";
    int rc = sdfed_secagg_read_header(msg, len, SDFED_SECAGG_MSG_UNMASK_REQUEST, round, err);
    if (rc) return rc;
    if (len < SDFED_SECAGG_MSG_HEADER + 4) return sdfed_fail(err, SDFED_ERR_FORMAT, "secagg %s: cut short", name);
    uint32_t inputs = sdfed_secagg_be32(msg + SDFED_SECAGG_MSG_HEADER);
    if (inputs > (uint32_t)SDFED_SECAGG_MAX_HOLDERS)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "secagg %s: %u inputs", name, inputs);
    out->inputs = (int)inputs;
    size_t at = SDFED_SECAGG_MSG_HEADER + 4;
    rc = read_count(msg, len, at, name, max_count, &out->alive.count, err);
    out->alive.entries = msg + at + 4;
    at += 4 + 4 * (size_t)(rc ? 0 : out->alive.count);
    if (rc == SDFED_OK) rc = read_count(msg, len, at, name, max_count, &out->dropped.count, err);
    out->dropped.entries = msg + at + 4;
    if (rc == SDFED_OK) rc = sized(name, len, at + 4 + 4 * (size_t)out->dropped.count, err);
    return rc;
}

int sdfed_secagg_read_unmask(const unsigned char *msg, size_t len, int64_t round, int max_count, sdfed_secagg_list *out,
                             sdfed_error *err) {
    int rc = sdfed_secagg_read_header(msg, len, SDFED_SECAGG_MSG_UNMASK, round, err);
    if (rc == SDFED_OK) rc = read_count(msg, len, SDFED_SECAGG_MSG_HEADER, "unmask", max_count, &out->count, err);
    if (rc == SDFED_OK)
        rc = sized("unmask", len, SDFED_SECAGG_MSG_HEADER + 4 + (size_t)SDFED_SECAGG_ANSWER_BYTES * out->count, err);
    out->entries = msg + SDFED_SECAGG_MSG_HEADER + 4;
    return rc;
}
