/* Secure aggregation: a client's input as a vector in the ring Z_{2^B}, the
 * masks added to it, and the server's sum turned back into the weighted
 * mean.
 *
 *   quantise    each of the P coordinates x_j of the global prompt is
 *               clipped to [-c, c] and scaled by s = (2^(b-1) - 1) / c, then
 *               rounded stochastically: v = x s, q = floor(v) + 1 with
 *               probability v - floor(v) (u < (v - floor v) 2^53 for u the
 *               top 53 bits of a u64 drawn from the client's source), else
 *               floor(v); |q| <= 2^(b-1) - 1. E[q / s] = clipped x.
 *   weight      w = the client's sample count, clipped to max_weight
 *   the vector  (P + 1) elements of Z_{2^B}: w q_0, ..., w q_{P-1}, then w;
 *               negative values as two's complement mod 2^B
 *   no wrap     the sum of n inputs, plus the clients' noise, must decode
 *               without wrapping: n max_weight (2^(b-1) - 1) + noise_bound
 *               <= 2^(B-1) - 1 (hence B >= b + ceil(log2 n) +
 *               ceil(log2 max_weight) + 1 without noise). A configuration
 *               that could wrap is refused by sdfed_secagg_ring_check,
 *               naming the task keys (secure_aggregation.ring_bits,
 *               quant_bits, max_weight) and the least ring_bits that holds.
 *   masks       a PRG stream (bytes, from native/crypto.h or WebCrypto)
 *               gives one ring element per 4 bytes when B <= 32, else per
 *               8, little-endian, reduced mod 2^B; it is added (+1) or
 *               subtracted (-1) element by element. A pairwise mask between
 *               clients i and j is added by the smaller index and subtracted
 *               by the larger (sdfed_secagg_pair_sign), so the two cancel in
 *               the sum; the self mask is always added.
 *   dequantise  the sum S (P + 1) decodes (signed, |S_j| < 2^(B-1)) to
 *               W = S_P = sum of weights and mean_j = (float)((double)S_j /
 *               ((double)W s)): the weighted mean of the quantised inputs.
 *               A sum whose weight or coordinates lie outside what n inputs
 *               can make (a wrong unmasking) is refused.
 * Ranges: 2 <= b <= 31, 2 <= B <= 64, c > 0 finite, 1 <= max_weight <=
 * 2^40, 1 <= clients <= 1,000,000. */
#ifndef SDFED_SECAGG_RING_H
#define SDFED_SECAGG_RING_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "fed/secagg_random.h"

typedef struct sdfed_secagg_ring {
    double clip;          /* c: each coordinate clipped to [-c, c] */
    int quant_bits;       /* b */
    int64_t max_weight;   /* the largest weight (sample count) an input carries */
    int ring_bits;        /* B */
    int clients;          /* n: the most inputs one sum holds */
    uint64_t noise_bound; /* the bound on |all clients' noise summed| on a coordinate (0: no noise) */
} sdfed_secagg_ring;

/* The least ring_bits that holds r's sums (65 when 64 bits do not). */
int sdfed_secagg_ring_bits_needed(const sdfed_secagg_ring *r);
/* SDFED_OK when r is in range and its sums cannot wrap; otherwise
 * SDFED_ERR_ARG with a message naming the keys. */
int sdfed_secagg_ring_check(const sdfed_secagg_ring *r, sdfed_error *err);
/* 2^(b-1) - 1: the largest |q| */
int64_t sdfed_secagg_ring_qmax(const sdfed_secagg_ring *r);

/* out (P + 1) = the client's input: x (P floats, finite) quantised and
 * weighted by weight (>= 0, clipped to max_weight); 8 bytes drawn per
 * coordinate. */
int sdfed_secagg_quantise(const sdfed_secagg_ring *r, const float *x, size_t P, int64_t weight,
                          const sdfed_secagg_bytes *random, uint64_t *out, sdfed_error *err);

/* acc (len) += v (len), or -=, in Z_{2^B}. */
void sdfed_secagg_ring_add(int ring_bits, uint64_t *acc, const uint64_t *v, size_t len);
void sdfed_secagg_ring_sub(int ring_bits, uint64_t *acc, const uint64_t *v, size_t len);
/* v mod 2^B as a signed integer in [-2^(B-1), 2^(B-1)). */
int64_t sdfed_secagg_ring_signed(int ring_bits, uint64_t v);
/* The PRG bytes a mask of len elements takes. */
size_t sdfed_secagg_stream_bytes(int ring_bits, size_t len);
/* v (len) += sign * the stream's elements, sign +1 or -1; stream_bytes must
 * be sdfed_secagg_stream_bytes(ring_bits, len). */
int sdfed_secagg_ring_add_stream(int ring_bits, uint64_t *v, size_t len, const unsigned char *stream,
                                 size_t stream_bytes, int sign, sdfed_error *err);
/* +1 when i < j, -1 when i > j: the sign of client i's mask shared with j. */
int sdfed_secagg_pair_sign(int i, int j);

/* mean (P) and *weight_sum from the unmasked sum (P + 1) of at most
 * r->clients inputs. */
int sdfed_secagg_dequantise(const sdfed_secagg_ring *r, const uint64_t *sum, size_t P, float *mean,
                            int64_t *weight_sum, sdfed_error *err);
/* The same from the n inputs themselves (each P + 1), summed as exact
 * integers (each element read signed), with no ring and no mask, and
 * decoded by the same formula: what sdfed_secagg_dequantise gives for
 * their sum, bit for bit, when nothing wrapped. The parity reference. */
int sdfed_secagg_plain_mean(const sdfed_secagg_ring *r, const uint64_t *const *inputs, int n, size_t P, float *mean,
                            int64_t *weight_sum, sdfed_error *err);

#endif
