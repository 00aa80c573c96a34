"""Transcendental and special scalar functions: exp/log family, trig, hyperbolic,
erf and gamma families, sigmoid/softplus. CHLO where CHLO has the function (the
default pipeline legalizes it); small compositions otherwise. Results follow
numpy/scipy (what Elemwise.perform calls); integer inputs are computed in the
float dtype PyTensor gives the output.
"""

from __future__ import annotations

import math

import numpy as np
import pytensor.scalar as ps
import pytensor.scalar.math as psm
from jax.extend.mlir.dialects import chlo
from jax.extend.mlir.dialects import stablehlo as hlo

try:  # pytensor 3 writes xlogx/xlogy0 as graphs of other Ops
    from pytensor.tensor.xlogx import XlogX, XlogY0
except ImportError:  # pragma: no cover - pytensor >= 3
    XlogX = XlogY0 = None

from lowering.builders import (
    add_all,
    all_of,
    compare,
    convert,
    copysign,
    divide,
    exponent_and_fraction,
    fast_two_sum,
    full_like,
    hypot,
    is_complex,
    is_inf,
    is_nan,
    multiply_all,
    nearest_integer_and_offset,
    numpy_order,
    polynomial,
    polynomial_erf_inv,
    polynomial_log,
    polynomial_log1p,
    remainder,
    select,
    sin_cos_pi_of_offset,
    sinpi,
    two_product,
    value_dtype,
    veltkamp_split,
)
from lowering.errors import UnsupportedParameterError
from lowering.regions import where_some
from lowering.registry import register_lowering


def _unary(builder, work_dtype=None, complex_algorithm=None, complex_work_dtype=None):
    """Compute `builder(x)` in the output dtype (or in `work_dtype` for real outputs, or
    `complex_work_dtype` for complex ones, converted to the output dtype).
    `complex_algorithm` names what scipy computes for a complex input where `builder`
    is real only: such an input is refused."""

    def rule(ctx, node, x):
        dtype = node.outputs[0].type.dtype
        if complex_algorithm is not None and dtype.startswith("complex"):
            raise UnsupportedParameterError(node, f"dtype={dtype}", f"no lowering of {complex_algorithm}")
        wide = work_dtype if dtype.startswith("float") else complex_work_dtype if dtype.startswith("complex") else None
        if wide is not None:
            return convert(builder(convert(x, wide)), dtype)
        return builder(convert(x, dtype))

    return rule


def _binary(builder):
    def rule(ctx, node, x, y):
        dtype = node.outputs[0].type.dtype
        return builder(convert(x, dtype), convert(y, dtype))

    return rule


def _scaled(builder, factor):
    """builder(x) * factor, a real factor (a complex product would turn inf * 0j into NaN)."""

    def build(x):
        w = builder(x)
        if not is_complex(w):
            return hlo.multiply(w, full_like(w, factor))
        re, im = hlo.real(w), hlo.imag(w)
        f = full_like(re, factor)
        return hlo.complex(hlo.multiply(re, f), hlo.multiply(im, f))

    return build


def _exp2(x):
    """2**x; for complex x, numpy's exp(x ln 2) with ln 2 scaling each part (a complex
    product, or XLA's complex power, turns inf + 0j into NaN where numpy gives inf)."""
    if not is_complex(x):
        return hlo.power(full_like(x, 2), x)
    real, imag = hlo.real(x), hlo.imag(x)
    ln2 = full_like(real, math.log(2))
    return _exp(hlo.complex(hlo.multiply(real, ln2), hlo.multiply(imag, ln2)))


def _expm1(x):
    """exp(x) - 1; for complex x numpy's formula, (expm1(a) cos(b) - 2 sin(b/2)**2) +
    i exp(a) sin(b), whose imaginary part is NaN where exp(a) overflows at b = 0."""
    if not is_complex(x):
        return hlo.exponential_minus_one(x)
    a, b = hlo.real(x), hlo.imag(x)
    half = hlo.sine(hlo.multiply(b, full_like(b, 0.5)))
    real = hlo.subtract(hlo.multiply(hlo.exponential_minus_one(a), hlo.cosine(b)),
                        hlo.multiply(full_like(b, 2.0), hlo.multiply(half, half)))
    return hlo.complex(real, hlo.multiply(hlo.exponential(a), hlo.sine(b)))


def _rising_product(n: int) -> tuple[float, ...]:
    """The coefficients of x (x + 1) ... (x + n - 1), lowest power first (integers)."""
    coefficients = [1]
    for k in range(n):
        coefficients = [k * c + lower for c, lower in zip(coefficients + [0], [0] + coefficients)]
    return tuple(float(c) for c in coefficients)


_PSI_SHIFT = 10
_PSI_PRODUCT = _rising_product(_PSI_SHIFT)
_PSI_PRODUCT_DERIVATIVE = tuple(k * c for k, c in enumerate(_PSI_PRODUCT))[1:]
_PSI_ASYMPTOTIC = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)  # B_2k / 2k


def _digamma_positive(x):
    """psi(x) for x > 0, branch-free: for y >= 10 the asymptotic series
    log y - 1/(2y) - sum_k B_2k / (2k y**2k) (its next term is below 1e-16); below 10,
    psi(x + 10) less sum_{k<10} 1/(x + k), that sum as one ratio Q'(x)/Q(x) of
    Q = x (x + 1) ... (x + 9), whose coefficients are all positive (no cancellation).
    Within 2.2e-14 of scipy away from the root at 1.46, as XLA's digamma (2.4e-14)."""
    shifted = compare(x, full_like(x, float(_PSI_SHIFT)), "LT")
    y = select(shifted, hlo.add(x, full_like(x, float(_PSI_SHIFT))), x)
    z = divide(full_like(y, 1.0), hlo.multiply(y, y))
    asymptotic = hlo.subtract(
        hlo.subtract(polynomial_log(y), divide(full_like(y, 0.5), y)), hlo.multiply(z, polynomial(z, _PSI_ASYMPTOTIC)))
    # (where x >= 10 Q may overflow: that ratio is not used)
    steps = divide(polynomial(x, _PSI_PRODUCT_DERIVATIVE), polynomial(x, _PSI_PRODUCT))
    return select(shifted, hlo.subtract(asymptotic, steps), asymptotic)


def _digamma(x):
    """scipy's psi (Cephes' steps), branch-free: `_digamma_positive` for x > 0; below,
    the reflection psi(x) = psi(1 - x) - pi / tan(pi x), tan taken of x less its nearest
    integer (exact, so no digits are lost however large or small x is; 0 at half-integers),
    its sine, cosine and log polynomials XLA vectorizes. -inf at +0, +inf at -0, NaN at the
    negative integers, as scipy. XLA's digamma, with libm's sine, cosine and log for every
    element, took 13.7 ns an element on one core (this, 4.3), and was 1.9e-11 off scipy near
    psi's negative zeros (this, 7.8e-12: 3.5e-15 absolute, where 40-digit mpmath is nearer
    ours)."""
    zero, one = full_like(x, 0.0), full_like(x, 1.0)
    positive = compare(x, zero, "GT")
    value = _digamma_positive(select(positive, x, hlo.subtract(one, x)))

    def with_reflection():
        _, fraction = nearest_integer_and_offset(x)  # cot(pi x) has period 1
        sine, cosine = sin_cos_pi_of_offset(fraction)
        cotangent = divide(hlo.multiply(full_like(x, math.pi), cosine), sine)
        cotangent = select(compare(hlo.abs(fraction), full_like(x, 0.5), "EQ"), zero, cotangent)
        reflected = select(positive, value, hlo.subtract(value, cotangent))
        pole = hlo.and_(hlo.not_(positive), compare(fraction, zero, "EQ"))
        reflected = select(pole, full_like(x, np.nan), reflected)
        return select(compare(x, zero, "EQ"), hlo.negate(copysign(full_like(x, math.inf), x)), reflected)

    return where_some(hlo.not_(positive), value, with_reflection)


