/* The sdfed.v1 codec: frames round-trip bit for bit, every corruption is
 * caught with the right protocol error code, messages parse and refuse
 * bad fields, and what the writer writes the parser reads back. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_writer.h"
#include "check.h"
#include "fed/protocol.h"
#include "fed/secagg_message.h"

/* a code's wire name, "(none)" for none */
static const char *code_name(sdfed_code code) {
    const char *name = sdfed_code_name(code);
    return name ? name : "(none)";
}

/* the table of error codes: every code named and explained, each name once,
 * and name -> code -> name the identity */
static void test_codes(void) {
    for (int c = 0; c < SDFED_CODE_COUNT; c++) {
        CHECK(sdfed_codes[c].name && sdfed_codes[c].name[0] && sdfed_codes[c].meaning && sdfed_codes[c].meaning[0],
              "code %d has a name and a meaning", c);
        CHECK(sdfed_code_from_name(sdfed_codes[c].name) == (sdfed_code)c, "code %d found by its name", c);
    }
    CHECK(sdfed_code_from_name("no_such_code") == SDFED_CODE_NONE, "an unknown name is no code");
    CHECK(sdfed_code_name(SDFED_CODE_NONE) == NULL && sdfed_code_name(SDFED_CODE_COUNT) == NULL,
          "no name past the table");
    CHECK(!strcmp(code_name(SDFED_CODE_WRONG_ROUND), "wrong_round"), "the wire name of wrong_round");
}

/* CRC-32 one bit at a time, straight from its definition */
static uint32_t crc32_bitwise(const unsigned char *p, size_t n) {
    uint32_t crc = ~0u;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int bit = 0; bit < 8; bit++) crc = (crc & 1) ? crc >> 1 ^ 0xedb88320u : crc >> 1;
    }
    return ~crc;
}

static void test_crc(void) {
    CHECK(sdfed_crc32(0, "123456789", 9) == 0xcbf43926u, "CRC-32 check value");
    CHECK(sdfed_crc32(sdfed_crc32(0, "1234", 4), "56789", 5) == 0xcbf43926u, "CRC-32 in pieces");
    /* every length and alignment around the 8-byte steps, against the bitwise definition */
    unsigned char bytes[300];
    for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (unsigned char)(i * 131 + (i >> 3) * 7 + 1);
    int wrong = 0;
    for (size_t start = 0; start < 8; start++)
        for (size_t n = 0; start + n <= sizeof bytes; n++)
            wrong += sdfed_crc32(0, bytes + start, n) != crc32_bitwise(bytes + start, n);
    CHECK(wrong == 0, "CRC-32 of every length 0..300 at 8 alignments equals the bitwise one (%d differ)", wrong);
}

static void test_frames(void) {
    uint32_t shape[2] = {3, 5};
    float v[15], back[15];
    for (int i = 0; i < 15; i++) v[i] = (float)(i * 0.37 - 2.1);
    v[4] = -0.0f;
    v[7] = 1e-40f; /* subnormal */
    sdfed_buffer buf = {0};
    sdfed_error err = {0};
    sdfed_code code = SDFED_CODE_NONE;
    CHECK(sdfed_frame_encode(SDFED_FRAME_UPDATE, 7, 32, 2, shape, v, &buf, &err) == SDFED_OK, "encode");
    CHECK(buf.size == sdfed_frame_size(2, shape) && buf.size == 16 + 8 + 60 + 4, "frame size %zu", buf.size);
    sdfed_frame f;
    CHECK(sdfed_frame_decode(buf.data, buf.size, 1000, &f, &code, &err) == SDFED_OK, "decode: %s", err.message);
    sdfed_frame_values(&f, back);
    CHECK(f.kind == SDFED_FRAME_UPDATE && f.round == 7 && f.samples == 32 && f.n_dims == 2 && f.shape[0] == 3 &&
              f.shape[1] == 5 && !memcmp(back, v, sizeof v),
          "a frame round-trips bit for bit");

    /* every single-byte corruption is refused */
    int all_caught = 1;
    for (size_t i = 0; i < buf.size; i++) {
        unsigned char keep = buf.data[i];
        buf.data[i] ^= 0x5a;
        if (sdfed_frame_decode(buf.data, buf.size, 1000, &f, &code, &err) == SDFED_OK) all_caught = 0;
        buf.data[i] = keep;
    }
    CHECK(all_caught, "every flipped byte is caught");
    buf.data[30] ^= 1;
    sdfed_frame_decode(buf.data, buf.size, 1000, &f, &code, &err);
    CHECK(!strcmp(code_name(code), "bad_crc"), "a flipped data bit is a CRC error (%s)", code_name(code));
    buf.data[30] ^= 1;
    CHECK(sdfed_frame_decode(buf.data, buf.size - 1, 1000, &f, &code, &err) && !strcmp(code_name(code), "bad_frame"),
          "a truncated frame is bad_frame");
    CHECK(sdfed_frame_decode(buf.data, buf.size, 10, &f, &code, &err) && !strcmp(code_name(code), "too_large"),
          "a frame above the value limit is too_large");
    CHECK(sdfed_frame_decode("garbage!garbage!garbage!", 24, 1000, &f, &code, &err) &&
              !strcmp(code_name(code), "bad_frame"),
          "garbage is bad_frame");
    sdfed_buffer_free(&buf);

    /* a NaN is refused even with a correct CRC */
    v[3] = NAN;
    sdfed_frame_encode(SDFED_FRAME_UPDATE, 7, 32, 2, shape, v, &buf, &err);
    CHECK(sdfed_frame_decode(buf.data, buf.size, 1000, &f, &code, &err) && !strcmp(code_name(code), "not_finite"),
          "NaN is not_finite");
    sdfed_buffer_free(&buf);
}

