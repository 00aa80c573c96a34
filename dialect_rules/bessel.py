"""Bessel functions of real order (scalar Ops inside Elemwise): I0, I1, Iv, Ive, Kve,
J0, J1, Jv (and PyMC's I0e, I1e), computed in float64 as scipy does and cast to the output dtype.

For x > 0 and order v >= 0 they follow Temme's method, as Numerical Recipes' bessik
and bessjy lay it out (the algorithms behind Boost's and GSL's):
- a continued fraction gives f_v = I'_v/I_v (J'_v/J_v), and recurring it downwards
  to an order mu in [-1/2, 1/2] gives f_mu and the ratio I_v/I_mu;
- K_mu, K_mu+1 (Y_mu, Y_mu+1) come from Temme's series for x < 1 and from Steed's
  continued fraction otherwise (for K, scaled by e**x, so Ive and Kve never overflow
  on the way);
- the Wronskian fixes I_mu (J_mu); K_v and Y_v recur upwards from mu.
The first continued fraction takes about x steps, so for x >= 30 Hankel's expansions
(terms (4v**2 - 1)(4v**2 - 9).../(k! (8x)**k)) replace it: for I where v**2 <= 2x, for
J where v <= x, at orders mu and mu + 1 and recurred upwards (stable there).
J0 and J1 take Cephes' rational approximations instead, as scipy's j0 and j1 do.
Every loop is one `stablehlo.while` over whole tensors (`regions.converge`), each
element stopping when its terms vanish. Steed's fractions take many steps only for x
near 1 (at 10^4 points with x in [0, 100], 6 of iv's 8 ms a call): they compact the
elements still going (`regions.converge_compacting`), their steps reading their state
and J's 2x alone. Negative orders by reflection
(I_-v = I_v + 2/pi sin(pi v) K_v, J_-v = cos(pi v) J_v - sin(pi v) Y_v), negative x
for integer orders by parity; the edges (0, inf, NaN, non-integer order at x < 0)
are scipy's.
"""

from __future__ import annotations

import numpy as np
import pytensor.scalar.math as psm
from jax.extend.mlir.dialects import chlo
from jax.extend.mlir.dialects import stablehlo as hlo

from dialect_rules.series import _LGAMMA1P_TAYLOR
from dialect_rules.special import log_gamma
from lowering.builders import (
    add_all, compare, convert, divide, full_like, is_inf, is_nan, multiply_all, polynomial, remainder,
    select, sinpi,
)
from lowering.regions import converge, converge_compacting, where_few
from lowering.registry import register_lowering

_EPS = np.finfo(np.float64).eps
_TINY = 1e-300
_RESCALE_LOG = 575.0
_RESCALE = float(np.exp(_RESCALE_LOG))  # recurrences rescale their values past this (~1e250)
_MAX_STEPS = 100_000
_TEMME_BELOW = 1.0  # Temme's series below; Steed's fraction above (more accurate from 1 to 2)
_HANKEL_FROM = 30.0  # and v**2 <= 2x: the asymptotic expansions
_LEADING_BELOW = 2 * np.sqrt(_EPS)  # x**2/4 < eps: the power series' first term



_c = full_like
_add, _mul, _sub, _div = add_all, multiply_all, hlo.subtract, divide


def _cospi(v):
    """cos(pi v), exactly zero at half-integers."""
    return sinpi(_add(v, _c(v, 0.5)))


def _is_integer(v):
    return compare(hlo.floor(v), v, "EQ")


def _temme_gammas(mu):
    """For |mu| <= 1/2: 1/Gamma(1 + mu), 1/Gamma(1 - mu), and Temme's
    gam1 = (1/Gamma(1 - mu) - 1/Gamma(1 + mu)) / (2 mu) (its limit -euler_gamma at 0),
    gam2 = (1/Gamma(1 - mu) + 1/Gamma(1 + mu)) / 2, without cancellation: with
    lgamma(1 + t) = E(t) + O(t) split into even and odd parts,
    gam1 = e**-(E + O) expm1(2 O) / (2 mu), and O(mu)/mu is a polynomial in mu**2."""
    mu2 = _mul(mu, mu)
    even = _mul(mu2, polynomial(mu2, _LGAMMA1P_TAYLOR[1::2]))  # c_2 mu^2 + c_4 mu^4 + ...
    odd_over_mu = polynomial(mu2, _LGAMMA1P_TAYLOR[0::2])  # c_1 + c_3 mu^2 + ...
    odd = _mul(mu, odd_over_mu)
    plus = hlo.exponential(hlo.negate(_add(even, odd)))  # 1/Gamma(1 + mu)
    minus = hlo.exponential(_sub(odd, even))  # 1/Gamma(1 - mu)
    y = _mul(_c(mu, 2.0), odd)
    expm1_ratio = select(compare(y, _c(mu, 0.0), "EQ"), _c(mu, 1.0), _div(hlo.exponential_minus_one(y), y))
    gam1 = _mul(plus, odd_over_mu, expm1_ratio)
    gam2 = _mul(_c(mu, 0.5), _add(plus, minus))
    return plus, minus, gam1, gam2


def _sinc_ratio(t):
    """t / sin(t), 1 at 0."""
    small = compare(hlo.abs(t), _c(t, _EPS), "LT")
    return select(small, _c(t, 1.0), _div(t, hlo.sine(select(small, _c(t, 1.0), t))))


