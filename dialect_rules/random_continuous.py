"""Continuous RandomVariables beyond uniform, normal and gamma (those are in
`random`): inversion where the quantile is cheap, Marsaglia-Tsang gammas taken to
log space where a shape below 1 would underflow, and rejection for von Mises.

Parameterizations and parameter errors are those of each Op's `rng_fn`: numpy's
Generator methods (their messages, "scale < 0"), or a scipy.stats distribution
(one "Domain error in arguments" message; `loc` where `scale` is 0, as scipy).
The streams are not numpy's: same distributions, different numbers.

Inversions whose quantile is infinite at 0 or 1 draw open uniforms (`open_zero`), whose
points are all strictly inside (0, 1) and symmetric about 1/2, so log(u), log1p(-u)
and 2u - 1 are exact and finite, and each tail comes from the end of the lattice that
resolves it; truncated exponential and triangular take the core's [0, 1), as numpy.
Keys are split as little as possible (`uniforms`): each Threefry inside a
rejection loop costs about half a second of XLA compile time.
"""

from __future__ import annotations

import functools
import math

from jax.extend.mlir.dialects import chlo
from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.tensor.random import basic as rv

from dialect_rules.random import (
    beta_log_odds,
    exponential_of,
    gamma_parts,
    log_standard_gamma,
    negative,
    normal,
    normal_of,
    normal_pairs,
    register_sampler,
    rejection,
    require,
    scipy_domain_error,
    split,
    uniform,
    uniform_draws,
    uniforms,
    written_uniforms,
)
from dialect_rules.special import erfc_inverse_of_log, erfcx
from lowering.builders import (
    broadcast_in_dim,
    compare,
    convert,
    copysign,
    dim_value,
    divide,
    full_like,
    hypot,
    iota,
    polynomial_log,
    polynomial_log1p,
    remainder,
    select,
    shape_of,
    sin_cos_pi_of_offset,
    value_dtype,
)
from lowering.regions import fold

# --- small arithmetic helpers ------------------------------------------------------------


def _c(like, value):
    return full_like(like, value)


def _lt(a, value):
    return compare(a, _c(a, value), "LT")


def _not(mask):
    return hlo.not_(mask)


def _square(x):
    return hlo.multiply(x, x)


# --- standard draws -------------------------------------------------------------------


def _symmetric(u):
    """2u - 1 for an open uniform u: exact, never 0 or +-1, symmetric about 0."""
    return hlo.subtract(hlo.add(u, u), _c(u, 1.0))


def cauchy_of(u):
    """Standard Cauchy numbers cot(pi w / 2), w = 2u - 1: the quantile written so that
    the far tails (w near 0) come from a small angle known to full relative precision,
    unlike tan(pi (u - 1/2)) near u = 0 or 1. The cosine and sine are the polynomials of
    `sin_cos_pi_of_offset`: XLA's float64 tan is a libm call per element, which keeps the
    kernel it is fused into, the uniforms' cipher included, from being vectorized (10^6
    Cauchy draws 10.0 ms a call with it, 2.4 with these; the same holds of the logs of
    the Laplace, logistic and Gumbel samplers, which are `polynomial_log`'s)."""
    w = _symmetric(u)
    sin, cos = sin_cos_pi_of_offset(hlo.multiply(w, _c(w, 0.5)))
    return divide(cos, sin)


# --- parameter checks ---------------------------------------------------------------


def _numpy_check(index, message, fails):
    """numpy's check of parameter `index`: NaN passes, as in numpy."""
    def checks(ctx, node, *params):
        require(ctx, fails(params[index]), message)
    return checks


def _all_checks(*checks):
    def run(ctx, node, *params):
        for check in checks:
            check(ctx, node, *params)
    return run


def _not_positive(x):
    return compare(x, _c(x, 0.0), "LE")


