"""The Gauss hypergeometric function 2F1(a, b; c; x) for real arguments, as Cephes'
`hyp2f1` (what scipy.special.hyp2f1 runs for real x), in float64 for every input dtype.

Cephes picks a method per argument, recursing into itself; here every element takes
its own path through the same fixed plan, the methods computed on whole tensors and
joined with `select`:

- `_series`: the Gauss series, one `stablehlo.while` over all elements until each
  element's term is below MACHEP of its sum, with Cephes' loss estimate.
- `_hys2f1`: the series, or, where |a| >> |c| would cancel, the two-term recurrence in
  a from two nearby series (Cephes `hyp2f1ra`; two levels deep, as Cephes can go).
- `_hyt2f1`: Pfaff's z/(z-1) below x = -0.5; above 0.9 the series while its loss is
  small, else the 1 - x transformation (AMS 15.3.6) or, for integer c - a - b, the
  psi-function expansion (AMS 15.3.10-12).
- `_core`: Euler's transformation for c - a - b <= -1, the closed forms, terminating
  polynomials, x = +-1, the recurrence on c when c - a - b < 0 loses digits.
- `_hyp2f1`: below x = -1 the 1/x (x < -2) or Pfaff transformation, whose terms are
  `_core` at the transformed argument.

Where one Cephes branch calls itself several times (1/x's two terms, the recurrence
on c's two starting values), the calls are stacked along a new leading axis and run
through one set of loops. Few of an element's stacked calls take the series (often one
of its 72) or the recurrence in a (of 36), and a few elements take them long (the series
near x = 1 runs to its 10,000 terms, the recurrence |a - c| or |a| steps): those two loops
compact the elements still going (`regions.converge_compacting`). The others are over
2 or 6 calls of each element, and short but for rare arguments. The methods that few
elements take and that cost gamma functions (the 1 - x formula's, the psi expansion,
Gauss's sum at x = 1) run only where some element takes them (`regions.where_few`): every
call computed all three for every stacked call, a fifth of the time of 20 to 2,000
random points.
"""

from __future__ import annotations

import numpy as np
import pytensor.scalar.math as psm
from jax.extend.mlir.dialects import stablehlo as hlo

from dialect_rules.special import _digamma, _gamma, gamma_from_log, log_gamma
from lowering.builders import (
    add_all, all_of, any_of, batched, compare, convert, divide, full_like, is_inf, multiply_all, select, stack, unstack,
)
from lowering.regions import converge, converge_compacting, where_few
from lowering.registry import register_lowering

_EPS = 1e-13  # parameters this close to an integer count as integers
_ETHRESH = 1e-12  # the loss above which another method is tried
_MACHEP = np.finfo(np.float64).eps / 2
_MAX_STEPS = 10000
# The series' few longest elements (near x = 1, up to its 10,000 terms; of 2,000 random
# points' 4,964 series, half took 35 terms or fewer, the longest 6,274) step in a third
# level of `converge_compacting`'s as narrow as 16 slots (of 2,000 points, 35 slots after
# 9,000 and 562): 0.81x a call there, 0.38x at 200 points (in one process), for 0.6-0.8 s
# more compile at 2,000.
_SERIES_LEVELS = 3
_SERIES_NARROWEST = 16


_c = full_like
_add, _mul, _and, _or = add_all, multiply_all, all_of, any_of


def _not(mask):
    return hlo.not_(mask)


def _lt(a, b):
    return compare(a, b if not isinstance(b, (int, float)) else _c(a, b), "LT")


def _gt(a, b):
    return compare(a, b if not isinstance(b, (int, float)) else _c(a, b), "GT")


def _le(a, b):
    return compare(a, b if not isinstance(b, (int, float)) else _c(a, b), "LE")


def _ge(a, b):
    return compare(a, b if not isinstance(b, (int, float)) else _c(a, b), "GE")


def _eq(a, b):
    return compare(a, b if not isinstance(b, (int, float)) else _c(a, b), "EQ")


def _round(x):
    return hlo.round_nearest_afz(x)  # C's round(): halves away from zero


def _near_integer(x, tol=_EPS):
    return _lt(hlo.abs(hlo.subtract(x, _round(x))), tol)


def _nonpositive_integer(x):
    return _and(_le(x, 0.0), _near_integer(x))


