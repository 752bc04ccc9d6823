/* libFuzzer target for a secure round's client (native/secagg_client.h):
 * the server's requests, from a broken or hostile server (or anyone
 * between a volunteer and a server without TLS), must be answered or
 * refused with a message, never crash the volunteer's client. Client 0 of
 * the round of secagg_plan.h advertises with its secrets from a fixed
 * seed, 1000; the input is records
 *   op (1) || length (2, big-endian) || the request (length bytes)
 * each handed to the step op % 3 names: 0 share, 1 masked, 2 unmask (a step
 * out of order is refused as any other). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "fed/secagg_random.h"
#include "native/secagg_client.h"
#include "secagg_plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const sdfed_secagg_plan *plan = fuzz_secagg_plan();
    sdfed_rng rng, rounding_rng;
    sdfed_rng_seed(&rng, 1000);
    sdfed_rng_seed(&rounding_rng, 2000);
    sdfed_secagg_bytes secret = sdfed_secagg_rng_source(&rng), rounding = sdfed_secagg_rng_source(&rounding_rng);
    native_secagg_client c;
    sdfed_buffer out = {0};
    sdfed_error err = {0};
    if (native_secagg_client_advertise(&c, plan, 0, &secret, &out, &err)) abort();
    const float g[FUZZ_SECAGG_DIMS] = {0}, x[FUZZ_SECAGG_DIMS] = {0.1f, -0.2f, 0.3f, -0.4f, 0.5f, -0.6f, 0.7f};
    size_t at = 0;
    while (at + 3 <= size) {
        const int step = data[at] % 3;
        size_t len = (size_t)data[at + 1] << 8 | data[at + 2];
        at += 3;
        if (len > size - at) len = size - at;
        out.size = 0;
        err.message[0] = '\0';
        int rc;
        if (step == 0)
            rc = native_secagg_client_share(&c, data + at, len, &out, &err);
        else if (step == 1)
            rc = native_secagg_client_mask(&c, data + at, len, x, g, 16, &rounding, NULL, &out, &err);
        else
            rc = native_secagg_client_unmask(&c, data + at, len, &out, &err);
        if (rc != SDFED_OK && !err.message[0]) abort();
        at += len;
    }
    sdfed_buffer_free(&out);
    native_secagg_client_free(&c);
    return 0;
}
