/* The host's cryptographic primitives (native/crypto.h, OpenSSL's
 * libcrypto) against published answers: FIPS 180-4's examples (SHA-256,
 * whole and in uneven pieces), RFC 7748 (X25519, sections 5.2 and
 * 6.1), RFC 5869 (HKDF-SHA256, test cases 1 and 3), the GCM specification
 * of McGrew and Viega (AES-256 test cases 13, 14 and 16), NIST SP 800-38A
 * (F.5.1 CTR-AES128, F.5.5 CTR-AES256); a forged tag, a small-order peer
 * key; the keystream source and getrandom. Native. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "native/crypto.h"

/* hex (2n digits) into out (n bytes) */
static size_t unhex(const char *hex, unsigned char *out) {
    size_t n = strlen(hex) / 2;
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        for (int d = 0; d < 2; d++) {
            char c = hex[2 * i + d];
            v = v * 16 + (unsigned)(c <= '9' ? c - '0' : (c | 32) - 'a' + 10);
        }
        out[i] = (unsigned char)v;
    }
    return n;
}

static int same(const unsigned char *got, const char *hex) {
    unsigned char want[256];
    size_t n = unhex(hex, want);
    return !memcmp(got, want, n);
}

static void test_sha256(void) {
    sdfed_error err = {0};
    char hex[65];
    CHECK(native_sha256_hex("", 0, hex, &err) == SDFED_OK &&
              !strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
          "SHA-256 of nothing: %s", hex);
    CHECK(native_sha256_hex("abc", 3, hex, &err) == SDFED_OK &&
              !strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
          "SHA-256 of abc: %s", hex);
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    CHECK(native_sha256_hex(two, strlen(two), hex, &err) == SDFED_OK &&
              !strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
          "SHA-256 of 448 bits: %s", hex);
    /* a million 'a's, given in uneven pieces */
    char *a = malloc(1000000);
    memset(a, 'a', 1000000);
    native_sha256_ctx h;
    unsigned char d[32];
    CHECK(native_sha256_begin(&h, &err) == SDFED_OK, "%s", err.message);
    for (size_t at = 0, step = 1; at < 1000000; at += step, step = step * 3 % 1000 + 1)
        native_sha256_add(&h, a + at, at + step > 1000000 ? 1000000 - at : step);
    CHECK(native_sha256_end(&h, d, &err) == SDFED_OK && h.md == NULL &&
              same(d, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
          "SHA-256 of a million 'a' in pieces");
    free(a);
}

static void test_x25519(void) {
    unsigned char a[32], b[32], pub[32], shared[32], u[32];
    sdfed_error err = {0};
    /* RFC 7748 6.1 */
    unhex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a", a);
    unhex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb", b);
    CHECK(native_x25519_public(a, pub, &err) == SDFED_OK &&
              same(pub, "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"),
          "RFC 7748 6.1: Alice's public key %s", err.message);
    CHECK(native_x25519_public(b, pub, &err) == SDFED_OK &&
              same(pub, "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"),
          "RFC 7748 6.1: Bob's public key");
    CHECK(native_x25519_agree(a, pub, shared, &err) == SDFED_OK &&
              same(shared, "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"),
          "RFC 7748 6.1: the shared secret %s", err.message);
    /* RFC 7748 5.2, the first vector */
    unhex("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4", a);
    unhex("e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c", u);
    CHECK(native_x25519_agree(a, u, shared, &err) == SDFED_OK &&
              same(shared, "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552"),
          "RFC 7748 5.2: scalar times u %s", err.message);
    /* a small-order point (u = 0): an all-zero result, refused */
    memset(u, 0, 32);
    CHECK(native_x25519_agree(a, u, shared, &err) != SDFED_OK, "a small-order peer key is refused");
    unsigned char p1[32], k1[32], p2[32], k2[32], s1[32], s2[32];
    CHECK(native_x25519_keypair(k1, p1, &err) == SDFED_OK && native_x25519_keypair(k2, p2, &err) == SDFED_OK &&
              native_x25519_agree(k1, p2, s1, &err) == SDFED_OK && native_x25519_agree(k2, p1, s2, &err) == SDFED_OK &&
              !memcmp(s1, s2, 32) && memcmp(k1, k2, 32),
          "two fresh key pairs agree");
}

/* one private key set up once agrees with many peers exactly as one agreement at a time */
static void test_x25519_many_peers(void) {
    enum { PEERS = 6 };
    unsigned char priv[32], peer[PEERS][32], one[32], many[32], rfc[32];
    sdfed_error err = {0};
    native_x25519_key mine;
    CHECK(native_x25519_keypair(priv, one, &err) == SDFED_OK && native_x25519_key_open(&mine, priv, &err) == SDFED_OK,
          "a key opened %s", err.message);
    for (int p = 0; p < PEERS; p++) {
        unsigned char peer_priv[32];
        CHECK(native_x25519_keypair(peer_priv, peer[p], &err) == SDFED_OK, "peer %d's key pair", p);
    }
    for (int p = 0; p < PEERS; p++)
        CHECK(native_x25519_key_agree(&mine, peer[p], many, &err) == SDFED_OK &&
                  native_x25519_agree(priv, peer[p], one, &err) == SDFED_OK && !memcmp(one, many, 32),
              "peer %d: the key set up once agrees as one agreement does", p);
    unsigned char small_order[32] = {0};
    CHECK(native_x25519_key_agree(&mine, small_order, many, &err) != SDFED_OK, "a small-order peer refused");
    CHECK(native_x25519_key_agree(&mine, peer[0], many, &err) == SDFED_OK &&
              native_x25519_agree(priv, peer[0], one, &err) == SDFED_OK && !memcmp(one, many, 32),
          "the key still agrees after a refusal");
    native_x25519_key_close(&mine);
    CHECK(mine.pkey == NULL, "a closed key holds nothing");
    /* RFC 7748 6.1 through the key: Alice's private key with Bob's public key */
    unhex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a", priv);
    unhex("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f", rfc);
    CHECK(native_x25519_key_open(&mine, priv, &err) == SDFED_OK &&
              native_x25519_key_agree(&mine, rfc, many, &err) == SDFED_OK &&
              same(many, "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"),
          "RFC 7748 6.1 through a key set up once %s", err.message);
    native_x25519_key_close(&mine);
}

static void test_hkdf(void) {
    unsigned char ikm[22], salt[13], info[10], okm[42];
    sdfed_error err = {0};
    memset(ikm, 0x0b, sizeof ikm);
    unhex("000102030405060708090a0b0c", salt);
    unhex("f0f1f2f3f4f5f6f7f8f9", info);
    CHECK(native_hkdf_sha256(ikm, 22, salt, 13, info, 10, okm, 42, &err) == SDFED_OK &&
              same(okm, "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"),
          "RFC 5869 test case 1 %s", err.message);
    CHECK(native_hkdf_sha256(ikm, 22, NULL, 0, NULL, 0, okm, 42, &err) == SDFED_OK &&
              same(okm, "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"),
          "RFC 5869 test case 3 (no salt, no info) %s", err.message);
}

static void test_gcm(void) {
    unsigned char key[32] = {0}, nonce[12] = {0}, pt[64] = {0}, ct[64], tag[16], back[64], aad[20];
    sdfed_error err = {0};
    CHECK(native_aes256gcm_seal(key, nonce, NULL, 0, NULL, 0, ct, tag, &err) == SDFED_OK &&
              same(tag, "530f8afbc74536b9a963b4f1c4cb738b"),
          "GCM test case 13 %s", err.message);
    CHECK(native_aes256gcm_seal(key, nonce, NULL, 0, pt, 16, ct, tag, &err) == SDFED_OK &&
              same(ct, "cea7403d4d606b6e074ec5d3baf39d18") && same(tag, "d0d1c8a799996bf0265b98b5d48ab919"),
          "GCM test case 14");
    unhex("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", key);
    unhex("cafebabefacedbaddecaf888", nonce);
    size_t n = unhex("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b5"
                     "25b16aedf5aa0de657ba637b39",
                     pt);
    size_t a = unhex("feedfacedeadbeeffeedfacedeadbeefabaddad2", aad);
    CHECK(n == 60 && a == 20 && native_aes256gcm_seal(key, nonce, aad, a, pt, n, ct, tag, &err) == SDFED_OK &&
              same(ct,
                   "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838"
                   "c5f61e6393ba7a0abcc9f662") &&
              same(tag, "76fc6ece0f4e1768cddf8853bb2d551b"),
          "GCM test case 16 (60 bytes, 20 of additional data)");
    CHECK(native_aes256gcm_open(key, nonce, aad, a, ct, n, tag, back, &err) == SDFED_OK && !memcmp(back, pt, n),
          "test case 16 opens");
    tag[0] ^= 1;
    CHECK(native_aes256gcm_open(key, nonce, aad, a, ct, n, tag, back, &err) == SDFED_ERR_FORMAT &&
              strstr(err.message, "authenticate"),
          "a forged tag is refused: %s", err.message);
    tag[0] ^= 1;
    aad[0] ^= 1;
    CHECK(native_aes256gcm_open(key, nonce, aad, a, ct, n, tag, back, &err) == SDFED_ERR_FORMAT,
          "other additional data is refused");
}

static void test_ctr(void) {
    unsigned char key[32], iv[16], pt[64], ct[64];
    sdfed_error err = {0};
    unhex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff", iv);
    unhex("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e5130c81c46a35ce411e5fbc1191a0a52ef"
          "f69f2445df4f9b17ad2b417be66c3710",
          pt);
    unhex("2b7e151628aed2a6abf7158809cf4f3c", key);
    CHECK(native_aes_ctr(key, 16, iv, pt, ct, 64, &err) == SDFED_OK &&
              same(ct,
                   "874d6191b620e3261bef6864990db6ce9806f66b7970fdff8617187bb9fffdff5ae4df3edbd5d35e5b4f09020db03eab"
                   "1e031dda2fbe03d1792170a0f3009cee"),
          "SP 800-38A F.5.1 CTR-AES128 %s", err.message);
    unhex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4", key);
    CHECK(native_aes_ctr(key, 32, iv, pt, ct, 64, &err) == SDFED_OK &&
              same(ct,
                   "601ec313775789a5b7a7f504bbf3d228f443e3ca4d62b59aca84e990cacaf5c52b0930daa23de94ce87017ba2d84988d"
                   "dfc9c58db67aada613c2dd08457941a6"),
          "SP 800-38A F.5.5 CTR-AES256 %s", err.message);
    /* the counter carries across all 128 bits: ff..ff then 00..00 */
    unsigned char top[16], stream[32], one[16];
    memset(top, 0xff, 16);
    memset(one, 0, 16);
    CHECK(native_aes_ctr(key, 32, top, NULL, stream, 32, &err) == SDFED_OK &&
              native_aes_ctr(key, 32, one, NULL, ct, 16, &err) == SDFED_OK && !memcmp(stream + 16, ct, 16),
          "the 128-bit counter wraps to zero (WebCrypto's length 128)");
    /* the byte source reads the keystream front to back, however it is cut */
    native_crypto_stream s;
    unsigned char whole[100], parts[100], zero_iv[16] = {0};
    CHECK(native_crypto_stream_open(&s, key, &err) == SDFED_OK, "%s", err.message);
    sdfed_secagg_bytes src = native_crypto_stream_source(&s);
    CHECK(sdfed_secagg_draw(&src, parts, 7, &err) == SDFED_OK && sdfed_secagg_draw(&src, parts + 7, 40, &err) == 0 &&
              sdfed_secagg_draw(&src, parts + 47, 53, &err) == SDFED_OK &&
              native_aes_ctr(key, 32, zero_iv, NULL, whole, 100, &err) == SDFED_OK && !memcmp(whole, parts, 100),
          "the keystream source in pieces is AES-256-CTR from counter 0");
    native_crypto_stream_close(&s);
    unsigned char r1[32], r2[32];
    sdfed_secagg_bytes os = native_crypto_os_source();
    CHECK(sdfed_secagg_draw(&os, r1, 32, &err) == SDFED_OK && native_crypto_random(r2, 32, &err) == SDFED_OK &&
              memcmp(r1, r2, 32),
          "getrandom gives different bytes each time");
}

int main(void) {
    test_sha256();
    test_x25519();
    test_x25519_many_peers();
    test_hkdf();
    test_gcm();
    test_ctr();
    return check_report("test_crypto");
}
