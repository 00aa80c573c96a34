"""Discrete RandomVariables: Bernoulli, binomial, beta-binomial, negative binomial,
Poisson, geometric, hypergeometric, categorical, multinomial and integers.

Every sampler is exact (no truncated series, no normal approximations) and works on
whole tensors: a loop runs until its slowest element is done, so each algorithm is
chosen for a loop length that does not grow with the parameters (numpy's choices where
they have that property: transformed rejection for large means, short searches for
small ones). Counts are computed in float64 and int64, as numpy does, whatever the
output dtype; the shared rule casts the int64 draws to it (`dtype="int8"` wraps, as
PyTensor's `np.asarray(draws, dtype)` does).

Parameter errors are numpy's (and scipy's, for the Ops PyTensor samples with scipy), in
numpy's order and wording: numpy words some errors differently when every parameter is
0-d ("p is NaN" against "p contains NaNs"), and refuses float counts with a TypeError.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from jax.extend.mlir import ir
from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.tensor.random import basic as rv

from dialect_rules.random import (
    beta_log_odds,
    bits,
    evolve,
    register_sampler,
    rejection,
    require,
    scipy_domain_error,
    split,
    standard_gamma,
    uniform,
    uniform_draws,
    written_uniforms,
)
from lowering.builders import (
    add_all,
    all_of,
    any_of,
    broadcast_in_dim,
    compare,
    convert,
    dim_size,
    dim_value,
    divide,
    dynamic_index,
    full,
    full_like,
    iota,
    ir_constant,
    is_inf,
    is_nan,
    polynomial_log,
    polynomial_log1p,
    remainder,
    reshape,
    select,
    shape_of,
    slice_axis,
    value_dtype,
    with_dtype,
)
from lowering.regions import any_true, cumulative, fold, while_loop
from lowering.types import static_shape

F64 = "float64"
I64 = "int64"
U64 = "uint64"

# numpy's largest Poisson mean: a draw stays below 2**63 - 1.
POISSON_LAM_MAX = float(np.iinfo(np.int64).max - np.sqrt(np.iinfo(np.int64).max) * 10)
HYPERGEOMETRIC_MAX = 10**9
_SCIPY_DOMAIN = (
    "Domain error in arguments. The `scale` parameter must be positive for all distributions, "
    "and many distributions have restrictions on shape parameters. Please see the "
    "`scipy.stats.{}` documentation for details."
)


def _c(x: ir.Value, value) -> ir.Value:
    """A constant shaped like `x`."""
    return full_like(x, value)


def _lt(a, b):
    return compare(a, b, "LT")


def _le(a, b):
    return compare(a, b, "LE")


def _not(x):
    return hlo.not_(x)


# --- log-factorials ----------------------------------------------------------------------

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
# The Stirling tail below 10, where its series has not converged.
_STIRLING_TAIL = [
    math.lgamma(k + 1) - ((k + 0.5) * math.log(k + 1) - (k + 1) + _HALF_LOG_2PI) for k in range(10)
]


def _stirling_tail(k: ir.Value) -> ir.Value:
    """log(k!) - [(k + 1/2) log(k + 1) - (k + 1) + log(2 pi)/2] for integral float k >= 0:
    a table below 10, the series 1/12 - 1/360 + 1/1260 (in powers of 1/(k+1)) above."""
    k1 = hlo.add(k, _c(k, 1.0))
    inv2 = divide(_c(k, 1.0), hlo.multiply(k1, k1))
    series = divide(
        hlo.subtract(_c(k, 1 / 12), hlo.multiply(hlo.subtract(_c(k, 1 / 360), hlo.multiply(_c(k, 1 / 1260), inv2)), inv2)),
        k1,
    )
    for i, value in enumerate(_STIRLING_TAIL):
        series = select(compare(k, _c(k, float(i)), "EQ"), _c(k, value), series)
    return series


def _log_factorial(k: ir.Value) -> ir.Value:
    """log(k!) for integral float64 k >= 0 by Stirling's series with its exact tail below
    10: relative error near 1e-16 at every size (no Lanczos sum to lose digits)."""
    k1 = hlo.add(k, _c(k, 1.0))
    main = hlo.subtract(hlo.multiply(hlo.add(k, _c(k, 0.5)), polynomial_log(k1)), hlo.subtract(k1, _c(k, _HALF_LOG_2PI)))
    return hlo.add(main, _stirling_tail(k))


# --- sequential search of a CDF ------------------------------------------------------------


def _inversion(key, first: ir.Value, ratio, ratio_params, bound: ir.Value, pending: ir.Value) -> ir.Value:
    """Inversion by sequential search on whole tensors (float64 counts): for a uniform u,
    the first x with u < p(0) + ... + p(x), where p(x) = p(x - 1) ratio(ratio_params, x)
    (`ratio_params` of the counts' shape). One uniform per draw and a multiply-add per
    step: the loop runs to the largest count drawn, so the callers keep it for small
    means; past the first steps it runs over the few elements still searching
    (`evolve`). A search that walks past `bound` (rounding left u above all the summed
    mass) starts again with a new u, as numpy's binomial inversion does; elements not
    `pending` give 0."""
    dims = shape_of(first)

    def propose(params, u):
        first, *search_params = params

        def searching(params, state):
            bound, pending = params[:2]
            x, px, u = state
            return all_of(pending, _le(x, bound), compare(u, px, "GT"))

        def step(params, state):
            x, px, u = state
            x1 = hlo.add(x, _c(x, 1.0))
            return [x1, hlo.multiply(px, ratio(params[2:], x1)), hlo.subtract(u, px)]

        x = evolve([full(0.0, shape_of(u), F64), first, u], search_params, searching, step)[0]
        return x, _le(x, search_params[0])

    # A search restarts only past `bound` (10 or 20 sd from the mean, or all the mass as
    # rounded): compacting the restarts would compile copies of the search that never run.
    params = [first, bound, pending, *ratio_params]
    return rejection(key, dims, F64, uniform_draws(F64, 1), propose, params, pending, compacts=False)


# --- Poisson --------------------------------------------------------------------------------


def poisson(key: ir.Value, lam: ir.Value) -> ir.Value:
    """Poisson(lam) counts (int64) for a float64 `lam`: inversion below 10 (at most a few
    dozen steps), Hörmann's PTRS (1993) from 10 up (1.2 proposals per draw or fewer, at
    any lam), numpy's split. numpy's small-lam method, Knuth's multiplication, needs a uniform
    per step where inversion needs one per draw: on whole tensors that is a Threefry pass
    over every element at each of those dozens of steps. lam = 0 gives 0; invalid lam (NaN,
    negative, above POISSON_LAM_MAX, refused by the callers' checks) gives 0, loop-free."""
    small = all_of(compare(lam, _c(lam, 0.0), "GE"), _lt(lam, _c(lam, 10.0)))
    large = all_of(compare(lam, _c(lam, 10.0), "GE"), _le(lam, _c(lam, POISSON_LAM_MAX)))
    small_key, large_key = split(key, 2)
    # The tail past lam + 20 sd is below 1e-30 for lam < 10: restarts there cost nothing.
    bound = hlo.add(lam, hlo.multiply(_c(lam, 20.0), hlo.sqrt(hlo.add(lam, _c(lam, 1.0)))))
    few = _inversion(small_key, hlo.exponential(hlo.negate(lam)), lambda params, x: divide(params[0], x), [lam], bound, small)
    many = _poisson_ptrs(large_key, lam, large)
    return convert(select(large, many, few), I64)


def _poisson_ptrs(key, lam, pending):
    """Hörmann (1993), "The transformed rejection method for generating Poisson random
    variables", algorithm PTRS, as numpy writes it. The round's logs (and the
    log-factorial's) are `polynomial_log`'s, where XLA's are a libm call an element: 10^6
    Poissons (20) took 28.7 ms a call with XLA's, 26.1 with these, 20,000 sized by
    `pm.Data` 743 and 626 µs (in-process A/B, best of 5 medians)."""
    dims = shape_of(lam)
    slam, loglam = hlo.sqrt(lam), hlo.log(lam)
    b = hlo.add(_c(lam, 0.931), hlo.multiply(_c(lam, 2.53), slam))
    a = hlo.add(_c(lam, -0.059), hlo.multiply(_c(lam, 0.02483), b))
    inv_alpha = hlo.add(_c(lam, 1.1239), divide(_c(lam, 1.1328), hlo.subtract(b, _c(lam, 3.4))))
    vr = hlo.subtract(_c(lam, 0.9277), divide(_c(lam, 3.6224), hlo.subtract(b, _c(lam, 2.0))))
    log_inv_alpha = hlo.log(inv_alpha)

    def propose(params, u, v):
        lam, loglam, a, b, vr, log_inv_alpha = params
        u = hlo.subtract(u, _c(lam, 0.5))
        us = hlo.subtract(_c(lam, 0.5), hlo.abs(u))
        spread = hlo.add(divide(hlo.multiply(_c(lam, 2.0), a), us), b)
        k = hlo.floor(hlo.add(hlo.multiply(spread, u), hlo.add(lam, _c(lam, 0.43))))
        quick = all_of(compare(us, _c(us, 0.07), "GE"), _le(v, vr))
        squeezed_out = any_of(_lt(k, _c(k, 0.0)), all_of(_lt(us, _c(us, 0.013)), compare(v, us, "GT")))
        lhs = hlo.add(polynomial_log(v), hlo.subtract(log_inv_alpha, polynomial_log(hlo.add(divide(a, hlo.multiply(us, us)), b))))
        rhs = hlo.subtract(hlo.subtract(hlo.multiply(k, loglam), lam), _log_factorial(hlo.maximum(k, _c(k, 0.0))))
        return k, any_of(quick, all_of(_not(squeezed_out), _le(lhs, rhs)))

    params = [lam, loglam, a, b, vr, log_inv_alpha]
    return rejection(key, dims, F64, uniform_draws(F64, 2), propose, params, pending)


# --- binomial -------------------------------------------------------------------------------


def binomial(key: ir.Value, n: ir.Value, p: ir.Value, q: ir.Value) -> ir.Value:
    """Binomial(n, p) counts (int64) for int64 `n` and float64 `p` with `q` = 1 - p given
    separately (a beta-binomial's p near 1 keeps its digits in q). By symmetry the draw is
    made with the smaller of p, q: inversion (`_inversion`) while n*min(p, q) < 10 (at most
    a few dozen search steps), else Hörmann's BTRS (1993): 1.4 proposals per draw or
    fewer, at any n. numpy's split is at 30 and its method above, BTPE, has more branches
    for the same bounded loop. n <= 0, p = 0 and NaN p give 0 (p = 1 gives n)."""
    flip = compare(p, q, "GT")
    small, large = select(flip, q, p), select(flip, p, q)
    nf = convert(n, F64)
    valid = all_of(compare(n, _c(n, 0), "GT"), compare(small, _c(small, 0.0), "GT"))
    mean = hlo.multiply(nf, small)
    inversion = all_of(valid, _lt(mean, _c(mean, 10.0)))
    btrs = all_of(valid, compare(mean, _c(mean, 10.0), "GE"))
    inversion_key, btrs_key = split(key, 2)
    # numpy's inversion: the search restarts past n p + 10 sd.
    bound = hlo.minimum(nf, hlo.add(mean, hlo.multiply(_c(nf, 10.0), hlo.sqrt(hlo.add(hlo.multiply(mean, large), _c(nf, 1.0))))))
    first = hlo.exponential(hlo.multiply(nf, hlo.log_plus_one(hlo.negate(small))))
    odds = divide(small, large)

    def ratio(params, x):  # p(x) / p(x - 1)
        nf, odds = params
        return hlo.multiply(divide(hlo.add(hlo.subtract(nf, x), _c(x, 1.0)), x), odds)

    k = select(
        btrs,
        _binomial_btrs(btrs_key, nf, small, large, btrs),
        _inversion(inversion_key, first, ratio, [nf, odds], bound, inversion),
    )
    k = convert(k, I64)
    return select(flip, hlo.subtract(n, k), k)


def _binomial_btrs(key, n, p, q, pending):
    """Hörmann (1993), "The generation of binomial random variates", algorithm BTRS. The
    acceptance test log f(k)/f(m) is written with log1p of (k - m)/(m + 1) and
    (k - m)/(n - m + 1) and Stirling tails, so it keeps about 1e-7 absolute accuracy up to
    n = 2**63 where the plain difference of log-factorials would lose every digit.

    Those logs are `polynomial_log1p`'s and `polynomial_log`'s rather than XLA's libm
    calls: binomials (100, 0.3) took 4.23 → 3.40 ms a call at 10^5, 41.5 → 31.4 at 10^6,
    but 345 → 358 µs at 4,000, where a row's round is one function of the elemental
    emitter (in-process A/B, best of 5 medians)."""
    dims = shape_of(p)
    spq = hlo.sqrt(hlo.multiply(n, hlo.multiply(p, q)))
    b = hlo.add(_c(n, 1.15), hlo.multiply(_c(n, 2.53), spq))
    a = hlo.add(hlo.add(_c(n, -0.0873), hlo.multiply(_c(n, 0.0248), b)), hlo.multiply(_c(n, 0.01), p))
    c = hlo.add(hlo.multiply(n, p), _c(n, 0.5))
    vr = hlo.subtract(_c(n, 0.92), divide(_c(n, 4.2), b))
    alpha = hlo.multiply(hlo.add(_c(n, 2.83), divide(_c(n, 5.1), b)), spq)
    m = hlo.floor(hlo.multiply(hlo.add(n, _c(n, 1.0)), p))
    m1, rest1 = hlo.add(m, _c(m, 1.0)), hlo.add(hlo.subtract(n, m), _c(m, 1.0))
    slope = hlo.log(divide(hlo.multiply(rest1, p), hlo.multiply(m1, q)))
    tails_at_mode = hlo.add(_stirling_tail(m), _stirling_tail(hlo.subtract(n, m)))

    def propose(params, u, v):
        n, a, b, c, vr, alpha, m, m1, rest1, slope, tails_at_mode = params
        u = hlo.subtract(u, _c(n, 0.5))
        us = hlo.subtract(_c(n, 0.5), hlo.abs(u))
        k = hlo.floor(hlo.add(hlo.multiply(hlo.add(divide(hlo.multiply(_c(n, 2.0), a), us), b), u), c))
        in_range = all_of(compare(k, _c(k, 0.0), "GE"), _le(k, n))
        quick = all_of(compare(us, _c(us, 0.07), "GE"), _le(v, vr))
        k = hlo.minimum(hlo.maximum(k, _c(k, 0.0)), n)  # keeps the logs below finite
        d = hlo.subtract(k, m)
        half = _c(k, 0.5)
        log_ratio = add_all(
            hlo.multiply(d, slope),
            hlo.negate(hlo.multiply(hlo.add(k, half), polynomial_log1p(divide(d, m1)))),
            hlo.negate(hlo.multiply(hlo.add(hlo.subtract(n, k), half), polynomial_log1p(hlo.negate(divide(d, rest1))))),
            tails_at_mode,
            hlo.negate(hlo.add(_stirling_tail(k), _stirling_tail(hlo.subtract(n, k)))),
        )
        log_v = polynomial_log(divide(hlo.multiply(v, alpha), hlo.add(divide(a, hlo.multiply(us, us)), b)))
        return k, all_of(in_range, any_of(quick, _le(log_v, log_ratio)))

    params = [n, a, b, c, vr, alpha, m, m1, rest1, slope, tails_at_mode]
    return rejection(key, dims, F64, uniform_draws(F64, 2), propose, params, pending)


# --- hypergeometric -------------------------------------------------------------------------


def _hypergeometric_urn(key, good, bad, sample, pending):
    """numpy's sequential urn for fewer than 10 draws (of the sample or of its complement):
    each step takes a good item with probability remaining good / remaining total (a
    53-bit uniform compared with that ratio: within 2**-53 of exact)."""
    dims = shape_of(good)
    total = hlo.add(good, bad)
    flip = compare(sample, divide(total, _c(total, 2)), "GT")
    steps = select(pending, select(flip, hlo.subtract(total, sample), sample), _c(sample, 0))

    def drawing(steps, left, left_good):
        zero = _c(steps, 0)
        return all_of(compare(steps, zero, "GT"), compare(left_good, zero, "GT"), compare(left, left_good, "GT"))

    def body(values):
        key, steps, left, left_good = values
        key, draw = split(key, 2)
        active = drawing(steps, left, left_good)
        took_good = _lt(hlo.multiply(uniform(draw, dims, F64), convert(left, F64)), convert(left_good, F64))
        one = _c(steps, 1)
        left_good = select(all_of(active, took_good), hlo.subtract(left_good, one), left_good)
        left = select(active, hlo.subtract(left, one), left)
        steps = select(active, hlo.subtract(steps, one), steps)
        return [key, steps, left, left_good]

    _, steps, left, left_good = while_loop([key, steps, total, good], lambda v: any_true(drawing(*v[1:])), body)
    # Only good items left: the remaining steps all take one.
    left_good = select(compare(left, left_good, "EQ"), hlo.subtract(left_good, steps), left_good)
    return select(flip, left_good, hlo.subtract(good, left_good))


_D1, _D2 = 1.7155277699214135, 0.8989161620588988


def _hypergeometric_hrua(key, good, bad, sample, pending):
    """Stadlober's (1989) ratio-of-uniforms algorithm HRUA, as numpy writes it."""
    dims = shape_of(good)
    total = hlo.add(good, bad)
    count = hlo.minimum(sample, hlo.subtract(total, sample))
    fewer, more = hlo.minimum(good, bad), hlo.maximum(good, bad)
    # Stadlober's names: population N, sample n, the rarer kind M, the other L.
    N, n, M, L = (convert(x, F64) for x in (total, count, fewer, more))
    p, q = divide(M, N), divide(L, N)
    one = _c(N, 1.0)
    a = hlo.add(hlo.multiply(n, p), _c(N, 0.5))
    var = divide(hlo.multiply(hlo.multiply(hlo.subtract(N, n), n), hlo.multiply(p, q)), hlo.subtract(N, one))
    c = hlo.sqrt(hlo.add(var, _c(N, 0.5)))
    h = hlo.add(hlo.multiply(_c(N, _D1), c), _c(N, _D2))
    m = hlo.floor(divide(hlo.multiply(hlo.add(n, one), hlo.add(M, one)), hlo.add(N, _c(N, 2.0))))

    def log_weight(M, n, L, k):
        return add_all(
            _log_factorial(k), _log_factorial(hlo.subtract(M, k)),
            _log_factorial(hlo.subtract(n, k)), _log_factorial(hlo.add(hlo.subtract(L, n), k)),
        )

    g = log_weight(M, n, L, m)
    upper = hlo.minimum(hlo.add(hlo.minimum(n, M), one), hlo.floor(hlo.add(a, hlo.multiply(_c(N, 16.0), c))))

    def propose(params, u, v):
        M, n, L, a, h, g, upper = params
        x = hlo.add(a, divide(hlo.multiply(h, hlo.subtract(v, _c(v, 0.5))), u))
        inside = all_of(compare(x, _c(x, 0.0), "GE"), _lt(x, upper))
        k = hlo.floor(select(inside, x, _c(x, 0.0)))
        t = hlo.subtract(g, log_weight(M, n, L, k))
        quick = _le(hlo.subtract(hlo.multiply(u, hlo.subtract(_c(u, 4.0), u)), _c(u, 3.0)), t)
        squeezed_out = compare(hlo.multiply(u, hlo.subtract(u, t)), _c(u, 1.0), "GE")
        slow = all_of(_not(squeezed_out), _le(hlo.multiply(_c(u, 2.0), polynomial_log(u)), t))
        return k, all_of(inside, any_of(quick, slow))

    params = [M, n, L, a, h, g, upper]
    k = convert(rejection(key, dims, F64, uniform_draws(F64, 2), propose, params, pending), I64)
    k = select(compare(good, bad, "GT"), hlo.subtract(count, k), k)
    return select(_lt(count, sample), hlo.subtract(good, k), k)


# --- bounded integers --------------------------------------------------------------------------


def _multiply_wide(x: ir.Value, y: ir.Value) -> tuple[ir.Value, ir.Value]:
    """The 128-bit product of two ui64 tensors as (high, low) words, from 32-bit halves."""
    mask, shift = _c(x, 0xFFFFFFFF), _c(x, 32)
    x0, x1 = hlo.and_(x, mask), hlo.shift_right_logical(x, shift)
    y0, y1 = hlo.and_(y, mask), hlo.shift_right_logical(y, shift)
    low_low = hlo.multiply(x0, y0)
    middle = add_all(hlo.shift_right_logical(low_low, shift), hlo.and_(hlo.multiply(x1, y0), mask), hlo.multiply(x0, y1))
    high = add_all(hlo.multiply(x1, y1), hlo.shift_right_logical(hlo.multiply(x1, y0), shift), hlo.shift_right_logical(middle, shift))
    low = hlo.or_(hlo.shift_left(middle, shift), hlo.and_(low_low, mask))
    return high, low


def bounded_integers(key: ir.Value, low: ir.Value, high: ir.Value) -> ir.Value:
    """Uniform int64 on [low, high) with no bias, by Lemire's (2019) multiply-and-reject
    on 64-bit words: the high word of x * (high - low) for a uniform ui64 x, rejected
    only when the low word falls below 2**64 mod (high - low), which happens with
    probability below (high - low)/2**64 and below 1/2. Every range of int64 works,
    [-2**63, 2**63 - 1) included. Where low >= high: low."""
    dims = shape_of(low)
    span = hlo.bitcast_convert(with_dtype(low.type, U64), hlo.subtract(high, low))
    valid = _lt(low, high)
    span = select(valid, span, _c(span, 1))
    threshold = remainder(hlo.subtract(_c(span, 0), span), span)  # 2**64 mod span

    def propose(params, word):
        low, span, threshold = params
        offset, low_word = _multiply_wide(word, span)
        return hlo.add(low, hlo.bitcast_convert(with_dtype(low.type, I64), offset)), compare(low_word, threshold, "GE")

    def draw(key, dims, offset=None):
        return [bits(key, dims, offset)]

    return rejection(key, dims, I64, draw, propose, [low, span, threshold], valid, low)


# --- searching cumulative sums along the core axis -----------------------------------------


def _count_partial_sums_below(p: ir.Value, u: ir.Value) -> ir.Value:
    """For each row of `p` (last axis), how many of its partial sums are below `u` (the
    row's batch element): numpy's searchsorted(cumsum(p), u)."""
    last = len(static_shape(p.type)) - 1
    cdf = cumulative(p, last, hlo.add, 0.0)
    below = _lt(cdf, broadcast_in_dim(u, shape_of(cdf), range(last)))
    return fold(convert(below, I64), [last], hlo.add, 0)


# --- the rules: numpy's checks, then the samplers ------------------------------------------------


def _sampler(*op_classes, checks=None, counts=(), checks_see_draws=False):
    """`register_sampler` whose checks first refuse counts (the parameters at positions
    `counts`) that numpy would not cast to int64 with the 'safe' rule: a float or
    uint64 one raises its TypeError at every call."""
    def all_checks(ctx, node, *params, **drawing):
        for i in counts:
            _count_type_check(ctx, node, node.inputs[2 + i].type, params[i])
        if checks is not None:
            checks(ctx, node, *(convert(p, I64) if i in counts else p for i, p in enumerate(params)), **drawing)

    return register_sampler(*op_classes, checks=all_checks, checks_see_draws=checks_see_draws)


def _count_type_check(ctx, node, t, count):
    if np.can_cast(t.dtype, np.int64, "safe"):
        return
    if isinstance(node.op, rv.MultinomialRV) and (t.ndim > 0 or node.inputs[3].type.ndim > 1):
        # PyTensor's perform hands numpy's multinomial one n at a time, a numpy scalar,
        # which it converts as int() does: truncated (the sampler's convert), and
        # refused only where int() would be.
        if t.dtype.startswith("uint"):  # (the checks get it as int64: past 2**63, negative)
            too_large = compare(count, full_like(count, 0), "LT")
        else:
            require(ctx, is_nan(count), "cannot convert float NaN to integer")
            require(ctx, is_inf(count), "cannot convert float infinity to integer", OverflowError)
            too_large = compare(hlo.abs(count), full_like(count, 2.0**63), "GE")
        require(ctx, too_large, "Python int too large to convert to C long", OverflowError)
        return
    what = "scalar" if t.ndim == 0 else "array data"
    message = f"Cannot cast {what} from dtype('{t.dtype}') to dtype('int64') according to the rule 'safe'"
    require(ctx, ir_constant(True), message, TypeError)


def _all_scalar(node) -> bool:
    return all(p.type.ndim == 0 for p in node.op.dist_params(node))


def _nan_words(node, name) -> str:
    return f"{name} is NaN" if _all_scalar(node) else f"{name} contains NaNs"


def _outside_unit(p):
    """p < 0, p > 1 or NaN."""
    return _not(all_of(compare(p, _c(p, 0.0), "GE"), _le(p, _c(p, 1.0))))


def _as_float(*xs):
    return [convert(x, F64) for x in xs]


def _bernoulli_checks(ctx, node, p):
    p = convert(p, F64)
    require(ctx, _outside_unit(p), _SCIPY_DOMAIN.format("bernoulli"))


@_sampler(rv.BernoulliRV, checks=_bernoulli_checks)
def _bernoulli(key, dims, p):
    """u < p: exact for the p numpy represents."""
    return convert(_lt(uniform(key, dims, F64), convert(p, F64)), I64)


def _poisson_checks(ctx, node, lam):
    lam = convert(lam, F64)
    too_large = _not(_le(lam, _c(lam, POISSON_LAM_MAX)))
    if _all_scalar(node):
        require(ctx, _not(compare(lam, _c(lam, 0.0), "GE")), "lam < 0 or lam is NaN")
        require(ctx, too_large, "lam value too large")
    else:
        require(ctx, too_large, "lam value too large")
        require(ctx, _lt(lam, _c(lam, 0.0)), "lam < 0 or lam contains NaNs")


@_sampler(rv.PoissonRV, checks=_poisson_checks)
def _poisson(key, dims, lam):
    return poisson(key, convert(lam, F64))


def _binomial_checks(ctx, node, n, p):
    p = convert(p, F64)
    require(ctx, _outside_unit(p), f"p < 0, p > 1 or {_nan_words(node, 'p')}")
    require(ctx, _lt(n, _c(n, 0)), "n < 0")


@_sampler(rv.BinomialRV, checks=_binomial_checks, counts=(0,))
def _binomial(key, dims, n, p):
    p = convert(p, F64)
    return binomial(key, convert(n, I64), p, hlo.subtract(_c(p, 1.0), p))


def _beta_binomial_checks(ctx, node, n, a, b):
    integral = compare(n, hlo.floor(n), "EQ") if value_dtype(n) == F64 else full_like(n, True, "bool")
    a, b = _as_float(a, b)
    domain = all_of(compare(n, _c(n, 0), "GE"), integral, compare(a, _c(a, 0.0), "GT"), compare(b, _c(b, 0.0), "GT"))
    require(ctx, _not(domain), _SCIPY_DOMAIN.format("betabinom"))
    # numpy's beta(inf, b) is inf/inf = NaN, which its binomial refuses.
    infinite = any_of(compare(a, _c(a, np.inf), "EQ"), compare(b, _c(b, np.inf), "EQ"))
    require(ctx, infinite, f"p < 0, p > 1 or {_nan_words(node, 'p')}")


@_sampler(rv.BetaBinomialRV, checks=_beta_binomial_checks)
def _beta_binomial(key, dims, n, a, b):
    """binomial(n, Beta(a, b)) as scipy draws it; the beta in log space (`beta_log_odds`)."""
    beta_key, binomial_key = split(key, 2)
    log_odds = beta_log_odds(beta_key, *_as_float(a, b))
    p, q = hlo.logistic(log_odds), hlo.logistic(hlo.negate(log_odds))
    return binomial(binomial_key, convert(n, I64), p, q)


def _negative_binomial_checks(ctx, node, n, p):
    n, p = _as_float(n, p)
    domain = all_of(compare(n, _c(n, 0.0), "GT"), compare(p, _c(p, 0.0), "GT"), _le(p, _c(p, 1.0)))
    require(ctx, _not(domain), _SCIPY_DOMAIN.format("nbinom"))
    # numpy bounds the Poisson mean it may draw at 10 sd above the gamma's mean.
    reach = hlo.multiply(divide(hlo.subtract(_c(p, 1.0), p), p), hlo.add(n, hlo.multiply(_c(n, 10.0), hlo.sqrt(n))))
    require(ctx, compare(reach, _c(reach, POISSON_LAM_MAX), "GT"), "n too large or p too small, see Generator.negative_binomial Notes")


@_sampler(rv.NegBinomialRV, checks=_negative_binomial_checks)
def _negative_binomial(key, dims, n, p):
    """Failures before the n-th success (scipy's nbinom(n, p)): Poisson(Gamma(n) (1-p)/p),
    numpy's gamma-Poisson mixture; n need not be an integer."""
    n, p = _as_float(n, p)
    gamma_key, poisson_key = split(key, 2)
    rate = hlo.multiply(standard_gamma(gamma_key, n), divide(hlo.subtract(_c(p, 1.0), p), p))
    return poisson(poisson_key, rate)


def _geometric_checks(ctx, node, p):
    p = convert(p, F64)
    bad = _not(all_of(compare(p, _c(p, 0.0), "GT"), _le(p, _c(p, 1.0))))
    require(ctx, bad, "p <= 0, p > 1 or p contains NaNs")


@_sampler(rv.GeometricRV, checks=_geometric_checks)
def _geometric(key, dims, p):
    """Trials to the first success, from 1: inversion ceil(log(u) / log1p(-p)) with u in
    (0, 1); p = 1 gives 1; draws beyond int64 give 2**63 - 1, as numpy's."""
    p = convert(p, F64)
    x = hlo.ceil(divide(polynomial_log(uniform(key, dims, F64, open_zero=True)), polynomial_log1p(hlo.negate(p))))
    x = hlo.maximum(x, _c(x, 1.0))
    huge = compare(x, _c(x, 2.0**63), "GE")
    return select(huge, full(np.iinfo(np.int64).max, dims, I64), convert(select(huge, _c(x, 1.0), x), I64))


def _hypergeometric_checks(ctx, node, good, bad, sample):
    big = _c(good, HYPERGEOMETRIC_MAX)
    too_many = any_true(any_of(compare(good, big, "GE"), compare(bad, _c(bad, HYPERGEOMETRIC_MAX), "GE")))
    require(ctx, too_many, f"both ngood and nbad must be less than {HYPERGEOMETRIC_MAX}")
    require(ctx, _lt(hlo.add(good, bad), sample), "ngood + nbad < nsample")
    for x, name in ((good, "ngood"), (bad, "nbad"), (sample, "nsample")):
        require(ctx, _lt(x, _c(x, 0)), f"{name} < 0")


@_sampler(rv.HyperGeometricRV, checks=_hypergeometric_checks, counts=(0, 1, 2))
def _hypergeometric(key, dims, good, bad, sample):
    """numpy's split: the sequential urn when the sample or its complement has fewer than
    10 items (at most 9 steps), else Stadlober's HRUA rejection (about 1.5 proposals)."""
    good, bad, sample = (convert(x, I64) for x in (good, bad, sample))
    total = hlo.add(good, bad)
    valid = all_of(
        compare(good, _c(good, 0), "GE"), compare(bad, _c(bad, 0), "GE"), compare(sample, _c(sample, 0), "GE"),
        _le(sample, total), _lt(good, _c(good, HYPERGEOMETRIC_MAX)), _lt(bad, _c(bad, HYPERGEOMETRIC_MAX)),
    )
    ratio = all_of(compare(sample, _c(sample, 10), "GE"), _le(sample, hlo.subtract(total, _c(total, 10))))
    urn_key, hrua_key = split(key, 2)
    urn = _hypergeometric_urn(urn_key, good, bad, sample, all_of(valid, _not(ratio)))
    return select(ratio, _hypergeometric_hrua(hrua_key, good, bad, sample, all_of(valid, ratio)), urn)


@_sampler(rv.CategoricalRV)
def _categorical(key, dims, p):
    """Inversion on the cumulative sum, numpy's searchsorted(cumsum(p), u): the number of
    partial sums below u. Rows need not sum to 1, as in PyTensor: a row summing to s < 1
    gives its length with probability 1 - s.

    The uniforms are written out first (`written_uniforms`): fused into the count, each of
    its per-category slices ciphered them again, and slowly (in-process A/B, best of 5
    medians): 10^4 draws of two categories took 447 µs a call against 43, 10^5 of five
    2.17 ms against 1.12, a `pm.NormalMixture` of 10^4 draws 998 µs against 146 (4,000 of
    ten level, 70 and 67)."""
    (u,) = written_uniforms(key, dims, F64, 1, counted=False)
    return _count_partial_sums_below(convert(p, F64), u)


def _multinomial_checks(ctx, node, n, p):
    p = convert(p, F64)
    last = len(static_shape(p.type)) - 1
    k = dim_value(dim_size(p, last))
    empty = compare(k, ir_constant(np.int64(0)), "EQ")
    require(ctx, empty, "pvals must have at least 1 dimension and the last dimension of pvals must be greater than 0.")
    require(ctx, _outside_unit(p), "pvals < 0, pvals > 1 or pvals contains NaNs")
    require(ctx, _lt(n, _c(n, 0)), "n < 0")
    head = _lt(iota(shape_of(p), last, I64), broadcast_in_dim(hlo.subtract(k, ir_constant(np.int64(1))), shape_of(p), ()))
    head_sum = fold(select(head, p, _c(p, 0.0)), [last], hlo.add, 0.0)
    over = compare(head_sum, _c(head_sum, 1.0 + 1e-12), "GT")
    # numpy blames the cast to float64 where narrower floats sum to within 1e-4 of 1.
    narrow = node.inputs[3].type.dtype in ("float16", "float32")
    near = _lt(fold(p, [last], hlo.add, 0.0), _c(head_sum, 1.0001)) if narrow else full_like(over, False)
    require(ctx, all_of(over, near), (
        "sum(pvals[:-1].astype(np.float64)) > 1.0. The pvals array is cast to 64-bit floating point prior "
        "to checking the sum. Precision changes when casting may cause problems even if the sum of the "
        "original pvals is valid."
    ))
    require(ctx, all_of(over, _not(near)), "sum(pvals[:-1]) > 1.0")


@_sampler(rv.MultinomialRV, checks=_multinomial_checks, counts=(0,))
def _multinomial(key, dims, n, p):
    """numpy's conditional binomials: category j gets binomial(what is left of n,
    p_j / what is left of the mass), the last one the rest (its own p is not read). One
    loop round per category; the core size may be known only at run time."""
    n, p = convert(n, I64), convert(p, F64)
    last = len(dims)
    categories = dim_size(p, last)
    k = dim_value(categories)
    # A spare zero column keeps the loop's slices in range when there are no categories.
    column = list(dims) + [1]
    p = hlo.concatenate([p, full(0.0, column, F64)], last)
    out = full(0, shape_of(p), I64)
    zero, one = ir_constant(np.int64(0)), ir_constant(np.int64(1))

    def body(values):
        key, j, left, mass, out = values
        key, draw = split(key, 2)
        pj = reshape(dynamic_index(p, [last], [j]), dims)
        ratio = divide(pj, mass)
        # Rounding can leave the mass a hair off: numpy's binomial takes p > 1 (and NaN,
        # from 0/0) as 1, p < 0 as 0.
        ratio = select(is_nan(ratio), _c(ratio, 1.0), hlo.minimum(hlo.maximum(ratio, _c(ratio, 0.0)), _c(ratio, 1.0)))
        ratio = select(compare(j, hlo.subtract(k, one), "EQ"), _c(ratio, 1.0), ratio)
        x = binomial(draw, left, ratio, hlo.subtract(_c(ratio, 1.0), ratio))
        out = hlo.dynamic_update_slice(out, reshape(x, column), [zero] * last + [j])
        return [key, hlo.add(j, one), hlo.subtract(left, x), hlo.subtract(mass, pj), out]

    init = [key, zero, n, full(1.0, dims, F64), out]
    out = while_loop(init, lambda v: compare(v[1], k, "LT"), body)[4]
    return slice_axis(out, last, 0, categories)


def _integers_checks(ctx, node, low, high, drawing):
    """numpy's: an empty range refused, unless nothing is drawn (`size` with a 0)."""
    low, high = (convert(x, I64) for x in (low, high))
    empty = hlo.and_(any_true(compare(low, high, "GE")), drawing)
    all_zero = _not(any_true(compare(low, _c(low, 0), "NE")))
    require(ctx, hlo.and_(empty, all_zero), "high <= 0")
    require(ctx, hlo.and_(empty, _not(all_zero)), "low >= high")


@_sampler(rv.IntegersRV, checks=_integers_checks, checks_see_draws=True)
def _integers(key, dims, low, high):
    """Uniform on [low, high): `bounded_integers` (float bounds truncate, as numpy's cast)."""
    return bounded_integers(key, convert(low, I64), convert(high, I64))


# --- PyMC's own RandomVariables (registered by name: loading the rules never imports PyMC)


def _discrete_uniform_checks(ctx, node, lower, upper):
    """scipy's randint(lower, upper + 1) refuses unless upper + 1 > lower and both
    bounds are whole numbers (float bounds: PyMC floors them, a graph built by hand may
    not)."""
    top = convert(upper, I64)
    fails = [_not(compare(hlo.add(top, _c(top, 1)), convert(lower, I64), "GT"))]
    for bound in (lower, upper):
        if value_dtype(bound).startswith("float"):
            fails.append(compare(hlo.floor(bound), bound, "NE"))  # NaN too
    require(ctx, functools.reduce(hlo.or_, fails), scipy_domain_error("randint"))


@register_sampler("pymc.distributions.discrete.DiscreteUniformRV", checks=_discrete_uniform_checks)
def _discrete_uniform(key, dims, lower, upper):
    """Uniform on [lower, upper]: `bounded_integers` on [lower, upper + 1)."""
    lower, upper = convert(lower, I64), convert(upper, I64)
    return bounded_integers(key, lower, hlo.add(upper, _c(upper, 1)))
