"""Special functions computed by series and continued fractions (scalar Ops inside
Elemwise), each summed in one `stablehlo.while` over whole tensors until every
element's terms vanish (`regions.converge`).

The regularized incomplete gamma functions follow Cephes (`igam`, `igamc`), the code
scipy.special wraps: Temme's uniform asymptotic expansion where a and x are both large
and close (20 < a < 200 and |x - a| < 0.3 a, or a > 200 and |x - a| < 4.5 sqrt(a)),
elsewhere the power series where x < a (or x <= 1), Legendre's continued fraction
otherwise, each giving the other by `1 - ...`. They are computed in float64, as scipy
does for every input dtype, and cast to the output dtype."""

from __future__ import annotations

import functools
from fractions import Fraction
from math import comb

import numpy as np
import pytensor.scalar.math as psm
from scipy.special import zeta
from jax.extend.mlir.dialects import chlo
from jax.extend.mlir.dialects import stablehlo as hlo

from dialect_rules.special import gamma_from_log, log_gamma
from lowering.builders import (
    all_of, any_of, batched, compare, convert, divide, full_like, ir_constant, is_inf, polynomial, read_entry, reshape,
    select, splat, static_slice,
)
from lowering.regions import any_true, converge, converge_compacting, if_else, where_few, while_loop
from lowering.registry import register_lowering
from lowering.rewrites import GammaIncPair

_EPS = np.finfo(np.float64).eps / 2  # Cephes' MACHEP
# lgamma(1 + t) = -euler_gamma t + sum_{n >= 2} (-1)**n zeta(n) / n t**n, for |t| <= 1/2
_LGAMMA1P_TAYLOR = [-np.euler_gamma] + [(-1) ** n * float(zeta(n)) / n for n in range(2, 64)]
_BIG = 4.503599627370496e15
_MAX_STEPS = 2000
_LOG1PMX = [(-1) ** (n + 1) / n for n in range(2, 41)]


def _c(like, value):
    return full_like(like, value)


def _log1pmx_small(s):
    """log(1 + s) - s by its series, for |s| <= 0.4, where the difference cancels in
    floating point (the terms past s**40 are below eps there)."""
    return hlo.multiply(polynomial(s, _LOG1PMX), hlo.multiply(s, s))


def _prefactor(a, x, log_gamma_a=None):
    """x**a e**-x / Gamma(a). For large a, through Stirling's series: with d = (x-a)/a,
    log = a (log1p(d) - d) + log(a)/2 - log(2 pi)/2 - stirlerr(a), which keeps the
    digits that a log x - x - lgamma(a) cancels away (about 1e-11 at a = 10^4).
    `log_gamma_a`: lgamma(a), where the caller has it (a loop's step then holds no copy
    of lgamma's code)."""
    log_gamma_a = log_gamma(a) if log_gamma_a is None else log_gamma_a
    direct = hlo.subtract(hlo.subtract(hlo.multiply(a, hlo.log(x)), x), log_gamma_a)
    d = divide(hlo.subtract(x, a), a)
    inv = divide(_c(a, 1.0), a)
    inv2 = hlo.multiply(inv, inv)
    # stirlerr(a) = 1/(12a) - 1/(360a^3) + 1/(1260a^5) - 1/(1680a^7), for a > 15
    stirlerr = hlo.multiply(polynomial(inv2, [1 / 12, -1 / 360, 1 / 1260, -1 / 1680]), inv)
    # log(x/a) - d: by its series near d = 0, where log(x) - log(a) - d cancels; a plain
    # log of the quotient elsewhere (1 + d drops the digits of a small x/a).
    near = compare(hlo.abs(d), _c(a, 0.4), "LE")
    log1pmx = select(near, _log1pmx_small(d), hlo.subtract(hlo.log(divide(x, a)), d))
    stirling = hlo.multiply(a, log1pmx)
    stirling = hlo.add(stirling, hlo.multiply(_c(a, 0.5), hlo.log(a)))
    stirling = hlo.subtract(stirling, hlo.add(_c(a, 0.5 * np.log(2 * np.pi)), stirlerr))
    return hlo.exponential(select(compare(a, _c(a, 15.0), "GT"), stirling, direct))


def _lower_series(a, x, active, log_gamma_a=None):
    """P(a, x) = x**a e**-x / Gamma(a+1) * sum_n x**n / ((a+1)...(a+n))."""
    one = _c(a, 1.0)

    def step(params, state):
        (x,) = params
        one = _c(x, 1.0)
        r, c, total = state
        r = hlo.add(r, one)
        c = hlo.multiply(c, divide(x, r))
        total = hlo.add(total, c)
        return [r, c, total], compare(divide(c, total), _c(x, _EPS), "LE")

    _, _, total = converge_compacting([a, one, one], [x], active, step, _MAX_STEPS)
    return divide(hlo.multiply(total, _prefactor(a, x, log_gamma_a)), a)


def _upper_fraction(a, x, active, log_gamma_a=None):
    """Q(a, x) by Legendre's continued fraction, convergents rescaled when large."""
    one = _c(a, 1.0)
    y = hlo.subtract(one, a)
    z = hlo.add(hlo.add(x, y), one)
    pkm2, qkm2, pkm1, qkm1 = one, x, hlo.add(x, one), hlo.multiply(z, x)
    init = [_c(a, 0.0), y, z, pkm2, qkm2, pkm1, qkm1, divide(pkm1, qkm1)]

    def step(params, state):
        (a,) = params
        one = _c(a, 1.0)
        c, y, z, pkm2, qkm2, pkm1, qkm1, ans = state
        c, y, z = hlo.add(c, one), hlo.add(y, one), hlo.add(z, _c(a, 2.0))
        yc = hlo.multiply(y, c)
        pk = hlo.subtract(hlo.multiply(pkm1, z), hlo.multiply(pkm2, yc))
        qk = hlo.subtract(hlo.multiply(qkm1, z), hlo.multiply(qkm2, yc))
        nonzero = compare(qk, _c(a, 0.0), "NE")
        r = divide(pk, select(nonzero, qk, one))
        t = select(nonzero, hlo.abs(divide(hlo.subtract(ans, r), r)), one)
        ans = select(nonzero, r, ans)
        big = compare(hlo.abs(pk), _c(a, _BIG), "GT")
        scale = select(big, _c(a, 1 / _BIG), one)
        pkm2, pkm1 = hlo.multiply(pkm1, scale), hlo.multiply(pk, scale)
        qkm2, qkm1 = hlo.multiply(qkm1, scale), hlo.multiply(qk, scale)
        return [c, y, z, pkm2, qkm2, pkm1, qkm1, ans], compare(t, _c(a, _EPS), "LE")

    ans = converge_compacting(init, [a], active, step, _MAX_STEPS)[-1]
    return hlo.multiply(ans, _prefactor(a, x, log_gamma_a))


def _lgamma1p(a, log_gamma_a=None):
    """lgamma(1 + a), accurate near a = 0 and a = 1 (where lgamma(1 + a) vanishes and
    lgamma's own relative error grows), as Cephes' lgam1p. Given `log_gamma_a` (lgamma(a),
    which the caller computes anyway), lgamma(a) + log|a| away from 0 and 1: a module then
    holds one copy of lgamma's code, not two (each about 0.1 s of XLA's compile)."""
    def taylor(t):
        return hlo.multiply(polynomial(t, _LGAMMA1P_TAYLOR), t)

    one, half = _c(a, 1.0), _c(a, 0.5)
    near_zero = compare(hlo.abs(a), half, "LE")
    near_one = compare(hlo.abs(hlo.subtract(a, one)), half, "LT")
    shifted = hlo.add(hlo.log(a), taylor(hlo.subtract(a, one)))
    if log_gamma_a is None:
        far = log_gamma(hlo.add(a, one))
    else:
        far = hlo.add(log_gamma_a, hlo.log(hlo.abs(a)))
    return select(near_zero, taylor(a), select(near_one, shifted, far))


def _upper_series(a, x, active, log_gamma_a=None):
    """Q(a, x) for small x: 1 - x**a/Gamma(a+1) + x**a/Gamma(a) sum_n (-x)**n/(n! (a+n))."""
    one = _c(a, 1.0)

    def step(params, state):
        a, x = params
        n, fac, total = state
        n = hlo.add(n, _c(a, 1.0))
        fac = hlo.multiply(fac, hlo.negate(divide(x, n)))
        term = divide(fac, hlo.add(a, n))
        total = hlo.add(total, term)
        return [n, fac, total], compare(hlo.abs(term), hlo.multiply(hlo.abs(total), _c(a, _EPS)), "LE")

    _, _, total = converge_compacting([_c(a, 0.0), one, _c(a, 0.0)], [a, x], active, step, _MAX_STEPS)
    a_log_x = hlo.multiply(a, hlo.log(x))
    lgamma_a = log_gamma(a) if log_gamma_a is None else log_gamma_a
    head = hlo.negate(hlo.exponential_minus_one(hlo.subtract(a_log_x, _lgamma1p(a, lgamma_a))))
    return hlo.subtract(head, hlo.multiply(hlo.exponential(hlo.subtract(a_log_x, lgamma_a)), total))


# Temme's uniform asymptotic expansion (DLMF 8.12), where scipy takes it.
_TEMME_TERMS = 25  # the a**-k terms summed at most, and the powers of eta in each