def _odd(n):
    """n (integer-valued) is odd."""
    half = hlo.multiply(n, _c(n, 0.5))
    return compare(hlo.floor(half), half, "NE")


def _pow(s, d):
    """C's pow(s, d): a negative base takes an integer exponent (sign by its parity)."""
    magnitude = hlo.power(hlo.abs(s), d)
    negative = _lt(s, 0.0)
    value = select(_and(negative, _odd(d)), hlo.negate(magnitude), magnitude)
    return select(_and(negative, compare(hlo.floor(d), d, "NE")), _c(s, np.nan), value)


def _lgamma_signs(*xs):
    """log|Gamma(x)| and the sign of Gamma(x), for each x."""
    signs = [select(_and(_lt(x, 0.0), _odd(hlo.floor(x))), _c(x, -1.0), _c(x, 1.0)) for x in xs]
    return list(zip(batched(log_gamma, *xs), signs))


def _gamma_and_reciprocal(gammas, reciprocals):
    """Gamma(x) for each of `gammas`, 1 / Gamma(x) (zero at the poles) for `reciprocals`."""
    values = batched(_gamma, *gammas, *reciprocals)
    out = values[: len(gammas)]
    for x, g in zip(reciprocals, values[len(gammas):]):
        pole = _and(_le(x, 0.0), _eq(hlo.floor(x), x))
        out.append(select(pole, _c(x, 0.0), divide(_c(x, 1.0), g)))
    return out


# --- the power series and the recurrence in a -------------------------------------------


def _series(a, b, c, x, active):
    """sum_k (a)_k (b)_k / ((c)_k k!) x**k and Cephes' estimate of its relative loss."""
    def step(params, state):
        a, b, c, x = params
        one = _c(a, 1.0)
        k, u, s, umax, pole = state
        at_pole = _lt(hlo.abs(hlo.add(c, k)), _EPS)
        m = hlo.add(k, one)
        ratio = divide(_mul(hlo.add(a, k), hlo.add(b, k), x), hlo.multiply(hlo.add(c, k), m))
        u = hlo.multiply(u, ratio)
        s = hlo.add(s, u)
        umax = hlo.maximum(umax, hlo.abs(u))
        pole = select(at_pole, one, pole)
        done = _and(compare(s, _c(s, 0.0), "NE"), _le(hlo.abs(divide(u, s)), _MACHEP))
        # a terminated series (u = 0, also where the sum is 0) or a term that is no longer
        # a number adds nothing more: stop rather than run to the step limit
        ended = _or(compare(u, _c(u, 0.0), "EQ"), hlo.not_(hlo.is_finite(u)))
        return [m, u, s, umax, pole], _or(at_pole, _or(done, ended))

    zero, one = _c(a, 0.0), _c(a, 1.0)
    k, _, s, umax, pole = converge_compacting([zero, one, one, zero, zero], [a, b, c, x], active, step, _MAX_STEPS,
                                              levels=_SERIES_LEVELS, narrowest=_SERIES_NARROWEST)
    loss = _add(divide(hlo.multiply(_c(s, _MACHEP), umax), hlo.abs(s)), hlo.multiply(_c(k, _MACHEP), k))
    # Cephes stops at 10,000 terms and calls the result lost; a term at c + k = 0 is a pole.
    lost = _or(_gt(pole, 0.0), _ge(k, _MAX_STEPS))
    return select(_gt(pole, 0.0), _c(s, np.inf), s), select(lost, _c(s, 1.0), loss)


