/* sdfed task: what a host runs before opening a federation (the usage
 * texts below say what each does). */
#define _XOPEN_SOURCE 700 /* realpath, beside POSIX */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/json_writer.h"
#include "native/crypto.h"
#include "cli.h"
#include "dataset_report.h"
#include "native/fed_client.h"
#include "native/fed_data.h"
#include "native/task_file.h"
#include "prompt/prompt.h"

const char cmd_task_help[] =
    "usage: sdfed task init DIR [options]  |  sdfed task check TASK.json [options]\n"
    "\n"
    "What a host runs before opening a federation: 'task init' writes a task for a folder of labelled\n"
    "images, 'task check' validates a task and shows what volunteers will get. 'sdfed task init --help' and\n"
    "'sdfed task check --help' say more.\n";

static const char init_usage[] =
    "usage: sdfed task init DIR [--clients N] [--model M.gguf] [--out TASK.json] [--cache DIR] [--strict] [--force]\n"
    "\n"
    "Writes a federation's task for the folder of labelled images DIR: one sub-folder per class (its name\n"
    "is the class; two classes or more), every PNG or JPEG below it at any depth; DIR/train and DIR/test\n"
    "when both hold the classes (val/ is not read: rename it test/), else DIR with a fifth of each class\n"
    "held out for testing. Every image is decoded once (the verdicts are cached): the counts printed per\n"
    "class are the images that will be used, and every file that will not be (it cannot be read or does\n"
    "not decode, it is no PNG or JPEG, it is hidden, it is in no class folder or beside train/ and test/)\n"
    "is named with why. The task, named after the folder: the model (the default one unless given), N\n"
    "clients (10, or one a training image when those are fewer) on a Dirichlet split (iid when the images\n"
    "are too few for one; it says which), a round started by 2 volunteers and taking up to 10 of those\n"
    "connected, 50 rounds, SDFed. An existing TASK.json is kept (it may have been edited) unless --force.\n"
    "\n"
    "  --clients N     shards of the images, as demo shares and in simulation (10)\n"
    "  --model M.gguf  the CLIP model (" NATIVE_DEFAULT_MODEL ")\n"
    "  --out TASK.json where to write it (task.json)\n"
    "  --cache DIR     where decoding verdicts and image features are kept ($SDFED_CACHE, ~/.cache/sdfed)\n"
    "  --strict        fail, writing nothing, when any image is not used\n"
    "  --force         replace TASK.json when it exists (else kept: it may have been edited)\n";

static const char check_usage[] =
    "usage: sdfed task check TASK.json [--cache DIR] [--data DIR] [--backend NAME] [--strict]\n"
    "\n"
    "Validates a task (every key, the classes against the folders, the model) and prints what a host\n"
    "wants to see before opening: the images per class that will be used and every file that will not,\n"
    "with why; each client's class histogram under the partition; the model's input size and widths;\n"
    "CLIP's zero-shot accuracy on the test images (none without one). Image features are computed once\n"
    "per image and model (a progress line with the rate and the time left) and cached: a changed folder\n"
    "recomputes only the images that changed, and the line \"image features:\" says how many came from\n"
    "the cache.\n"
    "\n"
    "  --cache DIR     the cache ($SDFED_CACHE, ~/.cache/sdfed)\n"
    "  --data DIR      a volunteer's own ImageFolder instead of the task's images\n"
    "  --backend NAME  the kernels (see 'sdfed help')\n"
    "  --strict        fail when any image is not used\n";

/* path made absolute (from the current folder) into out[PATH_MAX]; 0 when too long */
static int absolute(const char *path, char out[PATH_MAX]) {
    char cwd[PATH_MAX];
    return path[0] == '/' ? snprintf(out, PATH_MAX, "%s", path) < PATH_MAX
                          : getcwd(cwd, sizeof cwd) && snprintf(out, PATH_MAX, "%s/%s", cwd, path) < PATH_MAX;
}

/* Whether path is UTF-8, as a task file's JSON must hold it; else an error
 * naming it (its other bytes shown \xNN). */