@functools.cache
def _temme_coefficients() -> np.ndarray:
    """d[k, n], the coefficient of eta**n in Temme's c_k(eta), computed exactly in
    rationals (40 ms, once). With mu = x/a - 1, eta has mu's sign and
    eta**2/2 = mu - log(1 + mu); c_0 = 1/mu - 1/eta, c_k = c_{k-1}'/eta + (-1)**k g_k/mu
    (DLMF 8.12.9), g_k the coefficients of Stirling's series for Gamma (DLMF 5.11.3)."""
    terms = _TEMME_TERMS
    order = 3 * terms  # c_k needs c_0's powers of eta up to (terms - 1) + 2k
    # mu(eta): the derivative of eta**2/2 = mu - log(1 + mu) is mu mu' = eta (1 + mu).
    mu = [Fraction(0), Fraction(1)]
    for n in range(2, order + 2):
        cross = sum((n - i + 1) * mu[i] * mu[n - i + 1] for i in range(2, n))
        mu.append((mu[n - 1] - cross) / (n + 1))
    # eta/mu = 1 + r_1 eta + r_2 eta**2 + ..., the reciprocal of mu/eta; c_0 = sum r_{n+1} eta**n
    r = [Fraction(1)]
    for n in range(1, order + 1):
        r.append(-sum(mu[j + 1] * r[n - j] for j in range(1, n + 1)))
    c0 = r[1:]
    # sum_k g_k a**-k = exp(sum_j B_{j+1} / ((j+1) j) a**-j), odd j, B the Bernoulli numbers
    bernoulli = [Fraction(1)]
    for m in range(1, terms + 1):
        bernoulli.append(-sum(comb(m + 1, j) * bernoulli[j] for j in range(m)) / (m + 1))
    log_g = [Fraction(0)] * terms
    for j in range(1, terms, 2):
        log_g[j] = bernoulli[j + 1] / ((j + 1) * j)
    g = [Fraction(1)]
    for n in range(1, terms):
        g.append(sum(j * log_g[j] * g[n - j] for j in range(1, n + 1)) / n)
    rows = [c0]
    for k in range(1, terms):
        rows.append([(n + 2) * rows[-1][n + 2] + (-1) ** k * g[k] * c0[n] for n in range(len(rows[-1]) - 2)])
    return np.array([[float(v) for v in row[:terms]] for row in rows])


_TEMME_EVERYWHERE_FROM = 1e100


def _temme_region(a, x):
    """Where scipy sums Temme's expansion: 20 < a < 200 and |x - a| < 0.3 a, or a > 200
    and |x - a| < 4.5 sqrt(a); the series and fractions need about 9 sqrt(a) terms there."""
    distance = divide(hlo.abs(hlo.subtract(x, a)), a)
    middle = all_of(compare(a, _c(a, 20.0), "GT"), compare(a, _c(a, 200.0), "LT"),
                    compare(distance, _c(a, 0.3), "LT"))
    large = hlo.and_(compare(a, _c(a, 200.0), "GT"),
                     compare(distance, divide(_c(a, 4.5), hlo.sqrt(a)), "LT"))
    # Past a = 1e100 for every x (the expansion is uniform in x/a): the fraction and the
    # series overflow there (x (x + 1 - a) at x = 1e160), and x/a of 1 + 1e-80 is
    # already many standard deviations out.
    return any_of(middle, large, compare(a, _c(a, _TEMME_EVERYWHERE_FROM), "GT"))


def _temme(a, x, signs, active):
    """Q(a, x) (sign +1) or P (-1) for each of `signs` (tensors like a), for the `active`
    elements: 1/2 erfc(sign eta sqrt(a/2)) + sign e**(-a eta**2/2) / sqrt(2 pi a)
    sum_k c_k(eta) a**-k (DLMF 8.12.3-4), the sum computed once. The sum is asymptotic: as
    scipy's, it stops before its first term that grows, or after the first below eps of
    the sum."""
    one = _c(a, 1.0)
    ratio = divide(x, a)  # for eta's sign; x - a is exact where x is near a
    eta = hlo.sqrt(hlo.multiply(_c(a, -2.0), _log1pmx_small(divide(hlo.subtract(x, a), a))))
    eta = select(compare(ratio, one, "GT"), eta,
                 select(compare(ratio, one, "LT"), hlo.negate(eta), _c(a, 0.0)))
    table = ir_constant(_temme_coefficients())

    def c_k(k):
        """c_k(eta) from row k of the table by Horner's rule, in the loop: all of them
        at once, the table times a (terms, n) stack of eta's powers, was a tensor of
        25 n elements from n = 11 on, which kept small modules from XLA's elemental
        emitter (`compile.suits_elemental_emitter`), and summed terms the loop never
        reaches."""
        row = read_entry(table, [k])

        def coefficient(n):
            return splat(reshape(static_slice(row, [n], [n + 1]), []), a)

        value = coefficient(_TEMME_TERMS - 1)
        for n in reversed(range(_TEMME_TERMS - 1)):
            value = hlo.add(hlo.multiply(value, eta), coefficient(n))
        return value

    eps = _c(a, _EPS)

    def cond(values):
        k, still = values[:2]
        more = compare(k, ir_constant(np.int64(_TEMME_TERMS)), "LT")
        return hlo.and_(more, any_true(still))

    def body(values):
        k, still, scale, total, previous = values
        term = hlo.multiply(c_k(k), scale)
        size = hlo.abs(term)
        grew = compare(size, previous, "GT")
        summed = select(grew, total, hlo.add(total, term))
        done = hlo.or_(grew, compare(size, hlo.multiply(eps, hlo.abs(summed)), "LT"))
        new = [divide(scale, a), summed, size]
        kept = [select(still, n, s) for n, s in zip(new, [scale, total, previous])]
        return [hlo.add(k, ir_constant(np.int64(1))), hlo.and_(still, hlo.not_(done)), *kept]

    init = [ir_constant(np.int64(0)), active, one, _c(a, 0.0), _c(a, np.inf)]
    total = while_loop(init, cond, body)[3]
    damping = hlo.exponential(hlo.multiply(_c(a, -0.5), hlo.multiply(a, hlo.multiply(eta, eta))))
    tail = divide(hlo.multiply(damping, total), hlo.sqrt(hlo.multiply(_c(a, 2 * np.pi), a)))
    scaled_eta = hlo.multiply(eta, hlo.sqrt(hlo.multiply(a, _c(a, 0.5))))
    return [hlo.add(hlo.multiply(_c(a, 0.5), chlo.erfc(hlo.multiply(sign, scaled_eta))), hlo.multiply(sign, tail))
            for sign in signs]


def _incomplete_gamma(a, x, upper, log_gamma_a=None):
    """P(a, x) (or Q = 1 - P with `upper`), scipy's values on the whole domain. `upper`
    is a Python bool, or an i1 tensor shaped like a choosing per element (the inverses
    match whichever tail is smaller, with one evaluation)."""
    return _incomplete_gammas(a, x, [upper], log_gamma_a)[0]


def _pick(upper, if_upper, if_lower):
    """Q's value or P's, by `upper` (a Python bool, or an i1 tensor choosing per element)."""
    if isinstance(upper, bool):
        return if_upper if upper else if_lower
    return select(upper, if_upper, if_lower)


def _incomplete_gammas(a, x, uppers, log_gamma_a=None):
    """`_incomplete_gamma(a, x, upper)` for each of `uppers`, from one run of each loop
    over the elements any of them needs; each element takes the same steps as alone."""
    zero, one = _c(a, 0.0), _c(a, 1.0)
    regular = hlo.and_(compare(a, zero, "GT"), compare(x, zero, "GT"))
    regular = hlo.and_(regular, hlo.not_(hlo.or_(is_inf(a), is_inf(x))))
    # Far past the mean Q underflows (e**-x), and Legendre's fraction overflows in
    # x (x + 1 - a) (P(0.5, 1e200) came out NaN): there P = 1, Q = 0, as at x = inf.
    saturated = all_of(regular, compare(x, _c(a, 1e150), "GT"), compare(x, hlo.multiply(a, _c(a, 2.0)), "GT"))
    regular = hlo.and_(regular, hlo.not_(saturated))
    safe_a, safe_x = select(regular, a, one), select(regular, x, one)
    # Cephes' choice of method: Q directly (a continued fraction for x > 1.1, a series
    # below) or P by its series, each giving the other by `1 - ...`, so that the one
    # computed is not the one near 1.
    def q_first():
        small_x = compare(x, _c(a, 0.5), "LE")
        p_is_small = select(
            compare(x, _c(a, 1.1), "GT"), compare(x, a, "LT"),
            select(small_x, compare(a, divide(_c(a, -0.4), hlo.log(safe_x)), "GT"),
                   compare(hlo.multiply(x, _c(a, 1.1)), a, "LT")),
        )
        return hlo.not_(p_is_small)

    def p_first():
        return hlo.and_(compare(x, one, "GT"), compare(x, a, "GT"))

    def direct(upper):
        return (q_first() if upper else p_first()) if isinstance(upper, bool) else _pick(upper, q_first(), p_first())

    direct_q = [direct(upper) for upper in uppers]
    fraction = compare(x, _c(a, 1.1), "GT")
    asymptotic = hlo.and_(regular, _temme_region(safe_a, safe_x))
    summed = hlo.and_(regular, hlo.not_(asymptotic))
    any_q = any_of(*direct_q)
    # lgamma(a) given is used as lgamma(safe_a): they differ only where a is not regular,
    # whose values the edges below replace
    lgamma_a = log_gamma(safe_a) if log_gamma_a is None else log_gamma_a
    p = _lower_series(safe_a, safe_x, hlo.and_(summed, hlo.not_(all_of(*direct_q))), lgamma_a)
    q_fraction = _upper_fraction(safe_a, safe_x, all_of(summed, any_q, fraction), lgamma_a)
    q_series = _upper_series(safe_a, safe_x, all_of(summed, any_q, hlo.not_(fraction)), lgamma_a)
    q = select(fraction, q_fraction, q_series)
    values = [_pick(upper, select(d, q, hlo.subtract(one, p)), select(d, hlo.subtract(one, q), p))
              for upper, d in zip(uppers, direct_q)]
    # Temme's expansion only where some element needs it, over those alone where they
    # are few: its table product would cost every call a third more where a stays small.
    chosen = [upper for upper in uppers if not isinstance(upper, bool)]

    def temme(active, params):
        a, x, *given = params
        given = iter(given)
        signs = [_pick(upper if isinstance(upper, bool) else next(given), _c(a, 1.0), _c(a, -1.0)) for upper in uppers]
        return _temme(a, x, signs, active)

    values = where_few(asymptotic, [safe_a, safe_x, *chosen], temme, values)
    return [_incomplete_gamma_edges(a, x, upper, value, saturated) for upper, value in zip(uppers, values)]