def _hys2f1(a, b, c, x, active, depth=2):
    """Cephes' `hys2f1`: the series with |a| >= |b| (unless b is the smaller negative
    integer), through the recurrence in a where |a| >> |c| (AMS 15.2.10)."""
    swap = _gt(hlo.abs(b), hlo.abs(a))
    a, b = select(swap, b, a), select(swap, a, b)
    negative_b = _and(_near_integer(b), _le(_round(b), 0.0), _lt(hlo.abs(b), hlo.abs(a)))
    a, b = select(negative_b, b, a), select(negative_b, a, b)
    if depth == 0:
        return _series(a, b, c, x, active)
    big = _or(_gt(hlo.abs(a), hlo.add(hlo.abs(c), _c(c, 1.0))), negative_b)
    recur = _and(active, big, _gt(hlo.abs(hlo.subtract(c, a)), 2.0), _gt(hlo.abs(a), 2.0))
    # Step from t = a - da without crossing c or zero.
    towards_c = _or(_and(_lt(c, 0.0), _le(a, c)), _and(_ge(c, 0.0), _ge(a, c)))
    da = select(towards_c, _round(hlo.subtract(a, c)), _round(a))
    da = select(recur, da, _c(a, 1.0))
    t = hlo.subtract(a, da)
    direction = hlo.sign(da)
    # Both starting values in one evaluation, stacked.
    values, losses = _hys2f1(stack([select(recur, t, a), hlo.add(t, direction)]), stack([b, b]),
                             stack([c, c]), stack([x, x]), stack([active, recur]), depth - 1)
    (f1, f0), (loss1, loss0) = unstack(values, 2), unstack(losses, 2)
    steps = hlo.abs(da)
    one = _c(a, 1.0)

    def step(params, state):
        b, c, x, direction, steps = params
        one = _c(b, 1.0)
        n, t, f1, f0 = state
        common = _add(hlo.multiply(_c(t, 2.0), t), hlo.negate(c), hlo.negate(hlo.multiply(t, x)), hlo.multiply(b, x))
        down = hlo.subtract(
            hlo.negate(hlo.multiply(divide(common, hlo.subtract(c, t)), f0)),
            hlo.multiply(divide(hlo.multiply(t, hlo.subtract(x, one)), hlo.subtract(c, t)), f1),
        )
        up = hlo.negate(divide(
            hlo.add(hlo.multiply(common, f0), hlo.multiply(hlo.subtract(c, t), f1)),
            hlo.multiply(t, hlo.subtract(x, one)),
        ))
        f2 = select(_lt(direction, 0.0), down, up)
        n = hlo.add(n, one)
        return [n, hlo.add(t, direction), f0, f2], _ge(n, steps)

    init = [one, hlo.add(t, direction), f1, f0]
    _, _, _, value = converge_compacting(init, [b, c, x, direction, steps], _and(recur, _gt(steps, 1.0)), step,
                                         _MAX_STEPS)
    value = select(recur, value, f1)
    value = select(_and(recur, _gt(steps, float(_MAX_STEPS))), _c(a, np.nan), value)
    return value, select(recur, hlo.add(loss1, loss0), loss1)


# --- transformations near x = +-1 ---------------------------------------------------------


def _psi_expansion(a, b, c, x, active):
    """2F1 for x near 1 where d = c - a - b is an integer (AMS 15.3.10-12)."""
    one = _c(a, 1.0)
    s = hlo.subtract(one, x)
    d = _round(hlo.subtract(c, hlo.add(a, b)))
    positive = _ge(d, 0.0)
    e = hlo.abs(d)
    d1 = select(positive, d, _c(d, 0.0))
    d2 = select(positive, _c(d, 0.0), d)
    log_s = hlo.log(s)
    # psi(1 + t), psi(1 + t + e), psi(a + t + d1), psi(b + t + d1): from t = 0 by
    # psi(z + 1) = psi(z) + 1/z, one digamma evaluation for the four.
    args = [one, hlo.add(one, e), hlo.add(a, d1), hlo.add(b, d1)]
    psis = batched(_digamma, *args)
    g_e, g_c, g_e1, g_e2, rg_a1, rg_b1, rg_a2, rg_b2, rg_a, rg_b = _gamma_and_reciprocal(
        [e, c], [hlo.add(e, one), hlo.add(e, _c(e, 2.0)), hlo.add(a, d1), hlo.add(b, d1), hlo.add(a, d2),
                 hlo.add(b, d2), a, b])
    y = hlo.subtract(hlo.subtract(hlo.add(psis[0], psis[1]), hlo.add(psis[2], psis[3])), log_s)
    y = hlo.multiply(y, g_e1)
    p = _mul(hlo.add(a, d1), hlo.add(b, d1), s, g_e2)
    psis = [hlo.add(p_, divide(one, z)) for p_, z in zip(psis, args)]
    args = [hlo.add(z, one) for z in args]

    def step(state):
        t, p, y, *rest = state
        psis, args = rest[:4], rest[4:]
        r = hlo.subtract(hlo.subtract(hlo.add(psis[0], psis[1]), hlo.add(psis[2], psis[3])), log_s)
        q = hlo.multiply(p, r)
        y = hlo.add(y, q)
        t1 = hlo.add(t, one)
        p = divide(_mul(p, s, _add(a, t, d1)), t1)
        p = divide(hlo.multiply(p, _add(b, t, d1)), hlo.add(t1, e))
        done = _and(compare(y, _c(y, 0.0), "NE"), _le(hlo.abs(divide(q, y)), _EPS))
        psis = [hlo.add(p_, divide(one, z)) for p_, z in zip(psis, args)]
        return [t1, p, y, *psis, *[hlo.add(z, one) for z in args]], done

    _, _, y, *_ = converge([one, p, y, *psis, *args], active, step, _MAX_STEPS)

    def finite(state):
        i, t, p, y1 = state
        p = divide(_mul(p, s, _add(a, t, d2), _add(b, t, d2)), _add(one, hlo.negate(e), t))
        t = hlo.add(t, one)
        p = divide(p, t)
        i = hlo.add(i, one)
        return [i, t, p, hlo.add(y1, p)], _ge(i, e)

    _, _, _, y1 = converge([one, _c(a, 0.0), one, one], _and(active, _gt(e, 1.0)), finite, _MAX_STEPS)
    at_zero = _mul(y, g_c, rg_a, rg_b)
    y1 = _mul(y1, g_e, g_c, rg_a1, rg_b1)
    y = _mul(y, g_c, rg_a2, rg_b2)
    y = select(_odd(e), hlo.negate(y), y)
    power = _pow(s, d)
    y, y1 = select(_gt(d, 0.0), hlo.multiply(y, power), y), select(_gt(d, 0.0), y1, hlo.multiply(y1, power))
    return select(_eq(d, 0.0), at_zero, hlo.add(y, y1))


