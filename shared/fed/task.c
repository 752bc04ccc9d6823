/* Task files: defaults, parsing with key-naming errors, validation. */
#include "fed/task.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/json_writer.h"
#include "base/names.h"
#include "fed/protocol.h"
#include "fed/secagg_params.h"
#include "fed/secagg_ring.h"
#include "method/methods.h"
#include "prompt/projector.h"

static const sdfed_name partition_kinds[] = {
    [SDFED_PARTITION_IID] = {.name = "iid", .value = SDFED_PARTITION_IID},
    [SDFED_PARTITION_PATHOLOGICAL] = {.name = "pathological", .value = SDFED_PARTITION_PATHOLOGICAL},
    [SDFED_PARTITION_DIRICHLET] = {.name = "dirichlet", .value = SDFED_PARTITION_DIRICHLET},
    [SDFED_PARTITION_DOMAINS] = {.name = "domains", .value = SDFED_PARTITION_DOMAINS},
};
static_assert(sizeof partition_kinds / sizeof partition_kinds[0] == SDFED_PARTITION_KIND_COUNT,
              "a name per partition kind");

const char *sdfed_partition_kind_name(int kind) {
    return sdfed_name_of(partition_kinds, SDFED_PARTITION_KIND_COUNT, kind);
}

/* secure_aggregation's defaults: what the key turns on when it sets nothing */
static sdfed_task_secagg secagg_defaults(void) {
    return (sdfed_task_secagg){.dropout_rate = 0.33,
                               .corrupt_rate = 0.05,
                               .clip = 0.5,
                               .quant_bits = 16,
                               .ring_bits = 32,
                               .max_weight = 4096,
                               .delta = 1e-5};
}

void sdfed_task_defaults(sdfed_task *t) {
    memset(t, 0, sizeof *t); /* model and dataset "": the host's */
    t->clients = 10;
    t->partition.kind = SDFED_PARTITION_PATHOLOGICAL;
    t->partition.classes_per_client = 2;
    t->partition.alpha = 0.3;
    t->partition.clients_per_domain = 2;
    t->rounds = 50;
    t->local_epochs = 1;
    t->batch_size = 16;
    t->lr = 0.01f;
    t->global_prompt_length = 8;
    t->local_prompt_min = t->local_prompt_max = 16;
    t->local_prompt =
        (sdfed_local_prompt){.rule = SDFED_LOCAL_RULE_RANDOM, .images_per_token = SDFED_LOCAL_PROMPT_IMAGES_PER_TOKEN};
    t->method = SDFED_METHOD_SDFED;
    t->projector = -1;
    t->stretch = -1;
    t->lambda = t->gamma = NAN;
    t->theta = 0.2f;
    t->transport = sdfed_transport_defaults();
    t->seed = 1;
    t->demo = 1;
    memset(t->background, 255, sizeof t->background);
    t->secagg = secagg_defaults();
}

static void free_classes(sdfed_task *t) {
    for (int i = 0; i < t->n_classes; i++) {
        free(t->class_names[i]);
        free(t->class_texts[i]);
    }
    free(t->class_names);
    free(t->class_texts);
    t->class_names = t->class_texts = NULL;
    t->n_classes = 0;
}

void sdfed_task_free(sdfed_task *t) {
    free(t->name);
    free(t->description);
    free(t->template_text);
    free(t->prompt_init);
    free_classes(t);
    sdfed_task_defaults(t);
}

static char *dup_text(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The most classes a task may list. */
#define MAX_CLASSES 100000

int sdfed_task_set_classes(sdfed_task *t, const char *const *names, const char *const *texts, int n, sdfed_error *err) {
    if (n == 1) /* every image is of it: nothing to learn, and zero-shot is 100% */
        return sdfed_fail(err, SDFED_ERR_FORMAT, "task: one class ('%s'): a task needs at least two classes", names[0]);
    if (n < 1 || n > MAX_CLASSES)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "task: key 'classes' must list 2..%d classes", MAX_CLASSES);
    char **nm = calloc((size_t)n, sizeof *nm), **tx = calloc((size_t)n, sizeof *tx);
    char **sorted = malloc(sizeof *sorted * (size_t)n);
    int rc = nm && tx && sorted ? SDFED_OK : sdfed_fail(err, SDFED_ERR_NOMEM, "task: out of memory");
    for (int i = 0; i < n && rc == SDFED_OK; i++) {
        nm[i] = dup_text(names[i]);
        tx[i] = dup_text(texts && texts[i] ? texts[i] : names[i]);
        if (!nm[i] || !tx[i]) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "task: out of memory");
        sorted[i] = nm[i];
    }
    if (rc == SDFED_OK) {
        qsort(sorted, (size_t)n, sizeof *sorted, compare_names);
        for (int i = 1; i < n && rc == SDFED_OK; i++)
            if (strcmp(sorted[i - 1], sorted[i]) == 0)
                rc = sdfed_fail(err, SDFED_ERR_FORMAT, "task: key 'classes' names the class '%s' twice", sorted[i]);
    }
    free(sorted);
    if (rc) {
        for (int i = 0; i < n; i++) {
            if (nm) free(nm[i]);
            if (tx) free(tx[i]);
        }
        free(nm);
        free(tx);
        return rc;
    }
    free_classes(t);
    t->class_names = nm;
    t->class_texts = tx;
    t->n_classes = n;
    return SDFED_OK;
}

int sdfed_task_class_count(const sdfed_task *t) { return t->n_classes; }

const char *sdfed_task_class_name(const sdfed_task *t, int i) {
    assert(i >= 0 && i < t->n_classes);
    return t->class_names[i];
}

const char *sdfed_task_class_text(const sdfed_task *t, int i) {
    assert(i >= 0 && i < t->n_classes);
    return t->class_texts[i];
}

const char *sdfed_task_name(const sdfed_task *t) { return t->name ? t->name : ""; }
const char *sdfed_task_description(const sdfed_task *t) { return t->description ? t->description : ""; }
const char *sdfed_task_template(const sdfed_task *t) {
    return t->template_text ? t->template_text : SDFED_TEMPLATE_DEFAULT;
}

int sdfed_task_classes(const sdfed_task *t, const sdfed_tokenizer *tok, int context_length, sdfed_classes *out,
                       sdfed_error *err) {
    int n = sdfed_task_class_count(t);
    if (n < 1) return sdfed_fail(err, SDFED_ERR_ARG, "task: the classes of dataset '%s' are not known", t->dataset);
    sdfed_class_text text = {
        .texts = (const char *const *)t->class_texts,
        .n = n,
        .template_text = sdfed_task_template(t),
        .prompt_init = t->prompt_init,
    };
    int rc = sdfed_classes_build(out, tok, context_length, &text, err);
    return rc ? sdfed_fail_context(err, rc, "task") : SDFED_OK;
}

