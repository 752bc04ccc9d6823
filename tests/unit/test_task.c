/* Task files' own text (fed/task.h): name, description, classes, template,
 * prompt_init, demo, background.
 *  - the defaults: no model, data set or classes (the host's), the default
 *    template;
 *  - a task with every key parses, and sdfed_task_write's output parses
 *    back to the same task and is written again byte for byte (as the
 *    welcome carries it to the clients, the browser's wasm included);
 *  - every bad value is an error naming its key (a key given twice, text
 *    that is not UTF-8 or holds a \u0000 too), and a task that fails
 *    halfway is left at its defaults (nothing leaks: the sanitizer build);
 *  - 5000 classes with long names parse and round-trip: the classes live
 *    on the heap, not in the task (the wasm stack is small);
 *  - the background is white unless "#rrggbb" says otherwise (either case),
 *    written out in lower case;
 *  - secure_aggregation: off and not written without the key (so every
 *    existing task writes as before); {} turns it on with the defaults
 *    (dropout_rate 0.33, corrupt_rate 0.05, clip 0.5, quant_bits 16,
 *    ring_bits 32, max_weight 4096, no noise, no stage dropouts); every key
 *    read and written back; false and null are off; a bad value names its
 *    key; a ring whose sum could wrap is refused naming ring_bits,
 *    quant_bits and max_weight and the least ring_bits that holds; median,
 *    trimmed mean and the server's clipping or noise are refused with
 *    secure aggregation, saying why, and allowed without it. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fed/task.h"

static int parse(sdfed_task *t, const char *json, sdfed_error *err) {
    return sdfed_task_parse(t, json, strlen(json), err);
}

/* json written by sdfed_task_write (NUL-terminated, heap), or NULL */
static char *write_task(const sdfed_task *t, const char *model_url) {
    sdfed_buffer b = {0};
    sdfed_error err = {0};
    if (sdfed_task_write(t, model_url, &b, &err) != SDFED_OK) {
        sdfed_buffer_free(&b);
        return NULL;
    }
    char *s = malloc(b.size + 1);
    memcpy(s, b.data, b.size);
    s[b.size] = '\0';
    sdfed_buffer_free(&b);
    return s;
}

static int same_classes(const sdfed_task *a, const sdfed_task *b) {
    if (sdfed_task_class_count(a) != sdfed_task_class_count(b)) return 0;
    for (int i = 0; i < sdfed_task_class_count(a); i++)
        if (strcmp(sdfed_task_class_name(a, i), sdfed_task_class_name(b, i)) ||
            strcmp(sdfed_task_class_text(a, i), sdfed_task_class_text(b, i)))
            return 0;
    return 1;
}

/* t written, parsed back and written again: the same text, the same task */
static void check_round_trip(const sdfed_task *t, const char *what) {
    char *first = write_task(t, NULL);
    sdfed_task back;
    sdfed_error err = {0};
    int rc = first ? parse(&back, first, &err) : SDFED_ERR_NOMEM;
    CHECK(rc == SDFED_OK, "%s: the written task parses: %s", what, err.message);
    if (rc == SDFED_OK) {
        char *second = write_task(&back, NULL);
        CHECK(second && strcmp(first, second) == 0, "%s: written again byte for byte", what);
        CHECK(same_classes(t, &back), "%s: the same classes", what);
        CHECK(!strcmp(sdfed_task_name(t), sdfed_task_name(&back)) &&
                  !strcmp(sdfed_task_description(t), sdfed_task_description(&back)) &&
                  !strcmp(sdfed_task_template(t), sdfed_task_template(&back)) && !t->prompt_init == !back.prompt_init &&
                  (!t->prompt_init || !strcmp(t->prompt_init, back.prompt_init)) && t->demo == back.demo &&
                  !memcmp(t->background, back.background, sizeof t->background),
              "%s: the same name, description, template, prompt_init, demo and background", what);
        free(second);
    }
    sdfed_task_free(&back);
    free(first);
}