def _hyt2f1(a, b, c, x, active, direct):
    """Cephes' `hyt2f1` (value, loss); where `direct`, Cephes' AMS 15.3.3 branch
    instead: (1 - x)**(c - a - b) 2F1(c - a, c - b; c; x) by the series."""
    one = _c(a, 1.0)
    s = hlo.subtract(one, x)
    polynomial = _or(_nonpositive_integer(a), _nonpositive_integer(b))
    d = hlo.subtract(c, hlo.add(a, b))
    pfaff = _and(_not(direct), _lt(x, -0.5), _not(polynomial))
    near_one = _and(_not(direct), _gt(x, 0.9), _not(polynomial))
    integer_d = _not(_gt(hlo.abs(hlo.subtract(d, _round(d))), _MACHEP))
    # Pfaff: (1 - x)**-a 2F1(a, c - b; c; x / (x - 1)), or the same with a, b swapped.
    b_first = _gt(b, a)
    pa = select(pfaff, select(b_first, a, hlo.subtract(c, a)), select(direct, hlo.subtract(c, a), a))
    pb = select(pfaff, select(b_first, hlo.subtract(c, b), b), select(direct, hlo.subtract(c, b), b))
    px = select(pfaff, divide(hlo.negate(x), s), x)
    # Near 1, where the series loses digits, AMS 15.3.6 in 1 - x: its two series are
    # evaluated with the series itself (stacked), and used where its loss is large.
    candidates = _and(active, near_one, _not(integer_d))
    values, losses = _hys2f1(
        stack([pa, a, hlo.subtract(c, a)]), stack([pb, b, hlo.subtract(c, b)]),
        stack([c, hlo.subtract(one, d), hlo.add(d, one)]), stack([px, s, s]),
        stack([_and(active, _not(_and(near_one, integer_d))), candidates, candidates]),
    )
    (series, q, r), (loss, q_loss, r_loss) = unstack(values, 3), unstack(losses, 3)
    factor = select(pfaff, _pow(s, hlo.negate(select(b_first, a, b))), one)
    factor = select(direct, _pow(s, d), factor)
    value = hlo.multiply(factor, series)
    transform = _and(candidates, _ge(loss, _ETHRESH))
    value, loss = where_few(transform, [a, b, c, s, q, r, q_loss, r_loss], lambda _, p: _transformed(*p),
                            [value, loss], compacts=False)
    psi = _and(active, near_one, integer_d)
    value = where_few(psi, [a, b, c, x], lambda on, p: [_psi_expansion(*p, on)], [value], compacts=False)[0]
    return value, select(psi, _c(loss, 0.0), loss)