def _incomplete_gamma_edges(a, x, upper, value, saturated):
    """scipy's edge cases: P(0, x > 0) = 1, P(a, 0) = 0, P(inf, x) = 0, P(a, inf) = 1;
    NaN for a negative or NaN argument and for P(inf, inf)."""
    zero, one, nan = _c(a, 0.0), _c(a, 1.0), _c(a, np.nan)
    lo, hi = _pick(upper, one, zero), _pick(upper, zero, one)
    value = select(compare(x, zero, "EQ"), lo, value)
    value = select(hlo.or_(saturated, hlo.and_(is_inf(x), hlo.not_(is_inf(a)))), hi, value)
    value = select(hlo.and_(is_inf(a), hlo.not_(is_inf(x))), lo, value)
    value = select(compare(a, zero, "EQ"), select(compare(x, zero, "GT"), hi, nan), value)
    invalid = hlo.or_(compare(a, zero, "LT"), compare(x, zero, "LT"))
    invalid = hlo.or_(invalid, hlo.and_(is_inf(a), is_inf(x)))
    invalid = hlo.or_(invalid, hlo.or_(compare(a, a, "NE"), compare(x, x, "NE")))
    return select(invalid, nan, value)


def _incomplete_gamma_rule(upper: bool, regularized: bool = True):
    """P or Q; times gamma(a) for GammaL/GammaU, as their perform computes them (from the
    lgamma(a) P and Q take: one copy of lgamma's code)."""

    def rule(ctx, node, a, x):
        a, x = convert(a, "float64"), convert(x, "float64")
        if regularized:
            value = _incomplete_gamma(a, x, upper)
        else:
            lgamma_a = log_gamma(a)
            value = hlo.multiply(_incomplete_gamma(a, x, upper, lgamma_a), gamma_from_log(a, lgamma_a))
        return convert(value, node.outputs[0].type.dtype)

    return rule


register_lowering(psm.GammaInc)(_incomplete_gamma_rule(upper=False))
register_lowering(psm.GammaIncC)(_incomplete_gamma_rule(upper=True))
register_lowering(psm.GammaL)(_incomplete_gamma_rule(upper=False, regularized=False))
register_lowering(psm.GammaU)(_incomplete_gamma_rule(upper=True, regularized=False))


@register_lowering(GammaIncPair)
def lower_gammainc_pair(ctx, node, a, x):
    """P and Q of the same a and x (paired by lowering/rewrites.py): one run of each loop."""
    a, x = convert(a, "float64"), convert(x, "float64")
    both = _incomplete_gammas(a, x, [False, True])
    return tuple(convert(v, out.type.dtype) for v, out in zip(both, node.outputs, strict=True))


# --- the regularized incomplete beta function ------------------------------------------

# Cephes stops its continued fractions at 300 steps; I_x(406, 0.0015) at x = 1 - 4e-6,
# just below the mean, needs some 2,000 (a 2% error at 300), I_x(2514, 0.0016) 5,000.
_BETA_MAX_STEPS = 10_000
# Inside betaincinv's Newton loop, which evaluates I_x up to 100 times: a tenth of a
# percent left there costs a Newton step or two, 10,000 steps a while loop per step.
_INVERSE_BETA_MAX_STEPS = 3_000
_THRESH = 3 * _EPS


# From here on log B(a, b) takes log Gamma(l) - log Gamma(l + s), l the larger argument,
# from Stirling's series: the difference of two lgammas of 1.7e9 (l = 1e8) kept 4e-7 of
# it, which betaincinv's x multiplies by 1/s.
_STIRLING_BETA_FROM = 1e3


def _log_beta(a, b):
    """log B(a, b) for a, b > 0. Its lgammas in one batch (one copy of lgamma's code)."""
    lgamma_a, lgamma_b, lgamma_ab = batched(log_gamma, a, b, hlo.add(a, b))
    direct = hlo.subtract(hlo.add(lgamma_a, lgamma_b), lgamma_ab)
    small, large = hlo.minimum(a, b), hlo.maximum(a, b)
    total = hlo.add(large, small)

    def series(z):  # Stirling's series past its leading terms, to 1/z**5
        w = divide(_c(z, 1.0), hlo.multiply(z, z))
        return divide(polynomial(w, [1 / 12, -1 / 360, 1 / 1260]), z)

    # (l - 1/2) log l - (l + s - 1/2) log(l + s) + s, with log(l + s) - log l = log1p(s / l)
    stirling = hlo.subtract(
        hlo.add(hlo.negate(hlo.multiply(hlo.subtract(large, _c(a, 0.5)), hlo.log_plus_one(divide(small, large)))),
                small),
        hlo.multiply(small, hlo.log(total)),
    )
    difference = hlo.add(stirling, hlo.subtract(series(large), series(total)))
    # lgamma(min(a, b)); where a or b is NaN, so is `large`, and `direct` is taken
    lopsided = hlo.add(select(compare(a, b, "LT"), lgamma_a, lgamma_b), difference)
    return select(compare(large, _c(a, _STIRLING_BETA_FROM), "GE"), lopsided, direct)


# For b <= max(a, 1) / 1000, with x past 0.95 and within 1/a of 1, I_x(a, b) = O(b) comes
# from the power series of 1 - I_{1-x}(b, a) with its 1 taken out exactly (`_beta_small_b`):
# there Cephes' flip cancels to eps / I (4e-7 at b = 1e-10), and just below the mean, 1 - x
# under 1e-7, its continued fraction runs out of steps (47% off at 1 - x = 1e-15).
_SMALL_B = 1e-3
_SMALL_B_BELOW = 0.05


# lgamma(a + b) - lgamma(a) takes Stirling's series from here on; below, the recurrence
# raises a to it. Stirling's phi(z) = sum c_k z**(1 - 2k), to z**-9: the next term's
# difference is under 1e-17 of b past z = 20.
_GAMMA_STEP_FROM = 20
_STIRLING_PHI = [1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188]


def _log_gamma_step(a, b):
    """lgamma(a + b) - lgamma(a) for a > 0, 0 < b <= max(a, 1) / 1000, to b's relative
    digits (two lgammas keep eps |lgamma(a)| of it, none for b = 1e-20). With a raised
    to z >= 20 by lgamma(a + b) - lgamma(a) = that at a + n less log prod (1 + b / (a + k)),
    the product kept less 1, Stirling's series with u = b / z:
    z (log1p(u) - u) - log1p(u) / 2 + b log(z + b) + phi(z + b) - phi(z),
    where (z + b)**-m - z**-m = z**-m ((1 + u)**-m - 1), the last by recurrence."""
    one = _c(a, 1.0)
    # prod (a + k + b) - prod (a + k) and prod (a + k), k < n: their ratio is the excess
    z, gap, product = a, _c(a, 0.0), one
    for _ in range(_GAMMA_STEP_FROM):
        low = compare(z, _c(a, float(_GAMMA_STEP_FROM)), "LT")
        gap = select(low, hlo.add(hlo.multiply(gap, hlo.add(z, b)), hlo.multiply(product, b)), gap)
        product = select(low, hlo.multiply(product, z), product)
        z = select(low, hlo.add(z, one), z)
    excess = divide(gap, product)
    u = divide(b, z)
    log1p_u = hlo.log_plus_one(u)
    value = hlo.subtract(hlo.multiply(z, hlo.subtract(log1p_u, u)), hlo.multiply(_c(a, 0.5), log1p_u))
    value = hlo.add(value, hlo.multiply(b, hlo.log(hlo.add(z, b))))
    # ((1 + u)**-m - 1) / u for m = 1, 3, 5, ... (over u: the terms of b = 1e-300 would
    # be subnormal), and z**-m
    first = hlo.negate(divide(one, hlo.add(one, u)))
    inverse = divide(one, z)
    inverse2 = hlo.multiply(inverse, inverse)
    power, ratio, phi = inverse, first, _c(a, 0.0)
    for c in _STIRLING_PHI:
        phi = hlo.add(phi, hlo.multiply(_c(a, c), hlo.multiply(power, ratio)))
        power = hlo.multiply(power, inverse2)
        for _ in range(2):
            ratio = hlo.add(ratio, hlo.multiply(first, hlo.add(one, hlo.multiply(u, ratio))))
    value = hlo.add(value, hlo.multiply(u, phi))
    return hlo.subtract(value, hlo.log_plus_one(excess))