def _scipy_failed(shapes, scale):
    """scipy.stats' `rvs` check fails unless every shape parameter is > 0 and the scale
    >= 0 (NaN fails both)."""
    fails = [_not(compare(x, _c(x, 0.0), "GT")) for x in shapes]
    fails.append(_not(compare(scale, _c(scale, 0.0), "GE")))
    return functools.reduce(hlo.or_, fails)


def _scipy_checks(name, shapes=(), scale=1):
    """scipy's check of the parameters at indices `shapes` and `scale`: one message."""
    def checks(ctx, node, *params):
        require(ctx, _scipy_failed([params[i] for i in shapes], params[scale]), scipy_domain_error(name))
    return checks


def _location_scale(loc, scale, z):
    """scipy's `z * scale + loc`, giving `loc` where scale is 0 (scipy does so when
    every scale is 0) even for an infinite z."""
    return select(compare(scale, _c(scale, 0.0), "EQ"), loc, hlo.add(loc, hlo.multiply(scale, z)))


# --- location-scale families by inversion ----------------------------------------------


@register_sampler(rv.HalfNormalRV, checks=_scipy_checks("halfnorm"))
def _halfnormal(key, dims, loc, scale):
    """scipy.stats.halfnorm: loc + scale |N(0, 1)|."""
    return _location_scale(loc, scale, hlo.abs(normal(key, dims, value_dtype(loc))))


@register_sampler(rv.LogNormalRV, checks=_numpy_check(1, "sigma < 0", negative))
def _lognormal(key, dims, mean, sigma):
    """numpy's lognormal: exp(mean + sigma N(0, 1))."""
    z = normal(key, dims, value_dtype(mean))
    return hlo.exponential(hlo.add(mean, hlo.multiply(sigma, z)))


@register_sampler(rv.ExponentialRV, checks=_numpy_check(0, "scale < 0", negative))
def _exponential(key, dims, scale):
    return hlo.multiply(scale, exponential_of(uniform(key, dims, value_dtype(scale), open_zero=True)))


@register_sampler(rv.CauchyRV, checks=_scipy_checks("cauchy"))
def _cauchy(key, dims, loc, scale):
    return _location_scale(loc, scale, cauchy_of(uniform(key, dims, value_dtype(loc), open_zero=True)))


@register_sampler(rv.HalfCauchyRV, checks=_scipy_checks("halfcauchy"))
def _halfcauchy(key, dims, loc, scale):
    """|Cauchy| = cot(pi |w| / 2): the half-Cauchy quantile tan(pi q / 2) at q = 1 - |w|."""
    return _location_scale(loc, scale, hlo.abs(cauchy_of(uniform(key, dims, value_dtype(loc), open_zero=True))))


@register_sampler(rv.LaplaceRV, checks=_numpy_check(1, "scale < 0", negative))
def _laplace(key, dims, loc, scale):
    """Inversion as numpy: a random sign times the exponential -log|w|, |w| in (0, 1)
    uniform (w = 2u - 1 exact)."""
    w = _symmetric(uniform(key, dims, value_dtype(loc), open_zero=True))
    z = hlo.multiply(hlo.sign(w), polynomial_log(hlo.abs(w)))
    return hlo.subtract(loc, hlo.multiply(scale, z))


@register_sampler(rv.LogisticRV, checks=_numpy_check(1, "scale < 0", negative))
def _logistic(key, dims, loc, scale):
    """Inversion as numpy: logit(u) = log(u) - log1p(-u), each tail from its own term."""
    u = uniform(key, dims, value_dtype(loc), open_zero=True)
    z = hlo.subtract(polynomial_log(u), polynomial_log1p(hlo.negate(u)))
    return hlo.add(loc, hlo.multiply(scale, z))


@register_sampler(rv.GumbelRV, checks=_scipy_checks("gumbel_r"))
def _gumbel(key, dims, loc, scale):
    """scipy.stats.gumbel_r by inversion: -log(E), E = -log(q) standard exponential."""
    z = hlo.negate(polynomial_log(exponential_of(uniform(key, dims, value_dtype(loc), open_zero=True))))
    return _location_scale(loc, scale, z)