static void test_defaults(void) {
    sdfed_task t;
    sdfed_error err = {0};
    CHECK(parse(&t, "{}", &err) == SDFED_OK, "{} parses: %s", err.message);
    /* the model, the data set and its classes are the host's (native/task_file.h) */
    CHECK(!t.model[0] && !t.dataset[0] && sdfed_task_class_count(&t) == 0,
          "no model, no data set, no classes: the host's");
    CHECK(!strcmp(sdfed_task_template(&t), "a photo of a {}."), "the default template");
    CHECK(!strcmp(sdfed_task_name(&t), "") && !strcmp(sdfed_task_description(&t), ""), "no name, no description");
    CHECK(t.prompt_init == NULL && t.demo == 1, "no prompt_init; demo shards on");
    CHECK(t.background[0] == 255 && t.background[1] == 255 && t.background[2] == 255, "a white background");
    char *json = write_task(&t, NULL);
    CHECK(json && !strstr(json, "\"classes\"") && !strstr(json, "\"model\"") && !strstr(json, "\"dataset\"") &&
              strstr(json, "\"template\": \"a photo of a {}.\"") && strstr(json, "\"demo\": true") &&
              strstr(json, "\"background\": \"#ffffff\"") && !strstr(json, "prompt_init"),
          "the defaults are written out (no model, data set, classes or prompt_init): %s", json ? json : "(none)");
    free(json);
    check_round_trip(&t, "the default task");
    sdfed_task_free(&t);
}

static void test_every_key(void) {
    const char *json =
        "{\"name\": \"Clothes \\\"2024\\\"\", \"description\": \"Ten kinds of clothing <b>\\u00e9t\\u00e9</b>\","
        " \"classes\": [{\"name\": \"T-shirt/top\", \"text\": \"tee\"}, \"Trouser\", \"Pullover\", \"Dress\", \"Coat\","
        " {\"text\": \"sandal shoe\", \"name\": \"Sandal\"}, \"Shirt\", \"Sneaker\", \"Bag\", \"Ankle boot\"],"
        " \"template\": \"a grey photo of the {}, a garment.\", \"prompt_init\": \"a photo of a\", \"demo\": false,"
        " \"background\": \"#0A80fE\"}";
    sdfed_task t;
    sdfed_error err = {0};
    CHECK(parse(&t, json, &err) == SDFED_OK && sdfed_task_validate(&t, &err) == SDFED_OK, "a task with every key: %s",
          err.message);
    CHECK(!strcmp(sdfed_task_name(&t), "Clothes \"2024\"") &&
              !strcmp(sdfed_task_description(&t), "Ten kinds of clothing <b>\xc3\xa9t\xc3\xa9</b>"),
          "name and description decoded");
    CHECK(sdfed_task_class_count(&t) == 10 && !strcmp(sdfed_task_class_name(&t, 0), "T-shirt/top") &&
              !strcmp(sdfed_task_class_text(&t, 0), "tee") && !strcmp(sdfed_task_class_text(&t, 1), "Trouser") &&
              !strcmp(sdfed_task_class_name(&t, 5), "Sandal") && !strcmp(sdfed_task_class_text(&t, 5), "sandal shoe"),
          "classes: strings are name and text, objects give the text");
    CHECK(!strcmp(sdfed_task_template(&t), "a grey photo of the {}, a garment.") && t.prompt_init &&
              !strcmp(t.prompt_init, "a photo of a") && t.demo == 0,
          "template, prompt_init, demo");
    CHECK(t.background[0] == 0x0a && t.background[1] == 0x80 && t.background[2] == 0xfe, "background #0A80fE");
    char *written = write_task(&t, NULL);
    CHECK(written && strstr(written, "\"background\": \"#0a80fe\""), "the background written in lower case");
    free(written);
    check_round_trip(&t, "a task with every key");
    /* a copy borrows the text; only the original is freed */
    sdfed_task copy = t;
    CHECK(!strcmp(sdfed_task_class_text(&copy, 0), "tee"), "a copy reads the same classes");
    sdfed_task_free(&t);
    CHECK(sdfed_task_class_count(&t) == 0 && t.n_classes == 0 && t.name == NULL, "freed: back at the defaults");
}

