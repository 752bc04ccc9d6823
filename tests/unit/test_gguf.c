/* GGUF reader and writer: a round trip of every metadata and tensor type,
 * and malformed files (truncated anywhere, corrupted fields, hostile counts)
 * that must give an error with a message, never a crash. */
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "check.h"
#include "format/gguf.h"

static float f32_data[3][5];
static uint16_t f16_data[2 * 7];
static sdfed_block_q8_0 q8_data[4];

/* A small file with one of everything; returns it in buf. */
static void build(sdfed_buffer *buf) {
    for (int i = 0; i < 15; i++) f32_data[i / 5][i % 5] = (float)i * 0.5f - 3.0f;
    for (int i = 0; i < 14; i++) f16_data[i] = sdfed_f32_to_f16((float)i / 7);
    float q[128];
    for (int i = 0; i < 128; i++) q[i] = (float)(i % 17) - 8.0f;
    sdfed_row_from_f32(SDFED_TYPE_Q8_0, q8_data, q, 128);

    sdfed_gguf_writer w;
    sdfed_gguf_writer_init(&w);
    sdfed_gguf_writer_add_str(&w, "general.architecture", "test");
    sdfed_gguf_writer_add_u32(&w, "test.u32", 4000000000u);
    sdfed_gguf_writer_add_i32(&w, "test.i32", -7);
    sdfed_gguf_writer_add_f32(&w, "test.f32", 0.25f);
    sdfed_gguf_writer_add_bool(&w, "test.bool", 1);
    const float arr[3] = {1.5f, -2.0f, 3.25f};
    sdfed_gguf_writer_add_f32_array(&w, "test.f32s", arr, 3);
    const char *strs[3] = {"a", "", "h\xc3\xa9llo"};
    sdfed_gguf_writer_add_str_array(&w, "test.strs", strs, NULL, 3);
    uint64_t ne_a[2] = {5, 3}, ne_b[2] = {7, 2}, ne_c[2] = {64, 2};
    sdfed_gguf_writer_add_tensor(&w, "ta", SDFED_TYPE_F32, 2, ne_a, f32_data);
    sdfed_gguf_writer_add_tensor(&w, "tb", SDFED_TYPE_F16, 2, ne_b, f16_data);
    sdfed_gguf_writer_add_tensor(&w, "tc", SDFED_TYPE_Q8_0, 2, ne_c, q8_data);
    sdfed_sink sink = sdfed_buffer_sink(buf);
    sdfed_error err = {0};
    CHECK(sdfed_gguf_writer_write(&w, &sink, &err) == SDFED_OK, "write: %s", err.message);
    sdfed_gguf_writer_free(&w);
}

static void test_round_trip(const sdfed_buffer *buf) {
    sdfed_gguf g;
    sdfed_error err = {0};
    CHECK(sdfed_gguf_open(&g, buf->data, buf->size, &err) == SDFED_OK, "open: %s", err.message);
    CHECK(g.version == 3 && g.alignment == 32 && g.n_tensors == 3 && g.n_kv == 8, "header");
    uint32_t u;
    float f;
    sdfed_str s;
    CHECK(sdfed_gguf_get_u32(&g, "test.u32", &u, &err) == SDFED_OK && u == 4000000000u, "u32");
    CHECK(sdfed_gguf_get_u32(&g, "test.i32", &u, &err) == SDFED_ERR_FORMAT, "negative int refused as u32");
    CHECK(sdfed_gguf_get_f32(&g, "test.f32", &f, &err) == SDFED_OK && f == 0.25f, "f32");
    CHECK(sdfed_gguf_get_str(&g, "general.architecture", &s, &err) == SDFED_OK && sdfed_str_eq(s, "test"), "string");
    CHECK(sdfed_gguf_get_u32(&g, "missing", &u, &err) == SDFED_ERR_NOT_FOUND && strstr(err.message, "missing"),
          "missing key names the key: %s", err.message);
    CHECK(sdfed_gguf_get_str(&g, "test.u32", &s, &err) == SDFED_ERR_FORMAT, "type mismatch");
    const sdfed_gguf_kv *kv;
    CHECK(sdfed_gguf_get_array(&g, "test.f32s", SDFED_GGUF_FLOAT32, &kv, &err) == SDFED_OK && kv->count == 3 &&
              sdfed_gguf_array_f32(kv, 2) == 3.25f,
          "float array");
    CHECK(sdfed_gguf_get_array(&g, "test.strs", SDFED_GGUF_STRING, &kv, &err) == SDFED_OK, "string array");
    sdfed_gguf_str_iter it = sdfed_gguf_str_iter_begin(kv);
    const char *want[3] = {"a", "", "h\xc3\xa9llo"};
    int i = 0, same = 1;
    while (sdfed_gguf_str_iter_next(&it, &s)) same &= i < 3 && sdfed_str_eq(s, want[i++]);
    CHECK(same && i == 3, "string array contents");
    const sdfed_gguf_tensor *a = sdfed_gguf_find_tensor(&g, "ta"), *b = sdfed_gguf_find_tensor(&g, "tb"),
                            *c = sdfed_gguf_find_tensor(&g, "tc");
    CHECK(a && b && c && !sdfed_gguf_find_tensor(&g, "td"), "tensors found by name");
    if (a && b && c) {
        CHECK(a->type == SDFED_TYPE_F32 && a->n_dims == 2 && a->ne[0] == 5 && a->ne[1] == 3 && a->nbytes == 60 &&
                  memcmp(a->data, f32_data, 60) == 0,
              "f32 tensor");
        CHECK(b->type == SDFED_TYPE_F16 && memcmp(b->data, f16_data, sizeof f16_data) == 0, "f16 tensor");
        CHECK(c->type == SDFED_TYPE_Q8_0 && c->nbytes == sizeof q8_data &&
                  memcmp(c->data, q8_data, sizeof q8_data) == 0,
              "q8_0 tensor");
        CHECK(((const uint8_t *)a->data - buf->data) % 32 == 0 && ((const uint8_t *)b->data - buf->data) % 32 == 0 &&
                  ((const uint8_t *)c->data - buf->data) % 32 == 0,
              "tensor data 32-byte aligned");
    }
    sdfed_gguf_close(&g);
}

