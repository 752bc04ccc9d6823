/* What a task's text does to the prompts (argv[1]: a mini-vit GGUF, argv[2]:
 * the type of its token embedding, "f32", "f16" or "q8_0"):
 *  - the zero-shot prompts are the template with {} replaced by each
 *    class's text, tokenised as one sentence: with the default template the
 *    ids are today's "a photo of a" + "<name>." ones, and with a custom
 *    template the features equal the text encoder's on the whole sentence
 *    tokenised directly, bit for bit;
 *  - the learned prompts keep the CoOp layout on the class *texts*;
 *  - prompt_init: the first min(T, n) rows of every learned prompt are the
 *    token embeddings of its n tokens, dequantised here from the model's
 *    own F32, F16 or Q8_0 rows (not through the encoder's code), and the
 *    other rows are what the random initialisation draws without it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "check.h"
#include "clip/layers.h"
#include "clip_fixture.h"
#include "fed/task.h"
#include "text/tokenizer.h"

static sdfed_clip_model model;
static sdfed_tokenizer tok;

/* a task listing no classes has a host's: here these ten (native/task_file.h gives its data set's) */
static const char *const host_classes[] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                           "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

static int parse(sdfed_task *t, const char *json) {
    sdfed_error err = {0};
    int rc = sdfed_task_parse(t, json, strlen(json), &err);
    if (rc == SDFED_OK && t->n_classes == 0)
        rc = sdfed_task_set_classes(t, host_classes, NULL, (int)(sizeof host_classes / sizeof host_classes[0]), &err);
    if (rc == SDFED_OK) rc = sdfed_task_validate(t, &err);
    if (rc) fprintf(stderr, "task %s: %s\n", json, err.message);
    return rc;
}

static int encode(const char *text, int32_t *ids, int cap) {
    int n = 0;
    return sdfed_tokenizer_encode(&tok, text, strlen(text), ids, cap, &n, NULL) ? -1 : n;
}

/* The token embedding row of id as the file stores it, dequantised here. */
static void reference_row(int32_t id, float *out) {
    int W = model.cfg.text_width;
    const sdfed_weight *e = &model.token_embd;
    const char *row = (const char *)e->data + (size_t)id * sdfed_type_row_bytes(e->type, (uint64_t)W);
    for (int c = 0; c < W; c++) {
        if (e->type == SDFED_TYPE_F32) {
            memcpy(&out[c], row + 4 * (size_t)c, 4);
        } else if (e->type == SDFED_TYPE_F16) {
            uint16_t h;
            memcpy(&h, row + 2 * (size_t)c, 2);
            out[c] = sdfed_f16_to_f32(h);
        } else {
            sdfed_block_q8_0 block;
            memcpy(&block, row + sizeof block * (size_t)(c / SDFED_Q8_0_BLOCK), sizeof block);
            out[c] = sdfed_f16_to_f32(block.d) * (float)block.qs[c % SDFED_Q8_0_BLOCK];
        }
    }
}