/* json must fail sdfed_task_parse (or, parsed, sdfed_task_validate) with a
 * message holding want */
static void expect_error(const char *json, const char *want) {
    sdfed_task t;
    sdfed_error err = {0};
    int rc = parse(&t, json, &err);
    if (rc == SDFED_OK) rc = sdfed_task_validate(&t, &err);
    CHECK(rc != SDFED_OK && strstr(err.message, want), "%s: wanted an error naming %s, got '%s'", json, want,
          rc ? err.message : "no error");
    sdfed_task_free(&t);
}

static void test_errors(void) {
    expect_error("{\"name\": 3}", "key 'name'");
    expect_error("{\"stretch\": \"median\"}", "key 'stretch'");
    expect_error("{\"description\": [\"x\"]}", "key 'description'");
    expect_error("{\"classes\": []}", "key 'classes' must be");
    expect_error("{\"classes\": \"Bag\"}", "key 'classes' must be");
    expect_error("{\"classes\": [3]}", "key 'classes[0]' must be");
    expect_error("{\"classes\": [\"Bag\", \"\"]}", "key 'classes[1]' must be");
    expect_error("{\"classes\": [\"Bag\", {\"name\": \"Coat\", \"txt\": \"coat\"}]}", "unknown key 'classes[1].txt'");
    expect_error("{\"classes\": [{\"text\": \"bag\"}]}", "key 'classes[0].name' must be");
    expect_error("{\"classes\": [{\"name\": \"Bag\", \"text\": \"\"}]}", "key 'classes[0].text' must be");
    expect_error("{\"classes\": [{\"name\": 1}]}", "key 'classes[0].name' must be");
    expect_error("{\"classes\": [\"a\", \"b\", \"c\", \"d\", \"e\", \"f\", \"g\", \"h\", \"i\", \"a\"]}",
                 "key 'classes' names the class 'a' twice");
    expect_error("{\"classes\": [\"Bag\", {\"name\": \"Bag\", \"text\": \"purse\"}]}",
                 "key 'classes' names the class 'Bag' twice");
    /* Fashion-MNIST's labels are its ten classes */
    expect_error("{\"classes\": [\"a\", \"b\", \"c\", \"d\", \"e\", \"f\", \"g\", \"h\", \"i\", \"j\"],"
                 " \"partition\": {\"kind\": \"pathological\", \"classes_per_client\": 11}}",
                 "key 'partition.classes_per_client' exceeds the 10 classes");
    expect_error("{\"template\": \"a photo of a\"}", "key 'template' must be");
    expect_error("{\"template\": \"{} or {}\"}", "key 'template' must be");
    expect_error("{\"template\": \"\"}", "key 'template' must be");
    expect_error("{\"template\": 1}", "key 'template' must be");
    expect_error("{\"prompt_init\": \"\"}", "key 'prompt_init' must be");
    expect_error("{\"prompt_init\": [\"a\"]}", "key 'prompt_init' must be");
    expect_error("{\"demo\": \"yes\"}", "key 'demo' must be true or false");
    expect_error("{\"demo\": 1}", "key 'demo' must be true or false");
    expect_error("{\"background\": \"white\"}", "key 'background' must be a colour \"#rrggbb\"");
    expect_error("{\"background\": \"#fff\"}", "key 'background' must be");
    expect_error("{\"background\": \"#ffffff0\"}", "key 'background' must be");
    expect_error("{\"background\": \"ffffff\"}", "key 'background' must be");
    expect_error("{\"background\": \"#fffffg\"}", "key 'background' must be");
    expect_error("{\"background\": \"# fffff\"}", "key 'background' must be");
    expect_error("{\"background\": [255, 255, 255]}", "key 'background' must be");
    /* a failure after text was read: the task is left at its defaults */
    sdfed_task t;
    sdfed_error err = {0};
    const char *late = "{\"name\": \"n\", \"classes\": [\"a\", \"b\"], \"template\": \"x {}\", \"prompt_init\": \"w\","
                       " \"description\": \"d\", \"rounds\": \"ten\"}";
    CHECK(parse(&t, late, &err) != SDFED_OK && strstr(err.message, "key 'rounds'") && t.name == NULL &&
              t.n_classes == 0 && t.template_text == NULL && t.prompt_init == NULL && t.description == NULL,
          "a late error leaves the defaults: %s", err.message);
    /* JSON that does not parse: the task is at its defaults too */
    memset(&t, 0xff, sizeof t);
    CHECK(parse(&t, "{\"rounds\": 3,", &err) != SDFED_OK && t.name == NULL && t.n_classes == 0 && t.rounds == 50,
          "bad JSON leaves the defaults: %s", err.message);
    /* a key given twice is refused, named: neither value is the task's */
    CHECK(parse(&t, "{\"name\": \"a\", \"name\": \"b\", \"classes\": [\"x\"], \"classes\": [\"y\", \"z\"]}", &err) !=
                  SDFED_OK &&
              strstr(err.message, "'name'") && t.name == NULL && sdfed_task_class_count(&t) == 0,
          "a repeated key: %s", err.message);
    expect_error("{\"rounds\": 2, \"rounds\": 3}", "key 'rounds' twice");
    expect_error("{\"partition\": {\"kind\": \"iid\", \"kind\": \"dirichlet\"}}", "key 'kind' twice");
    /* text is UTF-8, without a NUL */
    expect_error("{\"rounds\": 2, \"name\": \"caf\xe9\"}", "invalid UTF-8 at byte 26, in the value of 'name'");
    expect_error("{\"classes\": [\"Bag\", \"\xc0\xaf\"]}", "in the value of 'classes'");
    expect_error("{\"classes\": [\"Bag\"]}", "one class ('Bag'): a task needs at least two classes");
    expect_error("{\"name\": \"a\\u0000b\"}", "key 'name' must be");
    expect_error("{\"template\": \"a {}\\u0000\"}", "key 'template' must be");
    expect_error("{\"classes\": [\"Bag\", \"Coat\\u0000\"]}", "key 'classes[1]' must be");
    expect_error("{\"dataset\": \"fmnist\\u0000x\"}", "key 'dataset' must be");
    /* the partition's limit on clients, where 'clients' is read */
    expect_error("{\"clients\": 100000}", "key 'clients' must be an integer in 1..65536");
}