static int path_is_text(const char *what, const char *path) {
    char *text = native_path_text(path);
    if (!text) return native_cli_error(CLI_FAILED, "task init: out of memory");
    int status = strcmp(text, path) == 0
                     ? CLI_OK
                     : native_cli_error(CLI_FAILED,
                                        "task init: %s: the %s's path is not UTF-8 text (its other bytes shown \\xNN), "
                                        "which a task file cannot hold: rename it",
                                        text, what);
    free(text);
    return status;
}

static int is_folder(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* For a folder dir holding train/ but no test/: an error when a validation
 * split (val/) is beside train/, which would otherwise be read as two
 * classes, "train" and "val"; only test/ is read as the test split (the
 * README's layout: DIR/train and DIR/test). */
static int no_validation_split(const char *dir) {
    static const char *const validation[] = {"val", "valid", "validation"};
    char path[PATH_MAX + 16];
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, validation[i]);
        if (is_folder(path))
            return native_cli_error(CLI_FAILED,
                                    "task init: %s holds train/ and %s/ but no test/: only test/ is read as the test "
                                    "split (rename %s/ to test/ to test on it), and the sub-folders of a folder "
                                    "without both are its classes",
                                    dir, validation[i], validation[i]);
    }
    return CLI_OK;
}

/* A task of one class learns nothing (each image is of it): an error
 * saying why, for the folder dir read as the task reads it. */
static int two_classes(const char *dir, const native_fed_data *d) {
    if (d->n_classes >= 2) return CLI_OK;
    if (!strcmp(d->class_names[0], "train"))
        return native_cli_error(CLI_FAILED,
                                "task init: %s holds train/ but no test/: a task reads DIR/train and DIR/test (each "
                                "with the class folders), or DIR's sub-folders as its classes",
                                dir);
    return native_cli_error(CLI_FAILED,
                            "task init: %s: one class folder ('%s'): a task needs at least two classes (one "
                            "sub-folder per class)",
                            dir, d->class_names[0]);
}

/* A Dirichlet split (alpha 0.5) leaves some clients with few images: below
 * this average the partition's min_train (16) is out of reach too often. */
#define INIT_DIRICHLET_MIN 128
/* The clients (shards) task init writes unless told (--clients). */
#define INIT_CLIENTS 10
/* The quorum task init writes: a round starts with INIT_MIN_CLIENTS
 * volunteers connected and takes up to INIT_CLIENTS_PER_ROUND of them. */
#define INIT_MIN_CLIENTS 2
#define INIT_CLIENTS_PER_ROUND 10

/* The folder the report shows paths below: the dataset's folder, or the
 * one that holds its train and test folders. */
static void dataset_root(const sdfed_task *task, char root[PATH_MAX]) {
    snprintf(root, PATH_MAX, "%s", task->data_train);
    size_t n = 0;
    while (task->data_test[0] && root[n] && root[n] == task->data_test[n]) n++;
    if (task->data_test[0]) { /* back to the last whole folder in common */
        while (n > 0 && root[n] != '/') n--;
        root[n] = '\0';
    }
}

/* The classes, then the files not used (skipped: the dataset's, and in
 * task init the files beside its train and test folders); the pictures not
 * used under --strict fail. */
static int report_dataset(const char *command, const sdfed_task *task, const char *const *names,
                          const native_fed_data *d, const native_image_folder_skips *skipped, int strict) {
    report_classes(names, d->n_classes, d->train_labels, d->n_train, d->test_labels, d->n_test);
    char root[PATH_MAX];
    dataset_root(task, root);
    int pictures = report_skipped(skipped, root);
    if (strict && pictures)
        return native_cli_error(CLI_FAILED, "%s: --strict: %d image%s not used (listed above)", command, pictures,
                                pictures > 1 ? "s" : "");
    return CLI_OK;
}