# The reflections of psi, trigamma and lgamma below their positive range run under
# `where_some`. PyMC's gamma functions take positive parameters, and branch-free, every
# element paid for the reflection's sine, cosine, log and division: the beta regression's
# logp and gradient (3 lgamma, 3 psi a point) took 102 µs a call with them, 73 without.
# The guard stays for small tensors too: the `if` also stops XLA from fusing the function
# through a broadcast into a larger consumer, where it would recompute the polynomials per
# element. Branch-free below 128 elements, the Dirichlet-multinomial model (a gammaln of 3
# elements broadcast over 300 x 3) took 128.6 µs a call against 36.4.


def _trigamma(x):
    """XLA's polygamma is wrong below about x = -8; for x < 0 use the reflection
    psi1(x) = pi^2 / sin(pi x)^2 - psi1(1 - x), whose right side is on the good side,
    with sin(pi x) from x reduced exactly (pi x itself is 4e-8 off at x = -1.6e8). At 0
    and the negative integers (-inf too), +inf; at +inf, 0."""
    zero, one = full_like(x, 0), full_like(x, 1)
    negative = compare(x, zero, "LT")
    direct = chlo.polygamma(one, x)

    def with_reflection():
        sin = sinpi(x)
        reflected = hlo.subtract(
            divide(full_like(x, math.pi**2), hlo.multiply(sin, sin)),
            chlo.polygamma(one, hlo.subtract(one, x)),
        )
        return select(negative, reflected, direct)

    pole = hlo.and_(compare(x, zero, "LE"), compare(hlo.floor(x), x, "EQ"))
    value = where_some(negative, direct, with_reflection)
    value = _polygamma_far_out(one, x, value)
    return select(pole, full_like(x, math.inf), value)


_FACTORIAL_EXACT = 17  # (n-1)! up to here is an integer that exp(lgamma(n)) rounds to
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188)  # B_2k / (2k (2k - 1))
# B_2k / (2k)!, k = 1..4: the asymptotic series' coefficients
_POLYGAMMA_SERIES = (1 / 12, -1 / 720, 1 / 30240, -1 / 1209600)


def _polygamma_far_out(n, x, value):
    """psi^(n)(x) = (-1)^(n+1) (n-1)!/x^n (1 + n/(2x) + sum_k B_2k/(2k)! n(n+1)...(n+2k-1)/x^2k)
    where x >= max(100, 10 (n + 5)), so that the terms after k = 4 are below an ulp,
    for orders 1 to 170 (scipy's gamma(n + 1) overflows beyond: NaN, as XLA's `value`,
    kept there). XLA's polygamma underflows long before its result does (0 for
    1/x^2 at x = 1e154, for 59!/x^60 at x = 1e4); (n-1)!/x^h1/x^h2, h1 + h2 = n,
    underflows only with the result, and is 0 with (-1)^(n+1)'s sign at +inf.
    (n-1)! is exp(lgamma(n)), rounded where it is an integer below 2^53 (n <= 17)
    and 1e-14 off beyond."""
    one = full_like(x, 1.0)
    small = hlo.round_nearest_even(hlo.exponential(log_gamma(n)))
    # Stirling: (n-1)! = sqrt(2 pi/n) n^(n/2) e^-n n^(n/2) e^(series), 2 ulps from n = 18
    # (exp(lgamma(n)) keeps lgamma's absolute error: 100 ulps at n = 30)
    m = hlo.subtract(n, hlo.floor(hlo.multiply(n, full_like(n, 0.5))))
    stirling = multiply_all(
        hlo.sqrt(divide(full_like(n, 2 * math.pi), n)),
        hlo.multiply(hlo.power(n, m), hlo.exponential(hlo.negate(n))),
        hlo.power(n, hlo.subtract(n, m)),
        hlo.exponential(hlo.multiply(divide(one, n), polynomial(divide(one, hlo.multiply(n, n)), _STIRLING))),
    )
    factorial = select(compare(n, full_like(n, _FACTORIAL_EXACT), "LE"), small, stirling)
    h1 = hlo.floor(hlo.multiply(n, full_like(n, 0.5)))
    leading = divide(divide(factorial, hlo.power(x, h1)), hlo.power(x, hlo.subtract(n, h1)))
    r = divide(one, x)
    r2 = hlo.multiply(r, r)
    rising, tail = n, full_like(x, 0.0)
    coefficients = []
    for k, b in enumerate(_POLYGAMMA_SERIES, start=1):
        for j in (2 * k - 1, 2 * k - 2):
            if j:
                rising = hlo.multiply(rising, hlo.add(n, full_like(n, float(j))))
        coefficients.append(hlo.multiply(rising, full_like(n, b)))
    for c in reversed(coefficients):
        tail = hlo.add(c, hlo.multiply(r2, tail))
    series = hlo.add(one, hlo.add(hlo.multiply(r, hlo.multiply(n, full_like(n, 0.5))), hlo.multiply(r2, tail)))
    far = hlo.multiply(leading, series)
    odd = compare(remainder(n, full_like(n, 2)), one, "EQ")
    far = select(odd, far, hlo.negate(far))
    start = hlo.maximum(full_like(x, 100.0), hlo.multiply(hlo.add(n, full_like(n, 5.0)), full_like(n, 10.0)))
    use = all_of(compare(x, start, "GE"), compare(n, one, "GE"), compare(n, full_like(n, 170.0), "LE"))
    return select(use, far, value)


# Cephes' gamma on [2, 3): gamma(2 + t) = P(t) / Q(t), 0 <= t < 1 (scipy's own), lowest
# power first. P(0) and Q(0) round to 1, so the integers get their factorials exactly.
_GAMMA_P = (9.99999999999999996796e-1, 4.94214826801497100753e-1, 2.07448227648435975150e-1,
            4.76367800457137231464e-2, 1.04213797561761569935e-2, 1.19135147006586384913e-3,
            1.60119522476751861407e-4)
_GAMMA_Q = (1.00000000000000000320e0, 7.14304917030273074085e-2, -2.34591795718243348568e-1,
            3.58236398605498653373e-2, 1.18139785222060435552e-2, -4.45641913851797240494e-3,
            5.39605580493303397842e-4, -2.31581873324120129819e-5)
# Below, gamma is the recurrence's product times the rational: the factorials come out
# exact up to 22! = gamma(23), the last a double holds, and 23! rounded once. From here
# on, Stirling's formula.
_GAMMA_STIRLING_FROM = 25
_GAMMA_OVERFLOWS_FROM = 171.624376956302725  # gamma is DBL_MAX here (Cephes' MAXGAM)
_SQRT_2PI = 2.50662827463100050242


def _recurrence_product(y, count):
    """(y - 1)(y - 2)...: the factors y - k, 0 < k < count, that are still >= 2, in scipy's
    order (each exact, and at the integers each product too): the product that takes gamma,
    or lgamma as its log, from y down to [2, 3)."""
    one, two = full_like(y, 1.0), full_like(y, 2.0)
    product = one
    for k in range(1, count):
        factor = hlo.subtract(y, full_like(y, float(k)))
        product = hlo.multiply(product, select(compare(factor, two, "GE"), factor, one))
    return product


def _gamma_of_nonnegative(x):
    """gamma(x) for float64 x >= 0, +inf and NaN (+inf at 0):
    - below 25, the product of the recurrence's factors (x - 1)(x - 2)... that are >= 2,
      in scipy's order, times Cephes' rational at t = x - floor(x), divided by x (x + 1)
      below 1 and by x below 2. At the integers each factor and product is exact, and so
      is gamma up to 22!.
    - from 25 on, `_gamma_stirling`, only when some element is there (`where_some`): its
      double-double log costs about as much again as the product.
    exp(lgamma(x)) kept lgamma's absolute error, 1e-16 lgamma(x) relative: gamma(5) was
    24.000000000000004, and up to 1,500 ulps off between 100 and 171.6."""
    one, two = full_like(x, 1.0), full_like(x, 2.0)
    t = hlo.subtract(x, hlo.floor(x))
    product = _recurrence_product(x, _GAMMA_STIRLING_FROM - 2)
    below = select(compare(x, one, "LT"), hlo.multiply(x, hlo.add(x, one)),
                   select(compare(x, two, "LT"), x, one))
    banded = divide(hlo.multiply(product, polynomial(t, _GAMMA_P)), hlo.multiply(polynomial(t, _GAMMA_Q), below))
    far = compare(x, full_like(x, float(_GAMMA_STIRLING_FROM)), "GE")
    stirling = where_some(far, x, lambda: select(far, _gamma_stirling(x), x))
    return select(far, stirling, banded)