def _log_scaled_beta(s, l, log_beta=None):
    """log(s B(s, l)) for 0 < s <= l. For s <= max(l, 1) / 1000 as lgamma(1 + s) -
    (lgamma(l + s) - lgamma(l)), where log B(s, l) ~ -log s and lgamma(l) would cost eps
    times their size (1.2e-13 of I_x(1e-10, 100) near x = 0, 1.1e-13 at s = 1e-232).
    `log_beta`: `_log_beta` of s and l (in either order: the same bits), where the
    caller has it."""
    tiny = compare(s, hlo.multiply(_c(s, _SMALL_B), hlo.maximum(l, _c(s, 1.0))), "LE")
    value = hlo.add(_log_beta(s, l) if log_beta is None else log_beta, hlo.log(s))
    # Only where some element needs it: it cost a fifth more where none does.
    (value,) = if_else(
        any_true(tiny), [value.type],
        lambda: [select(tiny, hlo.subtract(_lgamma1p(s), _log_gamma_step(l, s)), value)],
        lambda: [value],
    )
    return value


def _beta_series(a, b, x, active, log_scaled_beta):
    """I_x(a, b) by its power series (b x <= 1, x <= 0.95), Cephes' `pseries`;
    `log_scaled_beta` is log(s B(a, b)), s the smaller of a, b."""
    one = _c(a, 1.0)
    u = hlo.multiply(hlo.subtract(one, b), x)
    first = divide(u, hlo.add(a, one))
    limit = divide(_c(a, _EPS), a)

    def step(params, state):
        a, b, x, limit = params
        n, t, total, _ = state
        t = hlo.multiply(t, divide(hlo.multiply(hlo.subtract(n, b), x), n))
        v = divide(t, hlo.add(a, n))
        return [hlo.add(n, _c(a, 1.0)), t, hlo.add(total, v), v], compare(hlo.abs(v), limit, "LE")

    start_active = hlo.and_(active, compare(hlo.abs(first), limit, "GT"))
    init = [_c(a, 2.0), u, _c(a, 0.0), first]
    _, _, total, _ = converge_compacting(init, [a, b, x, limit], start_active, step, _MAX_STEPS)
    # x**a (1 + a sum) / (a B(a, b)) as (s / a) x**a (1 + a sum) / (s B(a, b)): log B(a, b)
    # ~ -log s would cost eps |log s| of it (1.2e-13 at s = 1e-290).
    log_total = hlo.log_plus_one(hlo.multiply(a, hlo.add(total, first)))
    log_value = hlo.add(hlo.subtract(hlo.multiply(a, hlo.log(x)), log_scaled_beta), log_total)
    return hlo.multiply(hlo.exponential(log_value), divide(hlo.minimum(a, b), a))


def _beta_fraction(a, b, x, active, second: bool, max_steps: int):
    """Cephes' continued fractions for I_x(a, b): `incbcf` (the first), `incbd` (the
    second, in z = x / (1 - x)). Each step applies two convergent updates, with
    rescaling against over- and underflow."""
    one, two = _c(a, 1.0), _c(a, 2.0)
    if second:
        z = divide(x, hlo.subtract(one, x))
        ks = [a, hlo.subtract(b, one), a, hlo.add(a, one), one, hlo.add(a, b), hlo.add(a, one), hlo.add(a, two)]
        increments = (1.0, -1.0, 2.0, 2.0, 1.0, 1.0, 2.0, 2.0)
    else:
        z = x
        ks = [a, hlo.add(a, b), a, hlo.add(a, one), one, hlo.subtract(b, one), hlo.add(a, one), hlo.add(a, two)]
        increments = (1.0, 1.0, 2.0, 2.0, 1.0, -1.0, 2.0, 2.0)

    def step(params, state):
        (z,) = params
        one, big, small = _c(z, 1.0), _c(z, _BIG), _c(z, 1 / _BIG)
        k, (pkm2, qkm2, pkm1, qkm1, ans) = state[:8], state[8:]
        xk = hlo.negate(divide(hlo.multiply(hlo.multiply(z, k[0]), k[1]), hlo.multiply(k[2], k[3])))
        pk, qk = hlo.add(pkm1, hlo.multiply(pkm2, xk)), hlo.add(qkm1, hlo.multiply(qkm2, xk))
        pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
        xk = divide(hlo.multiply(hlo.multiply(z, k[4]), k[5]), hlo.multiply(k[6], k[7]))
        pk, qk = hlo.add(pkm1, hlo.multiply(pkm2, xk)), hlo.add(qkm1, hlo.multiply(qkm2, xk))
        pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
        r = divide(pk, select(compare(qk, _c(z, 0.0), "NE"), qk, one))
        r = select(compare(qk, _c(z, 0.0), "NE"), r, ans)
        nonzero = compare(r, _c(z, 0.0), "NE")
        t = select(nonzero, hlo.abs(divide(hlo.subtract(ans, r), select(nonzero, r, one))), one)
        ans = select(nonzero, r, ans)
        k = [hlo.add(ki, _c(ki, si)) for ki, si in zip(k, increments)]
        large = compare(hlo.add(hlo.abs(qk), hlo.abs(pk)), big, "GT")
        tiny = hlo.or_(compare(hlo.abs(qk), small, "LT"), compare(hlo.abs(pk), small, "LT"))
        scale = select(large, small, select(tiny, big, one))
        pkm2, pkm1, qkm2, qkm1 = (hlo.multiply(v, scale) for v in (pkm2, pkm1, qkm2, qkm1))
        return [*k, pkm2, qkm2, pkm1, qkm1, ans], compare(t, _c(z, _THRESH), "LT")

    init = [*ks, _c(a, 0.0), one, one, one, one]
    return converge_compacting(init, [z], active, step, max_steps)[-1]


def _beta_small_b(a, b, w, active, log_scaled_beta):
    """I_x(a, b) for b <= max(a, 1) / 1000 and w = 1 - x <= min(0.05, 1/a), given
    log(b B(a, b)) (`_log_scaled_beta`, to b's digits): 1 - I_w(b, a), with I_w(b, a) =
    e**L (1 + b S) (Cephes' power series), L = b log w - log(b B(a, b)) and
    S = sum_{n >= 1} (1 - a)_n w**n / (n! (n + b)), as -expm1(L) - e**L b S. S's terms
    fall by w (n - a) / n: with a w <= 1 no more than e of them cancel."""
    one = _c(a, 1.0)
    first = hlo.multiply(hlo.subtract(one, a), w)

    def step(params, state):
        a, b, w = params
        n, t, total = state
        n = hlo.add(n, _c(a, 1.0))
        t = hlo.multiply(t, divide(hlo.multiply(hlo.subtract(n, a), w), n))
        v = divide(t, hlo.add(n, b))
        total = hlo.add(total, v)
        return [n, t, total], compare(hlo.abs(v), hlo.multiply(hlo.abs(total), _c(a, _EPS)), "LE")

    init = [one, first, divide(first, hlo.add(one, b))]
    _, _, total = converge_compacting(init, [a, b, w], active, step, _MAX_STEPS)
    log_power = hlo.subtract(hlo.multiply(b, hlo.log(w)), log_scaled_beta)
    # Divided by b, for b near 1e-300 leaves b S (the terms of which) among the subnormals.
    head = divide(hlo.negate(hlo.exponential_minus_one(log_power)), b)
    return hlo.multiply(b, hlo.subtract(head, hlo.multiply(hlo.exponential(log_power), total)))