static void test_set_classes(void) {
    sdfed_task t;
    sdfed_task_defaults(&t);
    snprintf(t.dataset, sizeof t.dataset, "folder");
    CHECK(sdfed_task_class_count(&t) == 0, "a dataset whose classes are not known yet has none");
    const char *names[3] = {"daisy", "rose", "sun flower"}, *texts[3] = {NULL, "red rose", NULL};
    sdfed_error err = {0};
    CHECK(sdfed_task_set_classes(&t, names, texts, 3, &err) == SDFED_OK && sdfed_task_class_count(&t) == 3 &&
              !strcmp(sdfed_task_class_text(&t, 0), "daisy") && !strcmp(sdfed_task_class_text(&t, 1), "red rose"),
          "set: texts default to the names: %s", err.message);
    const char *twice[2] = {"rose", "rose"};
    CHECK(sdfed_task_set_classes(&t, twice, NULL, 2, &err) != SDFED_OK && strstr(err.message, "'classes'") &&
              sdfed_task_class_count(&t) == 3,
          "duplicates refused, the classes kept: %s", err.message);
    CHECK(sdfed_task_set_classes(&t, names, NULL, 1, &err) != SDFED_OK &&
              strstr(err.message, "one class ('daisy'): a task needs at least two classes") &&
              sdfed_task_class_count(&t) == 3,
          "one class refused, named, the classes kept: %s", err.message);
    sdfed_task_free(&t);
}

