#!/usr/bin/python3
"""Fits the polynomials of sdfed_erf_f32x8 (shared/base/vectors.h) and checks
them as the C evaluates them: every step one rounded float operation, in the
same order, the exponential as sdfed_exp_f32x8 computes it. Prints the
worst error in units of the last place on a sweep of floats in [0, 4.5] and
the coefficients, highest degree first, as the C's Horner steps use them.

The pieces: |x| < SMALL: x + x q(x^2), q(s) = erf(sqrt s) / sqrt s - 1;
below MIDDLE: erf(1) rounded + p(|x| - 1); up to TOP: 1 - e^-x^2 g(1/|x| -
CENTRE), g(x) = erfc(x) e^(x^2). Each is a least-squares fit on Chebyshev
nodes, reweighted towards minimax (absolute error for q and p, relative for
g), against mpmath's erf at 40 digits.

  /usr/bin/python3 tools/fit_erf.py [--step 5]   (needs python3-numpy, python3-mpmath)
"""
import argparse
import math

import mpmath as mp
import numpy as np

mp.mp.dps = 40
f32 = np.float32
SMALL, MIDDLE, TOP, CENTRE = 0.75, 1.25, 4.0, 0.53125
DEGREES = {"q": 6, "p": 8, "g": 9}
ERF_1 = f32(mp.erf(1))


def fit(f, lo, hi, degree, variable, relative):
    """Coefficients (lowest degree first) of a polynomial in variable(x) for f on [lo, hi]."""
    n = 2000
    xs = (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (np.arange(n) + 0.5) / n)
    ys = np.array([float(f(mp.mpf(x))) for x in xs])
    a = np.vander(variable(xs), degree + 1, increasing=True)
    w = 1 / np.abs(ys) if relative else np.ones_like(ys)
    c = np.linalg.lstsq(a * w[:, None], ys * w, rcond=None)[0]
    for _ in range(30):  # weights grow where the error is largest: towards equal ripples
        r = np.abs((a @ c - ys) * w)
        w = w * np.sqrt(r / r.max() + 1e-3)
        c = np.linalg.lstsq(a * w[:, None], ys * w, rcond=None)[0]
    return c.astype(f32)


def horner(c, v):
    p = np.full_like(v, c[-1])
    for k in c[-2::-1]:
        p = (p * v).astype(f32) + k
    return p.astype(f32)


def exp_f32(x):
    """sdfed_exp_f32x8, operation by operation."""
    below, above = x < f32(-87), x > f32(88)
    magic = f32(12582912.0)
    t = (x * f32(1.44269504088896341)).astype(f32) + magic
    n = (t - magic).astype(f32)
    n_int = t.view(np.int32) - np.array([magic], dtype=f32).view(np.int32)[0]
    r = ((x - n * f32(0.693359375)).astype(f32) - (n * f32(-2.12194440e-4)).astype(f32)).astype(f32)
    r2 = (r * r).astype(f32)

    def pair(a, b):
        return ((r * f32(a)).astype(f32) + f32(b)).astype(f32)

    high = (pair(1.9875691500e-4, 1.3981999507e-3) * (r2 * r2).astype(f32)).astype(f32)
    middle = (pair(8.3334519073e-3, 4.1665795894e-2) * r2).astype(f32)
    p = ((high + middle).astype(f32) + pair(1.6666665459e-1, 5.0000001201e-1)).astype(f32)
    p = ((p * r2).astype(f32) + r).astype(f32) + f32(1)
    y = (p * ((n_int + 127) << 23).astype(np.int32).view(f32)).astype(f32)
    return np.where(above, f32(np.inf), np.where(below, f32(0), y)).astype(f32)


def erf_f32(x, q, p, g):
    """sdfed_erf_f32x8 on x >= 0, operation by operation."""
    with np.errstate(all="ignore"):
        s = (x * x).astype(f32)
        small = (x + (x * horner(q, s)).astype(f32)).astype(f32)
        middle = (ERF_1 + horner(p, (x - f32(1)).astype(f32))).astype(f32)
        ac = np.where(x > f32(TOP), f32(TOP), x).astype(f32)
        ah = (ac.view(np.uint32) & np.uint32(0xFFFFF000)).view(f32)
        e = exp_f32(-(ah * ah).astype(f32))
        nd = -((ac - ah).astype(f32) * (ac + ah).astype(f32)).astype(f32)
        inner = (f32(1) + (nd * f32(1 / 3)).astype(f32)).astype(f32)
        rest = (f32(1) + (nd * (f32(1) + ((nd * f32(0.5)).astype(f32) * inner).astype(f32)).astype(f32))
                .astype(f32)).astype(f32)
        t = ((f32(1) / ac).astype(f32) - f32(CENTRE)).astype(f32)
        tail = (f32(1) - ((e * rest).astype(f32) * horner(g, t)).astype(f32)).astype(f32)
    return np.where(x < f32(SMALL), small, np.where(x < f32(MIDDLE), middle, tail))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--step", type=int, default=5, help="sweep every STEP-th float of [0, 4.5] (default 5)")
    a = ap.parse_args()
    q = fit(lambda s: mp.erf(mp.sqrt(s)) / mp.sqrt(s) - 1 if s > 0 else 2 / mp.sqrt(mp.pi) - 1, 0.0, SMALL ** 2,
            DEGREES["q"], lambda s: s, relative=False)
    p = fit(lambda m: mp.erf(1 + m) - mp.mpf(float(ERF_1)), SMALL - 1, MIDDLE - 1, DEGREES["p"], lambda m: m,
            relative=False)
    g = fit(lambda x: mp.erfc(x) * mp.exp(x * x), MIDDLE, TOP, DEGREES["g"], lambda x: 1 / x - CENTRE,
            relative=True)
    end = np.array([4.5], dtype=f32).view(np.uint32)[0]
    x = np.arange(0, end, a.step, dtype=np.uint64).astype(np.uint32).view(f32)
    y = erf_f32(x, q, p, g).astype(np.float64)
    exact = np.frompyfunc(math.erf, 1, 1)(x.astype(np.float64)).astype(np.float64)
    exponent = np.frexp(np.abs(exact))[1]
    ulps = np.abs(y - exact) / np.maximum(np.ldexp(1.0, exponent - 24), 2.0 ** -149)
    for lo, hi in ((0, SMALL), (SMALL, MIDDLE), (MIDDLE, 4.5)):
        m = (x >= lo) & (x < hi)
        print(f"[{lo}, {hi}): worst {ulps[m].max():.3f} units in the last place at {x[m][np.argmax(ulps[m])]!r}")
    print(f"erf(1) rounded: {ERF_1:.9g}f")
    for name, c, v in (("q", q, "s"), ("p", p, "m"), ("g", g, "t")):
        print(f"{name} in {v}, highest degree first: " + ", ".join(f"{k:.9g}f" for k in c[::-1]))


if __name__ == "__main__":
    main()