# exp(b) = sum b**k / k! for |b| <= 1 / 300, lgamma's Stirling term from 25 on: the terms
# left out, from b**7 / 7! on, are below 1e-21.
_EXP_OF_SMALL = tuple(1 / math.factorial(k) for k in range(7))


def _gamma_stirling(x):
    """gamma(x) for x >= 25 as sqrt(2 pi) exp(b) exp(a): a + b is (x - 1/2) log x - x plus
    lgamma's Stirling term, log x in double-double (`_log_double_double`), its product with
    x - 1/2 exact (`two_product`), a the sum's rounding (`fast_two_sum`). That exponent
    reaches 709, where one rounding of it alone is worth 500 ulps of the result. exp(b),
    |b| < 1/300, is its series. Within 3 ulps of 120-bit mpmath (scipy's: 4); the other
    accurate way, x**(x/2 - 1/4) by XLA's power (a libm call per element), made a call
    1.06-1.34x as long as exp(lgamma)'s. +inf beyond 171.62 (exp(a) overflows on its own
    from 172.3 on, and x = inf would make inf - inf)."""
    log_high, log_low = _log_double_double(x)
    half_less = hlo.subtract(x, full_like(x, 0.5))
    product, product_error = two_product(half_less, log_high)
    a, b = fast_two_sum(product, hlo.negate(x))
    b = add_all(b, product_error, hlo.multiply(half_less, log_low), _stirling_term(x))
    value = multiply_all(full_like(x, _SQRT_2PI), polynomial(b, _EXP_OF_SMALL), hlo.exponential(a))
    return select(compare(x, full_like(x, _GAMMA_OVERFLOWS_FROM), "GT"), full_like(x, np.inf), value)


# ln 2 in two parts, the first of 32 significant bits (exact in products with exponents).
_LN2_HI, _LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10
# 2 atanh(s) = 2 s + 2 s**3 (1/3 + s**2/5 + s**4/7 + ...): the terms left out, from s**27
# on, are below 1e-21 for |s| <= 3 - 2 sqrt(2), the s of log(sqrt(2)).
_ATANH_TAIL = tuple(1 / (2 * k + 1) for k in range(1, 13))


# 1 / d for d = 2 + z within [1 + sqrt(1/2), 1 + sqrt(2)]: a quadratic within 2**-9.4
# relative (least squares of d p(d) - 1 at Chebyshev nodes, lowest power first), then
# three Newton steps, each doubling the bits.
_RECIPROCAL_GUESS = (1.4740457359514687, -0.7188184443417249, 0.11598972468528458)
_RECIPROCAL_STEPS = 3


def _log_double_double(x):
    """log(x) = high + low, within 1e-18 relative (5.8e-19 at most on 3,000 random points
    from 25 to 171.6, 8.5e-19 from 1e-304 to 1e304), for positive normal float64 x:
    x = 2**e m (m within [sqrt(1/2), sqrt(2)), from its bits), log m = 2 atanh(s), s =
    (m - 1) / (m + 1) = z / (2 + z) in two parts, the second from the residual z - s (2 +
    z) = (z - 2 s) - s z, computed exactly (both differences by Sterbenz' lemma; XLA folds
    (2 + z) - 2 into z, so 2 + z cannot be split); the tail of 2 atanh(s) in one part.
    1 / (2 + z) is Newton's, not a division: s is read in many places, and XLA would end
    a fused kernel at a division read more than once."""
    e, z = exponent_and_fraction(x)
    d = hlo.add(full_like(z, 2.0), z)
    r = polynomial(d, _RECIPROCAL_GUESS)
    for _ in range(_RECIPROCAL_STEPS):
        r = hlo.add(r, hlo.multiply(r, hlo.subtract(full_like(d, 1.0), hlo.multiply(d, r))))
    s = hlo.multiply(z, r)
    twice = hlo.add(s, s)
    p, p_error = two_product(s, z)
    s_low = hlo.multiply(hlo.subtract(hlo.subtract(hlo.subtract(z, twice), p), p_error), r)
    s2 = hlo.multiply(s, s)
    tail = multiply_all(twice, s2, polynomial(s2, _ATANH_TAIL))
    high, low = fast_two_sum(hlo.multiply(e, full_like(e, _LN2_HI)), twice)
    low = add_all(low, hlo.multiply(e, full_like(e, _LN2_LO)), hlo.add(s_low, s_low), tail)
    return fast_two_sum(high, low)


def _gamma(x):
    """scipy.special.gamma: `_gamma_of_nonnegative` at |x|, and below 0 the reflection
    gamma(x) = pi / (sin(pi x) q gamma(q)), q = -x (q gamma(q) is gamma(1 - x), whose
    argument 1 + q would be rounded), only when some element is negative (`where_some`);
    NaN at the negative integers and -inf, +-inf at +-0 (XLA:CPU reads subnormals as 0,
    where scipy's 1 / x overflows too), +-0 where gamma(q + 1) overflows, as scipy's.
    Other dtypes: `gamma_from_log`."""
    if value_dtype(x) != "float64":
        return gamma_from_log(x, log_gamma(x))
    zero = full_like(x, 0.0)
    a = hlo.abs(x)
    value = _gamma_of_nonnegative(a)
    negative = compare(x, zero, "LT")

    def with_reflection():
        sine = sinpi(x)
        reflected = divide(full_like(x, math.pi), hlo.multiply(sine, hlo.multiply(a, value)))
        reflected = select(compare(sine, zero, "EQ"), full_like(x, np.nan), reflected)
        return select(negative, reflected, value)

    value = where_some(negative, value, with_reflection)
    return select(compare(x, zero, "EQ"), copysign(full_like(x, np.inf), x), value)


def gamma_from_log(x, log_gamma_x):
    """sign * exp(log_gamma_x): gamma from an lgamma the caller has anyway (hyp2f1's), and
    `_gamma` of dtypes other than float64. It keeps lgamma's absolute error, about 1e-16
    lgamma(x) relative (1,500 ulps near 171; `_gamma` is within a few)."""
    magnitude = hlo.exponential(log_gamma_x)
    zero = full_like(x, 0)
    floor = hlo.floor(x)
    # For x < 0 the sign alternates between poles: negative where floor(x) is odd.
    half_floor = hlo.multiply(floor, full_like(x, 0.5))
    odd_floor = compare(hlo.floor(half_floor), half_floor, "NE")
    negative = hlo.and_(compare(x, zero, "LT"), odd_floor)
    value = select(negative, hlo.negate(magnitude), magnitude)
    pole = hlo.and_(compare(x, zero, "LT"), compare(floor, x, "EQ"))
    value = select(pole, full_like(x, np.nan), value)
    # gamma(+0) = +inf, gamma(-0) = -inf
    at_zero = compare(x, zero, "EQ")
    return select(at_zero, divide(full_like(x, 1), x), value)


def _sigmoid(x):
    return hlo.logistic(x)