/* The task file's JSON for the folder dir, written to out. */
static int write_init_task(const char *out, const char *dir, int split, const char *model, long n_clients,
                           int dirichlet, sdfed_error *err) {
    char train[PATH_MAX + 8], test[PATH_MAX + 8];
    snprintf(train, sizeof train, "%s/train", dir);
    snprintf(test, sizeof test, "%s/test", dir);
    sdfed_buffer b = {0};
    sdfed_json_writer w;
    const char *name = strrchr(dir, '/');
    sdfed_jw_begin(&w, &b, NULL);
    sdfed_jw_string(&w, "name", name && name[1] ? name + 1 : dir);
    sdfed_jw_string(&w, "model", model);
    sdfed_jw_object(&w, "dataset");
    sdfed_jw_string(&w, split ? "train" : "folder", split ? train : dir);
    if (split)
        sdfed_jw_string(&w, "test", test);
    else
        sdfed_jw_double(&w, "test_fraction", 0.2);
    sdfed_jw_close(&w);
    sdfed_jw_int(&w, "clients", n_clients);
    sdfed_jw_object(&w, "partition");
    sdfed_jw_string(&w, "kind", dirichlet ? "dirichlet" : "iid");
    if (dirichlet) sdfed_jw_double(&w, "alpha", 0.5);
    sdfed_jw_close(&w);
    sdfed_jw_int(&w, "min_clients", INIT_MIN_CLIENTS);
    sdfed_jw_int(&w, "clients_per_round", n_clients < INIT_CLIENTS_PER_ROUND ? n_clients : INIT_CLIENTS_PER_ROUND);
    sdfed_jw_int(&w, "rounds", 50);
    sdfed_jw_string(&w, "method", "sdfed");
    sdfed_jw_int(&w, "seed", 1);
    int rc = sdfed_jw_end(&w, err);
    char *text = rc == SDFED_OK ? malloc(b.size + 2) : NULL;
    if (rc == SDFED_OK && !text) rc = sdfed_fail(err, SDFED_ERR_NOMEM, "out of memory");
    if (rc == SDFED_OK) {
        memcpy(text, b.data, b.size);
        memcpy(text + b.size, "\n", 2);
        rc = native_write_file(out, text, err);
    }
    free(text);
    sdfed_buffer_free(&b);
    return rc;
}

/* The partition task init writes, said: its kind and the training images
 * a client. Without --clients (given 0), fewer training images than the
 * INIT_CLIENTS clients make as many clients as images (*n_clients
 * lowered); with it, the clients that get none are counted. Returns
 * whether it is a Dirichlet split. */
static int init_partition(int n_train, long *n_clients, int given) {
    if (n_train < *n_clients && !given) {
        printf("partition: iid, %d clients of 1 training image each (%d training images are too few for %ld; "
               "--clients N sets another number)\n",
               n_train, n_train, *n_clients);
        *n_clients = n_train;
        return 0;
    }
    if (n_train < *n_clients) {
        printf("partition: iid, %d training images for %ld clients: %ld get none (--clients %d or fewer gives each "
               "one)\n",
               n_train, *n_clients, *n_clients - n_train, n_train);
        return 0;
    }
    int dirichlet = n_train >= INIT_DIRICHLET_MIN * *n_clients;
    long each = n_train / *n_clients;
    printf("partition: %s, about %ld training image%s a client", dirichlet ? "Dirichlet (alpha 0.5)" : "iid", each,
           each == 1 ? "" : "s");
    if (dirichlet)
        printf("\n");
    else
        printf(" (a Dirichlet split needs about %d a client or more)\n", INIT_DIRICHLET_MIN);
    return dirichlet;
}