def _transformed(a, b, c, s, q, r, q_loss, r_loss):
    """AMS 15.3.6 in s = 1 - x from its two series q = 2F1(a, b; 1 - d; s) and
    r = 2F1(c - a, c - b; d + 1; s), d = c - a - b: [value, loss]. (Seven gamma functions
    an element, where few elements need them.)"""
    d = hlo.subtract(c, hlo.add(a, b))
    # lgamma of c too, in the same batch: Gamma(c) below from it, not from a copy of its own
    *logs, (log_gamma_c, _) = _lgamma_signs(d, hlo.subtract(c, a), hlo.subtract(c, b), hlo.negate(d), a, b, c)
    (w, sign), *rest = logs
    for lg, sg in rest[:2]:
        w, sign = hlo.subtract(w, lg), hlo.multiply(sign, sg)
    q = _mul(q, sign, hlo.exponential(w))
    w, sign = rest[2]
    for lg, sg in rest[3:]:
        w, sign = hlo.subtract(w, lg), hlo.multiply(sign, sg)
    r = _mul(r, _pow(s, d), sign, hlo.exponential(w))
    y = hlo.add(q, r)
    y_loss = _add(q_loss, r_loss, divide(hlo.multiply(_c(y, _MACHEP), hlo.maximum(hlo.abs(q), hlo.abs(r))), y))
    return [hlo.multiply(y, gamma_from_log(c, log_gamma_c)), y_loss]


# --- Cephes' hyp2f1 ------------------------------------------------------------------------


def _closed_form(a, b, c, x):
    """Cephes' first answers: x = 0, a or b = 0, a = -1. (mask, value)"""
    nonzero_c = compare(c, _c(c, 0.0), "NE")
    one = _c(a, 1.0)
    linear = hlo.subtract(one, _mul(divide(b, c), x))
    linear = select(_lt(hlo.abs(linear), 1e-15), _c(a, 0.0), linear)
    trivial = _or(_eq(x, 0.0), _and(_or(_eq(a, 0.0), _eq(b, 0.0)), nonzero_c))
    minus_one = _and(_eq(a, -1.0), nonzero_c)
    return _or(trivial, minus_one), select(trivial, one, linear)


def _gauss(a, b, c, d):
    """Gauss's sum 2F1(a, b; c; 1) = Gamma(c) Gamma(d) / (Gamma(c - a) Gamma(c - b)), d = c - a - b."""
    return _mul(*_gamma_and_reciprocal([c, d], [hlo.subtract(c, a), hlo.subtract(c, b)]))


def _equal_b_c(a, b, x, active):
    """2F1(a, b; b; x) for a non-positive integer b: the finite sum (AMS 15.4.2)."""
    one = _c(a, 1.0)

    def step(state):
        k, term, total, largest = state
        term = divide(_mul(term, hlo.subtract(hlo.add(a, k), one), x), k)
        largest = hlo.maximum(largest, hlo.abs(term))
        return [hlo.add(k, one), term, hlo.add(total, term), largest], _ge(k, hlo.negate(b))

    active = _and(active, _ge(hlo.negate(b), 1.0), _lt(hlo.abs(b), 1e5))
    _, _, total, largest = converge([one, one, one, one], active, step, 100001)
    lost = _gt(hlo.multiply(_c(a, 1e-16), hlo.add(one, divide(largest, hlo.abs(total)))), 1e-7)
    return select(_or(lost, _not(_lt(hlo.abs(b), 1e5))), _c(a, np.nan), total)