def _softplus(x):
    """PyTensor's piecewise softplus (Softplus.impl), which Elemwise.perform runs on
    Python floats, in double: a float16 x is computed in float32, where exp(x) below
    the last branch (x < 18) does not overflow (in float16 it does from 11.1 on).
    log1p(exp(x)) is `polynomial_log1p`'s (`_log1p_of`): the logistic GLM's logp and
    gradient (5,000 points) took 92.7 µs a call with it, 118.6 with XLA's log1p."""
    if value_dtype(x) == "float16":
        return convert(_softplus(convert(x, "float32")), "float16")
    exp_x = hlo.exponential(x)
    return select(
        compare(x, full_like(x, -37.0), "LT"), exp_x,
        select(
            compare(x, full_like(x, 18.0), "LT"), polynomial_log1p(exp_x),
            select(
                compare(x, full_like(x, 33.3), "LT"),
                hlo.add(x, hlo.exponential(hlo.negate(x))),
                x,
            ),
        ),
    )


def _log1mexp(x):
    """log(1 - exp(x)), from whichever form is accurate on each side of log(1/2); a
    complex x is on the side numpy's (lexicographic) order puts it, each form from
    the C99 functions here (a raw complex log makes NaN of log(-inf + nan j))."""
    small = _log1p(hlo.negate(_exp(x)))
    large = _log(hlo.negate(_expm1(x)))
    return select(numpy_order(x, full_like(x, math.log(0.5)), "LT"), small, large)


def _erfcinv(x):
    """scipy's erfcinv on [0, 2] (NaN outside): -erfcinv(2 - x) from 1 on, 2 - x being
    exact there, and `erfc_inverse_of_log`, which keeps every digit as x -> 0 where
    erf_inv(1 - x) has lost them all (1 - x rounds to 1 below 1e-16)."""
    upper = compare(x, full_like(x, 1.0), "GE")
    q = select(upper, hlo.subtract(full_like(x, 2.0), x), x)
    y = erfc_inverse_of_log(hlo.log(q))
    y = select(compare(q, full_like(q, 0.0), "EQ"), full_like(q, np.inf), y)
    return select(upper, hlo.negate(y), y)


def _erfinv(x):
    """scipy's erfinv. In float64 `polynomial_erf_inv` (within 3 ulps), +-inf at +-1.
    Otherwise XLA's erf_inv, which drifts as |x| -> 1 (5e5 ulps, 1e-10 relative, at 1 -
    7.4e-9 in float64), and from |x| = 1/2 on one Newton step on erfc(y) = q, q = 1 - |x|
    being exact there: y + (erfc(y) - q) (sqrt(pi) / 2) exp(y**2) doubles the correct
    digits and cancels nothing (y <= 5.9 where q >= 2**-53, so nothing overflows)."""
    # scipy's erfinv(-0.0) is +0.0
    zero = compare(x, full_like(x, 0.0), "EQ")
    if value_dtype(x) == "float64":
        edge = compare(hlo.abs(x), full_like(x, 1.0), "EQ")
        y = select(edge, copysign(full_like(x, np.inf), x), polynomial_erf_inv(x))
        return select(zero, full_like(x, 0.0), y)
    a = hlo.abs(x)
    q = hlo.subtract(full_like(a, 1.0), a)
    y = hlo.abs(chlo.erf_inv(x))
    step = hlo.multiply(
        hlo.subtract(chlo.erfc(y), q),
        hlo.multiply(hlo.exponential(hlo.multiply(y, y)), full_like(y, math.sqrt(math.pi) / 2)),
    )
    # at |x| = 1, y is inf and the step inf * 0
    tail = select(compare(q, full_like(q, 0.0), "EQ"), y, hlo.add(y, step))
    tail = select(compare(x, full_like(x, 0.0), "LT"), hlo.negate(tail), tail)
    return select(zero, full_like(x, 0.0), select(compare(a, full_like(a, 0.5), "LT"), chlo.erf_inv(x), tail))


_ERFC_GUESS_BELOW = math.log(1 / 16)  # erf_inv(1 - q) is accurate above, the asymptote below
_HALLEY_STEPS = 3


def erfc_inverse_of_log(log_q):
    """The y >= 0 with erfc(y) = exp(log_q), for log_q <= 0, also where exp(log_q)
    underflows (while log_q > -1e12 or so: each step adds log_q and y**2).

    From q = 1/2 up, erf_inv(1 - q), 1 - q being exact there. Below, a first guess
    (erf_inv(1 - q) down to q = 1/16, then one step of y**2 = -log(q y sqrt(pi)),
    erfc's leading asymptotic term, within 1% there and better further out) refined by
    Halley steps on erfc(y) = q, which triple the correct digits each. A step is
    r / (1 - y r) with r = (erfc(y) - q) / |erfc'(y)| = (sqrt(pi) / 2) (erfcx(y) -
    exp(log_q + y**2)): neither erfc(y) nor exp(y**2) is formed, so nothing under- or
    overflows. (Near q = 1 the step's difference of two numbers near 1 would cost a
    small y its relative precision; there is nothing to refine there.)
    """
    t = hlo.sqrt(hlo.negate(log_q))
    asymptote = hlo.sqrt(hlo.subtract(hlo.negate(log_q), hlo.log(hlo.multiply(t, full_like(t, math.sqrt(math.pi))))))
    central = chlo.erf_inv(hlo.subtract(full_like(log_q, 1.0), hlo.exponential(log_q)))
    y = select(compare(log_q, full_like(log_q, _ERFC_GUESS_BELOW), "LT"), asymptote, central)
    for _ in range(_HALLEY_STEPS):
        gap = hlo.subtract(erfcx(y), hlo.exponential(hlo.add(log_q, hlo.multiply(y, y))))
        r = hlo.multiply(gap, full_like(gap, math.sqrt(math.pi) / 2))
        y = hlo.add(y, divide(r, hlo.subtract(full_like(r, 1.0), hlo.multiply(y, r))))
    return select(compare(log_q, full_like(log_q, math.log(0.5)), "LT"), y, central)


# Cephes' lgam on [2, 3): lgamma(2 + t) = t B(t) / C(t), 0 <= t < 1 (scipy's own).
_LGAMMA_B = (-8.53555664245765465627e5, -1.72173700820839662146e6, -1.16237097492762307383e6,
             -3.31612992738871184744e5, -3.88016315134637840924e4, -1.37825152569120859100e3)
_LGAMMA_C = (-2.01889141433532773231e6, -2.53252307177582951285e6, -1.13933444367982507207e6,
             -2.20528590553854454839e5, -1.70642106651881159223e4, -3.51815701436523470549e2, 1.0)
# lgamma(2 + t) = (1 - euler) t + sum_k>=2 (-1)^k (zeta(k) - 1) t^k / k: the terms
# shrink like (t/2)^k, 22 of them reach an ulp at |t| = 0.3.
_LGAMMA_NEAR_2 = (
    0.42278433509846713, 0.3224670334241132, -0.0673523010531981,
    0.020580808427784546, -0.007385551028673986, 0.0028905103307415234,
    -0.001192753911703261, 0.0005096695247430425, -0.00022315475845357939,
    9.945751278180853e-05, -4.492623673813314e-05, 2.050721277567069e-05,
    -9.439488275268397e-06, 4.374866789907488e-06, -2.039215753801366e-06,
    9.55141213040742e-07, -4.492469198764566e-07, 2.1207184805554665e-07,
    -1.0043224823968099e-07, 4.7698101693639804e-08, -2.2711094608943164e-08,
    1.0838659214896955e-08,
)
_NEAR_ROOT = 0.3


# Cephes' lgam beyond 13: Stirling's series, lgamma(x) = (x - 1/2) log x - x + log sqrt(2 pi)
# + w A(w**2), w = 1/x (A lowest power first).
_LGAMMA_STIRLING = (8.33333333333331927722e-2, -2.77777777730099687205e-3, 7.93650340457716943945e-4,
                    -5.95061904284301438324e-4, 8.11614167470508450300e-4)
_LGAMMA_STIRLING_FROM = 13
# Where `_stirling_term` stops growing its y: beyond it the term (below 1e-31) is far
# below an ulp of lgamma(y), and y**9, the quotient's divisor, stays finite up to it.
_STIRLING_TERM_UP_TO = 2.0**100
_HALF_LOG_2PI = 0.91893853320467274178  # log(2 pi) / 2, rounded once (math.log is an ulp below)