def _weibull_checks(ctx, node, a):
    require(ctx, negative(a), "a < 0")


@register_sampler(rv.WeibullRV, checks=_weibull_checks)
def _weibull(key, dims, a):
    """numpy's weibull: E^(1/a), and 0 for a = 0."""
    e = exponential_of(uniform(key, dims, value_dtype(a), open_zero=True))
    x = hlo.power(e, divide(_c(a, 1.0), a))
    return select(compare(a, _c(a, 0.0), "EQ"), _c(a, 0.0), x)


@register_sampler(rv.ParetoRV, checks=_scipy_checks("pareto", shapes=(0,), scale=1))
def _pareto(key, dims, b, scale):
    """scipy.stats.pareto by inversion: (1 - q)^(-1/b) = exp(E / b), support x >= scale."""
    z = hlo.exponential(divide(exponential_of(uniform(key, dims, value_dtype(b), open_zero=True)), b))
    return _location_scale(_c(b, 0.0), scale, z)


@register_sampler(rv.TruncExponentialRV, checks=_scipy_checks("truncexpon", shapes=(0,), scale=2))
def _truncexpon(key, dims, b, loc, scale):
    """scipy.stats.truncexpon by inversion: -log1p(q expm1(-b)) on [0, b], q in [0, 1);
    both functions keep the digits a small b or q would lose."""
    q = uniform(key, dims, value_dtype(b))
    z = hlo.negate(hlo.log_plus_one(hlo.multiply(q, hlo.exponential_minus_one(hlo.negate(b)))))
    return _location_scale(loc, scale, z)


_triangular_checks = _all_checks(
    lambda ctx, node, left, mode, right: require(ctx, compare(left, mode, "GT"), "left > mode"),
    lambda ctx, node, left, mode, right: require(ctx, compare(mode, right, "GT"), "mode > right"),
    lambda ctx, node, left, mode, right: require(ctx, compare(left, right, "EQ"), "left == right"),
)


@register_sampler(rv.TriangularRV, checks=_triangular_checks)
def _triangular(key, dims, left, mode, right):
    """Inversion as numpy; sqrt(u (m - l)(r - l)) taken as sqrt(u (m - l)) sqrt(r - l),
    which cannot overflow, and is numpy's -inf for an infinite left."""
    u = uniform(key, dims, value_dtype(left))
    base = hlo.sqrt(hlo.subtract(right, left))
    rising = hlo.add(left, hlo.multiply(hlo.sqrt(hlo.multiply(u, hlo.subtract(mode, left))), base))
    falling_u = hlo.subtract(_c(u, 1.0), u)
    falling = hlo.subtract(right, hlo.multiply(hlo.sqrt(hlo.multiply(falling_u, hlo.subtract(right, mode))), base))
    ratio = divide(hlo.subtract(mode, left), hlo.subtract(right, left))
    return select(compare(u, ratio, "LE"), rising, falling)


# --- built on gamma draws ---------------------------------------------------------------


def _invgamma_checks(ctx, node, shape, scale):
    require(ctx, negative(shape), "shape < 0")
    # numpy checks the gamma's scale 1 / scale, so -0.0 fails too.
    require(ctx, negative(divide(_c(scale, 1.0), scale)), "scale < 0")


@register_sampler(rv.InvGammaRV, checks=_invgamma_checks)
def _invgamma(key, dims, shape, scale):
    """PyTensor's 1 / gamma(shape, 1 / scale) = scale exp(-log G): the log keeps a
    small shape's draws finite where G itself underflows."""
    return hlo.multiply(scale, hlo.exponential(hlo.negate(log_standard_gamma(key, shape))))


_beta_checks = _all_checks(
    _numpy_check(0, "a <= 0", _not_positive),
    _numpy_check(1, "b <= 0", _not_positive),
)