def _core(a, b, c, x, active):
    """Cephes' hyp2f1 where it needs no transformation below x = -1 (|x| <= 1, or a
    terminating series)."""
    one = _c(a, 1.0)
    inf = _c(a, np.inf)
    s = hlo.subtract(one, x)
    first, first_value = _closed_form(a, b, c, x)
    d = hlo.subtract(c, hlo.add(a, b))
    polynomial = _or(_nonpositive_integer(a), _nonpositive_integer(b))
    # Euler: 2F1(a, b; c; x) = (1 - x)**d 2F1(c - a, c - b; c; x), for d <= -1.
    euler = _and(_le(d, -1.0), _not(_and(_not(_near_integer(d)), _lt(s, 0.0))), _not(polynomial))
    factor = select(euler, _pow(s, d), one)
    a, b = select(euler, hlo.subtract(c, a), a), select(euler, hlo.subtract(c, b), b)
    d = select(euler, hlo.negate(d), d)
    second, second_value = _closed_form(a, b, c, x)
    neg_a, neg_b = _nonpositive_integer(a), _nonpositive_integer(b)
    polynomial = _or(neg_a, neg_b)
    abs_x = hlo.abs(x)
    # Each answer below applies where none before it did (Cephes' order).
    answers = []
    answers.append((_and(_le(d, 0.0), _eq(x, 1.0), _not(polynomial)), inf))
    inside = _or(_lt(abs_x, 1.0), _eq(x, -1.0))
    equal_bc = _and(inside, _lt(hlo.abs(hlo.subtract(b, c)), _EPS))
    answers.append((equal_bc, select(neg_b, _equal_b_c(a, b, x, _and(active, equal_bc, neg_b)), _pow(s, hlo.negate(a)))))
    answers.append((_and(inside, _lt(hlo.abs(hlo.subtract(a, c)), _EPS)), _pow(s, hlo.negate(b))))
    c_pole = _and(_le(c, 0.0), _near_integer(c))
    ends_first = _or(_and(neg_a, _gt(_round(a), _round(c))), _and(neg_b, _gt(_round(b), _round(c))))
    answers.append((_and(c_pole, _not(ends_first)), inf))
    hypok = _and(c_pole, ends_first)
    hypok = _or(hypok, polynomial)
    answers.append((hypok, None))  # the series, below
    answers.append((_gt(abs_x, 1.0), inf))
    neg_ca_cb = _or(_nonpositive_integer(hlo.subtract(c, a)), _nonpositive_integer(hlo.subtract(c, b)))
    at_one = _lt(hlo.abs(hlo.subtract(abs_x, one)), _EPS)
    gauss_at = _and(at_one, _gt(x, 0.0))
    gauss = where_few(gauss_at, [a, b, c, d], lambda _, p: [_gauss(*p)], [_c(a, 0.0)], compacts=False)[0]
    answers.append((_and(at_one, _gt(x, 0.0), neg_ca_cb, _lt(d, 0.0)), inf))
    hypf = _and(at_one, _gt(x, 0.0), neg_ca_cb)
    answers.append((hypf, None))
    answers.append((_and(at_one, _gt(x, 0.0), _le(d, 0.0)), inf))
    answers.append((gauss_at, gauss))
    answers.append((_and(at_one, _lt(x, 0.0), _le(d, -1.0)), inf))
    recurrence_on_c = _lt(d, 0.0)
    answers.append((recurrence_on_c, None))
    answers.append((neg_ca_cb, None))

    # Which answer each element takes: the first that applies; None marks a series.
    taken = _or(first, second)
    picks = []
    for mask, value in answers:
        picks.append((_and(mask, _not(taken)), value))
        taken = _or(taken, mask)
    rest = _not(taken)  # Cephes' final hypok
    series = _or(rest, *[m for m, v in picks if v is None])
    direct = _or(picks[7][0], picks[12][0])
    use_recurrence = picks[11][0]

    # Three hyt2f1 evaluations in one: the answer, and 2F1(a, b; e; x), 2F1(a, b; e + 1; x)
    # that start the recurrence on c where the first loses digits (AMS 15.2.27).
    aid = hlo.subtract(_c(d, 2.0), _round(d))
    e = hlo.add(c, aid)
    ce = [c, e, hlo.add(e, one)]
    directs = [direct] + [_or(_nonpositive_integer(hlo.subtract(v, a)), _nonpositive_integer(hlo.subtract(v, b))) for v in ce[1:]]
    actives = [_and(active, series), _and(active, use_recurrence), _and(active, use_recurrence)]
    stacked = [stack([v] * 3) for v in (a, b, x)]
    values, losses = _hyt2f1(stacked[0], stacked[1], stack(ce), stacked[2], stack(actives), stack(directs))
    y, e_value, e1_value = unstack(values, 3)
    y_loss = unstack(losses, 3)[0]
    q = _add(a, b, one)
    d2, d1 = e_value, e1_value
    recurred = d2
    for i in range(3):
        r = hlo.subtract(e, one)
        next_value = divide(
            hlo.add(_mul(e, hlo.subtract(r, _mul(hlo.subtract(hlo.multiply(_c(e, 2.0), e), q), x)), d2),
                    _mul(hlo.subtract(e, a), hlo.subtract(e, b), x, d1)),
            _mul(e, r, s),
        )
        take = _lt(_c(aid, float(i)), aid)
        recurred = select(take, next_value, recurred)
        e, d1, d2 = select(take, r, e), select(take, d2, d1), select(take, next_value, d2)
    y = select(_and(use_recurrence, _ge(y_loss, _ETHRESH)), recurred, y)

    value = y
    for mask, answer in reversed(picks):
        if answer is not None:
            value = select(mask, answer, value)
    value = hlo.multiply(factor, select(second, second_value, value))
    return select(first, first_value, value)