def _lgamma_from_half(y):
    """lgamma(y) for y >= 1/2, +inf and NaN, branch-free, with one log (`polynomial_log1p`)
    and one division of its own:
    - within 0.3 of 2, the Taylor series in t = y - 2; within 0.3 of 1, the same in
      t = y - 1, less log1p(t) (lgamma(y) = lgamma(y + 1) - log(y));
    - elsewhere below 13, Cephes' steps: its rational on [2, 3) at t, y's distance above
      2 (below: above 0 or 1), plus the log of the recurrence's product,
      (y - 1)(y - 2)... down to [2, 3) (below: less that of y (y + 1), or y);
    - from 13 on, Stirling's series.
    Each t and each factor is exact (Sterbenz), and each log's argument 1 + s has s
    exact (y - 1, y - 2) or nearly, so the result keeps its relative precision near the
    roots (about 3 ulps, 7 near 1.6; scipy's own is 1e5 ulps next to 1 and 2).

    Each division has one user. XLA does not copy a division into a second fused kernel,
    so one read in several places ends its kernel there, and the kernels after it write in
    place over what they read: XLA:CPU's elemental emitter (`compile.suits_elemental_emitter`)
    runs such a loop one element at a time (LLVM's vectorized loop checks that output and
    inputs do not overlap). With the rational and Stirling's term sharing one division,
    gammaln of 256 elements took 14.7 against 9.5 µs a call, of 4,000 4.8x the fusion
    emitters' time (benchmarks/README.md, "Kernels that write over their inputs")."""
    one, two, three = full_like(y, 1.0), full_like(y, 2.0), full_like(y, 3.0)
    y1, y2 = hlo.subtract(y, one), hlo.subtract(y, two)
    near1 = compare(hlo.abs(y1), full_like(y, _NEAR_ROOT), "LE")
    near2 = compare(hlo.abs(y2), full_like(y, _NEAR_ROOT), "LE")
    below1, below2, below3 = (compare(y, c, "LT") for c in (one, two, three))
    stirling = compare(y, full_like(y, float(_LGAMMA_STIRLING_FROM)), "GE")
    tn = select(near1, y1, y2)
    series = hlo.multiply(polynomial(tn, _LGAMMA_NEAR_2), tn)
    t = select(below1, y, select(below2, y1, hlo.subtract(y, hlo.floor(y))))
    product = _recurrence_product(y, _LGAMMA_STIRLING_FROM - 2)
    s = select(below3, select(below1, hlo.add(hlo.multiply(y, y), y1), select(below2, y1, full_like(y, 0.0))),
               select(stirling, y1, hlo.subtract(product, one)))
    log = polynomial_log1p(select(near1, y1, s))
    near = select(hlo.or_(near1, near2), series,
                  divide(hlo.multiply(t, polynomial(t, _LGAMMA_B)), polynomial(t, _LGAMMA_C)))
    banded = select(near2, near, hlo.add(near, select(below2, hlo.negate(log), log)))
    # y (log y - 1) - log(y) / 2: (y - 1/2) log y would overflow first
    asymptotic = hlo.add(
        hlo.subtract(hlo.multiply(y, hlo.subtract(log, one)), hlo.multiply(log, full_like(y, 0.5))),
        hlo.add(full_like(y, _HALF_LOG_2PI), _stirling_term(y)))
    asymptotic = select(compare(y, full_like(y, np.inf), "EQ"), y, asymptotic)
    return select(stirling, asymptotic, banded)


def _stirling_term(y):
    """Stirling's w A(w**2), w = 1 / y, as one division: A~(u) / (y u**4), u = y**2 and
    A~(u) = u**4 A(1 / u), y at most _STIRLING_TERM_UP_TO. `_lgamma_from_half` takes it
    from 13 on; below, down to y = 1/2, it is finite and unread."""
    y = hlo.minimum(y, full_like(y, _STIRLING_TERM_UP_TO))
    u = hlo.multiply(y, y)
    u2 = hlo.multiply(u, u)
    return divide(polynomial(u, _LGAMMA_STIRLING[::-1]), hlo.multiply(y, hlo.multiply(u2, u2)))


def log_gamma(x):
    """scipy's gammaln. Float64: `_lgamma_from_half` at x, or below 1/2 at 1 - x through
    the reflection lgamma(x) = log(pi) - log|sin(pi x)| - lgamma(1 - x), sin(pi x) of x
    less its nearest integer (exact); +inf at 0 and the negative integers, and scipy's
    -inf at -inf (C's lgamma gives +inf; found by tests/test_fuzz.py). Other dtypes get
    XLA's lgamma, which is 10 to 250 ulps off on [0.5, 4), keeps only its absolute error
    (1e-15) at the roots 1 and 2, and took 25 ns a float64 element on one core, most of it
    in libm's sine and logs. This takes 7.8 ns on [0.5, 50) and 11.4 on (-50, 50): its logs
    and sine are polynomials XLA vectorizes, and the reflection runs only when some element
    is below 1/2 (`where_some`)."""
    if value_dtype(x) != "float64":
        return chlo.lgamma(x)
    reflect = compare(x, full_like(x, 0.5), "LT")
    value = _lgamma_from_half(select(reflect, hlo.subtract(full_like(x, 1.0), x), x))

    def with_reflection():
        _, offset = nearest_integer_and_offset(x)
        sine, _ = sin_cos_pi_of_offset(offset)
        reflected = hlo.subtract(hlo.subtract(full_like(x, math.log(math.pi)), polynomial_log(hlo.abs(sine))), value)
        pole = compare(offset, full_like(x, 0.0), "EQ")
        reflected = select(pole, full_like(x, np.inf), reflected)
        minus_inf = full_like(x, -np.inf)
        return select(compare(x, minus_inf, "EQ"), minus_inf, select(reflect, reflected, value))

    return where_some(reflect, value, with_reflection)


def _exp_of_square(x):
    """exp(x**2) without the rounding of x**2 (worth x**2 ulps): Veltkamp's split
    x = hi + lo with hi holding 26 significant bits, so hi**2 is exact and
    exp(2 hi lo + lo**2) is near 1."""
    hi, lo = veltkamp_split(x)
    rest = hlo.multiply(lo, hlo.add(hlo.multiply(full_like(x, 2.0), hi), lo))
    return hlo.multiply(hlo.exponential(hlo.multiply(hi, hi)), hlo.exponential(rest))


_ERFCX_FRACTION_TERMS = 40


def erfcx(x):
    """exp(x**2) erfc(x) for real x: the product below 10 (erfc has not underflowed),
    Laplace's continued fraction 1/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))
    from 10 on, and 2 exp(x**2) - erfcx(-x) for negative x (inf past -26.6, as scipy).

    The fraction's 40 divisions run only where some |x| is above 10 (`where_some`):
    computed for every element they took about 40 of its 48 ns an element (PyMC's
    normal_lcdf takes erfcx below z = -1, so every censored or truncated Normal pays it). exp(x**2) is
    exp(|x|**2): Veltkamp's split is odd in x, so both are the same bits."""
    a = hlo.abs(x)
    square = _exp_of_square(a)
    product = hlo.multiply(square, chlo.erfc(a))
    far = compare(a, full_like(a, 10.0), "GT")

    def with_fraction():
        large = select(far, a, full_like(a, 10.0))
        fraction = large
        for k in range(_ERFCX_FRACTION_TERMS, 0, -1):
            fraction = hlo.add(large, divide(full_like(a, k / 2), fraction))
        return select(far, divide(full_like(a, 1 / math.sqrt(math.pi)), fraction), product)

    positive = where_some(far, product, with_fraction)
    negative = hlo.subtract(hlo.multiply(full_like(x, 2.0), square), positive)
    # Past -26.6 exp(x**2) overflows; the split would make inf - inf at -inf.
    negative = select(compare(x, full_like(x, -27.0), "LT"), full_like(x, np.inf), negative)
    return select(compare(x, full_like(x, 0.0), "LT"), negative, positive)