@register_sampler(rv.BetaRV, checks=_beta_checks)
def _beta(key, dims, a, b):
    """logistic(log Ga - log Gb) from two gammas in logs (the core's `beta_log_odds`):
    no Johnk switch is needed for small a, b."""
    return hlo.logistic(beta_log_odds(key, a, b))


@register_sampler(rv.StudentTRV, checks=_scipy_checks("t", shapes=(0,), scale=2))
def _student_t(key, dims, df, loc, scale):
    """numpy's standard_t: N sqrt(nu / G), G ~ Gamma(nu = df / 2), with G in logs so a
    small df gives its huge finite draws (not inf where G underflows)."""
    gamma_key, normal_key = split(key, 2)
    half = hlo.multiply(df, _c(df, 0.5))
    log_ratio = hlo.subtract(polynomial_log(half), log_standard_gamma(gamma_key, half))
    z = hlo.multiply(normal(normal_key, dims, value_dtype(df)), hlo.exponential(hlo.multiply(log_ratio, _c(df, 0.5))))
    return _location_scale(loc, scale, z)


def _gengamma_checks(ctx, node, alpha, p, lambd):
    # scipy sees a = alpha / p and c = p, and requires c != 0 too
    failed = hlo.or_(_scipy_failed([divide(alpha, p)], lambd), compare(p, _c(p, 0.0), "EQ"))
    require(ctx, failed, scipy_domain_error("gengamma"))


@register_sampler(rv.GenGammaRV, checks=_gengamma_checks)
def _gengamma(key, dims, alpha, p, lambd):
    """scipy.stats.gengamma(a = alpha / p, c = p, scale = lambd): G^(1/p), G ~ Gamma(a).

    In logs, log G / p = head / p + tail / alpha: for a small a (a large p) G
    underflows to 0 while G^(1/p) is an ordinary number; this form never forms
    log G itself.
    """
    head, tail = gamma_parts(key, divide(alpha, p))
    z = hlo.exponential(hlo.add(divide(head, p), divide(tail, alpha)))
    return _location_scale(_c(alpha, 0.0), lambd, z)


# --- Wald and von Mises ------------------------------------------------------------------


_wald_checks = _all_checks(
    _numpy_check(0, "mean <= 0", _not_positive),
    _numpy_check(1, "scale <= 0", _not_positive),
)


@register_sampler(rv.WaldRV, checks=_wald_checks)
def _wald(key, dims, mean, scale):
    """Michael, Schucany and Haas (1976), as numpy, rewritten without cancellation.

    With y = mean N^2 the two roots are mean / d^2 and mean d^2, d = a + sqrt(a^2 + 1)
    = exp(asinh a), a = |N| sqrt(mean / (4 scale)); the smaller is kept with
    probability mean / (mean + x) = logistic(2 asinh a). numpy's
    mean + mean/(2 scale) (y - sqrt(4 scale y + y^2)) loses every digit once y >> scale.
    """
    u_normal, u_root = written_uniforms(key, dims, value_dtype(mean), 2, open_zero=True)
    a = hlo.multiply(hlo.abs(normal_of(u_normal)), hlo.sqrt(divide(mean, hlo.multiply(scale, _c(scale, 4.0)))))
    t = hlo.multiply(chlo.asinh(a), _c(a, 2.0))
    larger = compare(u_root, hlo.logistic(t), "GT")
    return hlo.multiply(mean, hlo.exponential(select(larger, t, hlo.negate(t))))


def _vonmises_checks(ctx, node, mu, kappa):
    require(ctx, negative(kappa), "kappa < 0")


_VONMISES_UNIFORM = 1e-8  # numpy: below, a uniform angle
_VONMISES_NORMAL = 1e6  # numpy: above, a wrapped normal


