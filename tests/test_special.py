"""Transcendental and special functions vs PyTensor's Python mode (numpy/scipy)."""

from __future__ import annotations

import math

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.special as sp
from pytensor.graph.fg import FunctionGraph
from pytensor.tensor.xlogx import xlogx, xlogy0

from dialect_rules.special import XlogX
from lowering import lower

from tests.helpers import PY_MODE, compare_with_py

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

REAL = np.array([-np.inf, -30.0, -3.7, -2.0, -1.0, -0.5, -1e-8, -0.0, 0.0, 1e-8, 0.25, 0.5,
                 0.99, 1.0, 1.5, 2.0, 7.3, 20.0, 40.0, 700.0, np.inf, np.nan])
UNIT = np.array([-1.0, -0.999, -0.5, -1e-6, 0.0, 1e-6, 0.3, 0.5, 0.999, 1.0, 1.5, np.nan])

ELEMENTARY = [
    pt.exp, pt.exp2, pt.expm1, pt.log, pt.log2, pt.log10, pt.log1p, pt.sin, pt.cos, pt.tan,
    pt.arcsin, pt.arccos, pt.arctan, pt.sinh, pt.cosh, pt.tanh, pt.arcsinh, pt.arccosh,
    pt.arctanh, pt.deg2rad, pt.rad2deg, pt.sigmoid, pt.softplus, pt.log1mexp,
]
SPECIAL = [pt.erf, pt.erfc, pt.erfinv, pt.erfcinv, pt.gammaln, pt.psi, pt.tri_gamma, pt.gamma]

# XLA's approximations of the special functions are good to a few ulps in float64
# over most of the domain; these are the tolerances the tests hold them to.
SPECIAL_TOL = {"float16": dict(rtol=5e-3, atol=5e-3), "float32": dict(rtol=2e-5, atol=1e-6),
               "float64": dict(rtol=1e-9, atol=1e-12)}


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_elementary_functions(dtype):
    x = pt.vector("x", dtype=dtype)
    values = REAL.astype(dtype)
    # XLA's float32 sinh/cosh at large |x| are 1.4e-6 off in relative terms.
    tol = dict(rtol=4e-6, atol=1e-10) if dtype == "float32" else {}
    compare_with_py([x], [f(x) for f in ELEMENTARY], [values], **tol)
    compare_with_py([x], [pt.arcsin(x), pt.arccos(x), pt.arctanh(x)], [UNIT.astype(dtype)], **tol)