def _c99_branch_cuts(builder, *, odd: bool, imag_sign: int = 1, at_nan):
    """A complex inverse trig function with C99's (numpy's) signs on cuts and zeros,
    and its results where a part is NaN.

    XLA's complex asin/acos and asinh/acosh/atanh ignore the sign of a zero
    part on a branch cut. All of them satisfy f(conj z) = conj f(z), and the odd ones
    f(-z) = -f(z), so each result part's sign follows from z's: the imaginary part
    has the sign of z's (the opposite for acos, `imag_sign=-1`), and for odd f the
    real part has the sign of z's real part. XLA evaluates the magnitudes where it
    is right, at |re| (odd f) and |im|.

    Where z has a NaN part XLA's formulas give a mix of NaN and finite parts that
    C99 does not (asinh(nan + 1e300j) = 691 + nan j); `at_nan(re, im)` gives the
    (real, imaginary) parts Annex G and glibc, which numpy calls, define there.
    """

    def build(z):
        if not is_complex(z):
            return builder(z)
        re, im = hlo.real(z), hlo.imag(z)
        w = builder(hlo.complex(hlo.abs(re) if odd else re, hlo.abs(im)))
        u, v = hlo.real(w), hlo.imag(w)
        if odd:
            u = copysign(u, re)
        v = copysign(v, im if imag_sign > 0 else hlo.negate(im))
        nan_u, nan_v = at_nan(re, im)
        some_nan = hlo.or_(is_nan(re), is_nan(im))
        return hlo.complex(select(some_nan, nan_u, u), select(some_nan, nan_v, v))

    return build


# Annex G's values where a part of z is NaN (so every test below sees a NaN somewhere:
# `re == 0` means "im is NaN", an infinite part means "the other one is NaN").


def _nan_or(pred, value):
    return select(pred, value, full_like(value, np.nan))


def _any_inf(re, im):
    return hlo.or_(is_inf(re), is_inf(im))


def _is_zero(x):
    return compare(x, full_like(x, 0), "EQ")


def _asinh_at_nan(re, im):
    """asinh(±inf + nan j) = ±inf + nan j, asinh(nan ± inf j) = ±inf + nan j,
    asinh(nan ± 0j) = nan ± 0j."""
    inf = full_like(re, np.inf)
    u = select(is_inf(re), re, _nan_or(is_inf(im), copysign(inf, re)))
    return u, _nan_or(hlo.and_(is_nan(re), _is_zero(im)), im)


def _asin_at_nan(re, im):
    """asin(±0 + nan j) = ±0 + nan j; with an infinite part, nan ± inf j (im's sign)."""
    return _nan_or(_is_zero(re), re), _nan_or(_any_inf(re, im), copysign(full_like(im, np.inf), im))


def _acos_at_nan(re, im):
    """acos(±0 + nan j) = pi/2 + nan j; with an infinite part, nan ∓ inf j (im's sign)."""
    u = _nan_or(_is_zero(re), full_like(re, math.pi / 2))
    return u, _nan_or(_any_inf(re, im), copysign(full_like(im, np.inf), hlo.negate(im)))


def _acosh_at_nan(re, im):
    """acosh(±0 + nan j) = nan + pi/2 j; with an infinite part, inf + nan j."""
    return _nan_or(_any_inf(re, im), full_like(re, np.inf)), _nan_or(_is_zero(re), full_like(im, math.pi / 2))


def _atanh_at_nan(re, im):
    """atanh(nan ± inf j) = ±0 ± pi/2 j (re's, im's signs); atanh(±0 + nan j) and
    atanh(±inf + nan j) = ±0 + nan j."""
    u = _nan_or(hlo.or_(_any_inf(re, im), _is_zero(re)), copysign(full_like(re, 0), re))
    return u, _nan_or(is_inf(im), copysign(full_like(im, math.pi / 2), im))


def _real_atanh(x):
    """numpy's arctanh of a real x. Float64: fdlibm's steps at |x|, with x's sign,
    0.5 log1p(2a + 2a**2 / (1 - a)) below a = 1/2 and 0.5 log1p(2a / (1 - a)) from 1/2 on
    (1 - a exact there), the log1p `polynomial_log1p`'s: within 3 ulps of 120-bit mpmath
    (numpy's: 2), where CHLO's atanh, through XLA's log1p, was 129 ulps off near 0.414
    (and a libm call per element: 10^5 elements took 1,166 µs a call, now 444). +-inf at +-1, NaN
    beyond. Other dtypes: CHLO's (float32 within 3 ulps of numpy's double rounded)."""
    if value_dtype(x) != "float64":
        return chlo.atanh(x)
    a = hlo.abs(x)
    t = hlo.add(a, a)
    small = compare(a, full_like(a, 0.5), "LT")
    # one division, read once: t a / (1 - a) below 1/2, t / (1 - a) from it on
    quotient = divide(select(small, hlo.multiply(t, a), t), hlo.subtract(full_like(a, 1.0), a))
    argument = hlo.add(select(small, t, full_like(t, 0.0)), quotient)
    return copysign(hlo.multiply(polynomial_log1p(argument), full_like(a, 0.5)), x)


def _catanh(z):
    """XLA's atanh at re, im >= +0, except at re = 1 with a tiny im: XLA's sum of
    squares underflows to 0 and gives inf, C99 gives (ln 2 - ln im) / 2. A real z:
    `_real_atanh`."""
    if not is_complex(z):
        return _real_atanh(z)
    w = chlo.atanh(z)
    re, im = hlo.real(z), hlo.imag(z)
    eps = full_like(im, np.finfo(value_dtype(im)).eps)
    near_pole = hlo.and_(compare(re, full_like(re, 1), "EQ"), compare(im, eps, "LT"))
    pole_re = hlo.multiply(hlo.subtract(full_like(im, math.log(2)), hlo.log(im)), full_like(im, 0.5))
    return hlo.complex(select(near_pole, pole_re, hlo.real(w)), hlo.imag(w))


def _log_of_infinity(log):
    """A complex log with C99's clog at infinite parts: a real part of +inf, even next to
    a NaN (XLA's complex64 log, and its complex log1p, give NaN for inf + nan*j)."""

    def build(z):
        w = log(z)
        if not is_complex(z):
            return w
        infinite = hlo.or_(is_inf(hlo.real(z)), is_inf(hlo.imag(z)))
        return hlo.complex(select(infinite, full_like(hlo.real(w), np.inf), hlo.real(w)), hlo.imag(w))

    return build


def _log1p_of(z):
    """Real: `polynomial_log1p` (XLA's own log1p below float64). XLA's float64 log1p is
    up to 129 ulps off around x = -0.414, the edge of its small-x formula; this one is
    within 2.5 ulps of the exact value everywhere. It is also faster wherever XLA
    compiles the function itself: 1.9 against 4.6 ns an element (XLA's calls libm's
    log per element), and always below 4,096 elements. From 4,096 elements up, XLA
    hands a fusion made only of arithmetic, log1p and a sum to YNNPACK, whose log1p is
    faster than this one (a sum of 10^5 log1p: 200 against 120 µs); a PyMC logp's
    selects keep its fusions with XLA (Student-t's on 10^5 points: 969 against 1,119 µs).

    Complex: XLA's log1p, whose real part is log1p(x (x + 2) + y^2) / 2: accurate for
    small z, but the sum underflows next to z = -1 (log1p(-1 + 1e-300j) came out -inf).
    Where |1 + z| < 1/sqrt(2) the real part is log|1 + z| instead; 1 + x is exact there
    or far from 1, so nothing cancels."""
    if not is_complex(z):
        return polynomial_log1p(z)
    w = hlo.log_plus_one(z)
    x, y = hlo.real(z), hlo.imag(z)
    shifted = hypot(hlo.add(x, full_like(x, 1)), y)
    near_pole = compare(shifted, full_like(shifted, math.sqrt(0.5)), "LT")
    return hlo.complex(select(near_pole, hlo.log(shifted), hlo.real(w)), hlo.imag(w))