@register_sampler(rv.VonMisesRV, checks=_vonmises_checks)
def _vonmises(key, dims, mu, kappa):
    """Best and Fisher (1979) as numpy: wrapped-Cauchy proposals accepted with
    probability Y e^(1 - Y), Y = kappa (s - cos theta); numpy's uniform below
    kappa = 1e-8 and wrapped normal above 1e6.

    Written for float32 too: rho = 2 kappa / (r + sqrt(2r)), r = 1 + sqrt(1 + 4 kappa^2)
    (numpy's (r - sqrt(2r)) / (2 kappa) cancels for small kappa); the proposal is
    theta = 2 atan(c C), C standard Cauchy, c = (1 - rho) / (1 + rho), with 1 - rho
    formed from positive terms; and s - cos theta = (1 - rho)^2 / (2 rho) +
    2 sin^2(theta / 2), which acos(W) near W = 1 would lose for a large kappa, with
    sin^2(theta / 2) = (c C)^2 / (1 + (c C)^2) and the bound's logs `polynomial_log`'s.
    """
    dtype = value_dtype(mu)
    loop_key, uniform_key = split(key, 2)
    u_normal, u_flat = uniforms(uniform_key, dims, dtype, 2, open_zero=True)
    q = hlo.sqrt(hlo.add(_c(kappa, 1.0), hlo.multiply(_c(kappa, 4.0), _square(kappa))))
    r = hlo.add(_c(q, 1.0), q)
    root = hlo.sqrt(hlo.add(r, r))
    rho = divide(hlo.add(kappa, kappa), hlo.add(r, root))
    # 1 - rho = (r - 2 kappa + sqrt(2r)) / (r + sqrt(2r)), r - 2 kappa = 1 + 1 / (q + 2 kappa)
    gap = hlo.add(_c(q, 1.0), divide(_c(q, 1.0), hlo.add(q, hlo.add(kappa, kappa))))
    one_minus_rho = divide(hlo.add(gap, root), hlo.add(r, root))
    c = divide(one_minus_rho, hlo.subtract(_c(rho, 2.0), one_minus_rho))
    s_minus_one = divide(_square(one_minus_rho), hlo.add(rho, rho))

    def propose(params, u, v):
        c, kappa, s_minus_one = params
        t = hlo.multiply(c, cauchy_of(u))
        half = chlo.atan(t)
        # sin^2(atan t) = t^2 / (1 + t^2), written to give 0 at t = 0 and 1 at |t| = inf
        sin_squared = divide(_c(t, 1.0), hlo.add(_c(t, 1.0), divide(_c(t, 1.0), _square(t))))
        y = hlo.multiply(kappa, hlo.add(s_minus_one, hlo.multiply(_c(t, 2.0), sin_squared)))
        bound = hlo.add(hlo.subtract(polynomial_log(y), polynomial_log(v)), hlo.subtract(_c(y, 1.0), y))
        return hlo.add(half, half), compare(bound, _c(bound, 0.0), "GE")

    middle = hlo.and_(compare(kappa, _c(kappa, _VONMISES_UNIFORM), "GE"), compare(kappa, _c(kappa, _VONMISES_NORMAL), "LE"))
    theta = hlo.add(mu, rejection(loop_key, dims, dtype, uniform_draws(dtype, 2, open_zero=True), propose, [c, kappa, s_minus_one], middle))
    # numpy's fmod(|x| + pi, 2 pi) - pi, with x's sign
    wrapped = hlo.subtract(remainder(hlo.add(hlo.abs(theta), _c(theta, math.pi)), _c(theta, 2 * math.pi)), _c(theta, math.pi))
    wrapped = select(_lt(theta, 0.0), hlo.negate(wrapped), wrapped)

    near = hlo.add(mu, hlo.multiply(hlo.rsqrt(kappa), normal_of(u_normal)))
    near = select(_lt(near, -math.pi), hlo.add(near, _c(near, 2 * math.pi)), near)
    near = select(compare(near, _c(near, math.pi), "GT"), hlo.subtract(near, _c(near, 2 * math.pi)), near)

    flat = hlo.multiply(_symmetric(u_flat), _c(mu, math.pi))
    out = select(_lt(kappa, _VONMISES_UNIFORM), flat, select(compare(kappa, _c(kappa, _VONMISES_NORMAL), "GT"), near, wrapped))
    return select(compare(kappa, kappa, "NE"), kappa, out)