static void test_many_classes(void) {
    enum { N = 5000 };
    sdfed_buffer b = {0};
    sdfed_sink sink = sdfed_buffer_sink(&b);
    sdfed_sink_printf(sink, "{\"dataset\": \"fashion-mnist\", \"name\": \"many\", \"classes\": [");
    for (int i = 0; i < N; i++)
        sdfed_sink_printf(sink,
                          "%s{\"name\": \"class number %05d with a rather long name to fill the heap\","
                          " \"text\": \"text %d\"}",
                          i ? ", " : "", i, i);
    sdfed_sink_printf(sink, "]}");
    sdfed_task t;
    sdfed_error err = {0};
    CHECK(sdfed_task_parse(&t, (const char *)b.data, b.size, &err) == SDFED_OK && sdfed_task_class_count(&t) == N &&
              !strcmp(sdfed_task_class_text(&t, N - 1), "text 4999"),
          "%d classes (%zu bytes) parse: %s", N, b.size, err.message);
    check_round_trip(&t, "5000 classes");
    sdfed_task_free(&t);
    sdfed_buffer_free(&b);
}

/* The stretch reading: the method's own (mean) unless the task says, and
 * written out */
static void test_stretch(void) {
    sdfed_task t;
    sdfed_error err = {0};
    CHECK(parse(&t, "{}", &err) == SDFED_OK && sdfed_task_method_config(&t).objective.stretch == SDFED_STRETCH_MEAN,
          "stretch: the mean by default");
    char *json = write_task(&t, NULL);
    CHECK(json && strstr(json, "\"stretch\": \"mean\""), "the default written out: %s", json);
    free(json);
    CHECK(parse(&t, "{\"stretch\": \"sum\"}", &err) == SDFED_OK &&
              sdfed_task_method_config(&t).objective.stretch == SDFED_STRETCH_SUM,
          "stretch: sum: %s", err.message);
    check_round_trip(&t, "stretch sum");
    sdfed_task_free(&t);
}

/* FedOTP's transport: its scripts' defaults, every setting read and written
 * back, balanced moving all the mass unless told otherwise (and refused
 * with less), bad values refused naming the setting */
static void test_transport(void) {
    sdfed_task t;
    sdfed_error err = {0};
    CHECK(parse(&t, "{\"method\": \"fedotp\"}", &err) == SDFED_OK, "fedotp: %s", err.message);
    sdfed_method_config c = sdfed_task_method_config(&t);
    CHECK(c.method == SDFED_METHOD_FEDOTP && c.transport.kind == SDFED_TRANSPORT_PARTIAL &&
              c.transport.epsilon == 0.1 && c.transport.mass == 0.8 && c.transport.max_iterations == 100 &&
              c.transport.threshold == 1e-3,
          "fedotp's transport by default: partial, epsilon 0.1, mass 0.8, 100 iterations, threshold 1e-3");
    char *json = write_task(&t, NULL);
    CHECK(json && strstr(json, "\"transport\": {\"kind\": \"partial\", \"epsilon\": 0.1, \"mass\": 0.8, "
                               "\"iterations\": 100, \"threshold\": 0.001}"),
          "the transport written out: %s", json);
    free(json);
    sdfed_task_free(&t);
    CHECK(parse(&t,
                "{\"method\": \"fedotp\", \"transport\": {\"kind\": \"balanced\", \"epsilon\": 0.01, "
                "\"iterations\": 30, \"threshold\": 0}}",
                &err) == SDFED_OK &&
              sdfed_task_validate(&t, &err) == SDFED_OK,
          "balanced: %s", err.message);
    c = sdfed_task_method_config(&t);
    CHECK(c.transport.kind == SDFED_TRANSPORT_BALANCED && c.transport.mass == 1.0 && c.transport.epsilon == 0.01 &&
              c.transport.max_iterations == 30 && c.transport.threshold == 0.0,
          "balanced moves mass 1; epsilon, iterations and threshold as given");
    check_round_trip(&t, "balanced transport");
    sdfed_task_free(&t);
    expect_error("{\"transport\": {\"kind\": \"balanced\", \"mass\": 0.5}}", "key 'transport.mass' must be 1");
    expect_error("{\"transport\": {\"kind\": \"unbalanced\"}}", "key 'transport.kind'");
    expect_error("{\"transport\": {\"epsilon\": 0}}", "key 'transport.epsilon'");
    expect_error("{\"transport\": {\"mass\": 1.5}}", "key 'transport.mass'");
    expect_error("{\"transport\": {\"iterations\": 0}}", "key 'transport.iterations'");
    expect_error("{\"transport\": {\"eps\": 0.1}}", "unknown key 'transport.eps'");
    expect_error("{\"transport\": 0.1}", "key 'transport'");
}