_log = _log_of_infinity(hlo.log)
_log1p = _log_of_infinity(_log1p_of)


# --- complex exp, sinh, cosh, tanh at C99's special values; sin, cos, tan by rotation --------
#
# The real formulas (sinh(x) cos(y) + i cosh(x) sin(y), ...) are right for finite parts
# but make 0 * inf = NaN where C99's Annex G (numpy's libm) keeps a zero, an infinity or
# a signed zero. Each function below takes the formula's result and replaces the classes
# Annex G defines otherwise. numpy's csin, ccos and ctan are C99's -i sinh(iz), cosh(iz)
# and -i tanh(iz): the rotation also keeps sin(710j) finite, where XLA's complex sin
# computes cosh(710) as (e^710 + e^-710) / 2 = inf.


def _nonfinite(v):
    return hlo.not_(hlo.is_finite(v))


def _exp(z):
    """cexp: exp(x + 0i) keeps y's zero; exp(+inf + iy) is +inf + iNaN and exp(-inf + iy)
    is +-0 for an infinite or NaN y."""
    w = hlo.exponential(z)
    if not is_complex(z):
        return w
    x, y = hlo.real(z), hlo.imag(z)
    wild = _nonfinite(y)
    to_inf = hlo.and_(wild, compare(x, full_like(x, np.inf), "EQ"))
    to_zero = hlo.and_(wild, compare(x, full_like(x, -np.inf), "EQ"))
    zero = full_like(x, 0)
    real_y = compare(y, zero, "EQ")  # exp(x + 0i) = exp(x) + 0i, y's zero
    re = select(real_y, hlo.exponential(x), select(to_inf, x, select(to_zero, zero, hlo.real(w))))
    im = select(to_inf, full_like(x, np.nan), select(to_zero, copysign(zero, y), hlo.imag(w)))
    im = select(real_y, y, im)
    return hlo.complex(re, im)


def _hyperbolic_times(x, factor, odd: bool):
    """sinh(x) * factor (odd) or cosh(x) * factor, real x; no factor: sinh(x) or cosh(x).

    CHLO's sinh/cosh lose digits as |x| grows (e^(x + log 1/2) rounds x + log 1/2:
    5e-14 relative at x = 700; 13 float32 ulps at 88), and XLA's complex ones cancel
    e^x - e^-x near 0 (1e-6 relative at |z| = 1e-8). So: CHLO's below |x| = 1, where it
    is exact to an ulp; (e^|x| +- e^-|x|) / 2 above; and past log(max) - 1, where e^|x|
    overflows before the result does, (e^(|x|/2) * factor / 2) * e^(|x|/2).
    """
    a = hlo.abs(x)
    e = hlo.exponential(a)
    combine = hlo.subtract if odd else hlo.add
    core = hlo.multiply(combine(e, divide(full_like(x, 1), e)), full_like(x, 0.5))
    near_zero = compare(a, full_like(x, 1), "LT")
    value = select(near_zero, chlo.sinh(x) if odd else chlo.cosh(x), copysign(core, x) if odd else core)
    half_factor = full_like(x, 0.5) if factor is None else hlo.multiply(factor, full_like(x, 0.5))
    if factor is not None:
        value = hlo.multiply(value, factor)
    root = hlo.exponential(hlo.multiply(a, full_like(x, 0.5)))
    huge = hlo.multiply(hlo.multiply(root, half_factor), root)
    if odd:
        huge = hlo.multiply(copysign(full_like(x, 1), x), huge)
    big = compare(a, full_like(x, math.log(np.finfo(value_dtype(x)).max) - 1), "GT")
    return select(big, huge, value)


def _complex_sinh_cosh(z, odd: bool):
    """sinh(z) (odd) or cosh(z) by their real parts' formulas:
    sinh(x + iy) = sinh(x) cos(y) + i cosh(x) sin(y), cosh(x + iy) = cosh(x) cos(y) + i sinh(x) sin(y)."""
    x, y = hlo.real(z), hlo.imag(z)
    re = _hyperbolic_times(x, hlo.cosine(y), odd)
    im = _hyperbolic_times(x, hlo.sine(y), not odd)
    return hlo.complex(re, im)


def _sinh(z):
    """csinh: sinh(x + 0i) = sinh(x) + 0i and sinh(0 + iy) = 0 cos(y) + i sin(y), keeping
    the zeros' signs; with an infinite or NaN y, a zero x stays and an infinite one
    becomes +inf (C99 leaves its sign open; glibc's is +), with a NaN imaginary part."""
    if not is_complex(z):
        return _hyperbolic_times(z, None, odd=True)
    w = _complex_sinh_cosh(z, odd=True)
    x, y = hlo.real(z), hlo.imag(z)
    keep_x = hlo.and_(_nonfinite(y), hlo.or_(compare(x, full_like(x, 0), "EQ"), is_inf(x)))
    zero = full_like(x, 0)
    real_y = compare(y, zero, "EQ")
    imag_x = hlo.and_(compare(x, zero, "EQ"), hlo.is_finite(y))  # sinh(iy) = i sin(y), x's zero
    re = select(keep_x, select(is_inf(x), hlo.abs(x), x), hlo.real(w))
    re = select(real_y, _hyperbolic_times(x, None, odd=True), re)
    re = select(imag_x, hlo.multiply(x, hlo.cosine(y)), re)
    im = select(real_y, y, select(keep_x, full_like(y, np.nan), hlo.imag(w)))
    im = select(imag_x, hlo.sine(y), im)
    return hlo.complex(re, im)


def _cosh(z):
    """ccosh: cosh(x + 0i) = cosh(x) + i 0 sinh(x) and cosh(0 + iy) = cos(y) + i 0 sin(y)
    (signed zeros, for infinite x too); cosh(0 + iy) = NaN + i 0 and cosh(inf + iy) =
    inf + iNaN for an infinite or NaN y."""
    if not is_complex(z):
        return _hyperbolic_times(z, None, odd=False)
    w = _complex_sinh_cosh(z, odd=False)
    x, y = hlo.real(z), hlo.imag(z)
    zero, nan = full_like(x, 0), full_like(x, np.nan)
    wild = _nonfinite(y)
    at_zero = hlo.and_(wild, compare(x, zero, "EQ"))
    at_inf = hlo.and_(wild, is_inf(x))
    real_y = compare(y, zero, "EQ")
    re = select(at_zero, nan, select(at_inf, hlo.abs(x), hlo.real(w)))
    re = select(real_y, _hyperbolic_times(x, None, odd=False), re)
    # sinh(x) * y's signed zero; y's own where x is NaN (glibc's, C99 leaves it open)
    odd_zero = select(is_nan(x), y, hlo.multiply(copysign(full_like(x, 1), x), y))
    im = select(real_y, odd_zero, select(at_zero, zero, select(at_inf, nan, hlo.imag(w))))
    imag_x = hlo.and_(compare(x, zero, "EQ"), hlo.is_finite(y))  # cosh(iy) = cos(y), x's zero
    re = select(imag_x, hlo.cosine(y), re)
    im = select(imag_x, hlo.multiply(x, hlo.sine(y)), im)
    return hlo.complex(re, im)


def _tanh(z):
    """ctanh: tanh(x + 0i) = tanh(x) + 0i and tanh(0 + iy) = 0 + i tan(y), keeping the
    zeros' signs (0 + iNaN for an infinite or NaN y); tanh(+-inf + i inf) = +-1 +- 0i."""
    w = hlo.tanh(z)
    if not is_complex(z):
        return w
    x, y = hlo.real(z), hlo.imag(z)
    zero = full_like(x, 0)
    real_y = compare(y, zero, "EQ")
    at_zero = compare(x, zero, "EQ")  # tanh(iy) = i tan(y), x's zero (iNaN for y not finite)
    re = select(real_y, hlo.tanh(x), select(at_zero, x, hlo.real(w)))
    im = select(real_y, y, select(at_zero, hlo.tan(y), hlo.imag(w)))
    # tanh(+-inf + i inf) = +-1 + i0, y's sign (C99 leaves it open; glibc's)
    im = select(hlo.and_(is_inf(x), is_inf(y)), copysign(zero, y), im)
    return hlo.complex(re, im)


