"""Bessel functions (dialect_rules/bessel.py) against scipy.special and the Python mode.

J oscillates, so its errors are measured against the local amplitude (|J| or
sqrt(2/(pi x)) past the turning point x = |v|), not against values near its zeros.
"""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.special as sp

from tests.helpers import MODE, RAW_MODE, compare_with_py

_RNG = np.random.default_rng(20261123)
_N = 3000

# orders in [-20, 20] (integers and half-integers among them), x over 16 decades and
# negative; and scipy's edges: x = 0, +-inf, NaN, non-integer orders at x < 0, and
# I_-100.5(1e-3), past the float range; J_v(0) of orders whose v + 1 rounds to an
# integer (+inf and -inf with Gamma(v + 1)'s sign: -inf was given for v = -1e-17)
_V = np.concatenate([
    _RNG.uniform(-20, 20, _N), _RNG.integers(-10, 11, 500).astype(float),
    _RNG.integers(-20, 21, 200) / 2, _RNG.uniform(-1, 1, 500),
])
_X = np.concatenate([
    np.exp(_RNG.uniform(np.log(1e-12), np.log(1e4), _N)), _RNG.uniform(-30, 30, 500),
    _RNG.uniform(0, 40, 200), _RNG.uniform(0, 5, 500),
])
_EDGE_V = np.array([0, 1, 0.5, -0.5, -1, -1.5, -2.5, 2, 3, np.inf, -np.inf, np.nan, 1, 0, -0.0, 2.5, -3, -100.5,
                    -1e-300, -1e-17, -2 + 1e-15])
_EDGE_X = np.array([0, 0, 0, 0, 0, 0, 0, -2, -2, 1, 0, 1, np.inf, -np.inf, 0, -1, -0.0, 1e-3, 0, 0, 0])


def _evaluate(name, v, x):
    vv, xx = pt.dvector("v"), pt.dvector("x")
    return pytensor.function([vv, xx], getattr(pt, name)(vv, xx), mode="STABLEHLO")(v, x)


def _assert_close(got, want, scale, rtol):
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want))
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
    finite = np.isfinite(want)
    np.testing.assert_array_less(np.abs(got - want)[finite], rtol * scale[finite] + 1e-300)


@pytest.mark.parametrize("name", ["iv", "ive", "kve"])
def test_modified_bessel_functions_match_scipy(name):
    v, x = np.concatenate([_V, _EDGE_V]), np.concatenate([_X, _EDGE_X])
    want = getattr(sp, name)(v, x)
    # where e**x K_v(x) overflows scipy's ive returns NaN at non-integer v < 0 (and
    # iv/kve inf): so do we
    got = _evaluate(name, v, x)
    # scipy (AMOS) is itself up to 5e-12 off near negative integer orders (see the
    # mpmath references below)
    _assert_close(got, want, np.abs(want), 1e-11)


def test_bessel_j_matches_scipy():
    v, x = np.concatenate([_V, _EDGE_V]), np.concatenate([_X, _EDGE_X])
    want = sp.jv(v, x)
    got = _evaluate("jv", v, x)
    amplitude = np.maximum(np.abs(want), np.sqrt(2 / (np.pi * np.maximum(np.abs(x), 1e-300))) * (np.abs(x) > np.abs(v)))
    _assert_close(got, want, amplitude, 1e-12)


# 40-digit references (mpmath) where scipy is off by 1e-14 .. 5e-12, or where the
# methods meet: near negative integer orders, tiny x, x around 2 and 30, large x.
_REFERENCES = [
    ("ive", -14.000287720690672, 3.834562043422646e-10, 1.989626909927995e+142),
    ("ive", -10.000164213794198, 0.11306032893269503, 159764382209126.56),
    ("ive", -10.999960264537734, 0.010608462980012189, 1.5252980708440577e+27),
    ("ive", 2.528159832807823, 1.0927032150934829e-08, 3.7660406860451975e-22),
    ("ive", 0.5, 1e-300, 7.978845608028654e-151),
    ("ive", 20.5, 1500.0, 0.008954552269518603),
    ("kve", -0.9993237298786652, 1.4517206709588022, 1.269757679537722),
    ("kve", 0.11879310656190922, 1.527728507916175, 0.9538988094018244),
    ("kve", 98.06002143760693, 0.4533095203598173, 1.6258503455471004e+215),
    ("kve", 0.3, 100000.0, 0.003963324126961295),
    ("jv", -97.13120949683469, 868546.9118840315, -0.0003001040221630864),
    ("jv", -16.992108460545392, 264.60984318054324, -0.021954415940902958),
    ("jv", 17.196300946547133, 189.39776250691642, 0.03227380386133511),
    ("jv", 0.25, 1e-200, 9.277296085790008e-51),
    ("jv", -3.5, 2.0, -1.6749282997520558),
    ("jv", 2.0, 5.520078110286311, -0.12328260570237456),
]