/* A folder task as clients are told of it: "folder", the host's paths left
 * out; read back, it names no folders */
static void test_client_form(void) {
    sdfed_task t, back;
    sdfed_error err = {0};
    CHECK(parse(&t,
                "{\"dataset\": {\"train\": \"/srv/host/train\", \"test\": \"/srv/host/test\"}, "
                "\"classes\": [\"cat\", \"dog\"]}",
                &err) == SDFED_OK,
          "a folder task: %s", err.message);
    char *json = write_task(&t, "/model/x.gguf");
    CHECK(json && strstr(json, "\"dataset\": \"folder\"") && !strstr(json, "/srv/host") &&
              strstr(json, "\"model\": \"/model/x.gguf\""),
          "the clients' form: the model's URL, \"folder\", no host path: %s", json);
    CHECK(parse(&back, json, &err) == SDFED_OK && !strcmp(back.dataset, "folder") && !back.data_train[0] &&
              !back.data_test[0],
          "read back: a folder task naming no folders: %s", err.message);
    free(json);
    sdfed_task_free(&back);
    sdfed_task_free(&t);
    /* a data set's name is the host's to know (native/task_file.h refuses one it has not) */
    CHECK(parse(&t, "{\"dataset\": \"folders\"}", &err) == SDFED_OK && !strcmp(t.dataset, "folders"),
          "a data set's name is kept as named: %s", err.message);
    sdfed_task_free(&t);
    expect_error("{\"dataset\": 3}", "key 'dataset'");
}

