/* A repository path and a data set in the core: tests/style_lint.py must find them. */
const char *default_model = "models/tiny.gguf"; /* found */
const char *default_dataset = "fashion-mnist"; /* found */