# --- PyMC's own RandomVariables -----------------------------------------------------------
# Registered by qualified name, so loading the rules never imports PyMC. Each `rng_fn` is
# numpy's or scipy.stats' sampler; these draw the same distributions.

_PYMC = "pymc.distributions.continuous."


@register_sampler(_PYMC + "WaldRV", checks=_wald_checks)
def _pymc_wald(key, dims, mu, lam, alpha):
    """PyMC's Wald: numpy's wald(mu, lam), shifted by alpha."""
    return hlo.add(_wald(key, dims, mu, lam), alpha)


@register_sampler(_PYMC + "MoyalRV", checks=_scipy_checks("moyal", scale=1))
def _moyal(key, dims, mu, sigma):
    """scipy's -log G for G ~ Gamma(1/2, scale 2), from log G (`log_standard_gamma`):
    finite where G itself would underflow to 0."""
    log_g = log_standard_gamma(key, _c(mu, 0.5))
    return _location_scale(mu, sigma, hlo.negate(hlo.add(log_g, _c(log_g, math.log(2.0)))))


def _skewnorm_checks(ctx, node, mu, sigma, alpha):
    finite = _lt(hlo.abs(alpha), math.inf)  # NaN fails too
    require(ctx, hlo.or_(_not(finite), _scipy_failed([], sigma)), scipy_domain_error("skewnorm"))


@register_sampler(_PYMC + "SkewNormalRV", checks=_skewnorm_checks)
def _skewnormal(key, dims, mu, sigma, alpha):
    """scipy's: from normals u0, v, u1 = d u0 + sqrt(1 - d^2) v with d = alpha /
    sqrt(1 + alpha^2), taken with u0's sign. d and sqrt(1 - d^2) come from q = alpha or
    1 / alpha, whichever is at most 1 in size: alpha^2 never overflows, and for a large
    alpha sqrt(1 - d^2) is |q| / sqrt(1 + q^2) rather than a difference near 0."""
    dtype = value_dtype(mu)
    u0, v = normal_pairs(key, dims, dtype)
    big = compare(hlo.abs(alpha), _c(alpha, 1.0), "GT")
    q = select(big, divide(_c(alpha, 1.0), alpha), alpha)
    root = hlo.sqrt(hlo.add(_c(q, 1.0), _square(q)))
    d = divide(select(big, copysign(_c(alpha, 1.0), alpha), q), root)
    c = divide(select(big, hlo.abs(q), _c(q, 1.0)), root)
    u1 = hlo.add(hlo.multiply(d, u0), hlo.multiply(c, v))
    z = select(compare(u0, _c(u0, 0.0), "GE"), u1, hlo.negate(u1))
    return _location_scale(mu, sigma, z)


def _rice_checks(ctx, node, b, sigma):
    nonnegative = compare(b, _c(b, 0.0), "GE")  # NaN fails
    require(ctx, hlo.or_(_not(nonnegative), _scipy_failed([], sigma)), scipy_domain_error("rice"))


@register_sampler(_PYMC + "RiceRV", checks=_rice_checks)
def _rice(key, dims, b, sigma):
    """scipy's |(b / sqrt(2) + N1, b / sqrt(2) + N2)| times sigma, the norm by `hypot`
    (numpy's sum of squares overflows for b beyond 1e154)."""
    n1, n2 = normal_pairs(key, dims, value_dtype(b))
    shift = hlo.multiply(b, _c(b, math.sqrt(0.5)))
    z = hypot(hlo.add(shift, n1), hlo.add(shift, n2))
    return _location_scale(_c(b, 0.0), sigma, z)