def _incomplete_beta(a, b, x, w=None, max_steps: int = _BETA_MAX_STEPS, log_scaled_beta=None):
    """I_x(a, b) as Cephes' `incbet`, with scipy's (Boost's) values at the edges; `w`,
    when given, is 1 - x to more digits than x holds (betaincinv's logit steps);
    `log_scaled_beta`, when given, `_log_scaled_beta` of min(a, b) and max(a, b) (used
    where the arguments are regular: the edges replace the others' values)."""
    zero, one = _c(a, 0.0), _c(a, 1.0)
    regular = hlo.and_(compare(a, zero, "GT"), compare(b, zero, "GT"))
    below_one = compare(x, one, "LT") if w is None else compare(w, zero, "GT")
    at_one = compare(x, one, "EQ") if w is None else compare(w, zero, "EQ")
    regular = hlo.and_(regular, hlo.and_(compare(x, zero, "GT"), below_one))
    regular = hlo.and_(regular, hlo.not_(hlo.or_(is_inf(a), is_inf(b))))
    a_, b_, x_ = select(regular, a, one), select(regular, b, one), select(regular, x, _c(a, 0.5))
    w = hlo.subtract(one, x_) if w is None else select(regular, w, _c(a, 0.5))
    direct_series = hlo.and_(compare(hlo.multiply(b_, x_), one, "LE"), compare(x_, _c(a, 0.95), "LE"))
    # Past the mean, I_x(a, b) = 1 - I_{1-x}(b, a).
    flip = hlo.and_(hlo.not_(direct_series), compare(x_, divide(a_, hlo.add(a_, b_)), "GT"))
    pa, pb = select(flip, b_, a_), select(flip, a_, b_)
    px, pxc = select(flip, w, x_), select(flip, x_, w)
    flipped_series = hlo.and_(
        flip, hlo.and_(compare(hlo.multiply(pb, px), one, "LE"), compare(px, _c(a, 0.95), "LE"))
    )
    series = hlo.or_(direct_series, flipped_series)
    small_b = hlo.and_(regular, compare(b_, hlo.multiply(_c(a, _SMALL_B), hlo.maximum(a_, one)), "LE"))
    small_b = hlo.and_(small_b, compare(w, _c(a, _SMALL_B_BELOW), "LE"))
    small_b = hlo.and_(small_b, compare(hlo.multiply(a_, w), one, "LE"))
    others = hlo.and_(regular, hlo.not_(small_b))
    fractions = hlo.and_(others, hlo.not_(series))
    first = compare(hlo.subtract(hlo.multiply(px, hlo.subtract(hlo.add(pa, pb), _c(a, 2.0))), hlo.subtract(pa, one)), zero, "LT")
    small = hlo.minimum(a_, b_)
    if log_scaled_beta is None:
        log_scaled_beta = _log_scaled_beta(small, hlo.maximum(a_, b_))  # log(small B(a, b))
    s = _beta_series(pa, pb, px, hlo.and_(others, series), log_scaled_beta)
    cf1 = _beta_fraction(pa, pb, px, hlo.and_(fractions, first), second=False, max_steps=max_steps)
    cf2 = _beta_fraction(pa, pb, px, hlo.and_(fractions, hlo.not_(first)), second=True, max_steps=max_steps)
    cf2 = divide(cf2, pxc)
    w_cf = select(first, cf1, cf2)
    # The log of whichever of x, 1 - x is past 1/2 from the other, which holds all its
    # digits (1 - x rounded to a float costs a 1e-16 of log(1 - x) that a = 1e8 turns
    # into 1e-8 of I).
    log_px = select(compare(px, _c(a, 0.5), "GT"), hlo.log_plus_one(hlo.negate(pxc)), hlo.log(px))
    log_pxc = select(compare(pxc, _c(a, 0.5), "GT"), hlo.log_plus_one(hlo.negate(px)), hlo.log(pxc))
    log_factor = hlo.add(hlo.multiply(pa, log_px), hlo.multiply(pb, log_pxc))
    log_beta = hlo.subtract(log_scaled_beta, hlo.log(small))
    log_factor = hlo.add(hlo.subtract(log_factor, log_beta), hlo.log(divide(w_cf, pa)))
    t = select(series, s, hlo.exponential(log_factor))
    eps = _c(a, _EPS)
    t = select(flip, select(compare(t, eps, "LE"), hlo.subtract(one, eps), hlo.subtract(one, t)), t)

    def small_b_value():
        log_b_beta = hlo.add(log_scaled_beta, hlo.log(divide(b_, small)))
        return [select(small_b, _beta_small_b(a_, b_, w, small_b, log_b_beta), t)]

    (t,) = if_else(any_true(small_b), [t.type], small_b_value, lambda: [t])
    nan = _c(a, np.nan)
    # scipy's edges: x = 0 -> 0, x = 1 -> 1; a = 0 -> 1, b = 0 -> 0 (not both); a = inf -> 0,
    # b = inf -> 1; negative parameters, x outside [0, 1] and NaN -> NaN.
    t = select(compare(x, zero, "EQ"), zero, select(at_one, one, t))
    inside = hlo.and_(compare(x, zero, "GT"), below_one)
    t = select(hlo.and_(inside, compare(a, zero, "EQ")), one, t)
    t = select(hlo.and_(inside, compare(b, zero, "EQ")), zero, t)
    t = select(hlo.and_(inside, is_inf(a)), zero, t)
    t = select(hlo.and_(inside, is_inf(b)), one, t)
    invalid = hlo.or_(compare(a, zero, "LT"), compare(b, zero, "LT"))
    invalid = hlo.or_(invalid, hlo.and_(compare(a, zero, "EQ"), compare(b, zero, "EQ")))
    invalid = hlo.or_(invalid, hlo.or_(compare(x, zero, "LT"), compare(x, one, "GT")))
    invalid = hlo.or_(invalid, hlo.and_(is_inf(a), is_inf(b)))
    for v in (a, b, x):
        invalid = hlo.or_(invalid, compare(v, v, "NE"))
    return select(invalid, nan, t)


@register_lowering(psm.BetaInc)
def lower_betainc(ctx, node, a, b, x):
    value = _incomplete_beta(*(convert(v, "float64") for v in (a, b, x)))
    return convert(value, node.outputs[0].type.dtype)


# --- inverses of the regularized incomplete gamma functions ------------------------------

_INVERSE_STEPS = 100
_LOG_MAX = float(np.log(np.finfo(np.float64).max))
_NORMAL_START_FROM = 5.0  # min(a, b) from which the inverse incomplete beta starts logit-normal
_WILSON_HILFERTY_FROM = 1e30  # a from which the inverse incomplete gamma is Wilson-Hilferty's cube
_GAMMA_START_FROM = 1e3  # max(a, b) from which, the other below 5, it starts from Temme's gamma limit
# Newton's step that is this small leaves an error of about its square: the step taken,
# the root is found. Waiting for steps of a few ulps instead never ends where rounding
# in P keeps the steps at 1e-15 (most elements ran all 100 steps, 0.5 s for 4,000).
_NEWTON_DONE = 1e-9


def _normal_quantile(p, target, upper):
    """A starting guess: the standard normal quantile of p, where target = min(p, 1 - p)
    (`upper` where 1 - p is the smaller). In the tails (target below 1e-3, where 1 - 2p
    rounds) from the asymptotic form |z| = sqrt(y - log(2 pi y)), y = -2 log(target)."""
    one, zero = _c(p, 1.0), _c(p, 0.0)
    z_center = hlo.multiply(_c(p, np.sqrt(2.0)), chlo.erf_inv(hlo.subtract(hlo.multiply(_c(p, 2.0), p), one)))
    y = hlo.multiply(_c(p, -2.0), hlo.log(target))
    z_tail = hlo.sqrt(hlo.maximum(zero, hlo.subtract(y, hlo.log(hlo.multiply(_c(p, 2 * np.pi), y)))))
    tail = compare(target, _c(p, 1e-3), "LT")
    return select(tail, select(upper, z_tail, hlo.negate(z_tail)), z_center)


def _bounded_step(t, dt):
    """Newton's step in t, at most max(2, |t|) long: no jump across the tails, yet a
    root at t = -1e16 (x = e**t underflowed; its tail's log is linear in t) is reached
    by doubling in some 50 steps, where steps of 2 ran out at t = -200."""
    bound = hlo.maximum(_c(t, 2.0), hlo.abs(t))
    return hlo.clamp(hlo.negate(bound), dt, bound)


