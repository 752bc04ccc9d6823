/* The project's secure aggregation test vector, tests/vectors/secagg-v2.txt:
 * fixed mask seeds, share keys, self-mask seeds and a share pair, and every
 * value the layout of shared/fed/secagg_layout.h derives from them (mask
 * keys, session id, HKDF infos, share, pair and self keys, a sealed pair,
 * the first mask bytes, a masked input's first elements), recomputed here
 * with OpenSSL (native/secagg_keys.h) and compared byte for byte. The
 * page's WebCrypto path is checked against the same file
 * (tests/oracle/secagg_webcrypto.mjs, tests/browser/secagg_vector_worker.js).
 *   test_secagg_vector FILE           check FILE
 *   test_secagg_vector --write FILE   write it (once, when the layout is new) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fed/secagg_layout.h"
#include "fed/secagg_ring.h"
#include "native/crypto.h"
#include "native/secagg_keys.h"
#include "read_file.h"

enum { CLIENTS = 3, MAX_VALUES = 64, MASK_BYTES = 64 };
static const int64_t ROUND = 7;

typedef struct value {
    char name[48];
    unsigned char bytes[MASK_BYTES * 2];
    size_t size;
} value;

static value VALUES[MAX_VALUES];
static int n_values;

static void put(const char *name, const unsigned char *bytes, size_t size) {
    value *v = &VALUES[n_values++];
    snprintf(v->name, sizeof v->name, "%s", name);
    memcpy(v->bytes, bytes, size);
    v->size = size;
}

/* the inputs: byte i of input `tag` is (i * 29 + tag * 71 + 5) mod 256 */
static void input(unsigned char *out, size_t size, int tag) {
    for (size_t i = 0; i < size; i++) out[i] = (unsigned char)((i * 29 + (size_t)tag * 71 + 5) & 0xff);
}

static void compute(void) {
    sdfed_error err = {0};
    char name[48];
    unsigned char mask_seed[CLIENTS][SDFED_SECAGG_SEED_BYTES], mask_sk[CLIENTS][32], mask_pk[CLIENTS][32],
        share_sk[CLIENTS][32], share_pk[CLIENTS][32], seed[CLIENTS][SDFED_SECAGG_SEED_BYTES], info[64];
    static const unsigned char no_session[32];
    sdfed_secagg_info(SDFED_SECAGG_PURPOSE_MASK_KEY, no_session, ROUND, 0, 0, info, &err);
    put("info.mask_key", info, 64);
    for (int i = 0; i < CLIENTS; i++) {
        input(mask_seed[i], sizeof mask_seed[i], 10 * i + 1);
        input(share_sk[i], 32, 10 * i + 2);
        input(seed[i], sizeof seed[i], 10 * i + 3);
        CHECK(native_secagg_mask_private(mask_seed[i], ROUND, mask_sk[i], &err) == SDFED_OK &&
                  native_x25519_public(mask_sk[i], mask_pk[i], &err) == SDFED_OK &&
                  native_x25519_public(share_sk[i], share_pk[i], &err) == SDFED_OK,
              "%s", err.message);
        snprintf(name, sizeof name, "client%d.mask_seed", i);
        put(name, mask_seed[i], sizeof mask_seed[i]);
        snprintf(name, sizeof name, "client%d.mask_private", i);
        put(name, mask_sk[i], 32);
        snprintf(name, sizeof name, "client%d.mask_public", i);
        put(name, mask_pk[i], 32);
        snprintf(name, sizeof name, "client%d.share_private", i);
        put(name, share_sk[i], 32);
        snprintf(name, sizeof name, "client%d.share_public", i);
        put(name, share_pk[i], 32);
        snprintf(name, sizeof name, "client%d.seed", i);
        put(name, seed[i], sizeof seed[i]);
    }
    unsigned char advertised[CLIENTS] = {1, 1, 1}, scratch[64 * CLIENTS], session[32], key[32];
    CHECK(native_secagg_session_id(ROUND, CLIENTS, mask_pk[0], share_pk[0], advertised, scratch, session, &err) == 0,
          "%s", err.message);
    put("session", session, 32);
    sdfed_secagg_info(SDFED_SECAGG_PURPOSE_SHARE, session, ROUND, 0, 1, info, &err);
    put("info.share.0.1", info, 64);
    native_secagg_share_key(share_sk[0], share_pk[1], session, ROUND, 0, 1, key, &err);
    put("key.share.0.1", key, 32);
    unsigned char again[32];
    native_secagg_share_key(share_sk[1], share_pk[0], session, ROUND, 0, 1, again, &err);
    CHECK(!memcmp(key, again, 32), "both ends derive the share key");
    unsigned char pair[SDFED_SECAGG_PAIR_BYTES], sealed[SDFED_SECAGG_SEALED_BYTES], opened[SDFED_SECAGG_PAIR_BYTES];
    input(pair, sizeof pair, 91);
    put("pair.0.1", pair, sizeof pair);
    CHECK(native_secagg_seal(key, session, ROUND, 0, 1, pair, sealed, &err) == SDFED_OK, "%s", err.message);
    put("sealed.0.1", sealed, sizeof sealed);
    CHECK(native_secagg_open(again, session, ROUND, 0, 1, sealed, opened, &err) == SDFED_OK &&
              !memcmp(opened, pair, sizeof pair),
          "the recipient opens the sealed pair: %s", err.message);
    sdfed_secagg_info(SDFED_SECAGG_PURPOSE_PAIR, session, ROUND, 1, 2, info, &err);
    put("info.pair.1.2", info, 64);
    native_secagg_pair_key(mask_sk[2], mask_pk[1], session, ROUND, 2, 1, key, &err);
    native_secagg_pair_key(mask_sk[1], mask_pk[2], session, ROUND, 1, 2, again, &err);
    CHECK(!memcmp(key, again, 32), "both ends derive the pair key");
    put("key.pair.1.2", key, 32);
    unsigned char stream[MASK_BYTES];
    native_secagg_mask_stream(key, stream, MASK_BYTES, &err);
    put("mask.pair.1.2", stream, MASK_BYTES);
    sdfed_secagg_info(SDFED_SECAGG_PURPOSE_SELF, session, ROUND, 2, 2, info, &err);
    put("info.self.2", info, 64);
    native_secagg_self_key(seed[2], session, ROUND, 2, key, &err);
    put("key.self.2", key, 32);
    native_secagg_mask_stream(key, stream, MASK_BYTES, &err);
    put("mask.self.2", stream, MASK_BYTES);
    /* client 1's masked input in Z_2^32 for the quantised input 0, 1, -1, 2, -2, ... (16 elements): + self mask,
     * + its pair mask with 2 (1 < 2); each element 4 bytes little-endian */
    uint64_t v[16];
    for (int j = 0; j < 16; j++) v[j] = (uint64_t)(int64_t)((j % 2 ? 1 : -1) * ((j + 1) / 2)) & 0xFFFFFFFFu;
    unsigned char self1[64], pair12[64], out[64];
    native_secagg_self_key(seed[1], session, ROUND, 1, key, &err);
    native_secagg_mask_stream(key, self1, 64, &err);
    native_secagg_pair_key(mask_sk[1], mask_pk[2], session, ROUND, 1, 2, key, &err);
    native_secagg_mask_stream(key, pair12, 64, &err);
    sdfed_secagg_ring_add_stream(32, v, 16, self1, 64, 1, &err);
    sdfed_secagg_ring_add_stream(32, v, 16, pair12, 64, sdfed_secagg_pair_sign(1, 2), &err);
    for (int j = 0; j < 16; j++)
        for (int b = 0; b < 4; b++) out[4 * j + b] = (unsigned char)(v[j] >> (8 * b));
    put("masked.1", out, 64);
}