def _sin(z):
    """csin(z) = -i csinh(iz), except that glibc's csin gives +inf as the imaginary part
    where y is infinite and x is not finite (C99 leaves that sign open too)."""
    if not is_complex(z):
        return hlo.sine(z)
    x, y = hlo.real(z), hlo.imag(z)
    w = _rotated(_sinh, hlo.sine, odd=True)(z)
    open_sign = hlo.and_(is_inf(y), _nonfinite(x))
    return hlo.complex(hlo.real(w), select(open_sign, hlo.abs(y), hlo.imag(w)))


def _rotated(hyperbolic, real, odd: bool):
    """The trig function f(z) = -i g(iz) (odd: sin, tan) or g(iz) (cos) of its hyperbolic
    g, by moving parts (a product by i would turn inf * 0 into NaN); `real` for real z."""

    def build(z):
        if not is_complex(z):
            return real(z)
        w = hyperbolic(hlo.complex(hlo.negate(hlo.imag(z)), hlo.real(z)))
        return hlo.complex(hlo.imag(w), hlo.negate(hlo.real(w))) if odd else w

    return build


def _asin(x):
    """CHLO's asin; a real x below sqrt(eps) is its own arcsine (CHLO's
    2 atan2(x, 1 + sqrt(1 - x**2)) halves it into a subnormal, which XLA flushes:
    asin(2.2e-308) came out 0)."""
    if is_complex(x):
        return chlo.asin(x)
    small = compare(hlo.abs(x), full_like(x, math.sqrt(np.finfo(value_dtype(x)).eps)), "LT")
    return select(small, x, chlo.asin(x))


_ATANH = _c99_branch_cuts(_catanh, odd=True, at_nan=_atanh_at_nan)


def _atan(z):
    """C99 defines catan(z) as -i catanh(iz); XLA's complex atan overflows where
    catanh's pole handling is needed (atan(tiny + 1j))."""
    if not is_complex(z):
        return chlo.atan(z)
    w = _ATANH(hlo.complex(hlo.negate(hlo.imag(z)), hlo.real(z)))
    return hlo.complex(hlo.imag(w), hlo.negate(hlo.real(w)))


_UNARY = {
    ps.Exp: _exp,
    ps.Exp2: _exp2,
    ps.Expm1: _expm1,
    ps.Log: _log,
    ps.Log2: _scaled(_log, 1 / math.log(2)),
    ps.Log10: _scaled(_log, 1 / math.log(10)),
    ps.Log1p: _log1p,
    ps.Sin: _sin,
    ps.Cos: _rotated(_cosh, hlo.cosine, odd=False),
    ps.Tan: _rotated(_tanh, hlo.tan, odd=True),
    ps.ArcSin: _c99_branch_cuts(_asin, odd=True, at_nan=_asin_at_nan),
    ps.ArcCos: _c99_branch_cuts(chlo.acos, odd=False, imag_sign=-1, at_nan=_acos_at_nan),
    ps.ArcTan: _atan,
    ps.Sinh: _sinh,
    ps.Cosh: _cosh,
    ps.Tanh: _tanh,
    ps.ArcSinh: _c99_branch_cuts(chlo.asinh, odd=True, at_nan=_asinh_at_nan),
    ps.ArcCosh: _c99_branch_cuts(chlo.acosh, odd=False, at_nan=_acosh_at_nan),
    ps.ArcTanh: _ATANH,
    ps.Deg2Rad: lambda x: hlo.multiply(x, full_like(x, math.pi / 180)),
    ps.Rad2Deg: lambda x: hlo.multiply(x, full_like(x, 180 / math.pi)),
    psm.Erf: chlo.erf,
    psm.Erfc: chlo.erfc,
    psm.Erfinv: _erfinv,
    psm.Erfcinv: _erfcinv,
    psm.Erfcx: erfcx,
    psm.Gamma: _gamma,
    psm.GammaLn: log_gamma,
    psm.Psi: _digamma,
    psm.TriGamma: _trigamma,
    psm.Sigmoid: _sigmoid,
    psm.Softplus: _softplus,
    psm.Log1mexp: _log1mexp,
}

# scipy.special computes these in double for every real input dtype (its float32 loops
# cast), so the float32 result is the double result rounded once; XLA's float32
# lgamma/erf/digamma are several ulps off.
_SCIPY_IN_DOUBLE = (psm.Erf, psm.Erfc, psm.Erfcx, psm.Erfinv, psm.Erfcinv, psm.Gamma, psm.GammaLn, psm.Psi, psm.TriGamma)

# scipy has complex loops for these; the CHLO ops are real only.
_COMPLEX_IN_SCIPY = {
    psm.Erf: "scipy's complex erf (the Faddeeva function)",
    psm.Gamma: "scipy's complex gamma (exp of its complex loggamma)",
    psm.Psi: "scipy's complex digamma",
}

# PyTensor's log1mexp of a complex value runs on Python complex numbers (double): in
# complex64, exp(x) would overflow from Re x = 88.7 on, where the result is finite.
_COMPLEX_IN_DOUBLE = (psm.Log1mexp,)

for _op, _builder in _UNARY.items():
    register_lowering(_op)(_unary(_builder, "float64" if _op in _SCIPY_IN_DOUBLE else None, _COMPLEX_IN_SCIPY.get(_op),
                                  "complex128" if _op in _COMPLEX_IN_DOUBLE else None))

register_lowering(ps.ArcTan2)(_binary(hlo.atan2))


@register_lowering(psm.PolyGamma)
def lower_polygamma(ctx, node, n, x):
    from dialect_rules.scalar import raise_if_any

    dtype = node.outputs[0].type.dtype
    # scipy's polygamma computes in double for every input dtype (n + 1 is an int64).
    work = "float64" if dtype.startswith("float") else dtype
    n, x = convert(n, work), convert(x, work)
    zero, one = full_like(x, 0), full_like(x, 1)
    negative = compare(x, zero, "LT")
    # XLA's polygamma is wrong for x below about -8; orders 0 and 1 have exact
    # reflections, higher orders at negative x are refused rather than wrong.
    raise_if_any(
        ctx, hlo.and_(negative, compare(n, one, "GT")), NotImplementedError,
        "polygamma of order >= 2 at negative x is not supported by the StableHLO backend",
    )
    # At 0 (either sign) scipy gives the pole's sign: +inf for odd orders, -inf for even.
    odd = compare(remainder(n, full_like(n, 2)), one, "EQ")
    pole = select(odd, full_like(x, math.inf), full_like(x, -math.inf))
    general = select(compare(x, zero, "EQ"), pole, _polygamma_far_out(n, x, chlo.polygamma(n, x)))
    order0 = compare(n, zero, "EQ")
    order1 = compare(n, one, "EQ")
    return convert(select(order0, _digamma(x), select(order1, _trigamma(x), general)), dtype)


def lower_xlogx(ctx, node, x):
    x = convert(x, node.outputs[0].type.dtype)
    zero = full_like(x, 0)
    return select(compare(x, zero, "EQ"), zero, hlo.multiply(x, hlo.log(x)))


def lower_xlogy0(ctx, node, x, y):
    dtype = node.outputs[0].type.dtype
    x, y = convert(x, dtype), convert(y, dtype)
    zero = full_like(x, 0)
    return select(compare(x, zero, "EQ"), zero, hlo.multiply(x, hlo.log(y)))


if XlogX is not None:
    register_lowering(XlogX)(lower_xlogx)
    register_lowering(XlogY0)(lower_xlogy0)