static int parse_from(int sender, const char *text, sdfed_message *m, sdfed_code *code, sdfed_error *err) {
    *code = SDFED_CODE_NONE;
    err->message[0] = '\0';
    return sdfed_message_parse(text, strlen(text), sender, 100, m, code, err);
}

/* a message a client sent */
static int parse(const char *text, sdfed_message *m, sdfed_code *code) {
    sdfed_error err;
    return parse_from(SDFED_SENT_BY_CLIENT, text, m, code, &err);
}

/* a message the server sent */
static int parse_reply(const char *text, sdfed_message *m, sdfed_code *code) {
    sdfed_error err;
    return parse_from(SDFED_SENT_BY_SERVER, text, m, code, &err);
}

static void test_messages(void) {
    sdfed_message m;
    sdfed_code code;
    CHECK(parse("{\"type\": \"hello\", \"protocol\": \"sdfed.v1\", \"token\": \"ab\", \"shard\": 3, \"encoding\": "
                "\"json\"}",
                &m, &code) == SDFED_OK &&
              m.type == SDFED_MSG_HELLO && m.shard == 3 && !m.binary && !strcmp(m.token, "ab"),
          "hello");
    CHECK(parse("{\"type\": \"hello\", \"protocol\": \"sdfed.v0\"}", &m, &code) &&
              !strcmp(code_name(code), "bad_protocol"),
          "another protocol version: %s", code_name(code));
    CHECK(
        parse("{\"type\": \"update\", \"round\": 4, \"samples\": 16, \"shape\": [2, 2], \"data\": [1, 2.5, -3, 1e-3]}",
              &m, &code) == SDFED_OK &&
            m.round == 4 && m.samples == 16 && m.n_values == 4 && m.values[1] == 2.5f,
        "a JSON update");
    sdfed_message_free(&m);
    CHECK(parse("{\"type\": \"update\", \"round\": 4, \"samples\": 16, \"shape\": [2, 2], \"data\": [1, 2]}", &m,
                &code) &&
              !strcmp(code_name(code), "bad_shape"),
          "data not matching the shape: %s", code_name(code));
    CHECK(parse("{\"type\": \"update\", \"round\": 4, \"samples\": 16, \"shape\": [1], \"data\": [1e39]}", &m, &code) &&
              !strcmp(code_name(code), "not_finite"),
          "a value that overflows a float: %s", code_name(code));
    CHECK(
        parse("{\"type\": \"update\", \"round\": 4, \"samples\": 16, \"shape\": [11, 11], \"data\": []}", &m, &code) &&
            !strcmp(code_name(code), "too_large"),
        "more values than the limit: %s", code_name(code));
    CHECK(parse("{\"type\": \"update\", \"round\": -1, \"samples\": 16}", &m, &code) &&
              !strcmp(code_name(code), "bad_message"),
          "a negative round: %s", code_name(code));
    CHECK(parse("{\"type\": \"update\", \"round\": \"4\", \"samples\": 16}", &m, &code) &&
              !strcmp(code_name(code), "bad_message"),
          "a string round");
    /* integers exactly: 2^53 is the largest a round may be, 2^53 + 1 is refused (a double would read it as 2^53) */
    CHECK(parse("{\"type\": \"update\", \"round\": 9007199254740992, \"samples\": 1, \"shape\": [1], \"data\": "
                "[0]}",
                &m, &code) == SDFED_OK &&
              m.round == 9007199254740992,
          "round 2^53");
    sdfed_message_free(&m);
    CHECK(parse("{\"type\": \"update\", \"round\": 9007199254740993, \"samples\": 1, \"shape\": [1], \"data\": "
                "[0]}",
                &m, &code) &&
              !strcmp(code_name(code), "bad_message"),
          "round 2^53 + 1: %s", code_name(code));
    CHECK(parse("{\"type\": \"update\", \"round\": 2.5, \"samples\": 1, \"shape\": [1], \"data\": [0]}", &m, &code) &&
              !strcmp(code_name(code), "bad_message"),
          "a fractional round: %s", code_name(code));
    CHECK(parse("{\"type\": \"update\", \"round\": 3.0e0, \"samples\": 1e1, \"shape\": [1], \"data\": [0]}", &m,
                &code) == SDFED_OK &&
              m.round == 3 && m.samples == 10,
          "integers written with a point or an exponent");
    sdfed_message_free(&m);
    /* data: a flat list of numbers */
    const char *not_flat[] = {
        "{\"type\": \"update\", \"round\": 0, \"samples\": 1, \"shape\": [2], \"data\": [1, \"2\"]}",
        "{\"type\": \"update\", \"round\": 0, \"samples\": 1, \"shape\": [2], \"data\": [1, [2]]}",
        "{\"type\": \"update\", \"round\": 0, \"samples\": 1, \"shape\": [2], \"data\": [null, true]}",
        "{\"type\": \"update\", \"round\": 0, \"samples\": 1, \"shape\": [1], \"data\": [{}]}",
        "{\"type\": \"update\", \"round\": 0, \"samples\": 1, \"shape\": [1], \"data\": \"0\"}",
        "{\"type\": \"update\", \"round\": 0, \"samples\": 1, \"shape\": [1], \"data\": {\"0\": 1}}",
        "{\"type\": \"update\", \"round\": 0, \"samples\": 1, \"shape\": [\"1\"], \"data\": [1]}",
        "{\"type\": \"update\", \"round\": 0, \"samples\": 1, \"shape\": [0.5], \"data\": [1]}",
    };
    for (size_t i = 0; i < sizeof not_flat / sizeof not_flat[0]; i++)
        CHECK(parse(not_flat[i], &m, &code) && !strcmp(code_name(code), "bad_message"), "%s: bad_message, not %s",
              not_flat[i], code_name(code));
    CHECK(parse("{\"type\": \"fly\"}", &m, &code) && !strcmp(code_name(code), "unknown_type"), "unknown type");
    CHECK(parse("[1, 2]", &m, &code) && !strcmp(code_name(code), "bad_message"), "not an object");
    CHECK(parse("{\"type\": ", &m, &code) && !strcmp(code_name(code), "bad_json"), "not JSON");
    CHECK(parse("{\"type\": \"metrics\", \"round\": 2, \"accuracy\": 1.5}", &m, &code) &&
              !strcmp(code_name(code), "bad_message"),
          "accuracy above 1");
    const char *bad_metrics[] = {
        "{\"type\": \"metrics\", \"round\": 2, \"loss\": 0.5}",                            /* no accuracy */
        "{\"type\": \"metrics\", \"round\": 2, \"accuracy\": null}",                       /* not a number */
        "{\"type\": \"metrics\", \"round\": 2, \"accuracy\": -0.01}",                      /* below 0 */
        "{\"type\": \"metrics\", \"round\": 2, \"accuracy\": 0.5, \"loss\": -1}",          /* a negative loss */
        "{\"type\": \"metrics\", \"round\": 2, \"accuracy\": 0.5, \"loss\": 1e7}",         /* past 1e6 */
        "{\"type\": \"metrics\", \"round\": 2, \"accuracy\": 0.5, \"test_samples\": -3}",  /* a negative count */
        "{\"type\": \"metrics\", \"round\": 2, \"accuracy\": 0.5, \"test_samples\": 2.5}", /* not a count */
        "{\"type\": \"metrics\", \"round\": 2, \"accuracy\": 0.5, \"step_ms\": []}",       /* no step time */
        "{\"type\": \"metrics\", \"round\": 2, \"accuracy\": 0.5, \"step_ms\": [0]}",      /* not > 0 */
        "{\"type\": \"metrics\", \"round\": 2, \"accuracy\": 0.5, \"step_ms\": [5, -1]}",  /* negative */
        "{\"type\": \"metrics\", \"round\": 2, \"accuracy\": 0.5, \"step_ms\": [4e6]}",    /* past an hour */
        "{\"type\": \"metrics\", \"round\": 2, \"accuracy\": 0.5, \"step_ms\": [\"5\"]}",  /* a string */
        "{\"type\": \"metrics\", \"round\": 2, \"accuracy\": 0.5, \"step_ms\": 5}",        /* not a list */
        /* past 16 step times */
        "{\"type\":\"metrics\",\"round\":2,\"accuracy\":0.5,\"step_ms\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}",
        "{\"type\": \"metrics\", \"round\": 2, \"accuracy\": 0.5, \"threads\": 0}",          /* no threads */
        "{\"type\": \"metrics\", \"round\": 2, \"accuracy\": 0.5, \"threads\": 1025}",       /* past 1024 */
        "{\"type\": \"metrics\", \"round\": 2, \"accuracy\": 0.5, \"kernels\": \"a b\"}",    /* a space */
        "{\"type\": \"metrics\", \"round\": 2, \"accuracy\": 0.5, \"kernels\": \"a\\\"b\"}", /* a quote */
    };
    for (size_t i = 0; i < sizeof bad_metrics / sizeof bad_metrics[0]; i++)
        CHECK(parse(bad_metrics[i], &m, &code) && !strcmp(code_name(code), "bad_message"), "%s: bad_message, not %s",
              bad_metrics[i], code_name(code));
    CHECK(parse("{\"type\": \"metrics\", \"round\": 2, \"accuracy\": 1, \"loss\": 1e6, \"test_samples\": 40}", &m,
                &code) == SDFED_OK &&
              m.accuracy == 1 && m.loss == 1e6 && m.test_samples == 40,
          "metrics at their bounds");
    CHECK(parse("{\"type\": \"metrics\", \"round\": 2, \"accuracy\": 1, \"step_ms\": [41.5, 3600000], "
                "\"threads\": 8, \"kernels\": \"simd128-relaxed\"}",
                &m, &code) == SDFED_OK &&
              m.n_step_ms == 2 && m.step_ms[0] == 41.5 && m.step_ms[1] == 3.6e6 && m.threads == 8 &&
              !strcmp(m.kernels, "simd128-relaxed"),
          "metrics with the device's figures");
    CHECK(
        parse_reply(
            "{\"type\": \"error\", \"code\": \"wrong_round\", \"message\": \"late\", \"round\": 3, \"next_round\": 4}",
            &m, &code) == SDFED_OK &&
            m.type == SDFED_MSG_ERROR && !strcmp(m.code, "wrong_round") && m.next_round == 4 && m.retry_after_ms == 0,
        "error");
    CHECK(parse_reply("{\"type\": \"error\", \"code\": \"server_error\", \"message\": \"disk\", \"retry_after\": 1500}",
                      &m, &code) == SDFED_OK &&
              m.retry_after_ms == 1500,
          "an error's retry_after (ms)");
    CHECK(parse_reply("{\"type\": \"wait\", \"round\": 2, \"reason\": \"too_few_clients\", \"retry_after\": 0}", &m,
                      &code) == SDFED_OK &&
              m.retry_after_ms == 0,
          "a wait's retry_after");
    CHECK(parse_reply("{\"type\": \"error\", \"code\": \"rate_limited\", \"message\": \"x\", \"retry_after\": -5}", &m,
                      &code) &&
              !strcmp(code_name(code), "bad_message"),
          "a negative retry_after is refused");
}

