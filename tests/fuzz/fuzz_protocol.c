/* libFuzzer target for the sdfed.v1 codec: frames and JSON messages from
 * the network (a client's or a server's) must decode or fail with a code
 * and a message, never crash. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "fed/protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sdfed_error err = {0};
    sdfed_code code = SDFED_CODE_NONE;
    sdfed_frame f;
    if (sdfed_frame_decode(data, size, 1 << 16, &f, &code, &err) == SDFED_OK) {
        float *v = malloc(sizeof *v * (f.n_values + 1));
        if (v) sdfed_frame_values(&f, v);
        free(v);
    } else if (!sdfed_code_name(code) || !err.message[0]) {
        abort();
    }
    for (int sender = SDFED_SENT_BY_CLIENT; sender <= SDFED_SENT_BY_SERVER; sender++) {
        sdfed_message m;
        err.message[0] = '\0';
        code = SDFED_CODE_NONE;
        if (sdfed_message_parse((const char *)data, size, sender, 1 << 16, &m, &code, &err) == SDFED_OK)
            sdfed_message_free(&m);
        else if (!sdfed_code_name(code))
            abort();
    }
    return 0;
}