def _sinhc(t):
    """sinh(t) / t, 1 at 0."""
    small = compare(hlo.abs(t), _c(t, _EPS), "LT")
    safe = select(small, _c(t, 1.0), t)
    return select(small, _c(t, 1.0), _div(chlo.sinh(safe), safe))


def _leading_term(v, x, where):
    """(x/2)**v / Gamma(v + 1) for v >= 0 where `where` holds (0 elsewhere; computed only
    if some element does): I_v and J_v where x**2/4 < eps (the recurrences' ratios
    under- and overflow there)."""
    def leading(_, params):
        v, x = params
        power = hlo.power(_mul(_c(x, 0.5), x), v)  # exp(v log(x/2)) would lose |v log(x/2)| ulps
        return [_mul(power, hlo.exponential(hlo.negate(log_gamma(hlo.add(v, _c(v, 1.0))))))]

    return where_few(where, [v, x], leading, [_c(x, 0.0)], compacts=False)[0]


def _converged(delta, total):
    """The term is below eps of the sum, or the sum is no longer a number (an element
    whose terms overflowed stops, rather than holding the loop to its step limit)."""
    small = compare(hlo.abs(delta), _mul(hlo.abs(total), _c(total, _EPS)), "LE")
    return hlo.or_(small, hlo.not_(hlo.is_finite(total)))


def _recur(values, count, step):
    """Apply `step(values, i)` for i = 1 .. count (a whole number per element), the
    values rescaled by `step` itself where they grow."""
    zero = _c(count, 0.0)

    def body(state):
        i, *vals = state
        i = hlo.add(i, _c(i, 1.0))
        return [i, *step(vals, i)], compare(i, count, "GE")

    return converge([zero, *values], compare(count, zero, "GT"), body, _MAX_STEPS)[1:]


def _hankel_terms(v, x, active):
    """The asymptotic series' sums for x >> max(1, v**2): with
    a_k = (4v**2 - 1)(4v**2 - 9)...(4v**2 - (2k-1)**2) / (k! (8x)**k),
    returns (sum_k a_k, sum_k (-1)**k a_k, sum_k (-1)**k a_2k, sum_k (-1)**k a_2k+1)."""
    four_v2 = _mul(_c(v, 4.0), v, v)
    one = _c(v, 1.0)

    def step(state):
        k, term, plain, alternating, even, odd = state
        k = hlo.add(k, one)
        odd_factor = _sub(_mul(_c(k, 2.0), k), one)
        term = _div(_mul(term, _sub(four_v2, _mul(odd_factor, odd_factor))), _mul(_c(k, 8.0), k, x))
        # k mod 4 = 1: +odd, 2: -even, 3: -odd, 0: +even
        phase = remainder(k, _c(k, 4.0))
        sign = select(compare(phase, _c(k, 1.5), "LT"), one, hlo.negate(one))
        sign = select(compare(phase, _c(k, 0.5), "LT"), one, sign)
        is_odd = compare(remainder(k, _c(k, 2.0)), _c(k, 1.0), "EQ")
        even = select(is_odd, even, hlo.add(even, _mul(sign, term)))
        odd = select(is_odd, hlo.add(odd, _mul(sign, term)), odd)
        plain = hlo.add(plain, term)
        alternating = select(is_odd, hlo.subtract(alternating, term), hlo.add(alternating, term))
        return [k, term, plain, alternating, even, odd], _converged(term, plain)

    zero = _c(v, 0.0)
    return converge([zero, one, one, one, one, zero], active, step, 200)[2:]


def _temme_series(mu, x, active, bessel_y):
    """Temme's series for |mu| <= 1/2 (converging fast for x < 2): K_mu(x) and
    K_mu+1(x), or -Y_mu(x) and -Y_mu+1(x) with `bessel_y` (NR's bessik and bessjy:
    the same recurrences, with the sign of (x/2)**2 flipped and Y's extra r q term);
    0 where not `active`. Its gamma functions, logs and hyperbolic functions run only
    where some element is active (x < 1: 1% of x in [0, 100])."""
    zero = _c(x, 0.0)
    return where_few(active, [mu, x], lambda on, p: _temme_sums(*p, on, bessel_y), [zero, zero])


def _temme_sums(mu, x, active, bessel_y):
    one, zero = _c(x, 1.0), _c(x, 0.0)
    gampl, gammi, gam1, gam2 = _temme_gammas(mu)
    x2 = _mul(_c(x, 0.5), x)
    d0 = hlo.negate(hlo.log(x2))
    e0 = _mul(mu, d0)
    pimu = _mul(_c(mu, np.pi), mu)
    ff0 = _mul(_sinc_ratio(pimu), _add(_mul(gam1, chlo.cosh(e0)), _mul(gam2, _sinhc(e0), d0)))
    ee = hlo.exponential(e0)
    p0, q0 = _div(ee, gampl), _div(one, _mul(ee, gammi))
    z = _mul(x2, x2)
    if bessel_y:
        ff0, p0, q0 = _mul(_c(x, 2 / np.pi), ff0), _mul(_c(x, 1 / np.pi), p0), _mul(_c(x, 1 / np.pi), q0)
        half_pimu = _mul(_c(mu, 0.5), pimu)
        sinc = _div(one, _sinc_ratio(half_pimu))
        r = _mul(_c(x, np.pi), half_pimu, sinc, sinc)
        z = hlo.negate(z)
    else:
        p0, q0, r = _mul(_c(x, 0.5), p0), _mul(_c(x, 0.5), q0), zero
    mu2 = _mul(mu, mu)

    def step(state):
        i, ff, c, p, q, total, total1 = state
        i = hlo.add(i, one)
        ff = _div(_add(_mul(i, ff), p, q), _sub(_mul(i, i), mu2))
        c = _mul(c, _div(z, i))
        p = _div(p, _sub(i, mu))
        q = _div(q, hlo.add(i, mu))
        delta = _mul(c, hlo.add(ff, _mul(r, q)))
        total = hlo.add(total, delta)
        total1 = hlo.add(total1, _sub(_mul(c, p), _mul(i, delta)))
        return [i, ff, c, p, q, total, total1], _converged(delta, total)

    init = [zero, ff0, one, p0, q0, hlo.add(ff0, _mul(r, q0)), p0]
    *_, total, total1 = converge(init, active, step, _MAX_STEPS)
    return total, _mul(total1, _div(_c(x, 2.0), x))