typedef struct reader {
    const sdfed_json *j;
    sdfed_error *err;
    int prompt_keys; /* of local_prompt_length (1) and local_prompt (2), those seen */
} reader;

static int bad(reader *r, const char *key, const char *want) {
    return sdfed_fail(r->err, SDFED_ERR_FORMAT, "task: key '%s' must be %s", key, want);
}

static int read_int(reader *r, int node, const char *key, int lo, int hi, int *out) {
    double v = 0.0;
    if (sdfed_json_number(r->j, node, &v) || v != floor(v) || v < lo || v > hi) {
        char want[64];
        snprintf(want, sizeof want, "an integer in %d..%d", lo, hi);
        return bad(r, key, want);
    }
    *out = (int)v;
    return SDFED_OK;
}

static int read_real(reader *r, int node, const char *key, double lo, double hi, double *out) {
    double v = 0.0;
    if (sdfed_json_number(r->j, node, &v) || !(v >= lo && v <= hi)) {
        char want[64];
        snprintf(want, sizeof want, "a number in [%g, %g]", lo, hi);
        return bad(r, key, want);
    }
    *out = v;
    return SDFED_OK;
}

static int read_float(reader *r, int node, const char *key, double lo, double hi, float *out) {
    double v = 0.0;
    int rc = read_real(r, node, key, lo, hi, &v);
    if (rc == SDFED_OK) *out = (float)v;
    return rc;
}

static int read_string(reader *r, int node, const char *key, char *out, size_t cap) {
    if (sdfed_json_string(r->j, node, out, cap) < 1) return bad(r, key, "a non-empty string, with no \\u0000 in it");
    return SDFED_OK;
}

/* Reads a name of the table's n; a wrong one is refused with the list. */
static int read_name(reader *r, int node, const char *key, const sdfed_name *table, int n, int *out) {
    char name[64], want[400];
    if (sdfed_json_string(r->j, node, name, sizeof name) < 1 || (*out = sdfed_name_value(table, n, name)) < 0)
        return bad(r, key, sdfed_name_list(table, n, want, sizeof want));
    return SDFED_OK;
}

/* One member of an object: its name, its whole key for messages ("partition.kind") and its value. */
typedef struct member {
    const char *name, *full;
    int value;
} member;

/* fn for each member of the object at obj, in order, until one fails; their keys are prefix.name */
static int each_member(reader *r, int obj, const char *prefix, int (*fn)(reader *, const member *, void *), void *ctx) {
    int rc = SDFED_OK, key = obj + 1;
    for (int i = 0; i < r->j->nodes[obj].size && rc == SDFED_OK; i++) {
        int value = r->j->nodes[key].next;
        char name[48], full[112];
        if (sdfed_json_string(r->j, key, name, sizeof name) < 0) name[0] = '\0';
        snprintf(full, sizeof full, "%s.%s", prefix, name);
        rc = fn(r, &(member){.name = name, .full = full, .value = value}, ctx);
        key = r->j->nodes[value].next;
    }
    return rc;
}

static int unknown(reader *r, const member *m) {
    return sdfed_fail(r->err, SDFED_ERR_FORMAT, "task: unknown key '%s'", m->full);
}

static int partition_member(reader *r, const member *m, void *ctx) {
    sdfed_task *t = ctx;
    if (strcmp(m->name, "kind") == 0)
        return read_name(r, m->value, m->full, partition_kinds, SDFED_PARTITION_KIND_COUNT, &t->partition.kind);
    if (strcmp(m->name, "classes_per_client") == 0)
        return read_int(r, m->value, m->full, 1, 1000, &t->partition.classes_per_client);
    if (strcmp(m->name, "alpha") == 0) return read_real(r, m->value, m->full, 1e-3, 1e6, &t->partition.alpha);
    if (strcmp(m->name, "shots") == 0) return read_int(r, m->value, m->full, 0, 1000000, &t->partition.shots);
    if (strcmp(m->name, "test_per_client") == 0)
        return read_int(r, m->value, m->full, 0, 1000000, &t->partition.test_per_client);
    if (strcmp(m->name, "clients_per_domain") == 0)
        return read_int(r, m->value, m->full, 1, 1000, &t->partition.clients_per_domain);
    return unknown(r, m);
}

static int read_partition(reader *r, int obj, sdfed_task *t) {
    if (r->j->nodes[obj].type != SDFED_JSON_OBJECT) return bad(r, "partition", "an object");
    return each_member(r, obj, "partition", partition_member, t);
}

typedef struct transport_read {
    sdfed_transport *transport;
    int mass_given;
} transport_read;

static int transport_member(reader *r, const member *m, void *ctx) {
    transport_read *tr = ctx;
    sdfed_transport *t = tr->transport;
    int kind, rc;
    if (strcmp(m->name, "kind") == 0) {
        rc = read_name(r, m->value, m->full, sdfed_transport_kind_names, SDFED_TRANSPORT_KINDS, &kind);
        if (rc == SDFED_OK) t->kind = (sdfed_transport_kind)kind;
        return rc;
    }
    if (strcmp(m->name, "epsilon") == 0) return read_real(r, m->value, m->full, 1e-4, 100.0, &t->epsilon);
    if (strcmp(m->name, "mass") == 0) {
        tr->mass_given = 1;
        return read_real(r, m->value, m->full, 1e-3, 1.0, &t->mass);
    }
    if (strcmp(m->name, "iterations") == 0) return read_int(r, m->value, m->full, 1, 100000, &t->max_iterations);
    if (strcmp(m->name, "threshold") == 0) return read_real(r, m->value, m->full, 0.0, 1e6, &t->threshold);
    return unknown(r, m);
}

/* {"kind": "partial"|"balanced", "epsilon", "mass", "iterations", "threshold"}: FedOTP's transport */
static int read_transport(reader *r, int obj, sdfed_task *t) {
    if (r->j->nodes[obj].type != SDFED_JSON_OBJECT) return bad(r, "transport", "an object");
    transport_read tr = {.transport = &t->transport, .mass_given = 0};
    int rc = each_member(r, obj, "transport", transport_member, &tr);
    if (t->transport.kind == SDFED_TRANSPORT_BALANCED && !tr.mass_given) t->transport.mass = 1.0; /* all of it */
    return rc;
}