static int opens(const uint8_t *data, size_t size, sdfed_error *err) {
    sdfed_gguf g;
    memset(err, 0, sizeof *err);
    int rc = sdfed_gguf_open(&g, data, size, err);
    if (rc == SDFED_OK) sdfed_gguf_close(&g);
    return rc;
}

static void test_truncation(const sdfed_buffer *buf) {
    /* every strict prefix cuts the last tensor short, so each must fail */
    int all_fail = 1, all_messages = 1;
    uint8_t *copy = malloc(buf->size);
    for (size_t n = 0; n < buf->size; n++) {
        memcpy(copy, buf->data, n); /* exact-size heap copy: ASan sees overreads */
        sdfed_error err;
        if (opens(copy, n, &err) == SDFED_OK)
            all_fail = 0;
        else if (err.message[0] == '\0')
            all_messages = 0;
    }
    free(copy);
    CHECK(all_fail, "every truncation is an error");
    CHECK(all_messages, "every error carries a message");
}

/* Offsets of header fields in the built file (see build()). */
static size_t find_bytes(const sdfed_buffer *buf, const char *s, size_t n) {
    for (size_t i = 0; i + n <= buf->size; i++)
        if (memcmp(buf->data + i, s, n) == 0) return i;
    return 0;
}

static void put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Applies one corruption to a copy and expects a specific failure. */
static void expect_error(const sdfed_buffer *buf, const char *what, size_t at, const void *bytes, size_t n, int want_rc,
                         const char *want_text) {
    uint8_t *copy = malloc(buf->size);
    memcpy(copy, buf->data, buf->size);
    memcpy(copy + at, bytes, n);
    sdfed_error err;
    int rc = opens(copy, buf->size, &err);
    CHECK(rc == want_rc && strstr(err.message, want_text), "%s: got %d '%s'", what, rc, err.message);
    free(copy);
}