def _inverse_incomplete_gamma(a, p, q):
    """x with P(a, x) = p, where q = 1 - p is given as accurately as p (gammainccinv
    passes its own argument). Whichever of p, q is smaller is matched, by P or by Q, so
    a tail probability keeps its digits: Newton's method on log P(a, e**t) = log p (or
    log Q), x = e**t > 0 always, with D = x**a e**-x / Gamma(a) = dP/dt. Starting points:
    Wilson-Hilferty's cube for a >= 1; otherwise P ~ x**a / Gamma(a + 1) when that gives
    x < 1, and Q ~ x**(a-1) e**-x / Gamma(a) beyond."""
    zero, one, half = _c(a, 0.0), _c(a, 1.0), _c(a, 0.5)
    regular = hlo.and_(compare(a, zero, "GT"), hlo.and_(compare(p, zero, "GT"), compare(q, zero, "GT")))
    regular = hlo.and_(regular, hlo.not_(is_inf(a)))
    safe_a = select(regular, a, one)
    safe_p, safe_q = select(regular, p, half), select(regular, q, half)
    upper = compare(safe_q, safe_p, "LT")  # match Q = q
    target = select(upper, safe_q, safe_p)

    # Wilson-Hilferty: x = a (1 - 1/(9a) + z / (3 sqrt a))**3 with z the normal quantile
    z = _normal_quantile(safe_p, target, upper)
    base = hlo.add(hlo.subtract(one, divide(one, hlo.multiply(_c(a, 9.0), safe_a))),
                   divide(z, hlo.multiply(_c(a, 3.0), hlo.sqrt(safe_a))))
    t_wh = hlo.add(hlo.log(safe_a), hlo.multiply(_c(a, 3.0), hlo.log(hlo.maximum(base, _c(a, 1e-300)))))
    # log p from q where q is the one given exactly (p = 1 - 1e-17 rounds to 1)
    log_p = select(upper, hlo.log_plus_one(hlo.negate(safe_q)), hlo.log(safe_p))
    # lgamma(a) and lgamma(a + 1) once, before the loop: its step (P and its density, at
    # each Newton step) takes them from here rather than holding lgamma's code itself
    lgamma_a, lgamma_a1 = batched(log_gamma, safe_a, hlo.add(safe_a, one))
    t_small = divide(hlo.add(log_p, lgamma_a1), safe_a)
    x_large = hlo.maximum(one, hlo.negate(hlo.log(safe_q)))
    for _ in range(3):  # x = -log(q Gamma(a)) + (a - 1) log x
        x_large = hlo.add(hlo.subtract(hlo.negate(hlo.log(safe_q)), lgamma_a),
                          hlo.multiply(hlo.subtract(safe_a, one), hlo.log(x_large)))
        x_large = hlo.maximum(x_large, _c(a, 1e-3))
    t_large = hlo.log(x_large)
    use_wh = hlo.and_(compare(safe_a, one, "GE"), compare(base, _c(a, 0.05), "GT"))
    small_fits = compare(t_small, zero, "LT")  # the small-x form gives x < 1: trust it
    t0 = select(use_wh, t_wh, select(small_fits, t_small, t_large))

    def step(state):
        (t,) = state
        x = hlo.exponential(t)
        value = _incomplete_gamma(safe_a, x, upper, lgamma_a)
        density = _prefactor(safe_a, x, lgamma_a)
        # Newton on log(value) - log(target): far from the root P behaves like x**a (or Q
        # like e**-x), where Newton on the value itself crawls by 1/a per step.
        # d log(value)/dt = +-D / value, from log D where D underflows (Q(a, e**-700)
        # does not). Where the value underflows, the leading terms of the series and the
        # fraction stand in: P ~ D / a, Q ~ D / (x - a + 1).
        log_d = hlo.subtract(hlo.subtract(hlo.multiply(safe_a, t), x), lgamma_a)
        ratio = select(upper, hlo.maximum(hlo.add(hlo.subtract(x, safe_a), one), one), safe_a)
        exact = compare(value, zero, "GT")
        log_value = select(exact, hlo.log(value), hlo.subtract(log_d, hlo.log(ratio)))
        from_log = hlo.exponential(hlo.subtract(log_d, log_value))
        slope = select(exact, select(compare(density, zero, "GT"), divide(density, value), from_log), ratio)
        # x = e**t underflowed (the root of P(1e-13, x) = 1/2 is at t = -7e12): P and Q
        # there are their x -> 0 forms in t, P = e**(a t) / Gamma(a + 1) and Q = 1 - P,
        # not their values at x = 0 (Q = 1 sent Newton to t = 0).
        log_p0 = hlo.subtract(hlo.multiply(safe_a, t), lgamma_a1)
        log_q0 = hlo.log(hlo.negate(hlo.exponential_minus_one(log_p0)))
        slope_q0 = hlo.multiply(safe_a, hlo.exponential(hlo.subtract(log_p0, log_q0)))
        underflowed = hlo.and_(upper, compare(x, zero, "EQ"))
        log_value = select(underflowed, log_q0, log_value)
        slope = select(underflowed, slope_q0, slope)
        slope = select(upper, hlo.negate(slope), slope)
        newton = divide(hlo.subtract(log_value, hlo.log(target)), slope)
        usable = hlo.and_(compare(newton, newton, "EQ"), compare(hlo.abs(newton), _c(a, 1e300), "LT"))
        towards = select(hlo.xor(upper, compare(log_value, hlo.log(target), "GT")), one, hlo.negate(one))
        dt = _bounded_step(t, select(usable, newton, towards))
        done = compare(hlo.abs(dt), hlo.multiply(_c(a, _NEWTON_DONE), hlo.maximum(one, hlo.abs(t))), "LE")
        # x = e**t stays finite: beyond, Q = 0 and P = 1 (a = 1e300, q = 1e-300 went to inf)
        return [hlo.minimum(hlo.subtract(t, dt), _c(a, _LOG_MAX))], done

    # Past a = 1e30 the cube is exact to rounding, and P goes from 0 to 1 within
    # a**-1/2 of x / a, finer than x = e**t resolves (|t| ulps): Newton wandered off
    # there (2% low for a from 1e50 to 1e200).
    huge = compare(safe_a, _c(a, _WILSON_HILFERTY_FROM), "GE")
    (t,) = converge([t0], hlo.and_(regular, hlo.not_(huge)), step, _INVERSE_STEPS)
    x = select(huge, hlo.multiply(safe_a, hlo.multiply(hlo.multiply(base, base), base)), hlo.exponential(t))
    x = select(regular, x, zero)
    # scipy's edges: p = 0 -> 0, p = 1 -> inf, also for a = 0 and a = inf (where P(a, x)
    # is 1 or 0 for every finite x > 0, so no p strictly between has an inverse); NaN for
    # a < 0, p outside [0, 1], NaN in.
    x = select(compare(p, zero, "EQ"), zero, x)
    x = select(compare(q, zero, "EQ"), _c(a, np.inf), x)
    inside = hlo.and_(compare(p, zero, "GT"), compare(q, zero, "GT"))
    degenerate = hlo.or_(compare(a, zero, "EQ"), is_inf(a))
    invalid = hlo.or_(compare(a, zero, "LT"), hlo.and_(degenerate, inside))
    invalid = hlo.or_(invalid, hlo.or_(compare(p, zero, "LT"), compare(q, zero, "LT")))
    invalid = hlo.or_(invalid, hlo.or_(compare(a, a, "NE"), compare(p, p, "NE")))
    return select(invalid, _c(a, np.nan), x)


@register_lowering(psm.GammaIncInv)
def lower_gammaincinv(ctx, node, a, p):
    a, p = convert(a, "float64"), convert(p, "float64")
    value = _inverse_incomplete_gamma(a, p, hlo.subtract(full_like(p, 1.0), p))
    return convert(value, node.outputs[0].type.dtype)


@register_lowering(psm.GammaIncCInv)
def lower_gammainccinv(ctx, node, a, q):
    a, q = convert(a, "float64"), convert(q, "float64")
    value = _inverse_incomplete_gamma(a, hlo.subtract(full_like(q, 1.0), q), q)
    return convert(value, node.outputs[0].type.dtype)


# --- inverse of the regularized incomplete beta function ---------------------------------


def _inverse_incomplete_beta(a, b, y):
    """x with I_x(a, b) = y. As for gamma: the smaller of y, 1 - y is matched, by
    I_x(a, b) or by 1 - I_x(a, b) = I_{1-x}(b, a), with Newton's method on its log, in
    t = logit(x) so that both x and 1 - x keep their digits (x = sigmoid(t), 1 - x =
    sigmoid(-t)). With D = x**a (1-x)**b / B(a, b), dI/dt = D; where the functions
    underflow the series' leading terms stand in (I ~ D / a, 1 - I ~ D / b). Starting
    points come from those: x**a ~ y a B(a, b), or (1 - x)**b ~ (1 - y) b B(a, b)."""
    zero, one, half = _c(a, 0.0), _c(a, 1.0), _c(a, 0.5)
    q = hlo.subtract(one, y)
    regular = hlo.and_(compare(a, zero, "GT"), compare(b, zero, "GT"))
    regular = hlo.and_(regular, hlo.and_(compare(y, zero, "GT"), compare(y, one, "LT")))
    regular = hlo.and_(regular, hlo.not_(hlo.or_(is_inf(a), is_inf(b))))
    a_, b_ = select(regular, a, one), select(regular, b, one)
    y_, q_ = select(regular, y, half), select(regular, q, half)
    upper = compare(q_, y_, "LT")
    target = select(upper, q_, y_)
    log_beta = _log_beta(a_, b_)
    # I_x's log(small B(a, b)), once, before the loop: its step evaluates I_x from it
    # rather than holding the lgammas (and their tiny-parameter forms) itself
    log_scaled_beta = _log_scaled_beta(hlo.minimum(a_, b_), hlo.maximum(a_, b_), log_beta)

    def log_sigmoid(t):  # log(1 / (1 + e**-t)), without overflow
        return hlo.negate(select(compare(t, zero, "GT"), hlo.log_plus_one(hlo.exponential(hlo.negate(t))),
                                 hlo.subtract(hlo.log_plus_one(hlo.exponential(t)), t)))

    # Starting point: the matched tail's leading term solved for x (or 1 - x), as a logit.
    log_x = divide(hlo.add(hlo.log(hlo.multiply(y_, a_)), log_beta), a_)
    log_w = divide(hlo.add(hlo.log(hlo.multiply(q_, b_)), log_beta), b_)
    cap = _c(a, -1e-3)
    log_x, log_w = hlo.minimum(log_x, cap), hlo.minimum(log_w, cap)
    t_lower = hlo.subtract(log_x, hlo.log(hlo.negate(hlo.exponential_minus_one(log_x))))
    t_upper = hlo.subtract(hlo.log(hlo.negate(hlo.exponential_minus_one(log_w))), log_w)
    t0 = hlo.clamp(_c(a, -700.0), select(upper, t_upper, t_lower), _c(a, 700.0))
    # For a, b both large the leading terms are far off (a = 1e5, b = 9e5: x = 0.02 for
    # the root 0.0098, where Newton found no way back); logit(X) of X ~ Beta(a, b) is
    # near normal there, with mean psi(a) - psi(b) and variance psi'(a) + psi'(b).
    def psi(v):  # asymptotic digamma and trigamma, a starting point's accuracy
        return hlo.subtract(hlo.log(v), divide(_c(v, 0.5), v)), divide(hlo.add(v, _c(v, 0.5)), hlo.multiply(v, v))

    (psi_a, psi1_a), (psi_b, psi1_b) = psi(a_), psi(b_)
    z = _normal_quantile(y_, target, upper)
    t_normal = hlo.add(hlo.subtract(psi_a, psi_b), hlo.multiply(z, hlo.sqrt(hlo.add(psi1_a, psi1_b))))
    t0 = select(compare(hlo.minimum(a_, b_), _c(a, _NORMAL_START_FROM), "GE"), t_normal, t0)
    # One of them large, the other small: the series' leading term puts x (or 1 - x) at
    # its cap, 1 - 1e-3, where the fraction for a = 1e6 has not converged in 3,000 steps,
    # and Newton stopped there (0.99909 for 1 - 1.2e-6). There -log X ~ Gamma(b) / a'
    # with a' = a + (b - 1) / 2 for a large (Temme's limit): I_x(a, b) ~ Q(b, -a' log x);
    # for b large, 1 - x in its place.
    big_a = compare(a_, b_, "GT")
    small, large = select(big_a, b_, a_), select(big_a, a_, b_)
    lopsided = hlo.and_(compare(large, _c(a, _GAMMA_START_FROM), "GE"),
                        compare(small, _c(a, _NORMAL_START_FROM), "LT"))
    scale = hlo.add(large, hlo.multiply(hlo.subtract(small, one), half))
    # Q(b, L) = y for a large, P(a, L) = y for b large (L = -log x, -log(1 - x)); the
    # other elements solve P(1, L) = 1/2, which takes Newton no step.
    p_gamma = select(lopsided, select(big_a, q_, y_), half)
    q_gamma = select(lopsided, select(big_a, y_, q_), half)
    tail = divide(_inverse_incomplete_gamma(select(lopsided, small, one), p_gamma, q_gamma), scale)
    log_far = hlo.log(hlo.negate(hlo.exponential_minus_one(hlo.negate(tail))))  # log(1 - e**-L)
    t_gamma = select(big_a, hlo.subtract(hlo.negate(tail), log_far), hlo.add(log_far, tail))
    t0 = select(lopsided, hlo.clamp(_c(a, -700.0), t_gamma, _c(a, 700.0)), t0)

    def step(state):
        (t,) = state
        lx, lw = log_sigmoid(t), log_sigmoid(hlo.negate(t))
        x, w = hlo.exponential(lx), hlo.exponential(lw)
        # The matched function itself, from x and 1 - x both exact: I_x(a, b) or I_{1-x}(b, a).
        value = _incomplete_beta(select(upper, b_, a_), select(upper, a_, b_), select(upper, w, x),
                                 select(upper, x, w), max_steps=_INVERSE_BETA_MAX_STEPS,
                                 log_scaled_beta=log_scaled_beta)
        log_d = hlo.subtract(hlo.add(hlo.multiply(a_, lx), hlo.multiply(b_, lw)), log_beta)
        ratio = select(upper, b_, a_)
        exact = compare(value, zero, "GT")
        log_value = select(exact, hlo.log(value), hlo.subtract(log_d, hlo.log(ratio)))
        slope = select(exact, hlo.exponential(hlo.subtract(log_d, log_value)), ratio)
        # The other tail's variable underflowed (w = e**-800: x = 1, I_x(a, b) = 1, and
        # Newton went back to t = 0; the root of I_x(28, 2e-20) = 0.16 is at t = 8e18):
        # there the matched value is 1 - g, g the other tail's leading term in t.
        other, other_log = select(upper, a_, b_), select(upper, lx, lw)
        log_g = hlo.subtract(hlo.subtract(hlo.multiply(other, other_log), log_beta), hlo.log(other))
        log_rest = hlo.log(hlo.negate(hlo.exponential_minus_one(log_g)))
        underflowed = compare(select(upper, x, w), zero, "EQ")
        log_value = select(underflowed, log_rest, log_value)
        slope = select(underflowed, hlo.multiply(other, hlo.exponential(hlo.subtract(log_g, log_rest))), slope)
        slope = select(upper, hlo.negate(slope), slope)
        newton = divide(hlo.subtract(log_value, hlo.log(target)), slope)
        usable = hlo.and_(compare(newton, newton, "EQ"), compare(hlo.abs(newton), _c(a, 1e300), "LT"))
        towards = select(hlo.xor(upper, compare(log_value, hlo.log(target), "GT")), one, hlo.negate(one))
        dt = _bounded_step(t, select(usable, newton, towards))
        done = compare(hlo.abs(dt), hlo.multiply(_c(a, _NEWTON_DONE), hlo.maximum(one, hlo.abs(t))), "LE")
        return [hlo.subtract(t, dt)], done

    (t,) = converge([t0], regular, step, _INVERSE_STEPS)
    x = select(regular, hlo.exponential(log_sigmoid(t)), zero)
    # scipy's edges: y = 0 -> 0, y = 1 -> 1 (for infinite a or b too); between, its closed
    # forms y**(1/a) at b = 1 and 1 - (1 - y)**(1/b) at a = 1 give 1 for a = inf, 0 for
    # b = inf; NaN for other infinite a or b, a, b <= 0, y outside [0, 1].
    a_inf, b_inf = is_inf(a), is_inf(b)
    x = select(hlo.and_(a_inf, compare(b, one, "EQ")), one, x)
    x = select(hlo.and_(b_inf, compare(a, one, "EQ")), zero, x)
    x = select(compare(y, zero, "EQ"), zero, select(compare(y, one, "EQ"), one, x))
    invalid = hlo.or_(compare(a, zero, "LE"), compare(b, zero, "LE"))
    invalid = hlo.or_(invalid, hlo.or_(compare(y, zero, "LT"), compare(y, one, "GT")))
    inside = hlo.and_(compare(y, zero, "GT"), compare(y, one, "LT"))
    closed_form = hlo.or_(compare(a, one, "EQ"), compare(b, one, "EQ"))
    invalid = hlo.or_(invalid, all_of(hlo.or_(a_inf, b_inf), inside, hlo.not_(closed_form)))
    for v in (a, b, y):
        invalid = hlo.or_(invalid, compare(v, v, "NE"))
    return select(invalid, _c(a, np.nan), x)