static int task_init(int argc, char **argv) {
    const char *clients = NULL, *out = "task.json", *model = NULL, *cache = NULL;
    int strict = 0, force = 0;
    const native_cli_option options[] = {
        {.name = "--clients", .value = &clients, .flag = NULL}, {.name = "--out", .value = &out, .flag = NULL},
        {.name = "--model", .value = &model, .flag = NULL},     {.name = "--cache", .value = &cache, .flag = NULL},
        {.name = "--strict", .value = NULL, .flag = &strict},   {.name = "--force", .value = NULL, .flag = &force}};
    char **rest = malloc(sizeof *rest * (size_t)(argc + 1));
    int n_rest = 0, status = rest ? native_cli_parse(argc, argv, options, 6, &rest, &n_rest) : CLI_FAILED;
    if (status == CLI_OK && n_rest != 1)
        status = native_cli_error(CLI_USAGE, "task init: give one folder (see 'sdfed task init --help')");
    /* the folder's real path (absolute, without '.' or '..': its name is the task's), so that the task file may
     * live anywhere */
    char dir[PATH_MAX];
    if (status == CLI_OK && !realpath(rest[0], dir))
        status = native_cli_error(CLI_FAILED, "task init: %s: %s", rest[0], strerror(errno));
    free(rest);
    if (status) return status;
    char *end;
    long n_clients = clients ? strtol(clients, &end, 10) : INIT_CLIENTS;
    if ((clients && *end) || n_clients < 1 || n_clients > 100000)
        return native_cli_error(CLI_USAGE, "task init: --clients must be an integer in 1..100000");
    /* a task file there may have been edited by hand */
    if (!force && access(out, F_OK) == 0)
        return native_cli_error(CLI_FAILED, "task init: %s exists (a task edited by hand?): --force to replace it",
                                out);
    /* the model (the default one unless given) as an absolute path too, checked to be a CLIP GGUF */
    char model_path[PATH_MAX], resolved[PATH_MAX];
    sdfed_error err = {0};
    native_model m = {0};
    if (!absolute(native_resolve_path(model ? model : NATIVE_DEFAULT_MODEL, resolved, sizeof resolved), model_path))
        return native_cli_error(CLI_FAILED, "task init: the model's path is too long");
    if (native_model_open(&m, model_path, &err)) return native_cli_error(CLI_FAILED, "task init: %s", err.message);
    native_model_close(&m);
    if (path_is_text("folder", dir) || path_is_text("model", model_path)) return CLI_FAILED;
    /* the folder read as the task will read it */
    char train[PATH_MAX + 8], test[PATH_MAX + 8];
    snprintf(train, sizeof train, "%s/train", dir);
    snprintf(test, sizeof test, "%s/test", dir);
    int split = is_folder(train) && is_folder(test);
    if (!split && is_folder(train) && no_validation_split(dir)) return CLI_FAILED;
    sdfed_task task;
    sdfed_task_defaults(&task);
    snprintf(task.dataset, sizeof task.dataset, "folder");
    const char *train_dir = split ? train : dir, *test_dir = split ? test : "";
    if (strlen(train_dir) >= sizeof task.data_train || strlen(test_dir) >= sizeof task.data_test)
        return native_cli_error(CLI_FAILED, "task init: the folder's path is too long");
    memcpy(task.data_train, train_dir, strlen(train_dir) + 1);
    memcpy(task.data_test, test_dir, strlen(test_dir) + 1);
    task.test_fraction = split ? 0 : 0.2;
    native_fed_data d = {0};
    native_image_folder_skips skipped = {0};
    int rc = native_fed_data_load_images(&task, NULL, cache, &d, &err);
    /* the dataset's files not used, then every file beside train/ and test/, which the task does not read */
    for (int i = 0; rc == SDFED_OK && d.skipped && i < d.skipped->n; i++)
        rc = native_image_folder_skip_add(&skipped, d.skipped->items[i].path, d.skipped->items[i].reason,
                                          d.skipped->items[i].image, &err);
    const char *const splits[] = {"train", "test"};
    if (rc == SDFED_OK && split)
        rc = native_image_folder_beside(dir, splits, 2, "not in train/ or test/ (a task reads those two)", &skipped,
                                        &err);
    if (rc || two_classes(dir, &d)) {
        native_image_folder_skips_free(&skipped);
        native_fed_data_free(&d);
        sdfed_task_free(&task);
        return rc ? native_cli_error(CLI_FAILED, "task init: %s", err.message) : CLI_FAILED;
    }
    status = report_dataset("task init", &task, d.class_names, &d, &skipped, strict);
    if (status == CLI_OK) {
        int dirichlet = init_partition(d.n_train, &n_clients, clients != NULL);
        long per_round = n_clients < INIT_CLIENTS_PER_ROUND ? n_clients : INIT_CLIENTS_PER_ROUND;
        printf("rounds: one starts when %d volunteers are connected and takes up to %ld of those connected "
               "(\"min_clients\", \"clients_per_round\")\n",
               INIT_MIN_CLIENTS, per_round);
        rc = write_init_task(out, dir, split, model_path, n_clients, dirichlet, &err);
        if (rc) status = native_cli_error(CLI_FAILED, "task init: %s", err.message);
    }
    if (status == CLI_OK) printf("wrote %s (check it with: sdfed task check %s)\n", out, out);
    native_image_folder_skips_free(&skipped);
    native_fed_data_free(&d);
    sdfed_task_free(&task);
    return status;
}