static int noise_member(reader *r, const member *m, void *ctx) {
    sdfed_task_secagg *s = ctx;
    if (strcmp(m->name, "epsilon") == 0) {
        int rc = read_real(r, m->value, m->full, 0.0, 1e4, &s->epsilon);
        return rc == SDFED_OK && !(s->epsilon > 0) ? bad(r, m->full, "a number > 0 (at most 1e4)") : rc;
    }
    if (strcmp(m->name, "delta") == 0) return read_real(r, m->value, m->full, 1e-300, 0.1, &s->delta);
    return unknown(r, m);
}

/* secure_aggregation.noise: {"epsilon": E, "delta": D}, the run's whole budget; null: none */
static int read_noise(reader *r, int obj, sdfed_task_secagg *s) {
    s->epsilon = 0;
    s->delta = secagg_defaults().delta;
    if (r->j->nodes[obj].type == SDFED_JSON_NULL) return SDFED_OK;
    if (r->j->nodes[obj].type != SDFED_JSON_OBJECT)
        return bad(r, "secure_aggregation.noise", "an object {\"epsilon\": E, \"delta\": 1e-5}");
    int rc = each_member(r, obj, "secure_aggregation.noise", noise_member, s);
    if (rc == SDFED_OK && !(s->epsilon > 0)) rc = bad(r, "secure_aggregation.noise.epsilon", "given (a number > 0)");
    return rc;
}

static int drop_member(reader *r, const member *m, void *ctx) {
    sdfed_task_secagg *s = ctx;
    double *p = NULL;
    if (strcmp(m->name, "advertise") == 0) p = &s->drop_advertise;
    if (strcmp(m->name, "share") == 0) p = &s->drop_share;
    if (strcmp(m->name, "unmask") == 0) p = &s->drop_unmask;
    if (p) return read_real(r, m->value, m->full, 0.0, 0.99, p);
    return sdfed_fail(r->err, SDFED_ERR_FORMAT,
                      "task: unknown key '%s' (the masked input's dropout is the task's 'dropout')", m->full);
}

static int secagg_member(reader *r, const member *m, void *ctx) {
    sdfed_task_secagg *s = ctx;
    double weight;
    int rc;
    if (strcmp(m->name, "dropout_rate") == 0) return read_real(r, m->value, m->full, 0.0, 0.9, &s->dropout_rate);
    if (strcmp(m->name, "corrupt_rate") == 0) return read_real(r, m->value, m->full, 0.0, 0.9, &s->corrupt_rate);
    if (strcmp(m->name, "clip") == 0) {
        rc = read_real(r, m->value, m->full, 0.0, 1e6, &s->clip);
        return rc == SDFED_OK && !(s->clip > 0) ? bad(r, m->full, "a number > 0 (at most 1e6)") : rc;
    }
    if (strcmp(m->name, "l2_clip") == 0) return read_real(r, m->value, m->full, 0.0, 1e9, &s->l2_clip);
    if (strcmp(m->name, "quant_bits") == 0) return read_int(r, m->value, m->full, 2, 31, &s->quant_bits);
    if (strcmp(m->name, "ring_bits") == 0) return read_int(r, m->value, m->full, 2, 64, &s->ring_bits);
    if (strcmp(m->name, "max_weight") == 0) {
        rc = read_real(r, m->value, m->full, 1, 1099511627776.0, &weight);
        if (rc == SDFED_OK && weight != floor(weight)) rc = bad(r, m->full, "an integer in 1..2^40");
        if (rc == SDFED_OK) s->max_weight = (int64_t)weight;
        return rc;
    }
    if (strcmp(m->name, "noise") == 0) return read_noise(r, m->value, s);
    if (strcmp(m->name, "drop") == 0) {
        if (r->j->nodes[m->value].type != SDFED_JSON_OBJECT) return bad(r, m->full, "an object");
        return each_member(r, m->value, m->full, drop_member, s);
    }
    return unknown(r, m);
}

/* "secure_aggregation": {...} (fed/task.h); present, it is on; false or null: off */
static int read_secagg(reader *r, int obj, sdfed_task *t) {
    t->secagg = secagg_defaults();
    int type = r->j->nodes[obj].type;
    if (type == SDFED_JSON_FALSE || type == SDFED_JSON_NULL) return SDFED_OK;
    if (type != SDFED_JSON_OBJECT)
        return bad(r, "secure_aggregation", "an object ({} for the defaults), or false or null for none");
    t->secagg.on = 1;
    return each_member(r, obj, "secure_aggregation", secagg_member, &t->secagg);
}

typedef struct dataset_read {
    sdfed_task *t;
    int folder; /* 1: "folder" or "test_fraction" seen, 2: "train" or "test" */
} dataset_read;

static int dataset_member(reader *r, const member *m, void *ctx) {
    dataset_read *d = ctx;
    sdfed_task *t = d->t;
    if (strcmp(m->name, "train") == 0 || strcmp(m->name, "folder") == 0) {
        d->folder |= m->name[0] == 'f' ? 1 : 2;
        return read_string(r, m->value, m->full, t->data_train, sizeof t->data_train);
    }
    if (strcmp(m->name, "test") == 0) {
        d->folder |= 2;
        return read_string(r, m->value, m->full, t->data_test, sizeof t->data_test);
    }
    if (strcmp(m->name, "test_fraction") == 0) {
        d->folder |= 1;
        int rc = read_real(r, m->value, m->full, 0.0, 1.0, &t->test_fraction);
        if (rc == SDFED_OK && !(t->test_fraction > 0 && t->test_fraction < 1))
            rc = bad(r, m->full, "a number between 0 and 1 (exclusive)");
        return rc;
    }
    return unknown(r, m);
}

/* A data set's name (one the host has: it checks the name), {"train": DIR, "test": DIR}, {"folder": DIR,
 * "test_fraction": F}, or "folder" (the host's folders, unnamed) */
static int read_dataset(reader *r, int node, sdfed_task *t) {
    static const char *const want = "a data set's name, {\"train\": DIR, \"test\": DIR} or {\"folder\": DIR, "
                                    "\"test_fraction\": F}";
    if (r->j->nodes[node].type == SDFED_JSON_STRING) {
        t->data_train[0] = t->data_test[0] = '\0';
        return read_string(r, node, "dataset", t->dataset, sizeof t->dataset);
    }
    if (r->j->nodes[node].type != SDFED_JSON_OBJECT) return bad(r, "dataset", want);
    snprintf(t->dataset, sizeof t->dataset, "folder");
    t->data_train[0] = t->data_test[0] = '\0';
    t->test_fraction = 0;
    dataset_read d = {.t = t, .folder = 0};
    int rc = each_member(r, node, "dataset", dataset_member, &d), folder = d.folder;
    if (rc == SDFED_OK && !(folder == 2 && t->data_train[0] && t->data_test[0]) &&
        !(folder == 1 && t->data_train[0] && t->test_fraction > 0))
        rc = bad(r, "dataset", want);
    return rc;
}