# --- modified Bessel functions ------------------------------------------------------


def _scaled_ik(v, x, active):
    """e**-x I_v(x) and e**x K_v(x) for x > 0, v >= 0, each as a mantissa and a count
    of _RESCALE factors: (i, m) is i / _RESCALE**m, (k, n) is k * _RESCALE**n. The
    scaled values themselves under- and overflow where I_v(x) and K_v(x) do not
    (e**-500 I_1000(500) is 3e-361, I_1000(500) is 5e-144), so the recurrences
    count their rescalings rather than apply them to the result."""
    one, zero = _c(x, 1.0), _c(x, 0.0)
    xi, xi2 = _div(one, x), _div(_c(x, 2.0), x)
    nl = hlo.floor(_add(v, _c(v, 0.5)))
    mu = _sub(v, nl)
    hankel = hlo.and_(compare(x, _c(x, _HANKEL_FROM), "GE"), compare(_mul(_c(v, 0.5), v, v), x, "LE"))
    small = compare(x, _c(x, _TEMME_BELOW), "LT")

    # CF1: r = I_v+1 / I_v = 1/(2(v+1)/x + 1/(2(v+2)/x + ...)), by modified Lentz
    tiny = _c(x, _TINY)

    def cf1(state):
        b, d, c, r = state
        b = hlo.add(b, xi2)
        d = _div(one, hlo.add(b, d))
        c = hlo.add(b, _div(one, c))
        delta = hlo.multiply(c, d)
        return [b, d, c, hlo.multiply(r, delta)], compare(hlo.abs(_sub(delta, one)), _c(x, _EPS), "LT")

    _, _, _, r = converge([_mul(xi2, v), zero, tiny, tiny], hlo.and_(active, hlo.not_(hankel)), cf1, _MAX_STEPS)

    # down from (I_v, I_v+1) = (1, r) to (I_mu, I_mu+1): I_l-1 = 2l/x I_l + I_l+1, each
    # step past _RESCALE scaled back by it and counted: I_v is _RESCALE**-i_count then
    def down(vals, i):
        i_l, i_next, count = vals
        i_prev = hlo.add(_mul(_sub(v, _sub(i, one)), xi2, i_l), i_next)
        over = compare(i_prev, _c(x, _RESCALE), "GT")
        scale = select(over, _c(x, 1 / _RESCALE), one)
        return [_mul(i_prev, scale), _mul(i_l, scale), hlo.add(count, select(over, one, zero))]

    i_mu, i_mu1, i_count = _recur([one, r, zero], select(hankel, zero, nl), down)

    # K_mu, K_mu+1 scaled by e**x: Temme's series (x < 1) or Steed's CF2
    kmu_series, k1_series = _temme_series(mu, x, hlo.and_(active, small), bessel_y=False)
    ex = hlo.exponential(select(small, x, zero))
    kmu_small = _mul(kmu_series, ex)
    k1_small = _mul(k1_series, ex)

    mu2 = _mul(mu, mu)
    a1 = _sub(_c(x, 0.25), mu2)

    def steed(_, state):  # (its constants made from its state: it compacts)
        i, a, b, c, d, delh, h, q, q1, q2, s = state
        one, two = _c(i, 1.0), _c(i, 2.0)
        i = hlo.add(i, one)
        a = _sub(a, _mul(two, _sub(i, one)))
        c = _div(_mul(hlo.negate(a), c), i)
        qnew = _div(_sub(q1, _mul(b, q2)), a)
        q1, q2 = q2, qnew
        q = hlo.add(q, _mul(c, qnew))
        b = hlo.add(b, two)
        d = _div(one, hlo.add(b, _mul(a, d)))
        delh = _mul(_sub(_mul(b, d), one), delh)
        h = hlo.add(h, delh)
        dels = _mul(q, delh)
        s = hlo.add(s, dels)
        return [i, a, b, c, d, delh, h, q, q1, q2, s], _converged(dels, s)

    b0 = _mul(_c(x, 2.0), hlo.add(one, x))
    d_init = _div(one, b0)
    s0 = hlo.add(one, _mul(a1, d_init))
    init = [one, hlo.negate(a1), b0, a1, d_init, d_init, d_init, a1, zero, one, s0]
    state = converge_compacting(init, [], hlo.and_(active, hlo.not_(small)), steed, _MAX_STEPS)
    h_cf2, s = _mul(a1, state[6]), state[10]
    kmu_large = _div(hlo.sqrt(_div(_c(x, np.pi / 2), x)), s)
    k1_large = _mul(kmu_large, _sub(_add(mu, x, _c(x, 0.5)), h_cf2), xi)

    kmu = select(small, kmu_small, kmu_large)
    k1 = select(small, k1_small, k1_large)

    # Wronskian: I_mu K_mu+1 + I_mu+1 K_mu = 1/x (all terms positive)
    imu = _div(xi, hlo.add(k1, _mul(_div(i_mu1, i_mu), kmu)))
    ive = _div(imu, i_mu)

    # up from mu to v: K_l+1 = 2l/x K_l + K_l-1, rescaled and counted as I was
    def up(vals, i):
        k0, k1, count = vals
        k2 = hlo.add(_mul(_add(mu, i), xi2, k1), k0)
        over = compare(k2, _c(x, _RESCALE), "GT")
        scale = select(over, _c(x, 1 / _RESCALE), one)
        return [_mul(k1, scale), _mul(k2, scale), hlo.add(count, select(over, one, zero))]

    kve, _, k_count = _recur([kmu, k1, zero], nl, up)

    plain, alternating, _, _ = _hankel_terms(v, x, hlo.and_(active, hankel))
    ive = select(hankel, _div(alternating, hlo.sqrt(_mul(_c(x, 2 * np.pi), x))), ive)
    at_leading = compare(x, _c(x, _LEADING_BELOW), "LT")
    leading = _mul(_leading_term(v, x, at_leading), hlo.exponential(hlo.negate(x)))
    i_count = select(hlo.or_(hankel, at_leading), zero, i_count)
    return (select(at_leading, leading, ive), i_count), (kve, k_count)