static void test_writer(void) {
    sdfed_buffer buf = {0};
    sdfed_json_writer w;
    float v[3] = {0.1f, -1e-30f, 3.4028235e38f};
    uint32_t shape[1] = {3};
    sdfed_jw_begin(&w, &buf, "update");
    sdfed_jw_int(&w, "round", 9);
    sdfed_jw_int(&w, "samples", 12);
    sdfed_jw_shape(&w, "shape", 1, shape);
    sdfed_jw_floats(&w, "data", v, 3);
    sdfed_jw_string(&w, "note", "quote \" backslash \\ newline \n");
    CHECK(sdfed_jw_end(&w, NULL) == SDFED_OK, "writer");
    sdfed_message m;
    sdfed_code code;
    sdfed_error err = {0};
    CHECK(sdfed_message_parse((const char *)buf.data, buf.size, SDFED_SENT_BY_CLIENT, 100, &m, &code, &err) == SDFED_OK,
          "reparse: %s", err.message);
    CHECK(m.type == SDFED_MSG_UPDATE && m.round == 9 && m.samples == 12 && m.n_values == 3 &&
              !memcmp(m.values, v, sizeof v),
          "floats written with 9 digits come back bit for bit");
    sdfed_message_free(&m);
    sdfed_buffer_free(&buf);
}