static int read_prompt_range(reader *r, int node, sdfed_task *t) {
    const char *key = "local_prompt_length";
    if (r->j->nodes[node].type == SDFED_JSON_NUMBER) {
        int rc = read_int(r, node, key, 1, 1024, &t->local_prompt_min);
        t->local_prompt_max = t->local_prompt_min;
        return rc;
    }
    if (r->j->nodes[node].type != SDFED_JSON_ARRAY || r->j->nodes[node].size != 2)
        return bad(r, key, "an integer or [min, max]");
    int rc = read_int(r, sdfed_json_at(r->j, node, 0), key, 1, 1024, &t->local_prompt_min);
    if (rc == SDFED_OK) rc = read_int(r, sdfed_json_at(r->j, node, 1), key, 1, 1024, &t->local_prompt_max);
    if (rc == SDFED_OK && t->local_prompt_max < t->local_prompt_min) return bad(r, key, "[min, max] with min <= max");
    return rc;
}

static int local_prompt_member(reader *r, const member *m, void *ctx) {
    sdfed_local_prompt *lp = ctx;
    if (strcmp(m->name, "rule") == 0)
        return read_name(r, m->value, m->full, sdfed_local_rule_names, SDFED_LOCAL_RULE_COUNT, &lp->rule);
    if (strcmp(m->name, "budget_s") == 0) return read_real(r, m->value, m->full, 0.0, 1e6, &lp->budget_s);
    if (strcmp(m->name, "images_per_token") == 0)
        return read_real(r, m->value, m->full, 0.0, 1e6, &lp->images_per_token);
    if (strcmp(m->name, "lengths") != 0) return unknown(r, m);
    int n = r->j->nodes[m->value].type == SDFED_JSON_ARRAY ? r->j->nodes[m->value].size : 0;
    if (n < 1 || n > SDFED_LOCAL_PROMPT_MAX_LENGTHS) {
        char want[64];
        snprintf(want, sizeof want, "a list of 1..%d lengths", SDFED_LOCAL_PROMPT_MAX_LENGTHS);
        return bad(r, m->full, want);
    }
    lp->n_lengths = n;
    int rc = SDFED_OK;
    for (int i = 0; i < n && rc == SDFED_OK; i++)
        rc = read_int(r, sdfed_json_at(r->j, m->value, i), m->full, 1, 1024, &lp->lengths[i]);
    return rc;
}

/* {"lengths": [...], "rule", "budget_s", "images_per_token"} (fed/local_prompt.h); its shortest and longest are
 * the task's local_prompt_min and _max */
static int read_local_prompt(reader *r, int obj, sdfed_task *t) {
    if (r->j->nodes[obj].type != SDFED_JSON_OBJECT) return bad(r, "local_prompt", "an object");
    sdfed_local_prompt *lp = &t->local_prompt;
    int rc = each_member(r, obj, "local_prompt", local_prompt_member, lp);
    if (rc == SDFED_OK && lp->n_lengths == 0) return bad(r, "local_prompt.lengths", "present (a list of lengths)");
    if (rc == SDFED_OK) rc = sdfed_local_prompt_check(lp, 0, r->err);
    if (rc == SDFED_OK) {
        t->local_prompt_min = lp->lengths[0];
        t->local_prompt_max = lp->lengths[lp->n_lengths - 1];
    }
    return rc;
}

static int device_member(reader *r, const member *m, void *ctx) {
    sdfed_device *dev = ctx;
    if (strcmp(m->name, "name") == 0) return read_string(r, m->value, m->full, dev->name, sizeof dev->name);
    if (strcmp(m->name, "share") == 0) return read_real(r, m->value, m->full, 1e-9, 1e9, &dev->share);
    if (strcmp(m->name, "step_ms") != 0) return unknown(r, m);
    int n = r->j->nodes[m->value].type == SDFED_JSON_ARRAY ? r->j->nodes[m->value].size : 0;
    if (n < 1 || n > SDFED_LOCAL_PROMPT_MAX_LENGTHS) return bad(r, m->full, "a list of step times, one a length");
    dev->n_steps = n;
    int rc = SDFED_OK;
    for (int i = 0; i < n && rc == SDFED_OK; i++)
        rc = read_float(r, sdfed_json_at(r->j, m->value, i), m->full, 1e-6, 1e9, &dev->step_ms[i]);
    return rc;
}

/* [{"name", "share", "step_ms": [...]}, ...] (fed/devices.h); checked against local_prompt by validate */
static int read_devices(reader *r, int node, sdfed_task *t) {
    int n = r->j->nodes[node].type == SDFED_JSON_ARRAY ? r->j->nodes[node].size : 0;
    if (n < 1 || n > SDFED_DEVICES_MAX) {
        char want[64];
        snprintf(want, sizeof want, "a list of 1..%d device profiles", SDFED_DEVICES_MAX);
        return bad(r, "devices", want);
    }
    t->devices = (sdfed_devices){.n = n};
    int rc = SDFED_OK;
    for (int i = 0; i < n && rc == SDFED_OK; i++) {
        int obj = sdfed_json_at(r->j, node, i);
        char key[32];
        snprintf(key, sizeof key, "devices[%d]", i);
        sdfed_device *dev = &t->devices.device[i];
        *dev = (sdfed_device){.share = 1};
        snprintf(dev->name, sizeof dev->name, "device %d", i);
        rc = r->j->nodes[obj].type == SDFED_JSON_OBJECT ? each_member(r, obj, key, device_member, dev)
                                                        : bad(r, key, "an object");
    }
    return rc;
}

/* A string of at most max bytes (empty allowed when min_len is 0) into a
 * new heap copy at *out, replacing what was there. */
static int read_text(reader *r, int node, const char *key, size_t min_len, size_t max, char **out) {
    char *s = sdfed_json_string_dup(r->j, node);
    if (!s || strlen(s) < min_len || strlen(s) > max) {
        free(s);
        char want[64];
        snprintf(want, sizeof want, "a %sstring of at most %zu bytes, with no \\u0000 in it",
                 min_len ? "non-empty " : "", max);
        return bad(r, key, want);
    }
    free(*out);
    *out = s;
    return SDFED_OK;
}