def _times_rescale(m, count, power):
    """m * _RESCALE**(power * count) for a count of 0, 1 or more: the recurrences'
    mantissas are past 1 (K) or at most 1 (I), so two factors settle over- or underflow."""
    one, zero = _c(m, 1.0), _c(m, 0.0)
    factor = _c(m, _RESCALE**power)
    once = select(compare(count, zero, "GT"), factor, one)
    twice = select(compare(count, one, "GT"), factor, one)
    return _mul(m, once, twice)


def _times_exp(m, exponent):
    """m * e**exponent, e**(exponent / 2) applied twice: e**exponent may overflow or
    underflow alone where the product does not."""
    half = hlo.exponential(_mul(exponent, _c(exponent, 0.5)))
    return _mul(m, half, half)



def _modified(v, x, kind):
    """scipy's iv ("iv"), ive ("ive") or kve ("kve") of any real v and x."""
    zero, one, nan, inf = _c(x, 0.0), _c(x, 1.0), _c(x, np.nan), _c(x, np.inf)
    av, ax = hlo.abs(v), hlo.abs(x)
    finite = hlo.not_(hlo.or_(hlo.or_(is_inf(v), is_inf(x)), hlo.or_(is_nan(v), is_nan(x))))
    regular = hlo.and_(finite, compare(ax, zero, "GT"))
    if kind == "kve":
        regular = hlo.and_(regular, compare(x, zero, "GT"))
    safe_v, safe_x = select(regular, av, _c(v, 0.5)), select(regular, ax, one)
    (i_m, i_count), (k_m, k_count) = _scaled_ik(safe_v, safe_x, regular)
    kve = _times_rescale(k_m, k_count, 1)
    integer = _is_integer(v)
    if kind == "kve":  # K_-v = K_v
        value = select(compare(x, zero, "EQ"), inf, kve)
        return select(regular, value, select(compare(x, zero, "EQ"), inf, nan))
    # I_-v = I_v + 2/pi sin(pi v) K_v
    if kind == "iv":
        log_rescale = _c(x, _RESCALE_LOG)
        value = _times_exp(i_m, _sub(safe_x, _mul(i_count, log_rescale)))
        k_v = _times_exp(k_m, _sub(_mul(k_count, log_rescale), safe_x))
    else:  # scipy's ive is NaN where its e**x K_v(x) overflows
        value = _times_rescale(i_m, i_count, -1)
        k_v = select(is_inf(kve), nan, _times_exp(kve, _mul(_c(x, -2.0), safe_x)))
    reflected = _mul(_c(x, 2 / np.pi), sinpi(safe_v), k_v)
    value = hlo.add(value, select(hlo.or_(integer, compare(v, zero, "GE")), zero, reflected))
    # x < 0: I_n(-x) = (-1)**n I_n(x); NaN for other orders
    odd = compare(remainder(v, _c(v, 2.0)), zero, "NE")
    value = select(hlo.and_(compare(x, zero, "LT"), odd), hlo.negate(value), value)
    value = select(hlo.and_(compare(x, zero, "LT"), hlo.not_(integer)), nan, value)
    # x = 0: 1 at order 0, 0 at positive or integer orders, inf (iv) / NaN (ive) otherwise
    at_zero = select(hlo.or_(compare(v, zero, "GT"), integer), zero, inf if kind == "iv" else nan)
    at_zero = select(compare(v, zero, "EQ"), one, at_zero)
    edge = select(compare(x, zero, "EQ"), at_zero, nan)  # x = +-inf: scipy's NaN
    # infinite order: 0 for finite x (iv), NaN (ive)
    edge = select(hlo.and_(is_inf(v), hlo.not_(is_inf(x))), zero if kind == "iv" else nan, edge)
    edge = select(hlo.or_(is_nan(v), is_nan(x)), nan, edge)
    return select(regular, value, edge)



