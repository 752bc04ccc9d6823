/* The one JSON writer: its layout byte for byte (the protocol, /status,
 * the demo shards and the logs are compared as text), nesting, escapes,
 * base64, and what the reader reads back. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/json.h"
#include "base/json_writer.h"
#include "check.h"

/* the writer's text, NUL-terminated, in text (cap bytes) */
static int written(sdfed_buffer *b, char *text, size_t cap) {
    if (b->size >= cap) return 0;
    memcpy(text, b->data, b->size);
    text[b->size] = '\0';
    sdfed_buffer_free(b);
    return 1;
}

static void test_layout(void) {
    sdfed_buffer b = {0};
    sdfed_json_writer w;
    uint32_t shape[2] = {1, 512};
    const char *names[2] = {"a", "b"};
    sdfed_jw_begin(&w, &b, "hello");
    sdfed_jw_int(&w, "n", -3);
    sdfed_jw_double(&w, "x", 0.1);
    sdfed_jw_double(&w, "inf", INFINITY);
    sdfed_jw_fixed(&w, "ts", 1795000000123.0 / 1000, 3);
    sdfed_jw_fixed(&w, "nan", NAN, 2);
    sdfed_jw_bool(&w, "yes", 1);
    sdfed_jw_null(&w, "none");
    sdfed_jw_object(&w, "inner");
    sdfed_jw_array(&w, "empty");
    sdfed_jw_close(&w);
    sdfed_jw_array(&w, "rows");
    sdfed_jw_object(&w, NULL);
    sdfed_jw_int(&w, "r", 1);
    sdfed_jw_close(&w);
    sdfed_jw_int(&w, NULL, 2);
    sdfed_jw_close(&w);
    sdfed_jw_close(&w);
    sdfed_jw_shape(&w, "shape", 2, shape);
    sdfed_jw_strings(&w, "names", names, 2);
    sdfed_jw_raw(&w, NULL, "", 0);
    sdfed_jw_raw(&w, NULL, "\"spliced\": true", 15);
    CHECK(sdfed_jw_end(&w, NULL) == SDFED_OK, "written");
    char text[512];
    CHECK(written(&b, text, sizeof text) &&
              !strcmp(text, "{\"type\": \"hello\", \"n\": -3, \"x\": 0.1, \"inf\": 0, \"ts\": 1795000000.123, "
                            "\"nan\": 0.00, \"yes\": true, \"none\": null, \"inner\": {\"empty\": [], \"rows\": "
                            "[{\"r\": 1}, 2]}, \"shape\": [1, 512], \"names\": [\"a\", \"b\"], \"spliced\": true}"),
          "the layout: %s", text);
}

static void test_escapes_and_base64(void) {
    sdfed_buffer b = {0};
    sdfed_json_writer w;
    sdfed_jw_begin(&w, &b, NULL);
    sdfed_jw_string(&w, "s", "quote \" backslash \\ newline \n");
    sdfed_jw_base64(&w, "one", "M", 1);
    sdfed_jw_base64(&w, "two", "Ma", 2);
    sdfed_jw_base64(&w, "three", "Man", 3);
    sdfed_jw_base64(&w, "none", "", 0);
    CHECK(sdfed_jw_end(&w, NULL) == SDFED_OK, "written");
    sdfed_json j;
    char s[64] = "";
    CHECK(sdfed_json_parse(&j, (const char *)b.data, b.size, NULL) == SDFED_OK &&
              sdfed_json_string(&j, sdfed_json_get(&j, 0, "s"), s, sizeof s) >= 0 &&
              !strcmp(s, "quote \" backslash \\ newline \n"),
          "a string comes back through the reader (%s)", s);
    sdfed_json_free(&j);
    char text[256];
    CHECK(written(&b, text, sizeof text) && strstr(text, "\\u000a") &&
              strstr(text, "\"one\": \"TQ==\", \"two\": \"TWE=\", \"three\": \"TWFu\", \"none\": \"\""),
          "escapes and base64: %s", text);
}

/* formatted strings escaped like any other, short or longer than the writer's own room */
static void test_formatted_strings(void) {
    char path[1200];
    memset(path, 'p', sizeof path - 1);
    path[sizeof path - 1] = '\0';
    path[3] = '"';
    sdfed_buffer b = {0};
    sdfed_json_writer w;
    sdfed_jw_begin(&w, &b, NULL);
    sdfed_jw_stringf(&w, "short", "round %d: \"%s\"", 7, "a\\b");
    sdfed_jw_stringf(&w, "long", "cannot read %s", path);
    CHECK(sdfed_jw_end(&w, NULL) == SDFED_OK, "written");
    const char short_one[] = "{\"short\": \"round 7: \\\"a\\\\b\\\"\", ";
    CHECK(b.size > sizeof short_one && !memcmp(b.data, short_one, sizeof short_one - 1), "a short one: %.40s",
          (const char *)b.data);
    sdfed_json j;
    char s[1300] = "", want[1300];
    snprintf(want, sizeof want, "cannot read %s", path);
    CHECK(sdfed_json_parse(&j, (const char *)b.data, b.size, NULL) == SDFED_OK &&
              sdfed_json_string(&j, sdfed_json_get(&j, 0, "long"), s, sizeof s) >= 0 && !strcmp(s, want),
          "a long one comes back through the reader (%zu bytes)", strlen(s));
    sdfed_json_free(&j);
    sdfed_buffer_free(&b);
}

int main(void) {
    if (check_case("layout")) test_layout();
    if (check_case("escapes_and_base64")) test_escapes_and_base64();
    if (check_case("formatted_strings")) test_formatted_strings();
    return check_report("test_json_writer");
}