typedef struct class_read {
    char **name, **text;
} class_read;

static int class_member(reader *r, const member *m, void *ctx) {
    class_read *c = ctx;
    if (strcmp(m->name, "name") == 0) return read_text(r, m->value, m->full, 1, 1024, c->name);
    if (strcmp(m->name, "text") == 0) return read_text(r, m->value, m->full, 1, 1024, c->text);
    return unknown(r, m);
}

/* One entry of "classes": "name", or {"name": ..., "text": ...}. */
static int read_class(reader *r, int node, int i, char **name, char **text) {
    char key[48], full[96];
    snprintf(key, sizeof key, "classes[%d]", i);
    if (r->j->nodes[node].type == SDFED_JSON_STRING) return read_text(r, node, key, 1, 1024, name);
    if (r->j->nodes[node].type != SDFED_JSON_OBJECT)
        return bad(r, key, "a name, or an object {\"name\": ..., \"text\": ...}");
    int rc = each_member(r, node, key, class_member, &(class_read){.name = name, .text = text});
    if (rc == SDFED_OK && !*name) {
        snprintf(full, sizeof full, "%s.name", key);
        rc = bad(r, full, "a non-empty string");
    }
    return rc;
}

static int read_classes(reader *r, int node, sdfed_task *t) {
    int n = r->j->nodes[node].type == SDFED_JSON_ARRAY ? r->j->nodes[node].size : 0;
    if (n < 1) return bad(r, "classes", "a non-empty list of names or {\"name\": ..., \"text\": ...} objects");
    char **names = calloc((size_t)n, sizeof *names), **texts = calloc((size_t)n, sizeof *texts);
    int rc = names && texts ? SDFED_OK : sdfed_fail(r->err, SDFED_ERR_NOMEM, "task: out of memory");
    for (int i = 0, e = node + 1; i < n && rc == SDFED_OK; i++, e = r->j->nodes[e].next)
        rc = read_class(r, e, i, &names[i], &texts[i]);
    if (rc == SDFED_OK)
        rc = sdfed_task_set_classes(t, (const char *const *)names, (const char *const *)texts, n, r->err);
    for (int i = 0; i < n; i++) {
        if (names) free(names[i]);
        if (texts) free(texts[i]);
    }
    free(names);
    free(texts);
    return rc;
}