# --- Bessel functions of the first kind ------------------------------------------------


def _jy(v, x, active):
    """J_v(x) and Y_v(x) for x > 0, v >= 0."""
    one, zero, two = _c(x, 1.0), _c(x, 0.0), _c(x, 2.0)
    xi, xi2 = _div(one, x), _div(two, x)
    small = compare(x, _c(x, _TEMME_BELOW), "LT")
    # x >= 30 and v <= x: Hankel's expansion at orders mu, mu + 1, recurred upwards (stable
    # while the order is below x), never the first continued fraction's ~x steps
    hankel = hlo.and_(compare(x, _c(x, _HANKEL_FROM), "GE"), compare(v, x, "LE"))
    # otherwise recur down to |mu| <= 1/2 below x = 1, else to where Steed's CF2 converges
    nl = select(
        hlo.or_(small, hankel),
        hlo.floor(_add(v, _c(v, 0.5))),
        hlo.maximum(zero, hlo.floor(_sub(_add(v, _c(v, 1.5)), x))),
    )
    mu = _sub(v, nl)
    mu2 = _mul(mu, mu)

    # CF1: r = J_v+1 / J_v = 1/(2(v+1)/x - 1/(2(v+2)/x - ...)); the signs of Lentz's
    # denominators multiply to the sign of J_v (J of high order is positive)
    tiny = _c(x, _TINY)

    def nonzero(t):
        return select(compare(hlo.abs(t), tiny, "LT"), tiny, t)

    def cf1(state):
        j, b, d, c, r, sign = state
        j = hlo.add(j, one)
        b = hlo.add(b, xi2)
        a = select(compare(j, one, "EQ"), one, hlo.negate(one))
        d = _div(one, nonzero(hlo.add(b, _mul(a, d))))
        c = nonzero(hlo.add(b, _div(a, c)))
        delta = hlo.multiply(c, d)
        sign = select(compare(d, zero, "LT"), hlo.negate(sign), sign)
        done = compare(hlo.abs(_sub(delta, one)), _c(x, _EPS), "LT")
        return [j, b, d, c, hlo.multiply(r, delta), sign], done

    _, _, _, _, r, sign = converge(
        [zero, _mul(xi2, v), zero, tiny, tiny, one], hlo.and_(active, hlo.not_(hankel)), cf1, _MAX_STEPS)

    # down from (J_v, J_v+1) = sign (1, r): J_l-1 = 2l/x J_l - J_l+1
    def down(vals, i):
        j_l, j_next, top = vals
        j_prev = _sub(_mul(_sub(v, _sub(i, one)), xi2, j_l), j_next)
        scale = select(compare(hlo.abs(j_prev), _c(x, _RESCALE), "GT"), _c(x, 1 / _RESCALE), one)
        return [_mul(j_prev, scale), _mul(j_l, scale), _mul(top, scale)]

    j_mu, j_mu1, top = _recur([sign, _mul(sign, r), sign], select(hankel, zero, nl), down)
    g = _div(j_mu1, j_mu)  # J_mu+1 / J_mu

    # x < 1: Temme's series for Y_mu, Y_mu+1; J_mu by the Wronskian
    # J_mu+1 Y_mu - J_mu Y_mu+1 = 2/(pi x)
    sum0, sum1 = _temme_series(mu, x, hlo.and_(active, small), bessel_y=True)
    ymu_small, y1_small = hlo.negate(sum0), hlo.negate(sum1)
    jmu_small = _div(_c(x, 2 / np.pi), _mul(x, _sub(_mul(g, ymu_small), y1_small)))

    # x >= 1: Steed's CF2, p + iq = (J'_mu + i Y'_mu) / (J_mu + i Y_mu)
    a0 = _sub(_c(x, 0.25), mu2)
    p_init, q_init = _mul(_c(x, -0.5), xi), one
    br, bi0 = _mul(two, x), two
    fact = _div(_mul(a0, xi), _add(_mul(p_init, p_init), _mul(q_init, q_init)))
    cr0, ci0 = hlo.add(br, _mul(q_init, fact)), hlo.add(bi0, _mul(p_init, fact))
    den = _add(_mul(br, br), _mul(bi0, bi0))
    dr0, di0 = _div(br, den), hlo.negate(_div(bi0, den))
    dlr, dli = _sub(_mul(cr0, dr0), _mul(ci0, di0)), _add(_mul(cr0, di0), _mul(ci0, dr0))
    p1, q1 = _sub(_mul(p_init, dlr), _mul(q_init, dli)), _add(_mul(p_init, dli), _mul(q_init, dlr))

    def steed(params, state):  # (its constants made from its state: it compacts)
        (br,) = params
        i, a, bi, cr, ci, dr, di, p, q = state
        one, two = _c(i, 1.0), _c(i, 2.0)
        i = hlo.add(i, one)
        a = hlo.add(a, _mul(two, _sub(i, one)))
        bi = hlo.add(bi, two)
        dr = hlo.add(_mul(a, dr), br)
        di = hlo.add(_mul(a, di), bi)
        fact = _div(a, _add(_mul(cr, cr), _mul(ci, ci)))
        cr = hlo.add(br, _mul(cr, fact))
        ci = _sub(bi, _mul(ci, fact))
        den = _add(_mul(dr, dr), _mul(di, di))
        dr, di = _div(dr, den), hlo.negate(_div(di, den))
        dlr = _sub(_mul(cr, dr), _mul(ci, di))
        dli = _add(_mul(cr, di), _mul(ci, dr))
        p, q = _sub(_mul(p, dlr), _mul(q, dli)), _add(_mul(p, dli), _mul(q, dlr))
        done = compare(_add(hlo.abs(_sub(dlr, one)), hlo.abs(dli)), _c(i, _EPS), "LT")
        return [i, a, bi, cr, ci, dr, di, p, q], done

    init = [one, a0, bi0, cr0, ci0, dr0, di0, p1, q1]
    *_, p, q = converge_compacting(init, [br], hlo.and_(active, hlo.not_(hlo.or_(small, hankel))), steed, _MAX_STEPS)
    f = _sub(_mul(mu, xi), g)  # J'_mu / J_mu
    gam = _div(_sub(p, f), q)
    jmu_large = hlo.sqrt(_div(_c(x, 2 / np.pi), _mul(x, hlo.add(_mul(_sub(p, f), gam), q))))
    jmu_large = select(compare(j_mu, zero, "LT"), hlo.negate(jmu_large), jmu_large)
    ymu_large = _mul(jmu_large, gam)
    y1_large = _sub(_mul(mu, xi, ymu_large), _mul(ymu_large, hlo.add(p, _div(q, gam))))

    jmu = select(small, jmu_small, jmu_large)
    jv = _div(_mul(jmu, top), j_mu)

    # Hankel: with omega = x - (nu/2 + 1/4) pi,
    # J_nu = sqrt(2/(pi x)) (P cos omega - Q sin omega), Y_nu = ... (P sin omega + Q cos omega)
    def hankel_jy(nu):
        _, _, big_p, big_q = _hankel_terms(nu, x, hlo.and_(active, hankel))
        phase = _add(_mul(_c(nu, 0.5), nu), _c(nu, 0.25))
        cos_phi, sin_phi = _cospi(phase), sinpi(phase)
        cos_w = hlo.add(_mul(cos_x, cos_phi), _mul(sin_x, sin_phi))
        sin_w = _sub(_mul(sin_x, cos_phi), _mul(cos_x, sin_phi))
        j = _mul(amplitude, _sub(_mul(big_p, cos_w), _mul(big_q, sin_w)))
        y = _mul(amplitude, hlo.add(_mul(big_p, sin_w), _mul(big_q, cos_w)))
        return j, y

    cos_x, sin_x = hlo.cosine(x), hlo.sine(x)
    amplitude = hlo.sqrt(_div(_c(x, 2 / np.pi), x))
    j_h0, y_h0 = hankel_jy(mu)
    j_h1, y_h1 = hankel_jy(hlo.add(mu, one))

    # up from mu to v: C_l+1 = 2l/x C_l - C_l-1, for Y (and J after Hankel); Y is -inf
    # once it overflows, not inf - inf
    def up(vals, i):
        j0, j1, y0, y1 = vals
        factor = _mul(_add(mu, i), xi2)
        y2 = select(is_inf(y1), y1, _sub(_mul(factor, y1), y0))
        return [j1, _sub(_mul(factor, j1), j0), y1, y2]

    start = [
        j_h0, j_h1,
        select(hankel, y_h0, select(small, ymu_small, ymu_large)),
        select(hankel, y_h1, select(small, y1_small, y1_large)),
    ]
    j_up, _, yv, _ = _recur(start, nl, up)
    jv = select(hankel, j_up, jv)
    at_leading = compare(x, _c(x, _LEADING_BELOW), "LT")
    jv = select(at_leading, _leading_term(v, x, at_leading), jv)
    return jv, yv