static void test_zeroshot(const sdfed_kernels *k) {
    int L = model.cfg.context_length, D = model.cfg.embed_dim;
    sdfed_error err = {0};
    sdfed_task t;
    sdfed_classes cls;
    /* the default template: "a photo of a" then "<name>.", as before */
    CHECK(parse(&t, "{}") == SDFED_OK && sdfed_task_classes(&t, &tok, L, &cls, &err) == SDFED_OK, "default classes: %s",
          err.message);
    int32_t *a = malloc(sizeof *a * (size_t)L), *b = malloc(sizeof *b * (size_t)L);
    int same = 1;
    for (int c = 0; c < cls.n_classes; c++) {
        char name_dot[128];
        snprintf(name_dot, sizeof name_dot, "%s.", sdfed_task_class_text(&t, c));
        int na = encode("a photo of a", a, L), nb = encode(name_dot, b, L);
        int n = cls.zeroshot_first[c + 1] - cls.zeroshot_first[c];
        same &= na > 0 && nb > 0 && n == na + nb &&
                !memcmp(cls.zeroshot_ids + cls.zeroshot_first[c], a, sizeof *a * (size_t)na) &&
                !memcmp(cls.zeroshot_ids + cls.zeroshot_first[c] + na, b, sizeof *b * (size_t)nb);
        /* the learned prompts' class tokens: "<name>." */
        same &= cls.first[c + 1] - cls.first[c] == nb && !memcmp(cls.ids + cls.first[c], b, sizeof *b * (size_t)nb);
    }
    CHECK(same, "the default template's zero-shot ids are \"a photo of a\" + \"<name>.\"");
    sdfed_classes_free(&cls);
    sdfed_task_free(&t);

    /* a custom template and class texts */
    const char *json =
        "{\"classes\": [{\"name\": \"T-shirt/top\", \"text\": \"tee\"}, \"Trouser\", \"Pullover\","
        " \"Dress\", \"Coat\", \"Sandal\", \"Shirt\", {\"name\": \"Sneaker\", \"text\": \"running shoe\"},"
        " \"Bag\", \"Ankle boot\"], \"template\": \"{}: a blurry grey picture, 28 pixels wide\"}";
    CHECK(parse(&t, json) == SDFED_OK && sdfed_task_classes(&t, &tok, L, &cls, &err) == SDFED_OK, "custom classes: %s",
          err.message);
    int C = cls.n_classes;
    float *got = malloc(sizeof(float) * (size_t)C * D), *want = malloc(sizeof(float) * (size_t)C * D);
    float *raw = malloc(sizeof(float) * (size_t)C * D), *norms = malloc(sizeof(float) * (size_t)C);
    int32_t *rows = calloc((size_t)C * L, sizeof *rows);
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    same = 1;
    for (int c = 0; c < C; c++) {
        char sentence[256];
        snprintf(sentence, sizeof sentence, "%s: a blurry grey picture, 28 pixels wide", sdfed_task_class_text(&t, c));
        int32_t *row = rows + (size_t)c * L;
        int n = encode(sentence, row + 1, L - 2);
        row[0] = tok.sot_id;
        row[n + 1] = tok.eot_id;
        same &= n > 0 && n == cls.zeroshot_first[c + 1] - cls.zeroshot_first[c];
        char text_dot[128];
        snprintf(text_dot, sizeof text_dot, "%s.", sdfed_task_class_text(&t, c));
        int nb = encode(text_dot, b, L);
        same &= cls.first[c + 1] - cls.first[c] == nb && !memcmp(cls.ids + cls.first[c], b, sizeof *b * (size_t)nb);
    }
    CHECK(same, "zero-shot prompts tokenised as whole sentences; learned prompts read \"<text>.\"");
    sdfed_text_batch batch = {.n_seqs = C, .ids = rows, .stride = L, .splice = NULL, .splice_pos = NULL, .n_splice = 0};
    int rc = sdfed_classes_zeroshot(&model, k, &cls, got, &arena, &err);
    sdfed_arena_reset(&arena);
    if (rc == SDFED_OK) rc = sdfed_text_encode(&model, k, &batch, raw, &arena, &err);
    if (rc == SDFED_OK) sdfed_l2_normalize_forward(want, norms, raw, C, D);
    CHECK(rc == SDFED_OK && !memcmp(got, want, sizeof(float) * (size_t)C * D),
          "%s: zero-shot features with a template equal the encoder's on the sentences, bit for bit (%s)", k->name,
          err.message);
    /* a text whose zero-shot prompt does not fit the context is an error naming it */
    char *long_text = malloc(4096);
    memset(long_text, 0, 4096);
    for (int i = 0; i < 2 * L; i++) strcat(long_text, "word ");
    const char *texts[1] = {long_text};
    sdfed_class_text too_long = {.texts = texts, .n = 1, .template_text = "a photo of a {}."};
    sdfed_classes bad;
    CHECK(sdfed_classes_build(&bad, &tok, L, &too_long, &err) != SDFED_OK && strstr(err.message, "class 'word word"),
          "a class text too long for the context is refused, named: %.80s", err.message);
    sdfed_class_text no_slot = {.texts = texts, .n = 1, .template_text = "a photo"};
    CHECK(sdfed_classes_build(&bad, &tok, L, &no_slot, &err) != SDFED_OK && strstr(err.message, "{}"),
          "a template without {} is refused: %s", err.message);
    free(long_text);
    sdfed_arena_free(&arena);
    free(got);
    free(want);
    free(raw);
    free(norms);
    free(rows);
    free(a);
    free(b);
    sdfed_classes_free(&cls);
    sdfed_task_free(&t);
}