static int read_template(reader *r, int node, sdfed_task *t) {
    int rc = read_text(r, node, "template", 1, 1024, &t->template_text);
    const char *slot = rc == SDFED_OK ? strstr(t->template_text, "{}") : NULL;
    if (rc == SDFED_OK && (!slot || strstr(slot + 2, "{}")))
        rc = bad(r, "template", "a string with exactly one {} for the class");
    return rc;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* "#rrggbb" */
static int read_background(reader *r, int node, sdfed_task *t) {
    char text[16];
    int n = sdfed_json_string(r->j, node, text, sizeof text);
    int ok = n == 7 && text[0] == '#';
    uint8_t rgb[3];
    for (int c = 0; c < 3 && ok; c++) {
        int hi = hex_digit(text[1 + 2 * c]), lo = hex_digit(text[2 + 2 * c]);
        ok = hi >= 0 && lo >= 0;
        rgb[c] = (uint8_t)(16 * hi + lo);
    }
    if (!ok) return bad(r, "background", "a colour \"#rrggbb\" (e.g. \"#ffffff\", white)");
    memcpy(t->background, rgb, sizeof rgb);
    return SDFED_OK;
}

static int read_key(reader *r, const char *name, int value, sdfed_task *t) {
    double seed;
    if (strcmp(name, "model") == 0) return read_string(r, value, name, t->model, sizeof t->model);
    if (strcmp(name, "dataset") == 0) return read_dataset(r, value, t);
    if (strcmp(name, "clients") == 0) return read_int(r, value, name, 1, SDFED_PARTITION_MAX_CLIENTS, &t->clients);
    if (strcmp(name, "partition") == 0) return read_partition(r, value, t);
    if (strcmp(name, "rounds") == 0) return read_int(r, value, name, 1, 1000000, &t->rounds);
    if (strcmp(name, "clients_per_round") == 0)
        return read_int(r, value, name, 0, SDFED_PARTITION_MAX_CLIENTS, &t->clients_per_round);
    if (strcmp(name, "min_clients") == 0)
        return read_int(r, value, name, 0, SDFED_PARTITION_MAX_CLIENTS, &t->min_clients);
    if (strcmp(name, "dropout") == 0) return read_real(r, value, name, 0.0, 0.99, &t->dropout);
    if (strcmp(name, "local_epochs") == 0) return read_int(r, value, name, 1, 1000, &t->local_epochs);
    if (strcmp(name, "batch_size") == 0) return read_int(r, value, name, 1, 4096, &t->batch_size);
    if (strcmp(name, "lr") == 0) return read_float(r, value, name, 1e-9, 1e3, &t->lr);
    if (strcmp(name, "momentum") == 0) return read_float(r, value, name, 0.0, 0.999, &t->momentum);
    if (strcmp(name, "weight_decay") == 0) return read_float(r, value, name, 0.0, 1.0, &t->weight_decay);
    if (strcmp(name, "global_prompt_length") == 0) return read_int(r, value, name, 1, 1024, &t->global_prompt_length);
    if (strcmp(name, "local_prompt_length") == 0 || strcmp(name, "local_prompt") == 0) {
        int rule = strcmp(name, "local_prompt") == 0;
        r->prompt_keys |= rule ? 2 : 1;
        if (r->prompt_keys == 3)
            return sdfed_fail(r->err, SDFED_ERR_FORMAT,
                              "task: keys 'local_prompt' and 'local_prompt_length' exclude each other (give one)");
        return rule ? read_local_prompt(r, value, t) : read_prompt_range(r, value, t);
    }
    if (strcmp(name, "method") == 0)
        return read_name(r, value, name, sdfed_method_names, SDFED_METHOD_COUNT, &t->method);
    if (strcmp(name, "projector") == 0)
        return read_name(r, value, name, sdfed_projector_names, SDFED_PROJECTOR_COUNT, &t->projector);
    if (strcmp(name, "stretch") == 0)
        return read_name(r, value, name, sdfed_stretch_names, SDFED_STRETCH_COUNT, &t->stretch);
    if (strcmp(name, "lambda") == 0) return read_float(r, value, name, 0.0, 1.0, &t->lambda);
    if (strcmp(name, "gamma") == 0) return read_float(r, value, name, 0.0, 100.0, &t->gamma);
    if (strcmp(name, "theta") == 0) return read_float(r, value, name, 0.0, 1.0, &t->theta);
    if (strcmp(name, "transport") == 0) return read_transport(r, value, t);
    if (strcmp(name, "name") == 0) return read_text(r, value, name, 0, 256, &t->name);
    if (strcmp(name, "description") == 0) return read_text(r, value, name, 0, 16384, &t->description);
    if (strcmp(name, "classes") == 0) return read_classes(r, value, t);
    if (strcmp(name, "template") == 0) return read_template(r, value, t);
    if (strcmp(name, "prompt_init") == 0) return read_text(r, value, name, 1, 1024, &t->prompt_init);
    if (strcmp(name, "background") == 0) return read_background(r, value, t);
    if (strcmp(name, "secure_aggregation") == 0) return read_secagg(r, value, t);
    if (strcmp(name, "devices") == 0) return read_devices(r, value, t);
    if (strcmp(name, "demo") == 0) {
        int type = r->j->nodes[value].type;
        if (type != SDFED_JSON_TRUE && type != SDFED_JSON_FALSE) return bad(r, name, "true or false");
        t->demo = type == SDFED_JSON_TRUE;
        return SDFED_OK;
    }
    if (strcmp(name, "seed") == 0) {
        int rc = read_real(r, value, name, 0, 9007199254740991.0, &seed);
        if (rc == SDFED_OK && seed != floor(seed)) return bad(r, name, "a non-negative integer");
        if (rc == SDFED_OK) t->seed = (uint64_t)seed;
        return rc;
    }
    return sdfed_fail(r->err, SDFED_ERR_FORMAT, "task: unknown key '%s'", name);
}

int sdfed_task_parse(sdfed_task *t, const char *json, size_t len, sdfed_error *err) {
    sdfed_task parsed;
    sdfed_task_defaults(&parsed);
    sdfed_json j;
    int rc = sdfed_json_parse(&j, json, len, err);
    if (rc) {
        sdfed_task_defaults(t);
        return sdfed_fail_context(err, rc, "task");
    }
    reader r = {.j = &j, .err = err, .prompt_keys = 0};
    if (j.nodes[0].type != SDFED_JSON_OBJECT)
        rc = sdfed_fail(err, SDFED_ERR_FORMAT, "task: the file is not a JSON object");
    int key = 1;
    for (int i = 0; rc == SDFED_OK && i < j.nodes[0].size; i++) {
        int value = j.nodes[key].next;
        char name[64];
        if (sdfed_json_string(&j, key, name, sizeof name) < 0)
            rc = sdfed_fail(err, SDFED_ERR_FORMAT, "task: a key is too long");
        else
            rc = read_key(&r, name, value, &parsed);
        key = j.nodes[value].next;
    }
    sdfed_json_free(&j);
    if (rc == SDFED_OK) {
        *t = parsed;
    } else {
        sdfed_task_free(&parsed);
        sdfed_task_defaults(t);
    }
    return rc;
}

/* "partition": its object, every key written */
static void write_partition(sdfed_json_writer *w, const sdfed_task *t) {
    sdfed_jw_object(w, "partition");
    sdfed_jw_string(w, "kind", sdfed_partition_kind_name(t->partition.kind));
    sdfed_jw_int(w, "classes_per_client", t->partition.classes_per_client);
    sdfed_jw_double(w, "alpha", t->partition.alpha);
    sdfed_jw_int(w, "shots", t->partition.shots);
    sdfed_jw_int(w, "test_per_client", t->partition.test_per_client);
    sdfed_jw_int(w, "clients_per_domain", t->partition.clients_per_domain);
    sdfed_jw_close(w);
}

/* "transport": its object, every key written */
static void write_transport(sdfed_json_writer *w, const sdfed_transport *tr) {
    sdfed_jw_object(w, "transport");
    sdfed_jw_string(w, "kind", sdfed_transport_kind_name(tr->kind));
    sdfed_jw_double(w, "epsilon", tr->epsilon);
    sdfed_jw_double(w, "mass", tr->mass);
    sdfed_jw_int(w, "iterations", tr->max_iterations);
    sdfed_jw_double(w, "threshold", tr->threshold);
    sdfed_jw_close(w);
}

/* "dataset": a folder's object for a task file (a task sent to clients
 * names no folder of the host's), else its name when it has one */
static void write_dataset(sdfed_json_writer *w, const sdfed_task *t, const char *model_url) {
    if (strcmp(t->dataset, "folder") == 0 && !model_url) {
        sdfed_jw_object(w, "dataset");
        sdfed_jw_string(w, t->test_fraction > 0 ? "folder" : "train", t->data_train);
        if (t->test_fraction > 0)
            sdfed_jw_double(w, "test_fraction", t->test_fraction);
        else
            sdfed_jw_string(w, "test", t->data_test);
        sdfed_jw_close(w);
    } else if (t->dataset[0]) { /* else the host's */
        sdfed_jw_string(w, "dataset", t->dataset);
    }
}

/* "local_prompt": its object, every key written; else local_prompt_length, one length or a range */
static void write_local_prompt(sdfed_json_writer *w, const sdfed_task *t) {
    const sdfed_local_prompt *lp = &t->local_prompt;
    if (lp->n_lengths == 0 && t->local_prompt_min == t->local_prompt_max) {
        sdfed_jw_int(w, "local_prompt_length", t->local_prompt_min);
    } else if (lp->n_lengths == 0) {
        uint32_t range[2] = {(uint32_t)t->local_prompt_min, (uint32_t)t->local_prompt_max};
        sdfed_jw_shape(w, "local_prompt_length", 2, range);
    } else {
        uint32_t lengths[SDFED_LOCAL_PROMPT_MAX_LENGTHS];
        for (int i = 0; i < lp->n_lengths; i++) lengths[i] = (uint32_t)lp->lengths[i];
        sdfed_jw_object(w, "local_prompt");
        sdfed_jw_shape(w, "lengths", lp->n_lengths, lengths);
        sdfed_jw_string(w, "rule", sdfed_name_of(sdfed_local_rule_names, SDFED_LOCAL_RULE_COUNT, lp->rule));
        sdfed_jw_double(w, "budget_s", lp->budget_s);
        sdfed_jw_double(w, "images_per_token", lp->images_per_token);
        sdfed_jw_close(w);
    }
}

/* "classes": [{"name": ..., "text": ...}, ...], every class, its text explicit */
static void write_classes(sdfed_json_writer *w, const sdfed_task *t) {
    sdfed_jw_array(w, "classes");
    for (int i = 0; i < sdfed_task_class_count(t); i++) {
        sdfed_jw_object(w, NULL);
        sdfed_jw_string(w, "name", sdfed_task_class_name(t, i));
        sdfed_jw_string(w, "text", sdfed_task_class_text(t, i));
        sdfed_jw_close(w);
    }
    sdfed_jw_close(w);
}

/* "secure_aggregation": its object, every key written (noise only when there is some) */
static void write_secagg(sdfed_json_writer *w, const sdfed_task_secagg *s) {
    sdfed_jw_object(w, "secure_aggregation");
    sdfed_jw_double(w, "dropout_rate", s->dropout_rate);
    sdfed_jw_double(w, "corrupt_rate", s->corrupt_rate);
    sdfed_jw_double(w, "clip", s->clip);
    sdfed_jw_double(w, "l2_clip", s->l2_clip);
    sdfed_jw_int(w, "quant_bits", s->quant_bits);
    sdfed_jw_int(w, "ring_bits", s->ring_bits);
    sdfed_jw_int(w, "max_weight", s->max_weight);
    if (s->epsilon > 0) {
        sdfed_jw_object(w, "noise");
        sdfed_jw_double(w, "epsilon", s->epsilon);
        sdfed_jw_double(w, "delta", s->delta);
        sdfed_jw_close(w);
    }
    sdfed_jw_object(w, "drop");
    sdfed_jw_double(w, "advertise", s->drop_advertise);
    sdfed_jw_double(w, "share", s->drop_share);
    sdfed_jw_double(w, "unmask", s->drop_unmask);
    sdfed_jw_close(w);
    sdfed_jw_close(w);
}

/* "devices": the list, every profile's keys written */
static void write_devices(sdfed_json_writer *w, const sdfed_devices *d) {
    sdfed_jw_array(w, "devices");
    for (int i = 0; i < d->n; i++) {
        const sdfed_device *dev = &d->device[i];
        sdfed_jw_object(w, NULL);
        sdfed_jw_string(w, "name", dev->name);
        sdfed_jw_double(w, "share", dev->share);
        sdfed_jw_floats(w, "step_ms", dev->step_ms, (size_t)dev->n_steps);
        sdfed_jw_close(w);
    }
    sdfed_jw_close(w);
}

int sdfed_task_write(const sdfed_task *t, const char *model_url, sdfed_buffer *out, sdfed_error *err) {
    sdfed_method_config m = sdfed_task_method_config(t);
    sdfed_json_writer w;
    sdfed_jw_begin(&w, out, NULL);
    if (model_url || t->model[0]) sdfed_jw_string(&w, "model", model_url ? model_url : t->model); /* else the host's */
    write_dataset(&w, t, model_url);
    sdfed_jw_int(&w, "clients", t->clients);
    write_partition(&w, t);
    sdfed_jw_int(&w, "rounds", t->rounds);
    sdfed_jw_int(&w, "clients_per_round", t->clients_per_round);
    sdfed_jw_int(&w, "min_clients", t->min_clients);
    sdfed_jw_double(&w, "dropout", t->dropout);
    sdfed_jw_int(&w, "local_epochs", t->local_epochs);
    sdfed_jw_int(&w, "batch_size", t->batch_size);
    sdfed_jw_double(&w, "lr", t->lr);
    sdfed_jw_double(&w, "momentum", t->momentum);
    sdfed_jw_double(&w, "weight_decay", t->weight_decay);
    sdfed_jw_int(&w, "global_prompt_length", t->global_prompt_length);
    write_local_prompt(&w, t);
    sdfed_jw_string(&w, "method", sdfed_method_name(t->method));
    sdfed_jw_string(&w, "projector", sdfed_projector_name(m.objective.projector));
    sdfed_jw_string(&w, "stretch", sdfed_stretch_name(m.objective.stretch));
    sdfed_jw_double(&w, "lambda", m.objective.lambda);
    sdfed_jw_double(&w, "gamma", m.objective.gamma);
    sdfed_jw_double(&w, "theta", t->theta);
    write_transport(&w, &t->transport);
    sdfed_jw_int(&w, "seed", (int64_t)t->seed);
    sdfed_jw_string(&w, "name", sdfed_task_name(t));
    sdfed_jw_string(&w, "description", sdfed_task_description(t));
    if (t->n_classes > 0) write_classes(&w, t); /* else the host's */
    sdfed_jw_string(&w, "template", sdfed_task_template(t));
    if (t->prompt_init) sdfed_jw_string(&w, "prompt_init", t->prompt_init);
    sdfed_jw_bool(&w, "demo", t->demo);
    char background[8];
    snprintf(background, sizeof background, "#%02x%02x%02x", t->background[0], t->background[1], t->background[2]);
    sdfed_jw_string(&w, "background", background);
    if (t->secagg.on) write_secagg(&w, &t->secagg);
    if (t->devices.n > 0) write_devices(&w, &t->devices);
    return sdfed_jw_end(&w, err) ? sdfed_fail(err, SDFED_ERR_NOMEM, "task: out of memory") : SDFED_OK;
}

sdfed_method_config sdfed_task_method_config(const sdfed_task *t) {
    sdfed_method_config c = sdfed_method_defaults(t->method);
    c.global_len = t->global_prompt_length;
    c.local_len = t->local_prompt_max;
    c.theta = t->theta;
    c.transport = t->transport;
    c.sgd = (sdfed_sgd){.lr = t->lr, .momentum = t->momentum, .weight_decay = t->weight_decay};
    if (t->projector >= 0) c.objective.projector = t->projector;
    if (t->stretch >= 0) c.objective.stretch = t->stretch;
    if (!isnan(t->lambda)) c.objective.lambda = t->lambda;
    if (!isnan(t->gamma)) c.objective.gamma = t->gamma;
    return c;
}

/* client c's draw below n from SDFED_STREAM_LENGTHS (the c + 1-th) */
static int length_draw(const sdfed_task *t, int c, uint64_t n) {
    sdfed_rng rng;
    sdfed_rng_seed_stream(&rng, t->seed, SDFED_STREAM_LENGTHS);
    int draw = 0;
    for (int i = 0; i <= c; i++) draw = (int)sdfed_rng_below(&rng, n);
    return draw;
}

int sdfed_task_local_prompt_length(const sdfed_task *t, int c) {
    const sdfed_local_prompt *lp = &t->local_prompt;
    if (lp->n_lengths == 0)
        return t->local_prompt_min + length_draw(t, c, (uint64_t)(t->local_prompt_max - t->local_prompt_min + 1));
    return lp->rule == SDFED_LOCAL_RULE_RANDOM ? lp->lengths[length_draw(t, c, (uint64_t)lp->n_lengths)]
                                               : lp->lengths[lp->n_lengths - 1];
}

int sdfed_task_local_plan(const sdfed_task *t, int c, const double *step_s, int n_train, sdfed_local_plan *out,
                          sdfed_error *err) {
    const sdfed_local_prompt *lp = &t->local_prompt;
    if (lp->n_lengths > 0)
        return sdfed_local_prompt_plan(lp, length_draw(t, c, (uint64_t)lp->n_lengths), step_s, n_train, t->local_epochs,
                                       t->batch_size, out, err);
    int epoch_steps = t->local_epochs * ((n_train + t->batch_size - 1) / t->batch_size);
    *out = (sdfed_local_plan){.length = sdfed_task_local_prompt_length(t, c),
                              .steps = epoch_steps,
                              .epoch_steps = epoch_steps,
                              .samples = n_train};
    return SDFED_OK;
}

int sdfed_task_server_params(const sdfed_task *t, const sdfed_clip_model *m, const sdfed_kernels *k,
                             const sdfed_classes *cls, sdfed_method_params *out, sdfed_arena *arena, sdfed_error *err) {
    sdfed_method_config cfg = sdfed_task_method_config(t);
    sdfed_rng rng;
    sdfed_rng_seed_stream(&rng, t->seed, SDFED_STREAM_SERVER);
    return sdfed_method_params_init(out, &cfg, m, k, cls, &rng, arena, err);
}

int sdfed_task_client_params(const sdfed_task *t, int c, int local_len, const sdfed_clip_model *m,
                             const sdfed_kernels *k, const sdfed_classes *cls, sdfed_method_config *cfg, sdfed_rng *rng,
                             sdfed_method_params *out, sdfed_arena *arena, sdfed_error *err) {
    if (t->local_prompt.n_lengths > 0) {
        int rc = sdfed_local_prompt_check(&t->local_prompt, sdfed_classes_max_prompt(cls), err);
        if (rc) return rc;
    }
    *cfg = sdfed_task_method_config(t);
    cfg->local_len = local_len;
    sdfed_rng_seed_stream(rng, t->seed, SDFED_STREAM_CLIENTS + (uint64_t)c);
    return sdfed_method_params_init(out, cfg, m, k, cls, rng, arena, err);
}

/* The round's sampled clients, the (k, t) rule and the ring for them (the
 * noise, which needs the prompt's size, is checked when a round is planned:
 * fed/secagg_task.h) */
static int validate_secagg(const sdfed_task *t, sdfed_error *err) {
    const sdfed_task_secagg *s = &t->secagg;
    int n = t->clients_per_round > 0 && t->clients_per_round < t->clients ? t->clients_per_round : t->clients;
    if (n < 2)
        return sdfed_fail(err, SDFED_ERR_FORMAT,
                          "task: key 'secure_aggregation' needs at least 2 clients in a round ('clients', "
                          "'clients_per_round'), got %d",
                          n);
    sdfed_secagg_params params;
    int rc = sdfed_secagg_params_choose(n, s->dropout_rate, s->corrupt_rate, t->min_clients, &params, err);
    if (rc) return sdfed_fail_context(err, SDFED_ERR_FORMAT, "task");
    sdfed_secagg_ring ring = {.clip = s->clip,
                              .quant_bits = s->quant_bits,
                              .max_weight = s->max_weight,
                              .ring_bits = s->ring_bits,
                              .clients = n};
    rc = sdfed_secagg_ring_check(&ring, err);
    return rc ? sdfed_fail_context(err, SDFED_ERR_FORMAT, "task (%d clients a round)", n) : SDFED_OK;
}

int sdfed_task_validate(const sdfed_task *t, sdfed_error *err) {
    if (t->min_clients > t->clients)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "task: key 'min_clients' (%d) exceeds 'clients' (%d)", t->min_clients,
                          t->clients);
    if (t->clients_per_round > t->clients)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "task: key 'clients_per_round' (%d) exceeds 'clients' (%d)",
                          t->clients_per_round, t->clients);
    if (t->partition.kind == SDFED_PARTITION_DOMAINS && t->clients != 4 * t->partition.clients_per_domain)
        return sdfed_fail(err, SDFED_ERR_FORMAT,
                          "task: key 'clients' (%d) must be 4 domains x partition.clients_per_domain (%d)", t->clients,
                          t->partition.clients_per_domain);
    if (t->transport.kind == SDFED_TRANSPORT_BALANCED && t->transport.mass != 1.0)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "task: key 'transport.mass' must be 1 for balanced transport (got %g)",
                          t->transport.mass);
    int n_classes = sdfed_task_class_count(t);
    if (t->partition.kind == SDFED_PARTITION_PATHOLOGICAL && n_classes > 0 &&
        t->partition.classes_per_client > n_classes)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "task: key 'partition.classes_per_client' exceeds the %d classes",
                          n_classes);
    int rc = sdfed_devices_check(&t->devices, &t->local_prompt, err);
    if (rc) return rc;
    return t->secagg.on ? validate_secagg(t, err) : SDFED_OK;
}

int sdfed_task_check_aggregate(const sdfed_task *t, const sdfed_aggregate_config *cfg, sdfed_error *err) {
    if (!t->secagg.on) return SDFED_OK;
    if (cfg->rule != SDFED_AGGREGATE_MEAN)
        return sdfed_fail(err, SDFED_ERR_ARG,
                          "task: secure_aggregation cannot run the aggregation rule '%s': the server holds only the "
                          "masked sum of the inputs, never one input, and a %s needs every input's values; use mean",
                          sdfed_aggregate_rule_name(cfg->rule),
                          cfg->rule == SDFED_AGGREGATE_MEDIAN ? "median" : "trimmed mean");
    if (cfg->clip_norm > 0 || cfg->noise_multiplier > 0)
        return sdfed_fail(err, SDFED_ERR_ARG,
                          "task: secure_aggregation cannot take the server's clipping or noise (clip %g, noise %g): "
                          "the server never sees an input to clip, and noise belongs in the clients' inputs; use "
                          "secure_aggregation.l2_clip and secure_aggregation.noise instead",
                          cfg->clip_norm, cfg->noise_multiplier);
    return SDFED_OK;
}