@register_sampler(_PYMC + "SkewStudentTRV", checks=_scipy_checks("jf_skew_t", shapes=(0, 1), scale=3))
def _skew_student_t(key, dims, a, b, mu, sigma):
    """scipy's Jones-Faddy draw (2X - 1) sqrt(a + b) / (2 sqrt(X (1 - X))), X ~ Beta(a, b),
    which is sqrt(a + b) sinh(L / 2) for L = log(X / (1 - X)) (`beta_log_odds`): no 0/0
    where X rounds to 0 or 1."""
    half = hlo.multiply(beta_log_odds(key, a, b), _c(a, 0.5))
    return _location_scale(mu, sigma, hlo.multiply(hlo.sqrt(hlo.add(a, b)), chlo.sinh(half)))


def _truncnorm_bounds(mu, sigma, lower, upper):
    """scipy's standardized bounds a = (lower - mu) / sigma, b = (upper - mu) / sigma."""
    return (divide(hlo.subtract(x, mu), sigma) for x in (lower, upper))


def _truncnorm_checks(ctx, node, mu, sigma, lower, upper):
    a, b = _truncnorm_bounds(mu, sigma, lower, upper)
    failed = hlo.or_(_not(compare(a, b, "LT")), _scipy_failed([], sigma))  # NaN fails
    require(ctx, failed, scipy_domain_error("truncnorm"))


_SQRT2 = math.sqrt(2.0)


def _log_normal_sf(t):
    """log Q(t), Q the standard normal's survival function, for t >= 0: log(erfcx(t /
    sqrt 2) / 2) - t^2 / 2, finite long after Q underflows."""
    half = hlo.multiply(t, _c(t, 1 / _SQRT2))
    return hlo.subtract(hlo.log(hlo.multiply(erfcx(half), _c(t, 0.5))), hlo.multiply(half, half))


def _normal_quantile_of_sf(log_q):
    """The t >= 0 with log Q(t) = log_q: sqrt 2 erfc^-1(2 Q)."""
    return hlo.multiply(erfc_inverse_of_log(hlo.add(log_q, _c(log_q, math.log(2.0)))), _c(log_q, _SQRT2))


@register_sampler(_PYMC + "TruncatedNormalRV", checks=_truncnorm_checks)
def _truncated_normal(key, dims, mu, sigma, lower, upper):
    """scipy's truncnorm by inversion, in float64, with every tail in logs.

    The standardized interval (a, b) is mirrored to have a + b >= 0 (the draw negated
    back). Where it holds 0, x = Phi^-1(Phi(a) + u m), the mass m = (erf(b / sqrt 2) -
    erf(a / sqrt 2)) / 2 exact even for a tiny interval, the quantile taken from
    whichever side of 1/2 the probability falls on (`erfc_inverse_of_log`). Where it lies
    right of 0, x = Q^-1(Q(a) - u (Q(a) - Q(b))) with log Q(a) + log1p(u expm1(log Q(b) -
    log Q(a))) as the target: no Q is formed, so a = 40 or a = 1e6 draws as exactly as
    a = 1 (scipy's truncnorm also works in logs there). Draws are clamped to [a, b].
    """
    dtype = value_dtype(mu)
    mu, sigma, lower, upper = (convert(x, "float64") for x in (mu, sigma, lower, upper))
    u = uniform(key, dims, "float64", open_zero=True)
    a, b = _truncnorm_bounds(mu, sigma, lower, upper)
    flip = _lt(hlo.add(a, b), 0.0)
    a, b = select(flip, hlo.negate(b), a), select(flip, hlo.negate(a), b)
    log2 = _c(u, math.log(2.0))
    # (The logs here stay XLA's: with `polynomial_log`/`polynomial_log1p` 10^5 draws took
    # 8.9-9.1 ms a call against 5.7-6.2, trees before and after in alternating processes.)

    # a <= 0 < b: the central inversion
    erf_a, erf_b = (chlo.erf(hlo.multiply(t, _c(t, 1 / _SQRT2))) for t in (a, b))
    mass = hlo.multiply(hlo.subtract(erf_b, erf_a), _c(u, 0.5))
    p = hlo.add(hlo.multiply(hlo.add(erf_a, _c(u, 1.0)), _c(u, 0.5)), hlo.multiply(u, mass))  # Phi(a) + u m
    q = hlo.add(hlo.multiply(hlo.subtract(_c(u, 1.0), erf_b), _c(u, 0.5)),
                hlo.multiply(hlo.subtract(_c(u, 1.0), u), mass))  # Q(b) + (1 - u) m
    below = _lt(p, 0.5)
    side = erfc_inverse_of_log(hlo.add(hlo.log(select(below, p, q)), log2))
    central = hlo.multiply(select(below, hlo.negate(side), side), _c(u, _SQRT2))

    # 0 < a < b: the right tail, in logs
    tail_a = hlo.maximum(a, _c(a, 0.0))  # keeps the unused branch finite
    log_qa, log_qb = _log_normal_sf(tail_a), _log_normal_sf(hlo.maximum(b, tail_a))
    target = hlo.add(log_qa, hlo.log_plus_one(hlo.multiply(u, hlo.exponential_minus_one(hlo.subtract(log_qb, log_qa)))))
    tail = _normal_quantile_of_sf(target)

    x = hlo.clamp(a, select(compare(a, _c(a, 0.0), "GT"), tail, central), b)
    x = select(flip, hlo.negate(x), x)
    return convert(_location_scale(mu, sigma, x), dtype)