def _first_kind(v, x):
    """scipy's jv of any real v and x."""
    zero, one, nan, inf = _c(x, 0.0), _c(x, 1.0), _c(x, np.nan), _c(x, np.inf)
    av, ax = hlo.abs(v), hlo.abs(x)
    finite = hlo.not_(hlo.or_(hlo.or_(is_inf(v), is_inf(x)), hlo.or_(is_nan(v), is_nan(x))))
    regular = hlo.and_(finite, compare(ax, zero, "GT"))
    safe_v, safe_x = select(regular, av, _c(v, 0.5)), select(regular, ax, one)
    jv, yv = _jy(safe_v, safe_x, regular)
    integer = _is_integer(v)
    # J_-v = cos(pi v) J_v - sin(pi v) Y_v
    reflected = _sub(_mul(_cospi(safe_v), jv), _mul(sinpi(safe_v), yv))
    odd = compare(remainder(v, _c(v, 2.0)), zero, "NE")
    signed = select(odd, hlo.negate(jv), jv)  # integer orders: (-1)**n J_n
    value = select(compare(v, zero, "GE"), jv, select(integer, signed, reflected))
    value = select(hlo.and_(compare(x, zero, "LT"), odd), hlo.negate(value), value)
    value = select(hlo.and_(compare(x, zero, "LT"), hlo.not_(integer)), nan, value)
    # x = 0: 1 at order 0, 0 at positive or integer orders, else +-inf with the sign of
    # Gamma(v + 1) (J_v ~ (x/2)**v / Gamma(v + 1))
    # (Gamma(v + 1) < 0 where v < -1 and ceil(-v) is even; read from v itself, as v + 1
    # rounds to 1 for |v| below 1.1e-16, where -inf came out for scipy's inf)
    gamma_negative = hlo.and_(compare(v, _c(v, -1.0), "LT"),
                              compare(remainder(hlo.ceil(hlo.negate(v)), _c(v, 2.0)), zero, "EQ"))
    at_zero = select(hlo.or_(compare(v, zero, "GT"), integer), zero, select(gamma_negative, hlo.negate(inf), inf))
    at_zero = select(compare(v, zero, "EQ"), one, at_zero)
    edge = select(compare(x, zero, "EQ"), at_zero, nan)  # x = +-inf: scipy's NaN
    # infinite order: scipy's 0 for 0 <= x <= 2 (its power series), NaN elsewhere
    edge = select(hlo.and_(is_inf(v), hlo.and_(compare(x, zero, "GE"), compare(x, _c(x, 2.0), "LE"))), zero, edge)
    edge = select(hlo.or_(is_nan(v), is_nan(x)), nan, edge)
    return select(regular, value, edge)