/* params of client 2 (or the server) for method, the task with or without prompt_init */
static int params_of(const char *method, const char *prompt_init, int server, const sdfed_kernels *k,
                     sdfed_method_params *p, sdfed_classes *cls) {
    char json[512];
    snprintf(json, sizeof json,
             "{\"method\": \"%s\", \"global_prompt_length\": 3, \"local_prompt_length\": 9%s%s%s, \"seed\": 5}", method,
             prompt_init ? ", \"prompt_init\": \"" : "", prompt_init ? prompt_init : "", prompt_init ? "\"" : "");
    sdfed_task t;
    sdfed_error err = {0};
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    sdfed_method_config cfg;
    sdfed_rng rng;
    int rc = parse(&t, json);
    if (rc == SDFED_OK) rc = sdfed_task_classes(&t, &tok, model.cfg.context_length, cls, &err);
    if (rc == SDFED_OK)
        rc = server ? sdfed_task_server_params(&t, &model, k, cls, p, &arena, &err)
                    : sdfed_task_client_params(&t, 2, sdfed_task_local_prompt_length(&t, 2), &model, k, cls, &cfg, &rng,
                                               p, &arena, &err);
    if (rc) fprintf(stderr, "params: %s\n", err.message);
    sdfed_arena_free(&arena);
    sdfed_task_free(&t);
    return rc;
}

/* rows [0, n) of P equal the reference rows of ids, rows [n, T) equal R's */
static int rows_are(const float *P, const float *R, int T, const int32_t *ids, int n_ids) {
    int W = model.cfg.text_width, n = T < n_ids ? T : n_ids, ok = 1;
    float *want = malloc(sizeof(float) * (size_t)W);
    for (int t = 0; t < n; t++) {
        reference_row(ids[t], want);
        ok &= !memcmp(P + (size_t)t * W, want, sizeof(float) * (size_t)W);
    }
    ok &= !memcmp(P + (size_t)n * W, R + (size_t)n * W, sizeof(float) * (size_t)(T - n) * W);
    free(want);
    return ok;
}

static void test_prompt_init(const sdfed_kernels *k) {
    /* 4 tokens ("a photo of a") and 13 (longer than the 3-row global prompt, shorter than the 9-row local one) */
    const char *inits[2] = {"a photo of a", "a grey photo of a small piece of clothing, seen from the front"};
    const char *methods[4] = {"sdfed", "coop", "promptfl", "promptfolio"};
    for (int i = 0; i < 2; i++) {
        int32_t ids[77];
        int n = encode(inits[i], ids, 77);
        for (int m = 0; m < 4; m++)
            for (int server = 0; server < 2; server++) {
                sdfed_method_params with, without;
                sdfed_classes cls_with, cls_without;
                int rc = params_of(methods[m], inits[i], server, k, &with, &cls_with);
                if (rc == SDFED_OK) rc = params_of(methods[m], NULL, server, k, &without, &cls_without);
                CHECK(rc == SDFED_OK && cls_with.init_len == n, "%s: params", methods[m]);
                if (rc) continue;
                CHECK(with.global_rows + with.local_rows > 0 &&
                          rows_are(with.global, without.global, with.global_rows, ids, n) &&
                          rows_are(with.local, without.local, with.local_rows, ids, n),
                      "%s %s (%s, %d tokens): the first rows are the token embeddings, the rest the same random draws",
                      methods[m], server ? "server" : "client", k->name, n);
                sdfed_method_params_free(&with);
                sdfed_method_params_free(&without);
                sdfed_classes_free(&cls_with);
                sdfed_classes_free(&cls_without);
            }
    }
    /* FedOT's parameters are no prompts: prompt_init changes nothing */
    sdfed_method_params with, without;
    sdfed_classes cls_with, cls_without;
    int rc = params_of("fedot", inits[0], 0, k, &with, &cls_with);
    if (rc == SDFED_OK) rc = params_of("fedot", NULL, 0, k, &without, &cls_without);
    CHECK(rc == SDFED_OK &&
              !memcmp(with.global, without.global, sizeof(float) * (size_t)with.global_rows * with.width) &&
              !memcmp(with.local, without.local, sizeof(float) * (size_t)with.local_rows * with.width),
          "FedOT ignores prompt_init");
    if (rc == SDFED_OK) {
        sdfed_method_params_free(&with);
        sdfed_method_params_free(&without);
        sdfed_classes_free(&cls_with);
        sdfed_classes_free(&cls_without);
    }
}

int main(int argc, char **argv) {
    unsigned char *data =
        load_clip_fixture(argc > 2 ? argv[1] : NULL, &model, &tok, "test_task_prompts MODEL.gguf TYPE");
    if (!data) return 2;
    CHECK(sdfed_type_from_name(argv[2]) == model.token_embd.type, "the token embedding is %s (it is %s)", argv[2],
          sdfed_type_name(model.token_embd.type));
    for (const sdfed_kernels *const *k = sdfed_kernels_all(); *k; k++) {
        test_zeroshot(*k);
        test_prompt_init(*k);
    }
    sdfed_tokenizer_free(&tok);
    sdfed_clip_free(&model);
    free(data);
    return check_report("test_task_prompts");
}
