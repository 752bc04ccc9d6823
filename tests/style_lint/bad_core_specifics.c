/* A repository path and a data set in the core, by a string or a name: tests/style_lint.py must find them. */
const char *default_model = "models/tiny.gguf"; /* found */
const char *default_dataset = "fashion-mnist"; /* found */
#define SDFED_FMNIST_CLASSES 10 /* found */
extern const char *const sdfed_fmnist_class_names[10]; /* found */