def _rule(function, *constant_order):
    """A rule computing `function(v, x)` in float64 (v fixed for I0, I1, J0, J1)."""

    def rule(ctx, node, *inputs):
        args = [convert(i, "float64") for i in inputs]
        if constant_order:
            args = [_c(args[0], constant_order[0]), *args]
        return convert(function(*args), node.outputs[0].type.dtype)

    return rule


register_lowering(psm.Iv)(_rule(lambda v, x: _modified(v, x, "iv")))
register_lowering(psm.Ive)(_rule(lambda v, x: _modified(v, x, "ive")))
register_lowering(psm.Kve)(_rule(lambda v, x: _modified(v, x, "kve")))


# I0 and I1 as scipy computes them (Cephes): e**|x| times Chebyshev series for
# e**-|x| I(x) on [0, 8] and in 32/x beyond; CHLO has I1's (`bessel_i1e`).
_I0E_BELOW_8 = [
    -4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16,
    1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14,
    -4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11,
    9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9,
    -1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7,
    1.11738753912010371815e-6, -4.41673835845875056359e-6, 1.64484480707288970893e-5,
    -5.75419501008210370398e-5, 1.88502885095841655729e-4, -5.76375574538582365885e-4,
    1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2,
    -2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2,
    1.71620901522208775349e-1, -3.04682672343198398683e-1, 6.76795274409476084995e-1,
]
_I0E_ABOVE_8 = [
    -7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17,
    3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
    1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15,
    -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
    7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
    -3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10,
    3.39623202570838634515e-9, 2.26666899049817806459e-8, 2.04891858946906374183e-7,
    2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3,
    8.04490411014108831608e-1,
]


def _chebyshev(t, coefficients):
    """Cephes' chbevl: Clenshaw's sum of the series, halved."""
    b0, b1 = _c(t, 0.0), _c(t, 0.0)
    b2 = b1
    for c in coefficients:
        b0, b1, b2 = _add(_sub(_mul(t, b0), b1), _c(t, c)), b0, b1
    return _mul(_c(t, 0.5), _sub(b0, b2))


def _i0e(_, x):
    ax = hlo.abs(x)
    below = _chebyshev(_sub(_mul(_c(x, 0.5), ax), _c(x, 2.0)), _I0E_BELOW_8)
    above = _div(_chebyshev(_sub(_div(_c(x, 32.0), ax), _c(x, 2.0)), _I0E_ABOVE_8), hlo.sqrt(ax))
    return select(compare(ax, _c(x, 8.0), "LE"), below, above)


def _i1e(_, x):
    return chlo.bessel_i1e(x)


def _unscaled(scaled):
    return lambda v, x: _mul(hlo.exponential(hlo.abs(x)), scaled(v, x))


register_lowering(psm.I0)(_rule(_unscaled(_i0e), 0.0))
register_lowering(psm.I1)(_rule(_unscaled(_i1e), 1.0))
# PyMC's own scalar Ops (the Rice distribution's logp), by name: the rules never import PyMC.
register_lowering("pymc.distributions.dist_math.I0e")(_rule(_i0e, 0.0))
register_lowering("pymc.distributions.dist_math.I1e")(_rule(_i1e, 1.0))
register_lowering(psm.Jv)(_rule(_first_kind))