static void write_hex(FILE *f, const unsigned char *b, size_t n) {
    for (size_t i = 0; i < n; i++) fprintf(f, "%02x", b[i]);
}

int main(int argc, char **argv) {
    int writing = argc == 3 && !strcmp(argv[1], "--write");
    if (argc != 2 && !writing) {
        fprintf(stderr, "usage: test_secagg_vector [--write] FILE\n");
        return 2;
    }
    compute();
    const char *path = argv[argc - 1];
    if (writing) {
        FILE *f = fopen(path, "w");
        if (!f) return 1;
        fprintf(f,
                "# sdfed secure aggregation test vector, layout v2 (shared/fed/secagg_layout.h,\n"
                "# native/secagg_keys.h). Round %lld, 3 clients (0, 1, 2), all advertised. Inputs:\n"
                "# byte i of each fixed input is (i * 29 + tag * 71 + 5) mod 256 (tags: client c's\n"
                "# mask seed 10c + 1, share key 10c + 2, seed 10c + 3; the pair 91); the rest is\n"
                "# derived (a mask key from its mask seed; the sealed pair under the nonce of zeros).\n"
                "# masked.1: client 1's input 0, 1, -1, 2, -2, ... (16 elements of Z_2^32, packed at\n"
                "# 32 bits: 4 bytes little-endian each) + its self mask + its pair mask with client 2.\n"
                "# Written by build/tests/test_secagg_vector --write; checked by test_secagg_vector\n"
                "# (OpenSSL), tests/oracle/secagg_webcrypto.mjs (WebCrypto under Node) and\n"
                "# tests/browser/secagg_vector_worker.js (the page's code in Chromium).\n",
                (long long)ROUND);
        for (int k = 0; k < n_values; k++) {
            fprintf(f, "%s ", VALUES[k].name);
            write_hex(f, VALUES[k].bytes, VALUES[k].size);
            fprintf(f, "\n");
        }
        fclose(f);
        printf("wrote %d values to %s\n", n_values, path);
        return check_report("test_secagg_vector");
    }
    size_t size;
    char *text = (char *)read_file(path, &size);
    CHECK(text != NULL, "reading %s", path);
    int found = 0;
    for (char *line = text ? strtok(text, "\n") : NULL; line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') continue;
        char *space = strchr(line, ' ');
        if (!space) continue;
        *space = '\0';
        for (int k = 0; k < n_values; k++) {
            if (strcmp(VALUES[k].name, line)) continue;
            char hex[2 * sizeof VALUES[k].bytes + 1] = "";
            for (size_t i = 0; i < VALUES[k].size; i++) snprintf(hex + 2 * i, 3, "%02x", VALUES[k].bytes[i]);
            CHECK(!strcmp(hex, space + 1), "%s: computed %s, the file says %s", line, hex, space + 1);
            found++;
        }
    }
    CHECK(found == n_values, "every value is in the file (%d of %d)", found, n_values);
    free(text);
    return check_report("test_secagg_vector");
}
