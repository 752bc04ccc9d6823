/* The C tests' CLIP model and its tokenizer, from the GGUF file their
 * command line names: the file's bytes (the model points into them: freed
 * after it), or NULL after "usage: USAGE (why)" on stderr. */
#ifndef SDFED_TESTS_CLIP_FIXTURE_H
#define SDFED_TESTS_CLIP_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>

#include "clip/clip_model.h"
#include "read_file.h"
#include "text/tokenizer.h"

static inline unsigned char *load_clip_fixture(const char *path, sdfed_clip_model *model, sdfed_tokenizer *tok,
                                               const char *usage) {
    size_t size = 0;
    sdfed_error err = {0};
    unsigned char *data = path ? read_file(path, &size) : NULL;
    if (!data) sdfed_fail(&err, SDFED_ERR_IO, "%s", path ? "the file cannot be read" : "no model file given");
    if (!data || sdfed_clip_load(model, data, size, &err) || sdfed_tokenizer_init_gguf(tok, &model->file, &err)) {
        fprintf(stderr, "usage: %s (%s)\n", usage, err.message);
        return NULL;
    }
    return data;
}

#endif