# J0 and J1 as scipy computes them (Cephes j0, j1: these steps in numpy give scipy's
# values to the bit; lowered, within 3.3e-16, as XLA contracts FMAs and has its own sine
# and cosine): on |x| <= 5 a rational function in x**2 times the factors of its first
# two zeros; beyond, Hankel's expansion with rational P and Q in 25/x**2 and the phase
# x - pi/4 (J0) or x - 3pi/4 (J1). No loop: the general order's algorithm (`_first_kind`)
# took 1.3 ms on 1,000 elements against NUMBA's 10 µs (scipy's j0).
_J0 = {
    "RP": [-4.79443220978201773821e9, 1.95617491946556577543e12, -2.49248344360967716204e14,
           9.70862251047306323952e15],
    "RQ": [4.99563147152651017219e2, 1.73785401676374683123e5, 4.84409658339962045305e7,
           1.11855537045356834862e10, 2.11277520115489217587e12, 3.10518229857422583814e14,
           3.18121955943204943306e16, 1.71086294081043136091e18],
    "PP": [7.96936729297347051624e-4, 8.28352392107440799803e-2, 1.23953371646414299388e0,
           5.44725003058768775090e0, 8.74716500199817011941e0, 5.30324038235394892183e0,
           9.99999999999999997821e-1],
    "PQ": [9.24408810558863637013e-4, 8.56288474354474431428e-2, 1.25352743901058953537e0,
           5.47097740330417105182e0, 8.76190883237069594232e0, 5.30605288235394617618e0,
           1.00000000000000000218e0],
    "QP": [-1.13663838898469149931e-2, -1.28252718670509318512e0, -1.95539544257735972385e1,
           -9.32060152123768231369e1, -1.77681167980488050595e2, -1.47077505154951170175e2,
           -5.14105326766599330220e1, -6.05014350600728481186e0],
    "QQ": [6.43178256118178023184e1, 8.56430025976980587198e2, 3.88240183605401609683e3,
           7.24046774195652478189e3, 5.93072701187316984827e3, 2.06209331660327847417e3,
           2.42005740240291393179e2],
    "zeros": (5.78318596294678452118e0, 3.04712623436620863991e1),  # the first two zeros, squared
}
_J1 = {
    "RP": [-8.99971225705559398224e8, 4.52228297998194034323e11, -7.27494245221818276015e13,
           3.68295732863852883286e15],
    "RQ": [6.20836478118054335476e2, 2.56987256757748830383e5, 8.35146791431949253037e7,
           2.21511595479792499675e10, 4.74914122079991414898e12, 7.84369607876235854894e14,
           8.95222336184627338078e16, 5.32278620332680085395e18],
    "PP": [7.62125616208173112003e-4, 7.31397056940917570436e-2, 1.12719608129684925192e0,
           5.11207951146807644818e0, 8.42404590141772420927e0, 5.21451598682361504063e0,
           1.00000000000000000254e0],
    "PQ": [5.71323128072548699714e-4, 6.88455908754495404082e-2, 1.10514232634061696926e0,
           5.07386386128601488557e0, 8.39985554327604159757e0, 5.20982848682361821619e0,
           9.99999999999999997461e-1],
    "QP": [5.10862594750176621635e-2, 4.98213872951233449420e0, 7.58238284132545283818e1,
           3.66779609360150777800e2, 7.10856304998926107277e2, 5.97489612400613639965e2,
           2.11688757100572135698e2, 2.52070205858023719784e1],
    "QQ": [7.42373277035675149943e1, 1.05644886038262816351e3, 4.98641058337653607651e3,
           9.56231892404756170795e3, 7.99704160447350683650e3, 2.82619278517639096600e3,
           3.36093607810698293419e2],
    "zeros": (1.46819706421238932572e1, 4.92184563216946036703e1),
}
_SQRT_2_OVER_PI = 0.79788456080286535588


def _polevl(t, coefficients, monic=False):
    """Cephes' polevl (highest power first), or p1evl with `monic`: a leading 1 implied."""
    return polynomial(t, [*coefficients[::-1], *([1.0] if monic else [])])


def _hankel(x, z, w, table, phase):
    """sqrt(2 / (pi x)) (P cos(x - phase) - w Q sin(x - phase)), P and Q rational in z."""
    p = _div(_polevl(z, table["PP"]), _polevl(z, table["PQ"]))
    q = _div(_polevl(z, table["QP"]), _polevl(z, table["QQ"], monic=True))
    xn = _sub(x, _c(x, phase))
    p = _sub(_mul(p, hlo.cosine(xn)), _mul(w, q, hlo.sine(xn)))
    return _div(_mul(p, _c(x, _SQRT_2_OVER_PI)), hlo.sqrt(x))


def _zero_factors(z, table):
    r1, r2 = table["zeros"]
    return _mul(_sub(z, _c(z, r1)), _sub(z, _c(z, r2)))


def _j0(_, x):
    x = hlo.abs(x)
    z = _mul(x, x)
    near = _div(_mul(_zero_factors(z, _J0), _polevl(z, _J0["RP"])), _polevl(z, _J0["RQ"], monic=True))
    near = select(compare(x, _c(x, 1e-5), "LT"), _sub(_c(z, 1.0), _div(z, _c(z, 4.0))), near)
    far = _hankel(x, _div(_c(x, 25.0), z), _div(_c(x, 5.0), x), _J0, np.pi / 4)
    return select(compare(x, _c(x, 5.0), "LE"), near, far)


def _j1(_, x):
    negative = compare(x, _c(x, 0.0), "LT")
    ax = select(negative, hlo.negate(x), x)  # -0.0 stays: j1(-0.0) is -0.0
    z = _mul(ax, ax)
    near = _mul(_div(_polevl(z, _J1["RP"]), _polevl(z, _J1["RQ"], monic=True)), ax, _zero_factors(z, _J1))
    w = _div(_c(x, 5.0), ax)
    far = _hankel(ax, _mul(w, w), w, _J1, 3 * np.pi / 4)
    value = select(compare(ax, _c(x, 5.0), "LE"), near, far)
    return select(negative, hlo.negate(value), value)


register_lowering(psm.J0)(_rule(_j0, 0.0))
register_lowering(psm.J1)(_rule(_j1, 1.0))