@register_lowering(psm.BetaIncInv)
def lower_betaincinv(ctx, node, a, b, y):
    a, b, y = (convert(v, "float64") for v in (a, b, y))
    return convert(_inverse_incomplete_beta(a, b, y), node.outputs[0].type.dtype)


# --- Owen's T function ---------------------------------------------------------------------
# Patefield & Tandy (2000), "Fast and accurate calculation of Owen's T-function", J. Stat.
# Softw. 5(5): T(h, a) for h >= 0, 0 <= a <= 1 by one of six methods, chosen per region
# of (h, a) with a fixed order each; |a| > 1 through T(h, a) = (Phi(h) + Phi(ah))/2 -
# Phi(h) Phi(ah) - T(ah, 1/a) (in the upper tails) and the symmetries in h and a. This is
# the algorithm (and the tables) scipy.special.owens_t uses. Every order is fixed by the
# region, so each method is an unrolled sum: no loop, each element adds its own number
# of terms (masked).

_OWENS_H = (0.02, 0.06, 0.09, 0.125, 0.26, 0.4, 0.6, 1.6, 1.7, 2.33, 2.4, 3.36, 3.4, 4.8)
_OWENS_A = (0.025, 0.09, 0.15, 0.36, 0.5, 0.9, 0.99999)
# The paper's method index for each (a interval, h interval), 8 rows of 15.
_OWENS_SELECT = (
    0, 0, 1, 12, 12, 12, 12, 12, 12, 12, 12, 15, 15, 15, 8,
    0, 1, 1, 2, 2, 4, 4, 13, 13, 14, 14, 15, 15, 15, 8,
    1, 1, 2, 2, 2, 4, 4, 14, 14, 14, 14, 15, 15, 15, 9,
    1, 1, 2, 4, 4, 4, 4, 6, 6, 15, 15, 15, 15, 15, 9,
    1, 2, 2, 4, 4, 5, 5, 7, 7, 16, 16, 16, 11, 11, 10,
    1, 2, 4, 4, 4, 5, 5, 7, 7, 16, 16, 16, 11, 11, 11,
    1, 2, 3, 3, 5, 5, 7, 7, 16, 16, 16, 16, 16, 11, 11,
    1, 2, 3, 3, 5, 5, 17, 17, 17, 17, 16, 16, 16, 11, 11,
)
# Per method index: the order, and which of T1..T6 computes it.
_OWENS_ORDER = (2, 3, 4, 5, 7, 10, 12, 18, 10, 20, 30, 0, 4, 7, 8, 20, 0, 0)
_OWENS_METHOD = (1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 3, 4, 4, 4, 4, 5, 6)
# T3's coefficients (a truncated Chebyshev series of 1/(1 + x) on [0, 1]).
_OWENS_T3 = (
    1.0, -1.0, 1.0, -0.9999999999999998, 0.9999999999999839, -0.9999999999993063,
    0.9999999999797337, -0.9999999995749584, 0.9999999933226235, -0.9999999188923242,
    0.9999992195143483, -0.9999939351372067, 0.9999613559769055, -0.9997955636651394,
    0.9990927896296171, -0.9965938374119182, 0.9891001713838613, -0.9700785580406933,
    0.9291143868326319, -0.8542058695956156, 0.737965260330301, -0.585234698828374,
    0.4159977761456763, -0.25882108752419436, 0.13755358251638927, -0.060795276632595575,
    0.021633768329987153, -0.005934056934551867, 0.0011743414818332946,
    -0.0001489155613350369, 9.072354320794358e-06,
)
# T5: 13-point Gauss quadrature of the integral in a**2 (points, weights).
_OWENS_PTS = (
    0.35082039676451715489e-02, 0.31279042338030753740e-01, 0.85266826283219451090e-01,
    0.16245071730812277011e00, 0.25851196049125434828e00, 0.36807553840697533536e00,
    0.48501092905604697475e00, 0.60277514152618576821e00, 0.71477884217753226516e00,
    0.81475510988760098605e00, 0.89711029755948965867e00, 0.95723808085944261843e00,
    0.99178832974629703586e00,
)
_OWENS_WTS = (
    0.18831438115323502887e-01, 0.18567086243977649478e-01, 0.18042093461223385584e-01,
    0.17263829606398753364e-01, 0.16243219975989856730e-01, 0.14994592034116704829e-01,
    0.13535474469662088392e-01, 0.11886351605820165233e-01, 0.10070377242777431897e-01,
    0.81130545742299586629e-02, 0.60419009528470238773e-02, 0.38862217010742057883e-02,
    0.16793031084546090448e-02,
)
_TWO_PI = 2 * np.pi
_SQRT_2PI = np.sqrt(2 * np.pi)


def _norm_center(x):
    """Phi(x) - 1/2."""
    return hlo.multiply(chlo.erf(hlo.multiply(x, _c(x, np.sqrt(0.5)))), _c(x, 0.5))


def _norm_upper(x):
    """1 - Phi(x)."""
    return hlo.multiply(chlo.erfc(hlo.multiply(x, _c(x, np.sqrt(0.5)))), _c(x, 0.5))