@register_sampler(_PYMC + "InterpolatedRV")
def _interpolated(key, dims, x, pdf, cdf):
    """PyMC's rng_fn: p uniform, i the piece with cdf[i] < p <= cdf[i + 1], and the root
    of the piece's quadratic cdf, x[i] + 2d / (pdf[i] + sqrt(pdf[i]^2 + 2 s d)) with
    d = p - cdf[i] and s the piece's slope: the rng_fn's (sqrt(...) - pdf[i]) / s
    rationalized, so a slope near 0 loses nothing and needs no switch (a flat piece of
    zero density gives x[i], as there). Batched points work too (the rng_fn refuses
    them); each draw reads its piece by a one-hot sum over the points."""
    axis = len(dims)
    points = shape_of(cdf)
    u = uniform(key, dims, value_dtype(cdf), open_zero=True)
    p = broadcast_in_dim(u, points, range(axis))
    count = fold(convert(_lt(hlo.subtract(cdf, p), 0.0), "int64"), [axis], hlo.add, 0)
    last = hlo.subtract(broadcast_in_dim(dim_value(points[axis]), shape_of(count), []), _c(count, 2))
    piece = hlo.clamp(_c(count, 0), hlo.subtract(count, _c(count, 1)), last)
    k = iota(points, axis, "int64")

    def at(values, shift):
        here = compare(k, broadcast_in_dim(hlo.add(piece, _c(piece, shift)), points, range(axis)), "EQ")
        return fold(select(here, values, full_like(values, 0.0)), [axis], hlo.add, 0.0)

    x0, x1, f0, f1, c0 = at(x, 0), at(x, 1), at(pdf, 0), at(pdf, 1), at(cdf, 0)
    slope = divide(hlo.subtract(f1, f0), hlo.subtract(x1, x0))
    d = hlo.subtract(u, c0)
    root = hlo.sqrt(hlo.maximum(hlo.add(_square(f0), hlo.multiply(_c(d, 2.0), hlo.multiply(slope, d))), _c(d, 0.0)))
    step = divide(hlo.add(d, d), hlo.add(f0, root))
    return hlo.add(x0, select(compare(hlo.add(f0, root), _c(d, 0.0), "EQ"), _c(d, 0.0), step))
