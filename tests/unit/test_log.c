/* Tests of native/log.c (native only): a line is one JSON object, its "ts"
 * and "event" first and then the fields as the writer wrote them, in the
 * layout the integration tests grep ("event": "x", "round": 3); text with
 * quotes, backslashes and newlines comes back through a JSON reader as it
 * went in; a line without fields is the event alone. stderr is pointed at
 * a temporary file while the lines are written. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/json.h"
#include "check.h"
#include "native/log.h"

#define AWKWARD "\"a\\b\"\n\tthen more" /* a quote, a backslash, a newline, a tab */

/* The lines written to stderr by write_lines, into text (cap bytes, NUL-terminated); 0 when they cannot be read. */
static size_t captured(void (*write_lines)(void), char *text, size_t cap) {
    FILE *file = tmpfile();
    if (!file) return 0;
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(fileno(file), STDERR_FILENO);
    write_lines();
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(file);
    size_t n = fread(text, 1, cap - 1, file);
    text[n] = '\0';
    fclose(file);
    return n;
}

static void write_round_lines(void) {
    native_log_line line;
    native_log_open(&line, "round_end");
    sdfed_jw_int(&line.w, "round", 3);
    sdfed_jw_fixed(&line.w, "aggregation_ms", 1.23456, 3);
    sdfed_jw_double(&line.w, "clip_norm", 0.5);
    sdfed_jw_bool(&line.w, "lost", 1);
    sdfed_jw_stringf(&line.w, "message", "unmasking failed: %s", AWKWARD);
    native_log_close(&line);
    native_log("stopping");
}

/* The line of text that starts at *at, NUL-terminated in place; *at moves past it. */
static char *next_line(char **at) {
    char *line = *at, *end = strchr(line, '\n');
    if (!end) return NULL;
    *end = '\0';
    *at = end + 1;
    return line;
}

static void test_lines(void) {
    char text[2048];
    CHECK(captured(write_round_lines, text, sizeof text) > 0, "the lines were captured");
    char *at = text, *first = next_line(&at), *second = next_line(&at);
    CHECK(first && second && !*at, "two lines: %s", text);
    if (!first || !second) return;
    CHECK(!strncmp(first, "{\"ts\": ", 7) &&
              strstr(first, ", \"event\": \"round_end\", \"round\": 3, \"aggregation_ms\": 1.235, \"clip_norm\": 0.5, "
                            "\"lost\": true, \"message\": \"unmasking failed: "),
          "the layout: %s", first);
    sdfed_json j;
    char message[128] = "";
    double ts = 0;
    CHECK(sdfed_json_parse(&j, first, strlen(first), NULL) == SDFED_OK &&
              sdfed_json_number(&j, sdfed_json_get(&j, 0, "ts"), &ts) == 0 && ts > 1.7e9 &&
              sdfed_json_string(&j, sdfed_json_get(&j, 0, "message"), message, sizeof message) >= 0 &&
              !strcmp(message, "unmasking failed: " AWKWARD),
          "the line parses and its message comes back (%s): %s", message, first);
    sdfed_json_free(&j);
    const char *event = strstr(second, ", \"event\"");
    CHECK(!strncmp(second, "{\"ts\": ", 7) && event && !strcmp(event, ", \"event\": \"stopping\"}"),
          "the event alone: %s", second);
}

int main(void) {
    if (check_case("lines")) test_lines();
    return check_report("test_log");
}