/* CLIP's zero-shot accuracy: the nearest class prompt to each test image
 * (NAN without a test image: none) */
static int zeroshot_accuracy(const native_model *m, const sdfed_kernels *k, const sdfed_classes *cls,
                             const native_fed_data *d, double *accuracy, sdfed_error *err) {
    int C = cls->n_classes, D = d->dim;
    sdfed_arena arena;
    sdfed_arena_init(&arena);
    float *text = sdfed_arena_floats(&arena, (size_t)C * D);
    int rc = text ? sdfed_classes_zeroshot(&m->clip, k, cls, text, &arena, err)
                  : sdfed_fail(err, SDFED_ERR_NOMEM, "out of memory");
    int right = 0;
    for (int i = 0; i < d->n_test && rc == SDFED_OK; i++) {
        const float *x = d->test_features + (size_t)i * D;
        int best = 0;
        double best_score = -2;
        for (int c = 0; c < C; c++) {
            double s = 0;
            for (int j = 0; j < D; j++) s += (double)x[j] * text[(size_t)c * D + j];
            if (s > best_score) {
                best_score = s;
                best = c;
            }
        }
        right += best == d->test_labels[i];
    }
    *accuracy = d->n_test ? (double)right / d->n_test : NAN;
    sdfed_arena_free(&arena);
    return rc;
}

/* task check reads the test images' features only (a native_fed_wanted's
 * mark). */
static int test_images(const void *ctx, const native_fed_data *d, uint8_t *train, uint8_t *test, sdfed_error *err) {
    memset(test, 1, (size_t)d->n_test);
    (void)ctx;
    (void)train;
    (void)err;
    return SDFED_OK;
}

/* Each client's images by class under the task's partition. */
static void report_clients(const sdfed_partition *part, const native_fed_data *d) {
    for (int i = 0; i < part->n_clients; i++) {
        const sdfed_client_split *s = &part->clients[i];
        printf("client %3d: %5d training, %5d test images; by class:", i, s->n_train, s->n_test);
        for (int c = 0; c < d->n_classes; c++) {
            int n = 0;
            for (int j = 0; j < s->n_train; j++) n += d->train_labels[s->train[j]] == c;
            printf(" %d", n);
        }
        printf("\n");
    }
}