static void test_secure_aggregation(void) {
    sdfed_task t;
    sdfed_error err = {0};
    CHECK(parse(&t, "{}", &err) == SDFED_OK && !t.secagg.on, "secure aggregation is off by default");
    char *json = write_task(&t, NULL);
    CHECK(json && !strstr(json, "secure_aggregation"), "and not written");
    free(json);
    sdfed_task_free(&t);
    CHECK(parse(&t, "{\"secure_aggregation\": {}}", &err) == SDFED_OK && sdfed_task_validate(&t, &err) == SDFED_OK,
          "{}: %s", err.message);
    const sdfed_task_secagg *s = &t.secagg;
    CHECK(s->on && s->dropout_rate == 0.33 && s->corrupt_rate == 0.05 && s->clip == 0.5 && s->l2_clip == 0 &&
              s->quant_bits == 16 && s->ring_bits == 32 && s->max_weight == 4096 && s->epsilon == 0 &&
              s->delta == 1e-5 && s->drop_advertise == 0 && s->drop_share == 0 && s->drop_unmask == 0,
          "{} is on with the defaults");
    json = write_task(&t, NULL);
    CHECK(json && strstr(json, "\"secure_aggregation\": {\"dropout_rate\": 0.33, \"corrupt_rate\": 0.05, "
                               "\"clip\": 0.5, \"l2_clip\": 0, \"quant_bits\": 16, \"ring_bits\": 32, "
                               "\"max_weight\": 4096, \"drop\": {\"advertise\": 0, \"share\": 0, \"unmask\": 0}}"),
          "written with every key, no noise: %s", json);
    free(json);
    check_round_trip(&t, "secure aggregation's defaults");
    sdfed_task_free(&t);
    const char *every = "{\"clients\": 100, \"clients_per_round\": 40, \"secure_aggregation\": {\"dropout_rate\": 0.2,"
                        " \"corrupt_rate\": 0.1, \"clip\": 0.5, \"l2_clip\": 2.5, \"quant_bits\": 12, "
                        "\"ring_bits\": 40, \"max_weight\": 64, \"noise\": {\"epsilon\": 8, \"delta\": 1e-6}, "
                        "\"drop\": {\"advertise\": 0.1, \"share\": 0.05, \"unmask\": 0.02}}}";
    CHECK(parse(&t, every, &err) == SDFED_OK && sdfed_task_validate(&t, &err) == SDFED_OK, "every key: %s",
          err.message);
    CHECK(s->on && s->dropout_rate == 0.2 && s->corrupt_rate == 0.1 && s->clip == 0.5 && s->l2_clip == 2.5 &&
              s->quant_bits == 12 && s->ring_bits == 40 && s->max_weight == 64 && s->epsilon == 8 && s->delta == 1e-6 &&
              s->drop_advertise == 0.1 && s->drop_share == 0.05 && s->drop_unmask == 0.02,
          "every key read");
    json = write_task(&t, NULL);
    CHECK(json && strstr(json, "\"noise\": {\"epsilon\": 8, \"delta\": 1e-06}"), "the noise written: %s", json);
    free(json);
    check_round_trip(&t, "secure aggregation with every key");
    sdfed_task back = t;
    CHECK(parse(&back, "{\"secure_aggregation\": false}", &err) == SDFED_OK && !back.secagg.on &&
              parse(&back, "{\"secure_aggregation\": null}", &err) == SDFED_OK && !back.secagg.on,
          "false and null are off");
    sdfed_task_free(&t);
    expect_error("{\"secure_aggregation\": true}", "key 'secure_aggregation' must be an object");
    expect_error("{\"secure_aggregation\": {\"quant_bits\": 40}}", "key 'secure_aggregation.quant_bits' must be");
    expect_error("{\"secure_aggregation\": {\"ring_bits\": 1}}", "key 'secure_aggregation.ring_bits' must be");
    expect_error("{\"secure_aggregation\": {\"clip\": 0}}", "key 'secure_aggregation.clip' must be");
    expect_error("{\"secure_aggregation\": {\"max_weight\": 2.5}}", "key 'secure_aggregation.max_weight' must be");
    expect_error("{\"secure_aggregation\": {\"dropout_rate\": 0.95}}", "key 'secure_aggregation.dropout_rate'");
    expect_error("{\"secure_aggregation\": {\"noise\": {\"epsilon\": 0}}}",
                 "key 'secure_aggregation.noise.epsilon' must be");
    expect_error("{\"secure_aggregation\": {\"noise\": {\"delta\": 1e-5}}}",
                 "key 'secure_aggregation.noise.epsilon' must be given");
    expect_error("{\"secure_aggregation\": {\"noise\": {\"sigma\": 3}}}",
                 "unknown key 'secure_aggregation.noise.sigma'");
    expect_error("{\"secure_aggregation\": {\"drop\": {\"masked\": 0.1}}}",
                 "unknown key 'secure_aggregation.drop.masked' (the masked input's dropout is the task's 'dropout')");
    expect_error("{\"secure_aggregation\": {\"drop\": {\"share\": 1}}}", "key 'secure_aggregation.drop.share'");
    expect_error("{\"secure_aggregation\": {\"bits\": 16}}", "unknown key 'secure_aggregation.bits'");
    expect_error("{\"secure_aggregation\": {\"dropout_rate\": 0.6, \"corrupt_rate\": 0.4}}",
                 "dropout_rate + corrupt_rate must be at most 0.9");
    expect_error("{\"clients\": 1, \"secure_aggregation\": {}}", "at least 2 clients in a round");
    /* 10 clients of max_weight 4096 at 16 bits make sums up to 2^30.3: 32 ring bits hold them, 31 do not */
    expect_error("{\"secure_aggregation\": {\"ring_bits\": 31}}",
                 "secure_aggregation.ring_bits 31: the sum of 10 clients' inputs (quant_bits 16, max_weight 4096) "
                 "could wrap; it needs ring_bits >= 32");
    CHECK(parse(&t, "{\"secure_aggregation\": {\"ring_bits\": 32}}", &err) == SDFED_OK &&
              sdfed_task_validate(&t, &err) == SDFED_OK,
          "32 ring bits hold them: %s", err.message);
    sdfed_task_free(&t);
    expect_error("{\"clients\": 2000, \"secure_aggregation\": {}}",
                 "2000 clients' inputs (quant_bits 16, max_weight 4096) "
                 "could wrap; it needs ring_bits >= 39");

    /* the server's rule, clipping and noise (the aggregator's --aggregate, --clip, --noise) */
    sdfed_aggregate_config mean = {.rule = SDFED_AGGREGATE_MEAN, .trim = 0, .clip_norm = 0, .noise_multiplier = 0},
                           median = {SDFED_AGGREGATE_MEDIAN, 0, 0, 0},
                           trimmed = {SDFED_AGGREGATE_TRIMMED_MEAN, 0.1, 0, 0}, clip = {SDFED_AGGREGATE_MEAN, 0, 1, 0},
                           noise = {SDFED_AGGREGATE_MEAN, 0, 1, 0.5};
    parse(&t, "{}", &err);
    CHECK(sdfed_task_check_aggregate(&t, &median, &err) == SDFED_OK &&
              sdfed_task_check_aggregate(&t, &noise, &err) == SDFED_OK,
          "without secure aggregation every rule, clipping and noise");
    parse(&t, "{\"secure_aggregation\": {}}", &err);
    CHECK(sdfed_task_check_aggregate(&t, &mean, &err) == SDFED_OK, "with it, the mean");
    CHECK(sdfed_task_check_aggregate(&t, &median, &err) == SDFED_ERR_ARG &&
              strstr(err.message, "secure_aggregation cannot run the aggregation rule 'median': the server holds only "
                                  "the masked sum of the inputs, never one input"),
          "median refused: %s", err.message);
    CHECK(sdfed_task_check_aggregate(&t, &trimmed, &err) == SDFED_ERR_ARG && strstr(err.message, "'trimmed_mean'") &&
              strstr(err.message, "use mean"),
          "trimmed mean refused: %s", err.message);
    CHECK(sdfed_task_check_aggregate(&t, &clip, &err) == SDFED_ERR_ARG &&
              strstr(err.message, "cannot take the server's clipping or noise") &&
              strstr(err.message, "secure_aggregation.l2_clip"),
          "the server's clipping refused: %s", err.message);
    CHECK(sdfed_task_check_aggregate(&t, &noise, &err) == SDFED_ERR_ARG &&
              strstr(err.message, "secure_aggregation.noise"),
          "the server's noise refused: %s", err.message);
    sdfed_task_free(&t);
}

int main(void) {
    test_defaults();
    test_every_key();
    test_errors();
    test_set_classes();
    test_many_classes();
    test_client_form();
    test_stretch();
    test_transport();
    test_secure_aggregation();
    return check_report("test_task");
}
