/* libFuzzer target for a secure round's server (native/secagg_server.h and
 * secagg_unmask.h): every stage message comes from a volunteer at the
 * public edge, and whatever they send, in whatever order, must be kept or
 * refused with a message, never crash the server or corrupt its round.
 * The round of secagg_plan.h (6 clients, 7 coordinates in a 42-bit ring),
 * its graph from a fixed key. The input is
 * records, each
 *   op (1) || length (2, big-endian) || the message (length bytes)
 * op's low 3 bits name the client (mod 6), bit 7 makes the record the
 * client leaving (no message), bit 6 says the stage's deadline passed.
 * After each record the round goes on as the stage machine says (the next
 * stage, or abandoned); every request the server would send is written;
 * a round that reaches its end is unmasked. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/io.h"
#include "fed/secagg_stage.h"
#include "native/secagg_server.h"
#include "native/secagg_unmask.h"
#include "secagg_plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* every request of the current stage, written (their sizes from the round's state) */
static void write_requests(const native_secagg_server *s) {
    for (int c = 0; c < FUZZ_SECAGG_CLIENTS; c++) {
        sdfed_buffer out = {0};
        sdfed_error err = {0};
        if (native_secagg_server_request(s, c, &out, &err) != SDFED_OK && !err.message[0]) abort();
        sdfed_buffer_free(&out);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const sdfed_secagg_plan *plan = fuzz_secagg_plan();
    static const unsigned char graph_key[32] = {1, 2, 3};
    native_secagg_server s;
    sdfed_error err = {0};
    if (native_secagg_server_start(&s, plan, 0, graph_key, &err)) abort();
    size_t at = 0;
    while (at + 3 <= size && s.stages.stage != SDFED_SECAGG_DONE && s.stages.stage != SDFED_SECAGG_ABANDONED) {
        const int op = data[at], client = (op & 7) % FUZZ_SECAGG_CLIENTS;
        size_t len = (size_t)data[at + 1] << 8 | data[at + 2];
        at += 3;
        if (len > size - at) len = size - at;
        err.message[0] = '\0';
        int rc = op & 0x80 ? native_secagg_server_leave(&s, client, &err)
                           : native_secagg_server_receive(&s, client, data + at, len, &err);
        if (rc != SDFED_OK && !err.message[0]) abort();
        at += op & 0x80 ? 0 : len;
        sdfed_secagg_verdict verdict = native_secagg_server_check(&s, (op & 0x40) != 0);
        if (verdict == SDFED_SECAGG_NEXT) {
            err.message[0] = '\0';
            if (native_secagg_server_advance(&s, &err) != SDFED_OK && !err.message[0]) abort();
            if (s.stages.stage != SDFED_SECAGG_DONE) write_requests(&s);
        } else if (verdict == SDFED_SECAGG_ABANDON) {
            sdfed_secagg_server_abandon(&s.stages, "the fuzzer's round cannot go on");
        }
    }
    if (s.stages.stage == SDFED_SECAGG_DONE) {
        float g[FUZZ_SECAGG_DIMS] = {0}, next[FUZZ_SECAGG_DIMS];
        int64_t weights = 0;
        err.message[0] = '\0';
        if (native_secagg_server_finish(&s, g, next, &weights, &err) != SDFED_OK && !err.message[0]) abort();
    }
    native_secagg_server_free(&s);
    return 0;
}