static int task_check(int argc, char **argv) {
    const char *cache = NULL, *data_dir = NULL, *backend = NULL;
    int strict = 0;
    const native_cli_option options[] = {{.name = "--cache", .value = &cache, .flag = NULL},
                                         {.name = "--data", .value = &data_dir, .flag = NULL},
                                         {.name = "--backend", .value = &backend, .flag = NULL},
                                         {.name = "--strict", .value = NULL, .flag = &strict}};
    char **rest = malloc(sizeof *rest * (size_t)(argc + 1));
    int n_rest = 0, status = rest ? native_cli_parse(argc, argv, options, 4, &rest, &n_rest) : CLI_FAILED;
    if (status == CLI_OK && n_rest != 1)
        status = native_cli_error(CLI_USAGE, "task check: give one task file (see 'sdfed task check --help')");
    const char *path = status == CLI_OK ? rest[0] : NULL;
    free(rest);
    if (status) return status;
    const sdfed_kernels *k = native_backend(backend);
    if (!k) return native_cli_error(CLI_USAGE, "task check: backend '%s' is not in this build", backend);
    sdfed_task task;
    sdfed_task_defaults(&task);
    sdfed_error err = {0};
    native_model m = {0};
    native_fed_data d = {0};
    sdfed_classes cls = {0};
    sdfed_partition part = {0};
    char sha[65];
    int rc = native_task_read(path, &task, NULL, &err);
    if (rc == SDFED_OK) rc = native_model_open(&m, task.model, &err);
    if (rc == SDFED_OK) rc = native_sha256_hex(m.file.data, m.file.size, sha, &err);
    if (rc == SDFED_OK) {
        const sdfed_clip_config *c = &m.clip.cfg;
        printf("task %s: %s on %s, %d clients (%s partition), %d rounds\n", path, sdfed_method_name(task.method),
               task.dataset, task.clients, sdfed_partition_kind_name(task.partition.kind), task.rounds);
        printf("model %s (sha256 %.16s...): images %dx%d in %dx%d patches, vision %d layers x %d, text %d layers x "
               "%d, features %d\n",
               task.model, sha, c->image_size, c->image_size, c->patch_size, c->patch_size, c->vision_layers,
               c->vision_width, c->text_layers, c->text_width, c->embed_dim);
        fflush(stdout);
        native_fed_wanted wanted = {.mark = test_images, .ctx = NULL};
        rc = native_fed_data_load(&task, data_dir, cache, &m, sha, k, &wanted, &d, &err);
    }
    if (rc == SDFED_OK) rc = native_fed_data_task_classes(&task, &d, &err);
    if (rc == SDFED_OK) {
        const char **names = malloc(sizeof *names * (size_t)(d.n_classes + 1));
        for (int c = 0; names && c < d.n_classes; c++) names[c] = sdfed_task_class_name(&task, c);
        status = names ? report_dataset("task check", &task, names, &d, d.skipped, strict) : CLI_FAILED;
        if (!names) rc = sdfed_fail(&err, SDFED_ERR_NOMEM, "out of memory");
        free(names);
        printf("image features: %d from the cache, %d computed\n", d.features.cached, d.features.computed);
    }
    if (rc == SDFED_OK && status == CLI_OK)
        rc = sdfed_task_classes(&task, &m.tokenizer, m.clip.cfg.context_length, &cls, &err);
    if (rc == SDFED_OK && status == CLI_OK) rc = native_fed_partition(&task, &d, &part, &err);
    if (rc == SDFED_OK && status == CLI_OK) report_clients(&part, &d);
    double accuracy = 0;
    if (rc == SDFED_OK && status == CLI_OK) rc = zeroshot_accuracy(&m, k, &cls, &d, &accuracy, &err);
    if (rc == SDFED_OK && status == CLI_OK && isnan(accuracy))
        printf("zero-shot accuracy: none (no test images)\n");
    else if (rc == SDFED_OK && status == CLI_OK)
        printf("zero-shot accuracy on the %d test images: %.2f%%\n", d.n_test, 100 * accuracy);
    sdfed_partition_free(&part);
    sdfed_classes_free(&cls);
    sdfed_task_free(&task);
    native_fed_data_free(&d);
    if (m.file.data) native_model_close(&m);
    if (rc) return native_cli_error(CLI_FAILED, "task check: %s", err.message);
    return status;
}

/* --help or -h anywhere among a command's arguments */
static int wants_help(int argc, char **argv) {
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
    return 0;
}

int cmd_task(int argc, char **argv) {
    if (argc >= 1 && strcmp(argv[0], "init") == 0) {
        if (wants_help(argc - 1, argv + 1)) return printf("%s", init_usage) < 0;
        return task_init(argc - 1, argv + 1);
    }
    if (argc >= 1 && strcmp(argv[0], "check") == 0) {
        if (wants_help(argc - 1, argv + 1)) return printf("%s", check_usage) < 0;
        return task_check(argc - 1, argv + 1);
    }
    return native_cli_error(CLI_USAGE,
                            "task: 'init' or 'check' (see 'sdfed task init --help', 'sdfed task check --help')");
}