def test_float64_arctanh_follows_numpy_on_a_dense_grid():
    """fdlibm's 0.5 log1p(2a + 2a**2 / (1 - a)) below 1/2 and 0.5 log1p(2a / (1 - a))
    above, with our log1p: CHLO's atanh took XLA's, and was 129 ulps off near 0.414."""
    x = pt.dvector("x")
    values = np.concatenate([np.linspace(-1, 1, 40001), np.linspace(0.40, 0.43, 3001), -np.geomspace(1e-300, 0.5, 601),
                             [0.5 - 2**-54, 0.5, 0.5 + 2**-53, 1 - 2**-53, -1.0, 1.0, 1.5, np.inf, np.nan, -0.0]])
    compare_with_py([x], [pt.arctanh(x)], [values], rtol=7e-16, atol=0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_special_functions(dtype):
    x = pt.vector("x", dtype=dtype)
    positive = np.array([1e-6, 0.1, 0.5, 1.0, 1.5, 2.5, 10.0, 30.5, 100.0, np.inf], dtype)
    negative = np.array([-0.5, -1.5, -2.5, -3.7, -10.2], dtype)
    poles = np.array([0.0, -0.0, -1.0, -2.0], dtype)
    tol = SPECIAL_TOL[dtype]
    compare_with_py([x], [pt.erf(x), pt.erfc(x)], [REAL.astype(dtype)], **tol)
    compare_with_py([x], [pt.erfinv(x)], [UNIT.astype(dtype)], **tol)
    compare_with_py([x], [pt.erfcinv(x)], [np.array([0.001, 0.1, 0.5, 1.0, 1.5, 1.999, 0, 2], dtype)], **tol)
    compare_with_py([x], [pt.gammaln(x), pt.psi(x), pt.tri_gamma(x), pt.gamma(x)],
                    [np.concatenate([positive[:-2], negative])], **tol)
    compare_with_py([x], [pt.gammaln(x), pt.gamma(x)], [poles], **tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_erfcinv_keeps_its_digits_in_both_tails(dtype):
    """erf_inv(1 - x) has no digits left once 1 - x rounds to 1 (x below 1e-16 gave inf,
    and 5.8636 for scipy's 5.8724 at 1e-16); scipy's erfcinv stays exact down to the
    smallest normal float, and from 1 to 2 through erfcinv(2 - x) = -erfcinv(x)."""
    x = pt.vector("x", dtype=dtype)
    tiny = np.finfo(dtype).tiny  # below it XLA's CPU flushes inputs to 0 (README)
    values = np.array([tiny, 1e-300, 1e-100, 1e-20, 1e-17, 1e-16, 1e-10, 1e-5, 0.03, 0.2, 0.49,
                       0.51, 0.9, 1 - 1e-9, 1 + 1e-9, 1.2, 1.97, 2 - 1e-12, 2 - 2**-52], dtype="float64")
    values = values[values >= tiny].astype(dtype)
    values = values[values < 2]  # in float32 the last two round to 2
    got = compare_with_py([x], [pt.erfcinv(x)], [values], rtol=2e-15 if dtype == "float64" else 0)[0]
    assert np.isfinite(got).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_erfinv_keeps_its_digits_near_one(dtype):
    """XLA's erf_inv drifts as |x| -> 1 (4.0875375394 for scipy's 4.0875375398 at
    1 - 7.4e-9: 5e5 ulps); erfcinv(1 - |x|) is exact from |x| = 1/2 on."""
    x = pt.vector("x", dtype=dtype)
    near_one = 1 - np.logspace(-16, -1, 16)
    values = np.concatenate([near_one, -near_one, [1 - 7.44e-9, 0.5, -0.5, 0.4999, 0.75, 1.0, -1.0, 1.5]])
    compare_with_py([x], [pt.erfinv(x)], [values.astype(dtype)], rtol=2e-15 if dtype == "float64" else 0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_erfinv_of_zeros_is_positive_zero_as_in_scipy(dtype):
    """scipy's erfinv(-0.0) is +0.0 (its erf_inv returns 0 for a zero); the sign of a zero
    follows the Python mode too."""
    x = pt.vector("x", dtype=dtype)
    values = np.array([-0.0, 0.0], dtype)
    got = compare_with_py([x], [pt.erfinv(x)], [values])[0]
    np.testing.assert_array_equal(np.signbit(got), np.signbit(sp.erfinv(values)))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64", "bool"])
def test_integer_inputs_compute_in_the_output_float_dtype(dtype):
    x = pt.vector("x", dtype=dtype)
    values = np.array([0, 1, 2, 5, 7], dtype=dtype) if dtype != "bool" else np.array([0, 1, 1, 0], bool)
    compare_with_py([x], [pt.exp(x), pt.log1p(x), pt.sqrt(x), pt.sin(x), pt.erf(x), pt.sigmoid(x)],
                    [values], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_inputs(dtype):
    x = pt.vector("x", dtype=dtype)
    values = np.array([0.5 + 0.5j, -1 + 2j, 3 - 0.25j, -0.5 - 1j], dtype=dtype)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "complex64" else {}
    compare_with_py([x], [pt.exp(x), pt.log(x), pt.sqrt(x), pt.sin(x), pt.cos(x), pt.tanh(x)], [values], **tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_arcsin_of_the_smallest_normal_numbers(dtype):
    """asin(x) = x below sqrt(eps): CHLO's 2 atan2(x, 1 + sqrt(1 - x**2)) went through a
    subnormal, which XLA flushes (asin(2.2e-308) was 0)."""
    x = pt.vector("x", dtype=dtype)
    tiny = np.finfo(dtype).tiny
    values = np.array([tiny, -tiny, 4 * tiny, 1e-20, 0.0, -0.0], dtype=dtype)
    got = compare_with_py([x], pt.arcsin(x), [values])
    np.testing.assert_array_equal(got, values)  # exactly, beyond compare_with_py's atol
    np.testing.assert_array_equal(np.signbit(got), np.signbit(values))


def test_float64_log1p_and_softplus_within_a_few_ulps():
    """XLA's own float64 log1p is up to 129 ulps off around x = -0.414, the edge of its
    small-x formula; ours (`polynomial_log1p`) stays within 2.5 ulps of the exact value,
    so within 3 of numpy's (itself within 0.6). Softplus's log1p(exp(x)) goes through it."""
    rng = np.random.default_rng(11)
    values = np.concatenate([rng.uniform(-0.45, -0.38, 4000), -rng.uniform(0, 1, 2000), rng.uniform(-0.3, 2, 2000),
                             10 ** rng.uniform(-20, 300, 2000), -(10 ** rng.uniform(-300, -1, 2000))])
    x = pt.dvector("x")
    f = pytensor.function([x], [pt.log1p(x), pt.softplus(x)], mode="STABLEHLO")
    log1p, softplus = f(values)
    np.testing.assert_array_max_ulp(log1p, np.log1p(values), maxulp=3)
    near = values < 18  # where PyTensor's softplus is log1p(exp(x))
    np.testing.assert_array_max_ulp(softplus[near], np.log1p(np.exp(values[near])), maxulp=3)
    edges = np.array([0.0, -0.0, -1.0, -2.0, np.inf, -np.inf, np.nan, 1e-300, -1e-300, np.nextafter(-1, 0), 1e308])
    got, want = f(edges)[0], np.log1p(edges)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got[~np.isnan(want)]), np.signbit(want[~np.isnan(want)]))  # -0.0


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_log1p_next_to_its_pole(dtype):
    """log1p(-1 + tiny j) = log(tiny) + pi/2 j: XLA's real part, log1p(x (x + 2) + y^2) / 2,
    underflowed to -inf once y^2 did (1e-30 in complex64, 1e-300 in complex128)."""
    x = pt.vector("x", dtype=dtype)
    tiny = 1e-30 if dtype == "complex64" else 1e-300
    values = np.array([complex(-1, tiny), complex(-1, -1e-20), complex(-1.25, 3 * tiny), -0.75 - 0.25j, -2 + 0j],
                      dtype=dtype)
    compare_with_py([x], pt.log1p(x), [values])


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_exp2_expm1_log1mexp_at_infinities(dtype):
    """numpy's formulas, found by a scan of complex edge values: exp2 is exp(z ln 2) with
    ln 2 scaling each part (XLA's complex power gave NaN at +-inf + 0j, numpy inf and 0);
    expm1 (and log1mexp through it) has a NaN imaginary part where exp(real) overflows
    at imag 0 (XLA gave 0)."""
    x = pt.vector("x", dtype=dtype)
    values = np.array([np.inf, -np.inf, complex(np.inf, 1), complex(-np.inf, 1), 1e308, 1100,
                       3 + 4j, -2.5 + 0.3j, 0j, 1e-10j, complex(np.nan, 0)], dtype=dtype)
    compare_with_py([x], [pt.exp2(x), pt.expm1(x), pt.log1mexp(x)], [values],
                    **(dict(rtol=1e-6) if dtype == "complex64" else {}))




def test_complex64_log1mexp_where_single_precision_exp_overflows():
    """PyTensor's log1mexp of a complex value computes in Python complex (double), so
    complex64 results stay finite past Re z = 88.7, where exp overflows in single."""
    x = pt.vector("x", dtype="complex64")
    values = np.array([89 + 1j, 88.9 + 0j, 100 + 0j, 300 - 2j, -3 + 2j, 0.1 - 0.2j], dtype="complex64")
    compare_with_py([x], [pt.log1mexp(x)], [values])

_ELEMENTARY = {"exp": pt.exp, "sin": pt.sin, "cos": pt.cos, "tan": pt.tan, "sinh": pt.sinh,
               "cosh": pt.cosh, "tanh": pt.tanh}


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_elementary_functions_at_c99_special_values(dtype):
    """Every pair of special parts, signs of zeros included, as numpy's libm gives them
    (C99 Annex G): XLA made NaN of 0 * inf (sin(0 + inf j), cosh(inf + 0j), exp2(inf +
    inf j)) and of inf + NaN j (sqrt, log1p, log1mexp), overflowed sin(710j), whose
    value is finite, and dropped the sign of zeros."""
    parts = [0.0, -0.0, 1.0, -2.5, 710.0, -710.0, 1e300, np.inf, -np.inf, np.nan]
    z = pt.vector("z", dtype=dtype)
    values = np.array([complex(a, b) for a in parts for b in parts], dtype=dtype)
    values = values[np.abs(values.real) != 710]  # exp(-710 + yj) is a denormal XLA flushes
    functions = {**_ELEMENTARY, "exp2": pt.exp2, "sqrt": pt.sqrt, "log1p": pt.log1p, "log1mexp": pt.log1mexp}
    outputs = [fn(z) for fn in functions.values()]
    got = pytensor.function([z], outputs, mode="STABLEHLO")(values)
    expected = pytensor.function([z], outputs, mode=PY_MODE)(values)
    for name, g, e in zip(functions, got, expected):
        for part in (np.real, np.imag):
            np.testing.assert_allclose(part(g), part(e), rtol=1e-6, err_msg=f"{name}{values}")
            zeros = (part(g) == 0) & (part(e) == 0)
            np.testing.assert_array_equal(np.signbit(part(g))[zeros], np.signbit(part(e))[zeros],
                                          err_msg=f"{name}: signs of zero at {values[zeros]}")


@pytest.mark.parametrize("dtype", ["complex64", "complex128", "float32", "float64"])
def test_hyperbolic_and_trig_accuracy_near_zero_and_far_out(dtype):
    """Within a few ulps of numpy from |z| = 1e-8 to the edge of overflow: XLA's complex
    sinh/cosh cancel e^x - e^-x near 0 (1e-6 relative at 1e-8, 7e-2 for complex64 at
    1e-4), and CHLO's real sinh/cosh round x + log(1/2) (5e-14 relative at 700)."""
    finfo = np.finfo(dtype)
    edge = np.log(finfo.max) + 0.5  # where e^x / 2 still fits
    rng = np.random.default_rng(0)
    z = pt.vector("z", dtype=dtype)
    names = ["sinh", "cosh"] if finfo.dtype == dtype else list(_ELEMENTARY)
    f = pytensor.function([z], [_ELEMENTARY[n](z) for n in names], mode="STABLEHLO")
    for scale in (1e-8 if finfo.bits == 64 else 1e-4, 1.0, 20.0, edge):
        signs = rng.choice([-1, 1], size=(2, 400))
        # at the edge, x > 0: e^-x would be a denormal, which XLA's CPU flushes to zero
        re = rng.uniform(0.5, 1.0, 400) * scale * (1 if scale == edge else signs[0])
        values = re if finfo.dtype == dtype else re + 1j * rng.uniform(-3, 3, 400) * signs[1]
        values = values.astype(dtype)
        with np.errstate(over="ignore"):
            expected = [getattr(np, n)(values.astype(np.complex128 if finfo.dtype != dtype else np.float64))
                        for n in names]
        for name, g, e in zip(names, f(values), expected):
            e = e.astype(dtype)
            finite = np.isfinite(e) & (np.abs(e) > finfo.tiny)
            err = np.abs(g[finite] - e[finite]) / np.abs(e[finite])
            assert err.max() < 8 * finfo.eps, f"{name} at scale {scale}: {err.max():.2g} relative"

def test_polygamma_xlogx_xlogy0_arctan2():
    n = pt.vector("n", dtype="int64")
    x, y = pt.vector("x"), pt.vector("y")
    compare_with_py([n, x], [pt.polygamma(n, x)],
                    [np.array([0, 1, 2, 3, 0, 1, 1]), np.array([0.5, 2.5, 7.0, 1.25, -10.2, -10.2, -0.5])],
                    rtol=1e-9)
    import pytensor

    f = pytensor.function([n, x], pt.polygamma(n, x), mode="STABLEHLO")
    with pytest.raises(NotImplementedError, match="order >= 2 at negative x"):
        f(np.array([2]), np.array([-3.5]))
    values = np.array([0.0, 1e-300, 0.5, 2.0, 0.0, 3.0])
    others = np.array([0.0, 0.5, 0.0, 2.0, 5.0, np.inf])
    outs = [pt.arctan2(x - 1, y - 1)]
    if XlogX is not None:  # pytensor 3 replaced these Ops by an OpFromGraph (XLogY)
        outs += [xlogx(x), xlogy0(x, y)]
    compare_with_py([x, y], outs, [values, others])


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_arctan_of_long_vectors_is_numpys(dtype):
    """atan, and atan2(y, 1) from a constant or folded ones, through `polynomial_atan`:
    jaxlib 0.10.2's XLA rewrites atan2(y, 1) into a vectorized atan that, with 512-bit
    vectors, was wrong on vectors of 50 or more elements (at most sizes)
    (von Mises draws all equal to mu) and crashed the process. Float64 within an ulp of
    numpy; narrower dtypes computed in float64 and rounded once (numpy's own float32
    arctan is up to 2 ulps off)."""
    from lowering.passes import ops_named

    y = pt.vector("y", dtype=dtype)
    one = np.asarray(1.0, dtype=dtype)
    outs = [pt.arctan(y), pt.arctan2(y, one), pt.arctan2(y, pt.ones_like(y))]
    fn = pytensor.function([y], outs, mode="STABLEHLO")
    rng = np.random.default_rng(7)
    for n in (64, 4096, 100_000):
        values = rng.uniform(-5, 5, n) * np.exp(rng.uniform(-8, 8, n))
        values[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 0.66, 2.414213562373095, 1.0]
        values = values.astype(dtype)
        with np.errstate(over="ignore"):
            expected = np.arctan(values.astype(np.float64)).astype(dtype)
        for got in fn(values):
            assert got.dtype == dtype
            np.testing.assert_allclose(got, expected, rtol=2 * np.finfo(dtype).eps, atol=0)
            assert np.array_equal(np.signbit(got), np.signbit(expected))
    graph = FunctionGraph([y], outs)
    module = lower(graph).specialize(np.zeros(64, dtype))
    assert not ops_named(module.operation, "stablehlo.atan2"), module


def test_digamma_follows_scipy_on_a_dense_grid():
    """Our digamma (Cephes' steps): the shifted asymptotic series above 0, the
    reflection below with tan of x less its nearest integer, exact however small or
    large |x| is (at x = -1e-10 rounding x - floor(x) cost 5e-7)."""
    x = pt.dvector("x")
    values = np.concatenate([
        np.geomspace(1e-300, 1e300, 2001), np.linspace(0.01, 40, 4001), np.linspace(-30.0005, -0.0005, 3001),
        -np.geomspace(1e-12, 1e15, 271), [9.999999999999998, 10.0, 0.5, 1.4616321449683623, -0.5, -7.5, -1e-300],
    ])
    compare_with_py([x], [pt.psi(x)], [values], rtol=1e-11, atol=1e-14)


def test_gammaln_follows_scipy_on_a_dense_grid():
    """Our lgamma's steps (the rational on [2, 3) and the recurrence's product below 13,
    Stirling's series beyond, the reflection below 1/2) and its logs and sine taken as
    polynomials: scipy to 2e-13, its own error next to the roots 1 and 2 (ours is within
    1.5e-15 of 40-digit mpmath there), on both sides of 13 and of 1/2, at the far ends and
    near the negative poles."""
    x = pt.dvector("x")
    values = np.concatenate([
        np.linspace(0.5, 40, 4001), np.geomspace(1e-300, 1e305, 2001), np.linspace(1e-6, 0.5, 1001),
        np.linspace(-30.0005, -0.0005, 3001), -np.geomspace(1e-12, 1e15, 271) - 0.25,
        [12.999999999999998, 13.0, 2.556348e305, 2.6e305, 1e308, -4503599627370495.5, 2.3e-308],
    ])
    compare_with_py([x], [pt.gammaln(x)], [values], rtol=2e-13, atol=0)


def test_gamma_gives_the_factorials_exactly():
    """gamma(n + 1) is n! to the bit up to 22! (the last factorial a double holds) and
    23! rounded once, as scipy's: every factor of the recurrence and its product is exact.
    exp(lgamma) kept lgamma's absolute error (gamma(5) was 24.000000000000004)."""
    n = pt.dvector("n")
    values = np.arange(0.0, 24.0)
    got = compare_with_py([n], [pt.special.factorial(n)], [values], rtol=0, atol=0)[0]
    assert got.tolist() == [float(math.factorial(k)) for k in range(24)]


def test_gamma_follows_scipy_on_a_dense_grid():
    """The recurrence's product and Cephes' rational below 25, Stirling's formula with log x
    in double-double from 25 on, the reflection pi / (sin(pi x) gamma(1 - x)) below 0:
    within a few ulps of scipy on both sides of 0, 1, 2 and 25 and up to the overflow at
    171.62 (exp(lgamma) was up to 1,500 ulps off there)."""
    x = pt.dvector("x")
    values = np.concatenate([
        np.linspace(1e-6, 171.6, 20001), np.geomspace(1e-300, 1e-6, 301), np.linspace(-169.9995, -0.0005, 6001),
        -np.geomspace(1e-300, 1e-6, 301), [24.999999999999996, 25.0, 25.000000000000004, 171.62, 171.625, 1e300],
        [0.5, 1 - 2**-53, 1 + 2**-52, 2 - 2**-52, 2 + 2**-51, -0.5, -1.5, -170.5],
    ])
    compare_with_py([x], [pt.gamma(x)], [values], rtol=3e-15, atol=0)


def test_small_gammaln_and_digamma_nodes_are_computed_together():
    """Independent gammaln (digamma, trigamma, erfcx) nodes of small static sizes become
    one node on their inputs joined (lowering/rewrites.py, BatchSmallElementwise): one
    copy of the function's code for XLA to compile. Each result is its own node's, poles,
    negative reflections and NaN included; a node computed from another, one too large,
    one of a run-time size or of another input dtype stays apart."""
    from pytensor.tensor.elemwise import Elemwise

    s, v, m = pt.dscalar("s"), pt.dvector("v", shape=(5,)), pt.dmatrix("m", shape=(2, 3))
    i, big, free = pt.lvector("i", shape=(4,)), pt.dvector("big", shape=(5000,)), pt.dvector("free")
    outs = [pt.gammaln(s), pt.gammaln(v), pt.gammaln(m), pt.gammaln(pt.gammaln(v) + 3.0), pt.gammaln(i),
            pt.gammaln(big), pt.gammaln(free), pt.psi(s / 2), pt.psi((s + 1) / 2), pt.psi(m),
            pt.erfcx(v), pt.erfcx(m), pt.tri_gamma(s), pt.tri_gamma(v)]
    values = [np.array(-2.5), np.array([0.0, -1.0, 0.5, np.nan, 40.0]), np.array([[1.0, 2.0, -3.7], [1e-8, 7.3, np.inf]]),
              np.array([0, 3, -2, 11]), np.linspace(0.5, 80.0, 5000), np.array([0.3, 12.0])]
    fn = pytensor.function([s, v, m, i, big, free], outs, mode="STABLEHLO")
    counts = {}
    for node in fn.maker.fgraph.apply_nodes:
        if isinstance(node.op, Elemwise) and type(node.op.scalar_op).__name__ in ("GammaLn", "Psi", "Erfcx", "TriGamma"):
            name = type(node.op.scalar_op).__name__
            counts[name] = counts.get(name, 0) + 1
    # gammaln: s, v and m together; gammaln of gammaln(v); of i (int64); big; free. The others: one each.
    assert counts == {"GammaLn": 5, "Psi": 1, "Erfcx": 1, "TriGamma": 1}
    compare_with_py([s, v, m, i, big, free], outs, values, **SPECIAL_TOL["float64"])
    # Each batch is found on the graph the previous one left: batched, gammaln(v) and
    # gammaln(psi(s) + 1) read psi(s), so psi(s) and psi(gammaln(v) + 1) must stay
    # apart (batched as well, each would read the other).
    crossed = [pt.gammaln(v), pt.gammaln(pt.psi(s) + 1.0), pt.psi(s), pt.psi(pt.gammaln(v) + 1.0)]
    compare_with_py([s, v], crossed, values[:2], **SPECIAL_TOL["float64"])


def test_digamma_trigamma_and_polygamma_at_their_poles():
    """scipy's signs: psi(+-0) = -+inf, NaN at the negative integers; trigamma +inf at
    every pole; polygamma(n, +-0) = +inf for odd n, -inf for even n (found by a scan of
    every Elemwise over every dtype: XLA gives NaN, or a huge finite number)."""
    x = pt.vector("x")
    poles = np.array([0.0, -0.0, -1.0, -2.0, -128.0, 1e-300, -2.5, 3.0, np.inf, -np.inf])
    compare_with_py([x], [pt.psi(x), pt.tri_gamma(x)], [poles])
    n = pt.vector("n", dtype="int64")
    compare_with_py([n, x], [pt.polygamma(n, x)],
                    [np.array([0, 1, 2, 3, 4, 5, 0, 1, 2, 1]), np.array([0.0, 0.0, 0.0, 0.0, -0.0, -0.0, -0.0, -0.0, 1.5, -2.0])])
    i = pt.vector("i", dtype="int8")  # integers compute in float32: the same poles
    compare_with_py([i], [pt.psi(i), pt.tri_gamma(i)], [np.array([0, -1, -128, 3], dtype="int8")])


def test_trigamma_far_below_zero():
    """The reflection's sin(pi x) from x reduced exactly: sin of the rounded pi x was
    1e-9 off at x = -3.3e6 (4e-8 at -1.6e8), where both sides are exact to the ulp."""
    x = pt.dvector("x")
    values = np.array([-3300000.3, -1e7 - 0.37, -2.5e6 + 0.1, -12345.678, -7.5])
    compare_with_py([x], [pt.tri_gamma(x), pt.polygamma(1, x)], [values], rtol=1e-14)

@pytest.mark.parametrize("name", ["erf", "gamma", "psi"])
def test_complex_erf_gamma_digamma_are_refused_by_name(name):
    """scipy has complex loops for these, XLA's ops are real only: a clear refusal (the
    module once failed the verifier)."""
    import pytensor

    from lowering import UnsupportedParameterError

    z = pt.vector("z", dtype="complex128")
    with pytest.raises(UnsupportedParameterError, match="dtype=complex128 is not supported: no lowering of scipy"):
        pytensor.function([z], getattr(pt, name)(z), mode="STABLEHLO")


def test_softplus_and_log1mexp_branches():
    x = pt.vector("x")
    values = np.array([-800.0, -40.0, -37.0, -36.9, -1.0, -np.log(2), -0.6, -1e-10, 0.0, 17.9, 18.0, 25.0, 33.3, 40.0])
    compare_with_py([x], [pt.softplus(x), pt.sigmoid(x)], [values])
    compare_with_py([x], [pt.log1mexp(x)], [values[values <= 0]])


def test_softplus_in_float16_does_not_overflow():
    """Softplus.impl runs on Python floats (in double); exp(x) overflowed float16 from
    x = 11.1 on, below the branch at 18 (softplus(12) came out inf)."""
    x = pt.vector("x", dtype="float16")
    values = np.array([-40, -5, 0, 5, 11, 11.1, 12, 15, 17.9, 18, 25, 40], dtype="float16")
    got = compare_with_py([x], pt.softplus(x), [values])
    assert np.isfinite(got).all()


# lgamma(x) to 40 digits (mpmath), where scipy's own value has lost digits (log(1/x)
# plus a rational cancel next to 1, and below 2): up to 1e5 ulps.
_LGAMMA_NEAR_ROOTS = {
    0.75: 0.20328095143129538, 0.9999999: 5.772157468444193e-08, 1.0000001: -5.772155829918507e-08,
    1.6: -0.11259176569675577, 1.9999999: -4.2278430309861296e-08, 2.0000001: 4.227843666532498e-08,
    0.9999999999999997: 1.9225143640440027e-16, 1.9999999999999998: -9.387698065543117e-17,
    2.0000000000000004: 1.8775396131086244e-16, 1.0000000000000002: -1.2816762426960008e-16,
}


def test_gammaln_keeps_its_relative_precision_near_its_roots():
    """XLA's lgamma keeps only its absolute error (1e-15) where lgamma goes to 0 at 1
    and 2 (1.8e-15 for 3.8e-16 at 2 + 1e-15), and is 10 to 250 ulps off on [0.5, 4):
    the Taylor series at 2, lgamma(x + 1) - log(x) at 1, Cephes' rational between."""
    x = pt.dvector("x")
    # where scipy (Cephes on [2, 3), its rational in x - 2) is exact to an ulp or two
    values = np.array([2 + 2**-51, 2.000000000000001, 2.0000001, 2.001, 1.000000000000001, 2.3, 2.5, 2.99, 3.5, 3.99])
    compare_with_py([x], pt.gammaln(x), [values], rtol=2e-15, atol=0)
    f = pytensor.function([x], pt.gammaln(x), mode="STABLEHLO")
    points = np.array(list(_LGAMMA_NEAR_ROOTS))
    np.testing.assert_allclose(f(points), list(_LGAMMA_NEAR_ROOTS.values()), rtol=1e-15, atol=0)
    assert f(np.array([1.0, 2.0])).tolist() == [0.0, 0.0]


def test_trigamma_and_polygamma_far_out_and_at_infinity():
    """XLA's polygamma underflowed long before its result (trigamma(1e154) = 0 for
    1e-154; polygamma(3, 1e100) = 0 for 2e-300) and was NaN at +inf; the asymptotic
    series in 1/x from x = max(100, 10 (n + 5)) on, 0 with scipy's sign at +inf."""
    x = pt.dvector("x")
    values = np.array([150.0, 1e8, 1e150, 1e154, 1e155, 1e300, np.inf])
    compare_with_py([x], [pt.tri_gamma(x), pt.polygamma(1, x)], [values], rtol=4e-16, atol=0)
    n = pt.vector("n", dtype="int64")
    orders = np.array([3, 3, 30, 2, 2, 3, 4, 5, 2, 10, 17, 1])
    points = np.array([1e50, 1e100, 1e10, np.inf, 1e150, np.inf, np.inf, 1e20, 120.0, 1e5, 1e3, 1e200])
    got = compare_with_py([n, x], pt.polygamma(n, x), [orders, points], rtol=1e-15, atol=0)
    expected = sp.polygamma(orders, points)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))  # -0.0 at +inf for even n


def test_float32_polygamma_is_scipy_double_rounded_once():
    """scipy's polygamma computes in double for float32 x: results far below float32's
    1e-6 atol (-6.8e-14 for order 30 at 30) were 0 in float32."""
    n, x = pt.vector("n", dtype="int64"), pt.vector("x", dtype="float32")
    orders = np.array([30, 30, 3, 1, 2, 0, 1, 2])
    values = np.array([30, 50, 1e10, 1e30, 1e17, 7.3, 0.3, 2.5], dtype="float32")
    compare_with_py([n, x], pt.polygamma(n, x), [orders, values], rtol=1.2e-7, atol=0)


def test_gammaln_edge_values_found_by_fuzzing():
    # scipy: gammaln(-inf) == -inf, where C's lgamma gives +inf.
    x = pt.vector("x")
    compare_with_py([x], [pt.gammaln(x)], [np.array([-np.inf, np.inf, -1.0, 0.0, -0.0, np.nan, 2.5, -2.5])])


@pytest.mark.parametrize("build", [pt.gammaln, pt.gamma, lambda x: pt.special.betaln(x, x + 0.5)],
                         ids=["gammaln", "gamma", "betaln"])
def test_lgamma_reads_each_quotient_once(build):
    """XLA ends a fused kernel where a division's result is read in two places, and
    XLA:CPU's elemental emitter runs the kernels after it, which write over what they
    read, one element at a time: gammaln of 256 elements took 1.5x as long a call, of
    4,000 4.8x (`_lgamma_from_half`). Every division in lgamma's code has one user."""
    from lowering.passes import ops_named

    x = pt.dvector("x")
    module = lower(FunctionGraph([x], [build(x)])).module
    divisions = ops_named(module.operation, "stablehlo.divide")
    shared = [str(op.location) for op in divisions if len(list(op.results[0].uses)) > 1]
    assert divisions and not shared, shared


@pytest.mark.parametrize("name", ["gammaln", "psi", "erf", "erfc", "erfinv", "gamma", "tri_gamma"])
def test_float32_results_are_scipy_double_rounded_once(name):
    """scipy computes these in double for float32 (and small int) inputs; XLA's float32
    lgamma is several ulps off (PyMC's Beta logp of int8 constants found it)."""
    x = pt.vector("x", dtype="float32")
    values = np.array([0.1, 0.5, 0.9, 2.5, 7.0, 7.3, 12.0], dtype="float32")
    if name == "erfinv":
        values = values / 20
    compare_with_py([x], [getattr(pt, name)(x)], [values], rtol=1.2e-7, atol=0)


def test_erfcx_matches_scipy_across_the_line():
    """exp(x**2) erfc(x): the product up to 10 (with exp(x**2) free of x**2's rounding),
    a continued fraction beyond, the reflection below 0, scipy's inf and NaN."""
    import pytensor
    import scipy.special as sp

    x = pt.dvector("x")
    f = pytensor.function([x], pt.erfcx(x), mode="STABLEHLO")
    values = np.concatenate([np.linspace(-26.5, 40, 4001), 10 ** np.linspace(-10, 300, 311),
                             [-np.inf, -30.0, -26.7, 0.0, -0.0, 9.999999, 10.0, 10.000001, np.inf, np.nan]])
    np.testing.assert_allclose(f(values), sp.erfcx(values), rtol=4e-15, atol=0)
    # no |x| above 10: the continued fraction's branch is skipped
    near = np.concatenate([np.linspace(-10, 10, 2001), [-0.0, np.nan]])
    np.testing.assert_allclose(f(near), sp.erfcx(near), rtol=4e-15, atol=0)
    far = np.array([10.5, 1e3, np.inf])  # only the fraction's
    np.testing.assert_allclose(f(far), sp.erfcx(far), rtol=4e-15, atol=0)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8"])
def test_erfcx_dtypes_and_pymc_normal_log_cdfs(dtype):
    import pymc as pm

    x = pt.vector("x", dtype=dtype)
    values = np.array([-20, -5, -1, 0, 1, 3, 12, 30]).astype(dtype)
    outputs = [pt.erfcx(x)]
    if dtype == "float64":
        normal = pm.Normal.dist(1.0, 2.0)
        outputs += [pm.logcdf(normal, x * 3), pm.logccdf(normal, x * 3)]
    compare_with_py([x], outputs, [values], rtol=1e-12 if dtype == "float64" else None)