/* secure frames: a secagg message round-trips; magic, version, size, kind
 * and CRC are each refused with their code; round_start's "secure" and the
 * secagg messages parse */
static void test_secure_frames(void) {
    sdfed_buffer msg = {0}, buf = {0};
    sdfed_error err = {0};
    unsigned char mask[32], share[32];
    memset(mask, 1, sizeof mask);
    memset(share, 2, sizeof share);
    CHECK(sdfed_secagg_write_advertise(&msg, 5, mask, share, &err) == SDFED_OK, "advertise: %s", err.message);
    CHECK(sdfed_secure_frame_encode(msg.data, msg.size, &buf, &err) == SDFED_OK, "encode: %s", err.message);
    CHECK(buf.size == msg.size + SDFED_SECURE_OVERHEAD && sdfed_secure_frame_is(buf.data, buf.size), "frame size");
    const unsigned char *inner;
    size_t inner_len;
    sdfed_code code = SDFED_CODE_NONE;
    CHECK(sdfed_secure_frame_decode(buf.data, buf.size, &inner, &inner_len, &code, &err) == SDFED_OK &&
              inner_len == msg.size && !memcmp(inner, msg.data, msg.size),
          "decode gives the message back: %s", err.message);
    unsigned char *p = buf.data;
    p[buf.size - 20] ^= 1;
    CHECK(sdfed_secure_frame_decode(p, buf.size, &inner, &inner_len, &code, &err) && code == SDFED_CODE_BAD_CRC,
          "a flipped bit is bad_crc (%s)", code_name(code));
    p[buf.size - 20] ^= 1;
    p[4] = 2;
    CHECK(sdfed_secure_frame_decode(p, buf.size, &inner, &inner_len, &code, &err) && code == SDFED_CODE_BAD_FRAME,
          "version 2 is bad_frame (%s)", code_name(code));
    p[4] = 1;
    CHECK(sdfed_secure_frame_decode(p, 17, &inner, &inner_len, &code, &err) && code == SDFED_CODE_BAD_FRAME,
          "a frame shorter than a header is bad_frame");
    CHECK(!sdfed_secure_frame_is("SDFT", 4), "a tensor frame is no secure frame");
    unsigned char unknown[] = {'S', 'D', 'F', 'S', 1, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    uint32_t crc = sdfed_crc32(0, unknown, 14);
    for (int i = 0; i < 4; i++) unknown[14 + i] = (unsigned char)(crc >> (8 * i));
    CHECK(sdfed_secure_frame_decode(unknown, sizeof unknown, &inner, &inner_len, &code, &err) &&
              code == SDFED_CODE_BAD_FRAME,
          "an unknown kind is bad_frame");
    sdfed_buffer_free(&msg);
    sdfed_buffer_free(&buf);

    sdfed_message m;
    const char *start =
        "{\"type\": \"round_start\", \"round\": 2, \"global_sha256\": \"ab\", \"secure\": {\"place\": 3, "
        "\"n\": 10, \"k\": 8, \"t\": 5, \"min_inputs\": 6}}";
    CHECK(sdfed_message_parse(start, strlen(start), SDFED_SENT_BY_SERVER, 10, &m, &code, &err) == SDFED_OK &&
              m.secure && m.place == 3 && m.secure_n == 10 && m.secure_k == 8 && m.secure_t == 5 &&
              m.secure_min_inputs == 6,
          "round_start's secure: %s", err.message);
    sdfed_message_free(&m);
    const char *ack = "{\"type\": \"secagg_ack\", \"round\": 2, \"stage\": \"advertise\"}";
    CHECK(sdfed_message_parse(ack, strlen(ack), SDFED_SENT_BY_SERVER, 10, &m, &code, &err) == SDFED_OK &&
              !strcmp(m.stage, "advertise"),
          "secagg_ack: %s", err.message);
    const char *refusal = "{\"type\": \"secagg_refusal\", \"round\": 2, \"code\": \"bad_crc\", \"message\": \"x\"}";
    CHECK(sdfed_message_parse(refusal, strlen(refusal), SDFED_SENT_BY_CLIENT, 10, &m, &code, &err) &&
              code == SDFED_CODE_BAD_MESSAGE,
          "a secagg_refusal with another code is bad_message");
}

/* what the reader refuses reaches no field: a key twice, text with a NUL,
 * bytes that are not UTF-8; and a message of the other side's is refused
 * as such, before its fields are read */
static void test_strict_reading(void) {
    sdfed_message m;
    sdfed_code code;
    sdfed_error err;
    CHECK(
        parse_from(SDFED_SENT_BY_CLIENT,
                   "{\"type\": \"update\", \"round\": 0, \"round\": 9, \"samples\": 1, \"shape\": [1], \"data\": [0]}",
                   &m, &code, &err) &&
            code == SDFED_CODE_BAD_JSON && strstr(err.message, "'round'"),
        "a repeated key is bad_json, named: %s %s", code_name(code), err.message);
    CHECK(parse_from(SDFED_SENT_BY_CLIENT, "{\"type\": \"heartbeat\\u0000x\"}", &m, &code, &err) &&
              code == SDFED_CODE_BAD_MESSAGE,
          "a type with a NUL in it is no heartbeat: %s", code_name(code));
    CHECK(parse_from(SDFED_SENT_BY_CLIENT, "{\"type\": \"hello\", \"protocol\": \"sdfed.v1\\u0000junk\"}", &m, &code,
                     &err) &&
              code == SDFED_CODE_BAD_MESSAGE && strstr(err.message, "'protocol'"),
          "a protocol with a NUL in it is not sdfed.v1: %s %s", code_name(code), err.message);
    CHECK(parse_from(SDFED_SENT_BY_CLIENT, "{\"type\": \"hello\", \"protocol\": \"sdfed.v1\", \"kind\": \"a\\u0000\"}",
                     &m, &code, &err) &&
              code == SDFED_CODE_BAD_MESSAGE && strstr(err.message, "'kind'"),
          "nor is any text: %s", err.message);
    CHECK(parse_from(SDFED_SENT_BY_CLIENT,
                     "{\"type\": \"hello\", \"protocol\": \"sdfed.v1\", \"join_key\": \"K\\u0000x\"}", &m, &code,
                     &err) == SDFED_OK &&
              m.join_key_len == 3 && !memcmp(m.join_key, "K\0x", 3),
          "a join key keeps its NUL (a wrong key, compared whole): %s", err.message);
    CHECK(parse_from(SDFED_SENT_BY_CLIENT, "{\"type\": \"hello\", \"protocol\": \"sdfed.v1\", \"kind\": \"caf\xe9\"}",
                     &m, &code, &err) &&
              code == SDFED_CODE_BAD_JSON && strstr(err.message, "UTF-8"),
          "bytes that are not UTF-8 are bad_json: %s %s", code_name(code), err.message);
    const char *server_only[] = {"{\"type\": \"welcome\"}", "{\"type\": \"ack\"}", "{\"type\": \"round_start\"}",
                                 "{\"type\": \"error\"}", "{\"type\": \"done\", \"rounds\": -1}"};
    for (size_t i = 0; i < sizeof server_only / sizeof server_only[0]; i++)
        CHECK(parse_from(SDFED_SENT_BY_CLIENT, server_only[i], &m, &code, &err) && code == SDFED_CODE_BAD_MESSAGE &&
                  strstr(err.message, "clients do not send"),
              "%s from a client: refused as a server's message, not for its fields: %s", server_only[i], err.message);
    CHECK(parse_from(SDFED_SENT_BY_SERVER, "{\"type\": \"hello\", \"protocol\": \"sdfed.v1\"}", &m, &code, &err) &&
              code == SDFED_CODE_BAD_MESSAGE && strstr(err.message, "servers do not send"),
          "hello from a server: %s", err.message);
    CHECK(parse_from(SDFED_SENT_BY_SERVER, "{\"type\": \"heartbeat\"}", &m, &code, &err) == SDFED_OK &&
              parse_from(SDFED_SENT_BY_CLIENT, "{\"type\": \"heartbeat\"}", &m, &code, &err) == SDFED_OK,
          "a heartbeat goes both ways");
}

int main(void) {
    test_codes();
    test_crc();
    test_frames();
    test_secure_frames();
    test_messages();
    test_writer();
    test_strict_reading();
    return check_report("test_protocol");
}