static void test_corruption(const sdfed_buffer *buf) {
    uint8_t b8[8];
    expect_error(buf, "bad magic", 0, "GGUG", 4, SDFED_ERR_FORMAT, "not a GGUF");
    put_u32(b8, 1);
    expect_error(buf, "old version", 4, b8, 4, SDFED_ERR_UNSUPPORTED, "version 1");
    put_u64(b8, (uint64_t)1 << 60);
    expect_error(buf, "huge tensor count", 8, b8, 8, SDFED_ERR_FORMAT, "more than the file holds");
    expect_error(buf, "huge metadata count", 16, b8, 8, SDFED_ERR_FORMAT, "more than the file holds");
    /* the first key is general.alignment: its length field sits at 24 */
    put_u64(b8, (uint64_t)-1);
    expect_error(buf, "huge key length", 24, b8, 8, SDFED_ERR_FORMAT, "truncated");
    size_t align_value = 24 + 8 + strlen("general.alignment") + 4;
    put_u32(b8, 48);
    expect_error(buf, "alignment not a power of two", align_value, b8, 4, SDFED_ERR_FORMAT, "power of two");
    put_u32(b8, 99);
    expect_error(buf, "unknown metadata type", align_value - 4, b8, 4, SDFED_ERR_FORMAT, "unknown type");
    size_t strs = find_bytes(buf, "test.strs", 9) + 9 + 4 + 4; /* key, type, element type -> count */
    put_u64(b8, (uint64_t)1 << 40);
    expect_error(buf, "huge array count", strs, b8, 8, SDFED_ERR_FORMAT, "truncated");
    /* tensor "ta": name length, name, n_dims, dims, type, offset */
    size_t ta = find_bytes(buf, "\x02\0\0\0\0\0\0\0ta", 10) + 10;
    put_u32(b8, 5);
    expect_error(buf, "five dimensions", ta, b8, 4, SDFED_ERR_FORMAT, "dimensions");
    put_u64(b8, 0);
    expect_error(buf, "zero dimension", ta + 4, b8, 8, SDFED_ERR_FORMAT, "invalid shape");
    put_u32(b8, 2); /* q4_0 */
    expect_error(buf, "unsupported tensor type", ta + 4 + 16, b8, 4, SDFED_ERR_UNSUPPORTED, "type 2");
    put_u64(b8, 4);
    expect_error(buf, "misaligned tensor", ta + 4 + 16 + 4, b8, 8, SDFED_ERR_FORMAT, "aligned");
    put_u64(b8, 1 << 20);
    expect_error(buf, "tensor past the end", ta + 4 + 16 + 4, b8, 8, SDFED_ERR_FORMAT, "beyond the end");
    put_u64(b8, 64); /* "ta" placed on top of "tb" */
    expect_error(buf, "overlapping tensors", ta + 4 + 16 + 4, b8, 8, SDFED_ERR_FORMAT, "overlap");
    expect_error(buf, "duplicate tensor name", find_bytes(buf, "\x02\0\0\0\0\0\0\0tb", 10) + 9, "a", 1,
                 SDFED_ERR_FORMAT, "twice");
    expect_error(buf, "duplicate key", find_bytes(buf, "test.i32", 8), "test.u32", 8, SDFED_ERR_FORMAT, "twice");
    /* a q8_0 row must be a multiple of 32: ne0 64 -> 17 */
    size_t tc = find_bytes(buf, "\x02\0\0\0\0\0\0\0tc", 10) + 10;
    put_u64(b8, 17);
    expect_error(buf, "q8_0 row not a multiple of 32", tc + 4, b8, 8, SDFED_ERR_FORMAT, "row of 17");
}

static void test_random_corruption(const sdfed_buffer *buf) {
    /* flip bytes of the header at random: any outcome but a crash is fine,
     * and a reported error always has a message */
    srand(3);
    int messages = 1;
    uint8_t *copy = malloc(buf->size);
    for (int trial = 0; trial < 20000; trial++) {
        memcpy(copy, buf->data, buf->size);
        for (int k = 0; k < 1 + trial % 4; k++) copy[rand() % 400] = (uint8_t)rand();
        sdfed_error err;
        if (opens(copy, buf->size, &err) != SDFED_OK && err.message[0] == '\0') messages = 0;
    }
    free(copy);
    CHECK(messages, "random corruption never crashes and errors carry messages");
}

static void test_empty_file(void) {
    sdfed_gguf_writer w;
    sdfed_gguf_writer_init(&w);
    sdfed_buffer buf = {0};
    sdfed_sink sink = sdfed_buffer_sink(&buf);
    CHECK(sdfed_gguf_writer_write(&w, &sink, NULL) == SDFED_OK, "a file with metadata only");
    sdfed_gguf g;
    CHECK(sdfed_gguf_open(&g, buf.data, buf.size, NULL) == SDFED_OK && g.n_tensors == 0 && g.n_kv == 1,
          "opens with no tensors");
    sdfed_gguf_close(&g);
    sdfed_gguf_writer_free(&w);
    sdfed_buffer_free(&buf);
    uint64_t ne[1] = {33};
    sdfed_gguf_writer_init(&w);
    sdfed_gguf_writer_add_tensor(&w, "bad", SDFED_TYPE_Q8_0, 1, ne, q8_data);
    sink = sdfed_buffer_sink(&buf);
    CHECK(sdfed_gguf_writer_write(&w, &sink, NULL) == SDFED_ERR_ARG, "writer refuses a q8_0 row of 33");
    sdfed_gguf_writer_free(&w);
    sdfed_buffer_free(&buf);
}

int main(void) {
    sdfed_buffer buf = {0};
    build(&buf);
    test_round_trip(&buf);
    test_truncation(&buf);
    test_corruption(&buf);
    test_random_corruption(&buf);
    test_empty_file();
    sdfed_buffer_free(&buf);
    return check_report("test_gguf");
}