def _hyp2f1(a, b, c, x):
    one = _c(a, 1.0)
    s = hlo.subtract(one, x)
    nan = _or(*(compare(v, v, "NE") for v in (a, b, c, x)))
    active = _not(_or(nan, *(is_inf(v) for v in (a, b, c))))
    # Below x = -1, after Euler's transformation (for d <= -1) as Cephes applies it first.
    d = hlo.subtract(c, hlo.add(a, b))
    first, _ = _closed_form(a, b, c, x)
    euler = _and(_le(d, -1.0), _not(_or(_nonpositive_integer(a), _nonpositive_integer(b))))
    factor = select(euler, _pow(s, d), one)
    ea, eb = select(euler, hlo.subtract(c, a), a), select(euler, hlo.subtract(c, b), b)
    second, _ = _closed_form(ea, eb, c, x)
    polynomial = _or(_nonpositive_integer(ea), _nonpositive_integer(eb))
    c_pole = _and(_le(c, 0.0), _near_integer(c))
    below = _and(active, _lt(x, -1.0), _not(_or(first, second, polynomial, c_pole)))
    # x < -2 (b - a not an integer): AMS 15.3.7, two terms in 1/x.
    gap = hlo.abs(hlo.subtract(eb, ea))
    inverse = _and(below, _lt(x, -2.0), _gt(hlo.abs(hlo.subtract(gap, _round(gap))), _EPS))
    pfaff = _and(below, _not(inverse))
    b_first = _lt(hlo.abs(ea), hlo.abs(eb))
    pa, pb = select(b_first, ea, eb), select(b_first, eb, ea)
    w = divide(x, hlo.subtract(x, one))
    u = divide(one, x)
    one_minus_c = hlo.subtract(one, c)
    call_a = select(inverse, ea, select(pfaff, pa, a))
    call_b = select(inverse, hlo.add(one_minus_c, ea), select(pfaff, hlo.subtract(c, pb), b))
    call_c = select(inverse, hlo.subtract(hlo.add(one, ea), eb), c)
    call_x = select(inverse, u, select(pfaff, w, x))
    args = [
        stack([call_a, eb]), stack([call_b, hlo.add(one_minus_c, eb)]),
        stack([call_c, hlo.subtract(hlo.add(one, eb), ea)]), stack([call_x, u]),
    ]
    first_call, second_call = unstack(_core(*args, stack([active, inverse])), 2)
    gamma_c, g_ba, g_ab, rg_b, rg_ca, rg_a, rg_cb = _gamma_and_reciprocal(
        [c, hlo.subtract(eb, ea), hlo.subtract(ea, eb)], [eb, hlo.subtract(c, ea), ea, hlo.subtract(c, eb)])
    minus_x = hlo.negate(x)
    term_a = _mul(gamma_c, g_ba, rg_b, rg_ca, _pow(minus_x, hlo.negate(ea)), first_call)
    term_b = _mul(gamma_c, g_ab, rg_a, rg_cb, _pow(minus_x, hlo.negate(eb)), second_call)
    value = select(inverse, hlo.add(term_a, term_b), first_call)
    value = select(pfaff, _mul(_pow(s, hlo.negate(pa)), first_call), value)
    value = select(below, hlo.multiply(factor, value), value)
    # scipy: an infinite a or b gives NaN (but 1 at x = 0).
    nan = _or(nan, _and(_or(is_inf(a), is_inf(b)), compare(x, _c(x, 0.0), "NE")))
    return select(nan, _c(a, np.nan), value)


@register_lowering(psm.Hyp2F1)
def lower_hyp2f1(ctx, node, a, b, c, x):
    value = _hyp2f1(*(convert(v, "float64") for v in (a, b, c, x)))
    return convert(value, node.outputs[0].type.dtype)