def _ndtr_minus_half(x):
    """Cephes' ndtr(x) - 1/2 as T2 takes it: erf near 0, erfc beyond, then the
    subtraction (its rounding is part of scipy's value)."""
    z = hlo.multiply(x, _c(x, np.sqrt(0.5)))
    half = _c(x, 0.5)
    tail = hlo.multiply(half, chlo.erfc(hlo.abs(z)))
    tail = select(compare(z, _c(x, 0.0), "GT"), hlo.subtract(_c(x, 1.0), tail), tail)
    near = hlo.add(half, hlo.multiply(half, chlo.erf(z)))
    ndtr = select(compare(hlo.abs(z), _c(x, np.sqrt(0.5)), "LT"), near, tail)
    return hlo.subtract(ndtr, half)


def _piecewise(index, table):
    """table[index] for an integer-valued float tensor `index`, by the runs of `table`."""
    out = _c(index, float(table[0]))
    for i in range(1, len(table)):
        if table[i] != table[i - 1]:
            out = select(compare(index, _c(index, i - 0.5), "GT"), _c(index, float(table[i])), out)
    return out


def _count_above(x, bounds):
    """How many of the increasing `bounds` lie below x (the interval index of x)."""
    count = _c(x, 0.0)
    for b in bounds:
        count = hlo.add(count, select(compare(x, _c(x, b), "GT"), _c(x, 1.0), _c(x, 0.0)))
    return count


def _owens_t1(h, a, m):
    hs = hlo.multiply(_c(h, -0.5), hlo.multiply(h, h))
    a2 = hlo.multiply(a, a)
    aj = divide(a, _c(a, _TWO_PI))
    dj = hlo.exponential_minus_one(hs)
    gj = hlo.multiply(hs, hlo.exponential(hs))
    value = divide(chlo.atan(a), _c(a, _TWO_PI))
    for j in range(1, max(_OWENS_ORDER[:8]) + 1):
        term = divide(hlo.multiply(dj, aj), _c(a, 2 * j - 1))
        value = select(compare(m, _c(m, j), "GE"), hlo.add(value, term), value)
        aj, dj = hlo.multiply(aj, a2), hlo.subtract(gj, dj)
        gj = hlo.multiply(gj, divide(hs, _c(h, j + 1)))
    return value


def _owens_t2(h, a, ah, m):
    y = divide(_c(h, 1.0), hlo.multiply(h, h))
    minus_a2 = hlo.negate(hlo.multiply(a, a))
    vi = divide(hlo.multiply(a, hlo.exponential(hlo.multiply(_c(ah, -0.5), hlo.multiply(ah, ah)))), _c(a, _SQRT_2PI))
    z = divide(_ndtr_minus_half(ah), h)
    value = _c(h, 0.0)
    last = 2 * max(_OWENS_ORDER[8:11]) + 1
    for i in range(1, last + 1, 2):
        value = select(compare(hlo.add(hlo.multiply(m, _c(m, 2.0)), _c(m, 1.0)), _c(m, i), "GE"), hlo.add(value, z), value)
        z = hlo.multiply(y, hlo.subtract(vi, hlo.multiply(_c(z, i), z)))
        vi = hlo.multiply(vi, minus_a2)
    scale = divide(hlo.exponential(hlo.multiply(_c(h, -0.5), hlo.multiply(h, h))), _c(h, _SQRT_2PI))
    return hlo.multiply(value, scale)


def _owens_t3(h, a, ah):
    a2, h2 = hlo.multiply(a, a), hlo.multiply(h, h)
    y = divide(_c(h, 1.0), h2)
    vi = divide(hlo.multiply(a, hlo.exponential(hlo.multiply(_c(ah, -0.5), hlo.multiply(ah, ah)))), _c(a, _SQRT_2PI))
    zi = divide(_norm_center(ah), h)
    value = _c(h, 0.0)
    for i, coefficient in enumerate(_OWENS_T3):
        value = hlo.add(value, hlo.multiply(zi, _c(zi, coefficient)))
        zi = hlo.multiply(y, hlo.subtract(hlo.multiply(_c(zi, 2 * i + 1), zi), vi))
        vi = hlo.multiply(vi, a2)
    scale = divide(hlo.exponential(hlo.multiply(_c(h, -0.5), h2)), _c(h, _SQRT_2PI))
    return hlo.multiply(value, scale)


def _owens_t4(h, a, m):
    h2 = hlo.multiply(h, h)
    minus_a2 = hlo.negate(hlo.multiply(a, a))
    ai = hlo.multiply(_c(h, -0.5), hlo.multiply(h2, hlo.subtract(_c(a, 1.0), minus_a2)))
    ai = divide(hlo.multiply(a, hlo.exponential(ai)), _c(a, _TWO_PI))
    yi = _c(h, 1.0)
    value = _c(h, 0.0)
    last = 2 * max(_OWENS_ORDER[12:16]) + 1
    for i in range(1, last + 1, 2):
        if i > 1:
            yi = divide(hlo.subtract(_c(h, 1.0), hlo.multiply(h2, yi)), _c(h, i))
            ai = hlo.multiply(ai, minus_a2)
        take = compare(hlo.add(hlo.multiply(m, _c(m, 2.0)), _c(m, 1.0)), _c(m, i), "GE")
        value = select(take, hlo.add(value, hlo.multiply(ai, yi)), value)
    return value


def _owens_t5(h, a):
    a2 = hlo.multiply(a, a)
    minus_half_h2 = hlo.multiply(_c(h, -0.5), hlo.multiply(h, h))
    value = _c(h, 0.0)
    for point, weight in zip(_OWENS_PTS, _OWENS_WTS):
        r = hlo.add(_c(a, 1.0), hlo.multiply(a2, _c(a, point)))
        value = hlo.add(value, divide(hlo.multiply(_c(r, weight), hlo.exponential(hlo.multiply(minus_half_h2, r))), r))
    return hlo.multiply(value, a)


def _owens_t6(h, a):
    upper = _norm_upper(h)
    y = hlo.subtract(_c(a, 1.0), a)
    r = hlo.atan2(y, hlo.add(_c(a, 1.0), a))
    value = hlo.multiply(_c(h, 0.5), hlo.multiply(upper, hlo.subtract(_c(h, 1.0), upper)))
    safe_r = select(compare(r, _c(r, 0.0), "NE"), r, _c(r, 1.0))
    correction = divide(hlo.multiply(hlo.multiply(y, h), h), hlo.multiply(_c(r, 2.0), safe_r))
    correction = divide(hlo.multiply(r, hlo.exponential(hlo.negate(correction))), _c(r, _TWO_PI))
    return hlo.subtract(value, correction)


def _owens_t_reduced(h, a, ah):
    """T(h, a) for h >= 0, 0 <= a <= 1 (ah is a * h, given where it is known exactly)."""
    index = hlo.add(hlo.multiply(_count_above(a, _OWENS_A), _c(a, 15.0)), _count_above(h, _OWENS_H))
    index = _piecewise(index, _OWENS_SELECT)
    m, method = _piecewise(index, _OWENS_ORDER), _piecewise(index, _OWENS_METHOD)
    # Keep every method's arithmetic finite where another method is chosen (h = 0 divides).
    safe_h = select(compare(h, _c(h, 0.0), "GT"), h, _c(h, 1.0))
    values = [_owens_t1(h, a, m), _owens_t2(safe_h, a, ah, m), _owens_t3(safe_h, a, ah),
              _owens_t4(h, a, m), _owens_t5(h, a), _owens_t6(h, a)]
    value = values[0]
    for code, candidate in enumerate(values[1:], start=2):
        value = select(compare(method, _c(method, code), "EQ"), candidate, value)
    value = select(compare(a, _c(a, 1.0), "EQ"), hlo.multiply(_c(h, 0.5), hlo.multiply(_norm_upper(hlo.negate(h)), _norm_upper(h))), value)
    value = select(compare(a, _c(a, 0.0), "EQ"), _c(a, 0.0), value)
    return select(compare(h, _c(h, 0.0), "EQ"), divide(chlo.atan(a), _c(a, _TWO_PI)), value)


def _owens_t(h, a):
    h, abs_a = hlo.abs(h), hlo.abs(a)
    ah = hlo.multiply(abs_a, h)
    inf = _c(h, np.inf)
    big = compare(abs_a, _c(a, 1.0), "GT")
    # |a| > 1: T(h, a) from T(ah, 1/a); which normal tails keep the digits depends on ah.
    swapped_h = select(big, ah, h)
    reduced = _owens_t_reduced(
        select(compare(swapped_h, inf, "EQ"), _c(h, 0.0), swapped_h),
        select(big, divide(_c(a, 1.0), abs_a), abs_a),
        select(big, h, ah),
    )
    center = hlo.subtract(_c(h, 0.25), hlo.multiply(_norm_center(h), _norm_center(ah)))
    upper_h, upper_ah = _norm_upper(h), _norm_upper(ah)
    tails = hlo.subtract(hlo.multiply(_c(h, 0.5), hlo.add(upper_h, upper_ah)), hlo.multiply(upper_h, upper_ah))
    outer = hlo.subtract(select(compare(ah, _c(h, 0.67), "LE"), center, tails), reduced)
    value = select(big, outer, reduced)
    value = select(compare(h, inf, "EQ"), _c(h, 0.0), value)
    value = select(compare(abs_a, inf, "EQ"), hlo.multiply(_c(h, 0.5), upper_h), value)
    value = select(compare(a, _c(a, 0.0), "LT"), hlo.negate(value), value)
    return select(hlo.or_(compare(h, h, "NE"), compare(a, a, "NE")), _c(h, np.nan), value)


@register_lowering(psm.Owens_t)
def lower_owens_t(ctx, node, h, a):
    value = _owens_t(convert(h, "float64"), convert(a, "float64"))
    return convert(value, node.outputs[0].type.dtype)