@pytest.mark.parametrize("name", ["ive", "kve", "jv"])
def test_against_mpmath_references(name):
    rows = [r for r in _REFERENCES if r[0] == name]
    v, x, want = (np.array(c) for c in zip(*[r[1:] for r in rows]))
    np.testing.assert_allclose(_evaluate(name, v, x), want, rtol=3e-15, atol=0)


def test_large_orders_and_arguments():
    """|v| up to 100, x up to 10^6 and down to 1e-300 (where the recurrences' ratios
    leave the float range and the power series' first term takes over)."""
    rng = np.random.default_rng(1)
    v = np.concatenate([rng.uniform(-100, 100, 1500), rng.uniform(-5, 5, 500)])
    x = np.concatenate([np.exp(rng.uniform(np.log(1e-3), np.log(1e6), 1500)),
                        np.exp(rng.uniform(np.log(1e-300), np.log(1e-3), 500))])
    for name in ["iv", "kve", "jv"]:
        want, got = getattr(sp, name)(v, x), _evaluate(name, v, x)
        ok = np.isfinite(want) & np.isfinite(got) & (np.abs(want) > 1e-290)
        scale = np.abs(want)
        if name == "jv":  # scipy is off by ~4e-14 at x ~ 1e5 (mpmath); we are not
            scale = np.maximum(scale, np.sqrt(2 / (np.pi * x)) * (x > np.abs(v)))
        np.testing.assert_array_less(np.abs(got - want)[ok], 1e-10 * scale[ok])
        assert ok.sum() > 1000



@pytest.mark.parametrize("name", ["iv", "ive", "kve", "jv"])
def test_temmes_series_over_a_few_of_many_points(name):
    """Of 4,096 points, the 5% below x = 1 take Temme's series, over a quarter of the
    slots with those points gathered (`regions.where_few`); one of them far below, where
    I_v and J_v take the leading term instead. A slot or an order mixed up would put
    another point's value there."""
    rng = np.random.default_rng(3)
    n = 4096
    few = rng.uniform(size=n) < 0.05
    v = rng.uniform(0, 20, n)
    x = np.where(few, rng.uniform(0, 1, n), rng.uniform(1, 100, n))
    v[np.flatnonzero(few)[0]], x[np.flatnonzero(few)[0]] = 0.3, 1e-200
    want, got = getattr(sp, name)(v, x), _evaluate(name, v, x)
    scale = np.abs(want)
    if name == "jv":  # near its zeros, against the envelope
        scale = np.maximum(scale, np.sqrt(2 / (np.pi * x)) * (x > v))
    _assert_close(got, want, scale, 1e-11)


def test_orders_in_the_thousands_where_the_scaled_values_leave_float64():
    """iv where e**-x I_v(x) underflows (e**-500 I_1000(500) is 3e-361, I_1000(500)
    5e-144: iv was 0), I_-v's K_v term where e**x K_v(x) overflows (iv was inf) or
    e**-2x underflows (ive dropped the term): the recurrences count their rescalings."""
    rng = np.random.default_rng(2)
    v = np.concatenate([10 ** rng.uniform(-1, 3.5, 2000) * rng.choice([-1, 1], 2000), [1000, 500, 2000, 2000]])
    x = np.concatenate([10 ** rng.uniform(-3, 3.5, 2000), [500, 100, 1000, 2000]])
    want, got = sp.iv(v, x), _evaluate("iv", v, x)
    ok = np.isfinite(want) & (np.abs(want) > 1e-290)
    np.testing.assert_array_less(np.abs(got - want)[ok], 1e-11 * np.abs(want[ok]))
    assert ok.sum() > 1000
    assert np.isposinf(got[-1])  # I_2000(2000) overflows; e**-2000 I_2000(2000) underflows: was NaN
    # scipy's ive loses the K_v term here (2e-191 for 3.5e-144); 50-digit mpmath values
    want = [-2.638263618095624e-84, 3.5174988668598166e-144]
    got = _evaluate("ive", np.array([-703.0603870586397, -618.1814549924738]), np.array([371.8030426157137, 380.46963790558834]))
    np.testing.assert_allclose(got, want, rtol=1e-13)

def test_fixed_order_functions_and_dtypes():
    x = pt.dvector("x")
    values = np.array([-30.0, -2.5, -1e-9, 0.0, 1e-9, 0.3, 1.0, 2.0, 7.5, 29.9, 30.1, 700.0, 720.0])
    compare_with_py([x], [pt.i0(x), pt.i1(x), pt.j0(x), pt.j1(x)], [values], rtol=1e-13, atol=1e-15)
    for dtype in ["float32", "int16", "int64"]:
        t = pt.vector("t", dtype=dtype)
        compare_with_py([t], [pt.i0(t), pt.j1(t)], [np.array([-3, 0, 1, 2, 9], dtype=dtype)])
    v, x = pt.bvector("v"), pt.fvector("x")
    values = [np.array([0, 1, -2, 3], dtype="int8"), np.array([0.5, 2.0, 3.0, 40.0], dtype="float32")]
    compare_with_py([v, x], [pt.iv(v, x), pt.ive(v, x), pt.kve(v, x), pt.jv(v, x)], values)


