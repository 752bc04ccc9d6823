"""The distributed discrete Gaussian's privacy, computed apart from the C
accountant (shared/fed/secagg_accountant.h) for tests/unit/test_secagg_dp.c:
for each case, one line of
    l2_bound sigma2 min_inputs dims rounds delta rho epsilon exact_gaussian
where rho is Kairouz, Liu and Steinke's (2021, Theorem 1) one-round zCDP,
epsilon the zCDP-to-(epsilon, delta) conversion of Canonne, Kamath and
Steinke (2020, Proposition 12) minimised over 400,001 orders alpha = 1 +
10^u, u evenly from -6 to 6 (a grid, where the C code refines a coarser grid
by golden-section search), and exact_gaussian the epsilon of the continuous
Gaussian mechanism with the same rho composed over the rounds, from its
exact privacy profile (Balle and Wang 2018): a lower bound the conversion
must stay above. Plain Python (math only).
    python3 secagg_dp_oracle.py OUT_FILE
"""
import math
import sys


def rho_one_round(l2, sigma2, m, dims):
    tau = 10 * sum(math.exp(-2 * math.pi ** 2 * sigma2 * k / (k + 1)) for k in range(1, m))
    return (l2 * l2 / (m * sigma2) + tau * dims / 2) / 2


def epsilon_from_zcdp(rho, delta):
    best = math.inf
    steps = 400000
    for i in range(steps + 1):
        u = -6 + 12 * i / steps
        a = 1 + 10 ** u
        value = a * rho + math.log(1 / delta) / (a - 1) + math.log(1 - 1 / a) - math.log(a) / (a - 1)
        best = min(best, value)
    return min(best, rho + 2 * math.sqrt(rho * math.log(1 / delta)))


def phi(x):
    return 0.5 * math.erfc(-x / math.sqrt(2))


def gaussian_delta(eps, mu):
    return phi(-eps / mu + mu / 2) - math.exp(eps) * phi(-eps / mu - mu / 2)


def exact_gaussian_epsilon(rho, delta):
    mu = math.sqrt(2 * rho)  # a Gaussian mechanism of sensitivity / sigma = mu is rho-zCDP
    lo, hi = 0.0, 1.0
    while gaussian_delta(hi, mu) > delta:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if gaussian_delta(mid, mu) > delta:
            lo = mid
        else:
            hi = mid
    return hi


# (l2 bound, per-client sigma^2, fewest inputs, coordinates, rounds, delta), ring units
# (l2 bound, per-client sigma^2, fewest inputs, coordinates, rounds, delta), ring units: noise
# multipliers of 1 to 10 for the quantised prompt of 8 x 512 at 8 and 16 bits, and small sigmas
# where tau shows
CASES = [
    (127.0 * 64, 9_437_592, 7, 4096, 1, 1e-5),
    (127.0 * 64, 235_939_840, 7, 4096, 100, 1e-5),
    (32767.0 * 64, 262_560_000_000, 67, 4096, 50, 1e-5),
    (32767.0 * 64, 656_380_000_000, 670, 4097, 200, 1e-5),
    (10.0, 4, 10, 100, 10, 1e-6),
    (2.0, 1, 3, 8, 1, 1e-5),
    (2000.0, 100_000, 100, 1024, 20, 1e-5),
]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: secagg_dp_oracle.py OUT_FILE")
    with open(sys.argv[1], "w") as out:
        for l2, sigma2, m, dims, rounds, delta in CASES:
            rho = rho_one_round(l2, sigma2, m, dims)
            eps = epsilon_from_zcdp(rho * rounds, delta)
            exact = exact_gaussian_epsilon(rho * rounds, delta)
            out.write(f"{l2!r} {sigma2} {m} {dims} {rounds} {delta!r} {rho!r} {eps!r} {exact!r}\n")


if __name__ == "__main__":
    main()