def test_j0_and_j1_follow_scipy_on_a_dense_grid():
    """Cephes' rational approximations, as scipy's j0 and j1: within an ulp or two (FMA)
    on both sides of |x| = 5 and far out, the edges exactly (j1(-0.0) is -0.0)."""
    x = pt.dvector("x")
    values = np.concatenate([
        np.linspace(-40, 40, 4001), np.geomspace(1e-12, 1e300, 601), -np.geomspace(1e-3, 1e20, 47),
        [-0.0, 0.0, 5.0, -5.0, np.nextafter(5, 6), 1e-5, np.nextafter(1e-5, 0), np.inf, -np.inf, np.nan],
    ])
    j0, j1 = compare_with_py([x], [pt.j0(x), pt.j1(x)], [values], rtol=0, atol=1e-15)
    assert np.signbit(j1[values.size - 10]) and not np.signbit(j1[values.size - 9])


def test_broadcasting_and_gradients():
    """PyTensor's gradients are graphs of the same Ops at orders v +- 1. The gradients are
    compared on the rewritten graph only: unrewritten, they add no Op to the functions'
    own, and their module took 7.7 s to compile."""
    v, x = pt.dcol("v"), pt.drow("x")
    outputs = [pt.iv(v, x), pt.ive(v, x), pt.kve(v, x), pt.jv(v, x)]
    grads = [pytensor.grad(o.sum(), x) for o in outputs]
    values = [np.array([[0.0], [1.5], [-2.5]]), np.array([[0.1, 2.0, 35.0]])]
    compare_with_py([v, x], outputs + grads, values, rtol=1e-11, atol=0, modes=(MODE,))
    compare_with_py([v, x], outputs, values, rtol=1e-11, atol=0, modes=(RAW_MODE,))


def test_von_mises_logp():
    import pymc as pm

    value, mu, kappa = pt.dvector("value"), pt.dscalar("mu"), pt.dscalar("kappa")
    logp = pm.logp(pm.VonMises.dist(mu, kappa), value).sum()
    values = [np.linspace(-3, 3, 7), np.array(0.4), np.array(2.5)]
    compare_with_py([value, mu, kappa], [logp, pytensor.grad(logp, kappa)], values, rtol=1e-12, atol=0)


def test_pymc_scaled_bessel_functions():
    """PyMC's own I0e and I1e scalar Ops (the Rice distribution's logp), and I0e's gradient."""
    from pymc.distributions.dist_math import i0e, i1e

    x = pt.dvector("x")
    values = np.array([-np.inf, -800.0, -8.0, -2.5, -1e-300, 0.0, 1e-9, 0.3, 7.999, 8.0, 8.001, 30.0,
                       700.0, 1e300, np.inf, np.nan])
    compare_with_py([x], [i0e(x), i1e(x)], [values], rtol=1e-14, atol=1e-300)
    # i1e - sign(x) i0e cancels ~15x near |x| = 8
    compare_with_py([x], pytensor.grad(i0e(x).sum(), x), [values], rtol=1e-12, atol=1e-300)
    for dtype in ["float32", "int8", "uint16", "int64"]:
        t = pt.vector("t", dtype=dtype)
        compare_with_py([t], [i0e(t), i1e(t)], [np.array([0, 1, 2, 9, 100], dtype=dtype)])


def test_rice_logp_and_gradient_as_the_python_mode():
    import pymc as pm

    value, nu, sigma = pt.dvector("value"), pt.dscalar("nu"), pt.dscalar("sigma")
    logp = pm.logp(pm.Rice.dist(nu=nu, sigma=sigma), value).sum()
    grads = pytensor.grad(logp, [value, nu, sigma])
    # (far out, at 40, the unrewritten graph underflows to log(0): NaN in the Python mode)
    values = [np.array([0.1, 0.5, 2.0, 7.0, 12.0]), np.array(3.0), np.array(0.7)]
    compare_with_py([value, nu, sigma], [logp, *grads], values, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_jv_of_infinite_order_is_scipy_nan_past_two(dtype):
    """scipy's jv(+-inf, x) is 0 for 0 <= x <= 2 and NaN for x > 2 (and x < 0); we gave
    0 for every finite x >= 0."""
    v, x = pt.vector("v", dtype=dtype), pt.vector("x", dtype=dtype)
    xs = np.array([0.0, -0.0, 1e-30, 1.0, 2.0, np.nextafter(2, 3, dtype=dtype), 2.5, 10.0, 100.0, 1e30, -1.0, np.inf, np.nan])
    orders = np.repeat([np.inf, -np.inf], xs.size).astype(dtype)
    compare_with_py([v, x], pt.jv(v, x), [orders, np.tile(xs, 2).astype(dtype)])
