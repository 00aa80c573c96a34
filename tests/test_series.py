"""Series-based special functions (dialect_rules/series.py) against scipy.special and
PyTensor's Python mode, on grids that include the hard regions."""

from __future__ import annotations

import itertools

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.special as sp

from tests.helpers import MODE, compare_with_py, record_compiled_hlo, record_emitter_choices, run_toy

# a, x pairs: tiny and huge arguments, a ~ x (slowest convergence), the switch line
# x = a, x = 1, and scipy's edge cases (0, inf, NaN, negatives).
_A = np.array([1e-3, 0.01, 0.5, 1.0, 1.0, 3.0, 10.0, 30.0, 50.0, 100.0, 1e3, 1e4, 2.0, 7.5, 0.3, 200.0])
_X = np.array([1e-5, 0.4, 0.2, 1.0, 1.5, 2.5, 12.0, 30.0, 30.0, 110.0, 1020.0, 1e4, 1e-300, 40.0, 20.0, 180.0])
_EDGES_A = np.array([0.0, 0.0, 0.0, -1.0, 1.0, np.inf, np.inf, 5.0, np.nan, 1.0])
_EDGES_X = np.array([1.0, 0.0, -1.0, 1.0, -1.0, 3.0, np.inf, np.inf, 1.0, np.nan])


@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_incomplete_gamma_matches_scipy_across_the_domain(name):
    a, x = pt.dvector("a"), pt.dvector("x")
    f = pytensor.function([a, x], getattr(pt, name)(a, x), mode="STABLEHLO")
    got = f(_A, _X)
    np.testing.assert_allclose(got, getattr(sp, name)(_A, _X), rtol=5e-13, atol=1e-300)
    np.testing.assert_array_equal(f(_EDGES_A, _EDGES_X), getattr(sp, name)(_EDGES_A, _EDGES_X))


def test_p_and_q_of_the_same_arguments_share_their_loops():
    """STABLEHLO pairs gammainc(a, x) and gammaincc(a, x) into one GammaIncPair
    (lowering/rewrites.py), whose loops run once for both: scipy's values, its edge
    cases exactly. Q of other arguments stays apart."""
    from pytensor.tensor.elemwise import Elemwise

    a, x, y = pt.dvector("a"), pt.dvector("x"), pt.dvector("y")
    fn = pytensor.function([a, x, y], [pt.gammainc(a, x), pt.gammaincc(a, x), pt.gammaincc(a, y)], mode="STABLEHLO")
    ops = sorted(type(n.op.scalar_op).__name__ for n in fn.maker.fgraph.apply_nodes if isinstance(n.op, Elemwise))
    assert ops == ["GammaIncC", "GammaIncPair"]
    av, xv = np.concatenate([_A, _EDGES_A]), np.concatenate([_X, _EDGES_X])
    p, q, q_y = fn(av, xv, xv[::-1].copy())
    inside = slice(0, _A.size)
    np.testing.assert_allclose(p[inside], sp.gammainc(_A, _X), rtol=5e-13, atol=1e-300)
    np.testing.assert_allclose(q[inside], sp.gammaincc(_A, _X), rtol=5e-13, atol=1e-300)
    edges = slice(_A.size, None)
    np.testing.assert_array_equal(p[edges], sp.gammainc(_EDGES_A, _EDGES_X))
    np.testing.assert_array_equal(q[edges], sp.gammaincc(_EDGES_A, _EDGES_X))
    np.testing.assert_allclose(q_y, sp.gammaincc(av, xv[::-1]), rtol=5e-13, atol=1e-300)


def _assert_p_and_q_match_scipy(a, x, rtol):
    """gammainc and gammaincc of same-shaped `a` and `x` in one STABLEHLO function."""
    ta, tx = (pt.tensor(name, dtype="float64", shape=(None,) * a.ndim) for name in "ax")
    p, q = pytensor.function([ta, tx], [pt.gammainc(ta, tx), pt.gammaincc(ta, tx)], mode="STABLEHLO")(a, x)
    np.testing.assert_allclose(p, sp.gammainc(a, x), rtol=rtol, atol=1e-300)
    np.testing.assert_allclose(q, sp.gammaincc(a, x), rtol=rtol, atol=1e-300)


def test_incomplete_gamma_on_a_dense_grid():
    """scipy's P and Q on a log grid of 40 x 40 points."""
    grid = np.logspace(-3, 3, 40)
    # scipy itself is off by up to ~3e-12 for large a far from x (mpmath, 40 digits)
    _assert_p_and_q_match_scipy(*np.meshgrid(grid, grid), rtol=5e-12)


def test_lgamma1p_from_lgamma_of_a_matches_scipy():
    """lgamma(1 + a) as gammaincc's small-x series takes it, from the lgamma(a) it has:
    lgamma(a) + log|a| away from a = 0 and 1 (both sides of 1/2 and 3/2 included), as
    scipy's gammaln(1 + a) and as `_lgamma1p` computing its own lgamma(1 + a)."""
    from jax.extend.mlir.dialects import stablehlo as hlo

    from dialect_rules.series import _lgamma1p
    from dialect_rules.special import log_gamma
    from lowering.builders import compare, convert, full_like, select

    def build(i):
        t = convert(i, "float64")
        # 500 points log-spaced over [1e-3, 1e6], then 100 over (-1, -1/2)
        log_a = hlo.add(full_like(t, np.log(1e-3)), hlo.multiply(t, full_like(t, np.log(1e9) / 499)))
        positive = hlo.exponential(log_a)
        negative = hlo.subtract(full_like(t, 1.9451), hlo.multiply(t, full_like(t, 0.0049)))
        a = select(compare(t, full_like(t, 500.0), "LT"), positive, negative)
        return [a, _lgamma1p(a, log_gamma(a)), _lgamma1p(a)]

    (a, given, own), _ = run_toy(600, False, build, outputs=3)
    assert np.all((a > -1) & (a <= 1e6 * (1 + 1e-12))) and np.sum(a < 0) == 100
    # (nearer 0 and 1, 1 + a rounds away digits scipy's argument needs: the Taylor series there)
    far = (np.abs(a) > 0.5) & (np.abs(a - 1) >= 0.5)
    assert far.sum() > 300 and np.any((a > 1.5) & (a < 1.6))
    np.testing.assert_allclose(given[far], sp.gammaln(1 + a[far]), rtol=1e-14, atol=0)
    np.testing.assert_allclose(given, own, rtol=1e-15, atol=0)


def test_incomplete_gamma_where_a_is_large_and_near_x():
    """Temme's uniform expansion (20 < a < 200 with |x - a| < 0.3 a; a > 200 with
    |x - a| < 4.5 sqrt(a)) and the series just outside it, a from 20 to 1e14: the series
    alone were 53% off at a = 1e7 and NaN at 1e8."""
    rng = np.random.default_rng(1)
    scale = np.repeat([20.0, 21.0, 60.0, 199.9, 200.0, 200.1, 1e3, 1e5, 1e7, 1e8, 1e10, 1e14], 40)
    a = scale * rng.uniform(1.0, 1.05, scale.size)
    x = a + rng.uniform(-6.0, 6.0, a.size) * np.sqrt(a)
    a[::40], x[::40] = scale[::40], scale[::40]  # x = a exactly, where eta = 0
    _assert_p_and_q_match_scipy(a, x, rtol=1e-12)


def test_temmes_expansion_over_a_few_points_compiles_with_the_elemental_emitter(monkeypatch):
    """Temme's c_k(eta) are summed in its loop from a row of its 25 x 25 table at a time:
    the table times a stack of eta's powers was a tensor of 25 n elements, which kept
    modules of 11 to 256 elements from XLA's faster-compiling elemental emitter."""
    emitters = record_emitter_choices(monkeypatch)
    rng = np.random.default_rng(2)
    a = np.concatenate([rng.uniform(21.0, 199.0, 20), rng.uniform(201.0, 1e5, 20)])  # all in its region
    x = a + rng.uniform(-1.0, 1.0, a.size) * np.where(a < 200.0, 0.25 * a, 4.0 * np.sqrt(a))
    _assert_p_and_q_match_scipy(a, x, rtol=1e-12)
    assert emitters == [True]

@pytest.mark.parametrize("share", [0.1, 0.6])
def test_temmes_expansion_over_a_share_of_many_points(share):
    """From 1,024 points, where no more than a quarter need Temme's expansion, it runs
    over a quarter of the slots, those points gathered (`regions.where_few`), and its
    values are scattered back among the others'; above a quarter, over all of them. A
    slot or an order mixed up would put another point's value there."""
    rng = np.random.default_rng(5)
    n = 4096
    near = rng.uniform(size=n) < share
    a = np.where(near, rng.uniform(21.0, 1e4, n), rng.uniform(0.1, 15.0, n))
    x = np.where(near, a + rng.uniform(-4.0, 4.0, n) * np.sqrt(a), rng.uniform(0.0, 30.0, n))
    _assert_p_and_q_match_scipy(a, x, rtol=1e-12)


def test_temmes_expansion_compacts_only_outside_loops():
    """A quarter of 4,096 slots (`where_few`) in gammainc's module; none inside
    gammaincinv's Newton loop, where another copy of the expansion would count towards
    that loop's ops (`compile.takes_small_loops`)."""
    from lowering import lower
    from pytensor.graph.fg import FunctionGraph

    a, x = (pt.tensor(name, dtype="float64", shape=(4096,)) for name in "ax")
    for out, compacts in ((pt.gammainc(a, x), True), (pt.gammaincinv(a, x), False)):
        text = lower(FunctionGraph([a, x], [out], clone=True)).as_text()
        assert ("tensor<1024xf64>" in text) == compacts


def test_incomplete_gamma_at_huge_arguments():
    """Past x = 1e154 Legendre's fraction overflows in x (x + 1 - a): P(0.5, 1e200) was
    NaN. Far past the mean P is 1; for a past 1e100 Temme's expansion (uniform in x/a)
    serves every x, where x = 1.5 a is thousands of standard deviations out."""
    a, x = pt.dvector("a"), pt.dvector("x")
    compare_with_py([a, x], [pt.gammainc(a, x), pt.gammaincc(a, x)],
                    [np.array([1e-5, 0.5, 3.0, 1e5, 1e160, 1e160, 1e300, 1e120, 1e200]),
                     np.array([1e300, 1e200, 1e160, 1e300, 1.5e160, 3e160, 1e300, 1e120, 5e199])])

@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8"])
def test_incomplete_gamma_dtypes_match_the_python_mode(dtype):
    a, x = pt.vector("a", dtype=dtype), pt.vector("x", dtype=dtype)
    values = [np.array([1, 2, 5, 30]).astype(dtype), np.array([2, 1, 5, 25]).astype(dtype)]
    compare_with_py([a, x], [pt.gammainc(a, x), pt.gammaincc(a, x), pt.gammal(a, x), pt.gammau(a, x)], values)


def test_unnormalized_incomplete_gammas_at_the_edges():
    """GammaL/GammaU are P and Q times gamma(a), as their perform: NaN or inf where
    gamma(a) has its poles."""
    a, x = pt.dvector("a"), pt.dvector("x")
    values = [np.array([0.5, 3.0, 0.0, -1.5, 170.0, 2.0]), np.array([0.2, 4.0, 1.0, 1.0, 200.0, np.inf])]
    # gamma(170) as exp(lgamma(170)) keeps |lgamma| ulps: about 1.6e-13
    compare_with_py([a, x], [pt.gammal(a, x), pt.gammau(a, x)], values, rtol=5e-13, atol=0)


def test_gamma_cdf_of_a_pymc_distribution():
    import pymc as pm

    x = pt.dvector("x")
    logcdf = pm.logcdf(pm.Gamma.dist(alpha=3.0, beta=2.0), x)
    compare_with_py([x], [logcdf], [np.array([0.01, 0.5, 1.5, 4.0, 20.0])])


@pytest.mark.parametrize("name", ["gammaincinv", "gammainccinv"])
def test_inverse_incomplete_gamma_matches_scipy(name):
    """a from 1e-3 to 1e4; probabilities from 1e-300 through 1/2 to 1 - 1e-16 (both tails)."""
    rng = np.random.default_rng(0)
    a = 10 ** rng.uniform(-3, 4, size=1500)
    p = np.concatenate([10 ** rng.uniform(-300, 0, size=500), rng.uniform(0, 1, size=500),
                        1 - 10 ** rng.uniform(-16, 0, size=500)])
    ta, tp = pt.dvector("a"), pt.dvector("p")
    got = pytensor.function([ta, tp], getattr(pt, name)(ta, tp), mode="STABLEHLO")(a, p)
    expected = getattr(sp, name)(a, p)
    # Results below float64's smallest normal are flushed to zero by XLA (README); tiny a
    # amplifies p's rounding by 1/a (x ~ (p Gamma(a + 1))**(1/a)): scipy differs by ~1e-12.
    np.testing.assert_allclose(got, expected, rtol=5e-11, atol=3e-308)
    # p = 0 and 1 have inverses for a = 0 and a = inf too (NaN before for a = inf)
    edges_a = np.array([2.0, 2.0, 0.0, -1.0, 2.0, 2.0, np.inf, np.nan, 2.0, 0.0, 0.0, -1.0, -1.0, np.inf, np.inf])
    edges_p = np.array([0.0, 1.0, 0.5, 0.5, -0.1, 1.1, 0.5, 0.5, np.nan, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0])
    f = pytensor.function([ta, tp], getattr(pt, name)(ta, tp), mode="STABLEHLO")
    np.testing.assert_array_equal(f(edges_a, edges_p), getattr(sp, name)(edges_a, edges_p))


def test_inverse_incomplete_gamma_dtypes_and_gradient():
    a, p = pt.dvector("a"), pt.dvector("p")
    values = [np.array([0.5, 2.0, 30.0]), np.array([0.1, 0.5, 0.99])]
    outputs = [pt.gammaincinv(a, p), pt.gammainccinv(a, p),
               pytensor.grad(pt.gammaincinv(a, p).sum(), p), pytensor.grad(pt.gammainccinv(a, p).sum(), p)]
    compare_with_py([a, p], outputs, values, rtol=1e-10)
    af, pf = pt.fvector("a"), pt.fvector("p")
    compare_with_py([af, pf], [pt.gammaincinv(af, pf)], [v.astype("float32") for v in values])


def test_inverse_incomplete_beta_matches_scipy():
    rng = np.random.default_rng(1)
    n = 1200
    a, b = 10 ** rng.uniform(-1, 3, size=n), 10 ** rng.uniform(-1, 3, size=n)
    y = np.concatenate([10 ** rng.uniform(-100, 0, size=400), rng.uniform(0, 1, size=400),
                        1 - 10 ** rng.uniform(-16, 0, size=400)])
    # Parameters below 0.1: x ~ (y a B(a, b))**(1/a) turns y's rounding into 1/a times as
    # much; and in the far tails scipy returns NaN (or the smallest normal) where the
    # inverse exists. Check those by the round trip through scipy's betainc.
    a_small, b_small = 10 ** rng.uniform(-2, -1, size=300), 10 ** rng.uniform(-2, 3, size=300)
    y_small = rng.uniform(0, 1, size=300)
    y_tail = 10 ** rng.uniform(-300, -100, size=300)
    a_tail, b_tail = 10 ** rng.uniform(0, 2, size=300), 10 ** rng.uniform(0, 2, size=300)
    # every pair of parameters in {0, 1e-3, 1, 2, 1e10, inf, NaN, -1} with y at 0, 0.3, 1,
    # NaN, -0.1, 1.1: y = 0, 1 with an infinite parameter and the closed forms at a = 1 or
    # b = 1 with the other infinite were NaN
    values, ys = [0.0, 1e-3, 1.0, 2.0, 1e10, np.inf, np.nan, -1.0], [0.0, 0.3, 1.0, np.nan, -0.1, 1.1]
    edges = np.array(list(itertools.product(values, values, ys))).T
    ta, tb, ty = pt.dvector("a"), pt.dvector("b"), pt.dvector("y")
    f = pytensor.function([ta, tb, ty], pt.betaincinv(ta, tb, ty), mode="STABLEHLO")

    def solve(*group):  # padded to n with a quick case: each new length compiles again (seconds)
        m = len(group[0])
        return f(*(np.concatenate([v, np.full(n - m, 2.0 if i < 2 else 0.5)]) for i, v in enumerate(group)))[:m]

    x_main, x_small, x_tail = solve(a, b, y), solve(a_small, b_small, y_small), solve(a_tail, b_tail, y_tail)
    x_edges = solve(*edges)
    np.testing.assert_allclose(x_main, sp.betaincinv(a, b, y), rtol=2e-11, atol=3e-308)
    np.testing.assert_allclose(x_small, sp.betaincinv(a_small, b_small, y_small), rtol=1e-7)
    np.testing.assert_allclose(sp.betainc(a_tail, b_tail, x_tail), y_tail, rtol=1e-8)
    np.testing.assert_allclose(x_edges, sp.betaincinv(*edges), rtol=1e-10, atol=3e-308)  # scipy floors at the smallest normal
    af = pt.fvector("a")
    compare_with_py([af], [pt.betaincinv(af, af, af * 0.5)], [np.array([0.5, 1.5, 1.9], dtype="float32")])


def test_inverse_incomplete_functions_far_from_their_starting_points():
    """Roots Newton reached only by crossing underflow or from a good start: gammainccinv
    at a = 4e-20 (x = 7e-137; 100 steps of 2 in log x stopped at 1e-90); gammaincinv
    where x underflows (P(3e-14, x) = 1/2 at log x = -2.4e13: the value at x = 0, Q = 1,
    sent Newton back to x = 1); betaincinv with b = 2e-20 (1 - x = e**-8e18: x is 1)
    and with a, b in the 1e4 .. 1e6 (0.0208 for 0.0098: the tails' leading terms are a
    poor start there, logit-normal is not). The gamma inverses on the rewritten graph
    only (their raw graphs: `test_inverse_incomplete_gamma_dtypes_and_gradient`)."""
    a, p = pt.dvector("a"), pt.dvector("p")
    # (the last two: gammaincinv where x underflows)
    compare_with_py([a, p], [pt.gammainccinv(a, p), pt.gammaincinv(a, 1 - p), pt.gammaincinv(a, p)],
                    [np.array([4.1177222061852455e-20, 1.0312e-20, 0.5, 2.933701713324816e-14, 1.35e-18]),
                     np.array([1.2885121465108778e-17, 3.5e-18, 0.3, 0.5003, 0.85])], modes=(MODE,))
    b, y = pt.dvector("b"), pt.dvector("y")
    compare_with_py([a, b, y], [pt.betaincinv(a, b, y)],
                    [np.array([28.661447903135013, 9496.779928371348, 303698.96213209094, 100760.73862632713]),
                     np.array([2.245667409562774e-20, 963718.8153238546, 4727.005947664555, 857837.8767739338]),
                     np.array([0.15955276952069608, 0.7600946772201946, 0.4259320618962039, 0.8295199867399999])],
                    rtol=1e-9)


def test_inverse_incomplete_beta_with_one_parameter_huge_and_the_other_small():
    """a ~ 1e6 or more with b below 5 (or the reverse), PyMC's icdf of Beta and of
    StudentT with nu > 1.5e6: the tails' leading term capped the start at x = 1 - 1e-3,
    where the fraction does not converge, and Newton stayed near 0.99909 for every y.
    Now from Temme's gamma limit; 1 - x too is checked (x alone rounds to 1)."""
    a, b, y = pt.dvector("a"), pt.dvector("b"), pt.dvector("y")
    values = [np.array([1e6, 5e7, 2.5, 0.5, 1.0, 1e6, 3e4, 1e9]), np.array([1.5, 0.5, 1e8, 1e6, 1e7, 3.0, 0.2, 4.0]),
              np.array([0.5, 0.3, 0.999999, 0.9, 0.9, 0.1, 1e-30, 0.999])]
    x = pytensor.function([a, b, y], pt.betaincinv(a, b, y), mode="STABLEHLO")(*values)
    expected = sp.betaincinv(*values)
    np.testing.assert_allclose(x, expected, rtol=1e-9)
    np.testing.assert_allclose(1 - x, 1 - expected, rtol=3e-7)  # (a = 5e7: betainc's own 2e-7)
    q = pt.dscalar("q")
    import pymc as pm

    icdf = pm.icdf(pm.StudentT.dist(nu=2e6), q)
    np.testing.assert_allclose(pytensor.function([q], icdf, mode="STABLEHLO")(0.9), 1.2815522, rtol=1e-6)


def test_incomplete_beta_with_one_parameter_huge():
    """One parameter from 1e4 to 1e6, the other below 10, x within a spread of the mean:
    log B(a, b) as three lgammas, and log(1 - x) of 1 - x rounded, left up to 2e-8 (a
    lgamma of 1e6 is 1.3e7); Stirling's series for log Gamma(l) - log Gamma(l + s) and
    log1p of the exact one give 6e-10. (Beyond, Cephes' fraction itself cancels: 1e-8
    at 1e7, 1e-6 at 1e9; Boost's asymptotic expansion for that regime is not done.)"""
    rng = np.random.default_rng(5)
    large, small = 10 ** rng.uniform(4, 6, 300), 10 ** rng.uniform(-2, 1, 300)
    flip = rng.uniform(size=300) < 0.5
    a, b = np.where(flip, small, large), np.where(flip, large, small)
    mean = a / (a + b)
    spread = np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
    x = np.clip(mean + spread * rng.normal(size=300), 1e-300, 1 - 1e-16)
    ta, tb, tx = pt.dvector("a"), pt.dvector("b"), pt.dvector("x")
    got = pytensor.function([ta, tb, tx], pt.betainc(ta, tb, tx), mode="STABLEHLO")(a, b, x)
    np.testing.assert_allclose(got, sp.betainc(a, b, x), rtol=1e-9, atol=1e-280)


def test_inverse_incomplete_gamma_of_a_huge_shape():
    """Past a = 1e30, P climbs from 0 to 1 within a**-1/2 of x / a, finer than Newton's
    x = e**t resolves: it ended 2% low from a = 1e50 to 1e200 (PyMC's ChiSquared(1e100)
    median 9.8e99). Wilson-Hilferty's cube is exact to rounding there."""
    a, p = pt.dvector("a"), pt.dvector("p")
    values = [np.repeat([1e30, 1e50, 1e100, 1e200, 1e300], 3), np.tile([1e-300, 0.5, 1 - 1e-16], 5)]
    compare_with_py([a, p], [pt.gammaincinv(a, p), pt.gammainccinv(a, p)], values, rtol=1e-14)


def test_incomplete_beta_continued_fraction_near_the_mean_with_a_tiny_b():
    """I_x(406, 0.0015) at x = 1 - 4e-6, just below the mean: Cephes' continued fraction
    needs some 2,000 steps there, and its limit of 300 left a 2% error."""
    a, b, x = pt.dvector("a"), pt.dvector("b"), pt.dvector("x")
    compare_with_py([a, b, x], [pt.betainc(a, b, x)],
                    [np.array([405.9, 2514.0, 1013.0]), np.array([0.001535, 0.00155, 0.002702]),
                     np.array([0.9999957667748606, 0.9999987565668189, 0.9999966526798649])], rtol=1e-9)

def test_incomplete_beta_with_a_tiny_parameter_near_its_end():
    """b from 1e-300 to 1e-3 with x = 1 - 10**-k, where I_x(a, b) = O(b): Cephes' flip
    to 1 - I_{1-x}(b, a) cancelled (4e-7 of I at b = 1e-10), and just below the mean
    (1 - x under 1e-7 and above b / a) its continued fraction ran out of steps:
    I_x(1, 1e-10) at x = 1 - 1e-10 was 1.96e-9 for 1 - (1 - x)**b = 2.30e-9, 47% off
    at 1 - x = 1e-15. The mirror, a tiny with x near 0, is I ~ 1, where log B(a, b) ~
    -log a had cost 1.1e-13 of it. scipy (Boost) agrees with mpmath to 1e-15 here."""
    a, b, k = (v.ravel() for v in np.meshgrid([0.1, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0],
                                              10.0 ** -np.arange(3, 301), np.arange(1, 16), indexing="ij"))
    ta, tb, tx = pt.dvector("a"), pt.dvector("b"), pt.dvector("x")
    f = pytensor.function([ta, tb, tx], pt.betainc(ta, tb, tx), mode="STABLEHLO")
    np.testing.assert_allclose(f(b, a, 10.0**-k), sp.betainc(b, a, 10.0**-k), rtol=3e-14)
    # and with one parameter large (1e-10 off at a = 1e5, b = 2e-3)
    extra = [(0.1, 1e-5, 1 - 1e-10), (1e3, 1e-4, 1 - 1e-7), (1e5, 2e-3, 1 - 1e-7), (406.0, 1e-12, 1 - 4e-6)]
    a, b, x = (np.concatenate([v, e]) for v, e in zip((a, b, 1 - 10.0**-k), zip(*extra)))
    np.testing.assert_allclose(f(a, b, x), sp.betainc(a, b, x), rtol=3e-14)
    np.testing.assert_allclose(f(b, a, 1 - x), sp.betainc(b, a, 1 - x), rtol=3e-14)
    one = np.ones(2)
    tiny, near = np.array([1e-10, 1e-300]), np.full(2, 1 - 1e-10)
    np.testing.assert_allclose(f(one, tiny, near), -np.expm1(tiny * np.log1p(-near)), rtol=1e-15)


@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_incomplete_gamma_gradients_are_scalar_loops(name):
    """d/dk gammainc/gammaincc: PyTensor sums series in ScalarLoops (while loops);
    checked against the Python mode and a central difference of scipy. (PyTensor's
    formula itself loses every digit at e.g. k=40, x=35, on every backend.)"""
    function = getattr(pt, name)
    k, x = pt.dvector("k"), pt.dvector("x")
    (g,) = pytensor.grad(function(k, x).sum(), [k])
    values = [np.array([0.5, 1.0, 3.0, 10.0, 0.3, 2.0, 40.0]), np.array([0.2, 1.0, 2.5, 12.0, 20.0, 0.0, 80.0])]
    (got,) = compare_with_py([k, x], [g], values, rtol=1e-9)
    reference = getattr(sp, name)
    h = 1e-6
    numeric = (reference(values[0] + h, values[1]) - reference(values[0] - h, values[1])) / (2 * h)
    inside = values[1] > 0  # at x = 0 PyTensor's gammaincc gradient is NaN
    np.testing.assert_allclose(got[inside], numeric[inside], rtol=2e-5, atol=1e-9)


def test_incomplete_beta_matches_scipy():
    """Random parameters over five decades and x over (0, 1), and scipy's edges."""
    rng = np.random.default_rng(0)
    a, b = 10 ** rng.uniform(-2, 3, 500), 10 ** rng.uniform(-2, 3, 500)
    x = np.concatenate([rng.uniform(0, 1, 490), [1e-300, 1e-10, 0.5, 0.95, 0.999999, 1 - 1e-16, 0.3, 0.7, 0.1, 0.9]])
    ta, tb, tx = pt.dvector("a"), pt.dvector("b"), pt.dvector("x")
    f = pytensor.function([ta, tb, tx], pt.betainc(ta, tb, tx), mode="STABLEHLO")
    # atol: below 1e-280 scipy (Boost) flushes to zero where we keep the value
    np.testing.assert_allclose(f(a, b, x), sp.betainc(a, b, x), rtol=5e-12, atol=1e-280)
    edges = [(0, 1, 0.5), (1, 0, 0.5), (0, 0, 0.5), (2, 3, 0), (2, 3, 1), (2, 3, -0.1), (2, 3, 1.1),
             (np.inf, 1, 0.5), (1, np.inf, 0.5), (-1, 2, 0.5), (2, 3, np.nan), (1e-300, 1, 0.5)]
    ea, eb, ex = (np.array(v, dtype=float) for v in zip(*edges))
    np.testing.assert_array_equal(f(ea, eb, ex), sp.betainc(ea, eb, ex))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8"])
def test_incomplete_beta_dtypes_match_the_python_mode(dtype):
    a, b = pt.vector("a", dtype=dtype), pt.vector("b", dtype=dtype)
    x = pt.vector("x", dtype="float32" if dtype == "int8" else dtype)
    values = [np.array([1, 2, 5, 30]).astype(dtype), np.array([2, 1, 5, 3]).astype(dtype),
              np.array([0.2, 0.5, 0.7, 0.99]).astype(x.dtype)]
    compare_with_py([a, b, x], [pt.betainc(a, b, x)], values)


def test_incomplete_beta_gradients_and_pymc_logcdfs():
    """betainc's gradients (ScalarLoops in PyTensor) and PyMC's Beta, StudentT and
    Binomial log-CDFs, which are betainc of their parameters."""
    import pymc as pm

    a, b, x = pt.dvector("a"), pt.dvector("b"), pt.dvector("x")
    out = pt.betainc(a, b, x).sum()
    values = [np.array([0.5, 2.0, 5.0]), np.array([1.5, 3.0, 0.7]), np.array([0.3, 0.5, 0.9])]
    compare_with_py([a, b, x], pytensor.grad(out, [a, b, x]), values, rtol=1e-8)
    y = pt.dvector("y")
    logcdfs = [pm.logcdf(pm.Beta.dist(2.0, 3.0), y), pm.logcdf(pm.StudentT.dist(nu=4.0), y * 10 - 5),
               pm.logcdf(pm.Binomial.dist(n=10, p=0.3), pt.floor(y * 10))]
    compare_with_py([y], logcdfs, [np.array([0.05, 0.3, 0.5, 0.77, 0.99])], rtol=1e-10)


def _owens_grid():
    h = np.concatenate([np.linspace(-40, 40, 81), [0.0, 1e-300, 1e-10, 0.01, 0.3, 0.67, 1.5, 4.8, 8.0]])
    a = np.concatenate([np.linspace(-1, 1, 21), -np.logspace(-8, 6, 29), np.logspace(-8, 6, 29),
                        [0.99999, 1.00001, 0.999991, 2.0, 1e-300]])
    hh, aa = np.meshgrid(h, a)
    return hh.ravel(), aa.ravel()


def test_owens_t_matches_scipy_on_a_grid():
    """h in [-40, 40], a in [-1e6, 1e6] with 0, +-1 and both sides of every region edge.
    scipy's erfc (and XLA's) lose about h**2 ulps in the far tail, and both T's there
    are products of it: the tolerance grows with h. Values below the smallest normal
    are flushed to zero by XLA."""
    h, a = _owens_grid()
    th, ta = pt.dvector("h"), pt.dvector("a")
    got = pytensor.function([th, ta], pt.owens_t(th, ta), mode="STABLEHLO")(h, a)
    expected = sp.owens_t(h, a)
    normal = np.abs(expected) > np.finfo(np.float64).tiny
    rel = np.abs(got - expected)[normal] / np.abs(expected[normal])
    assert np.all(rel <= 2e-15 * np.maximum(1.0, h[normal] ** 2)), rel.max()
    assert np.all(np.abs(got[~normal]) <= np.finfo(np.float64).tiny)
    np.testing.assert_allclose(got[h == 0], expected[h == 0], rtol=4e-16, atol=0)  # atan(a) / 2 pi
    # The symmetries hold exactly: T(-h, a) = T(h, a), T(h, -a) = -T(h, a).
    f = pytensor.function([th, ta], pt.owens_t(th, ta), mode="STABLEHLO")
    np.testing.assert_array_equal(f(-h, a), got)
    np.testing.assert_array_equal(f(h, -a), -got)


def test_owens_t_edges():
    h = np.array([np.nan, 1.0, np.inf, -np.inf, 1.0, 1.0, 0.0, np.inf, 0.0, 3.0, -0.0, 0.0, 2.0])
    a = np.array([1.0, np.nan, 1.0, 2.0, np.inf, -np.inf, np.inf, np.inf, 0.0, 0.0, 1.0, -1.0, 1.0])
    th, ta = pt.dvector("h"), pt.dvector("a")
    got = pytensor.function([th, ta], pt.owens_t(th, ta), mode="STABLEHLO")(h, a)
    np.testing.assert_allclose(got, sp.owens_t(h, a), rtol=1e-15, atol=0)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int8"])
def test_owens_t_dtypes_and_broadcasting(dtype):
    h, a = pt.matrix("h", dtype=dtype), pt.vector("a", dtype=dtype)
    hv = np.array([[0, 1, -2], [3, 5, -1]]).astype(dtype)
    av = np.array([1, -3, 2]).astype(dtype)
    compare_with_py([h, a], [pt.owens_t(h, a)], [hv, av])


def test_owens_t_gradient_and_a_skew_normal_logcdf():
    """PyMC's SkewNormal log-CDF, log(Phi(z) - 2 T(z, alpha)) (written out: PyMC 5.28
    has no SkewNormal logcdf yet), and T's gradient."""
    v, h, a = pt.dvector("v"), pt.dmatrix("h"), pt.dvector("a")
    z = (v - 0.5) / 2.0
    logcdf = pt.log(0.5 * pt.erfc(-z / np.sqrt(2)) - 2 * pt.owens_t(z, -3.0))
    compare_with_py([v], [logcdf], [np.array([-30, -5.0, -1.0, 0.0, 0.5, 2.0, 10.0, 40.0])], rtol=1e-12)
    rng = np.random.default_rng(0)
    outputs = [pt.owens_t(h, a), *pytensor.grad(pt.owens_t(h, a).sum(), [h, a])]
    compare_with_py([h, a], outputs, [rng.normal(size=(3, 4)), rng.normal(size=4) * 3])


@pytest.mark.parametrize("by_rows", [True, False])
@pytest.mark.parametrize("n, dynamic, compacts, levels", [(4096, False, True, 2), (4096, True, True, 2),
                                                          (4096, False, True, 3), (4096, True, True, 3),
                                                          (1500, True, True, 2), (700, True, False, 2),
                                                          (200, False, False, 2)])
def test_a_compacting_loop_steps_each_element_as_the_whole_loop_does(n, dynamic, compacts, levels, by_rows):
    """`regions.converge_compacting` against `converge` in one module: element i counts
    to its target (3 for most, 1,500 for every 500th, past the 2,000-step limit for every
    1,000th) adding its own increment; every 7th is inactive. The counts and sums are
    `converge`'s, the limit included: a compacted level that restarted the step count
    would take those elements past it. From 4,096 elements (m = 256) the loop compacts
    once (a scatter back); at 700, known only at run time, the module specialized to it
    keeps none (m = 43 is below CONVERGE_COMPACT_MIN), nor at 200. With `levels` 3 (as
    narrow as 16 slots, hyp2f1's series) 4,096 compacts again, into 16. `by_rows` (the CPU's
    lowering): from 1,024 elements, rows of 128 step first, at most 64 times (the last
    row of 1,500 part padding), and the long counts go on from there."""
    from jax.extend.mlir.dialects import stablehlo as hlo

    from lowering.builders import compare, convert, full_like, select
    from lowering.regions import CONVERGE_COMPACT_MIN, converge, converge_compacting, loops_by_rows
    from tests.helpers import run_toy

    limit = 2000

    def build(index):
        i = convert(index, "float64")

        def every(k):
            return compare(hlo.remainder(index, full_like(index, k)), full_like(index, 0), "EQ")

        target = select(every(1000), full_like(i, 3000.0), select(every(500), full_like(i, 1500.0), full_like(i, 3.0)))
        increment = hlo.add(i, full_like(i, 0.5))
        active = hlo.not_(every(7))

        def step(params, state):
            target, increment = params
            k, total = state
            k = hlo.add(k, full_like(k, 1.0))
            return [k, hlo.add(total, increment)], compare(k, target, "GE")

        init = [full_like(i, 0.0), full_like(i, -1.0)]
        compacted = converge_compacting(init, [target, increment], active, step, limit, levels=levels,
                                        narrowest=16 if levels == 3 else CONVERGE_COMPACT_MIN)
        whole = converge(init, active, lambda state: step([target, increment], state), limit)
        return [*compacted, *whole]

    with loops_by_rows(by_rows):
        (k, total, whole_k, whole_total), text = run_toy(n, dynamic, build, outputs=4)
    index = np.arange(n)
    expected_k = np.where(index % 1000 == 0, limit, np.where(index % 500 == 0, 1500, 3)).astype(float)
    expected_k[index % 7 == 0] = 0
    np.testing.assert_array_equal(k, expected_k)
    np.testing.assert_array_equal(total, np.where(expected_k > 0, expected_k * (index + 0.5) - 1, -1.0))
    np.testing.assert_array_equal(k, whole_k)
    np.testing.assert_array_equal(total, whole_total)
    assert ("stablehlo.scatter" in text) == compacts
    assert ("x128xi1>" in text) == (by_rows and n >= 1024)
    assert ("tensor<16xf64>" in text) == (levels == 3)


def test_series_step_by_rows_only_where_xla_runs_them_in_one_function(monkeypatch):
    """On the CPU, gammainc's loops over 4,096 points step by rows of 128 first
    (`regions._rows_first`), each row's loop inside the function XLA:CPU compiles for a
    small loop. A module compiled without that threshold (STABLEHLO_NO_FMA, or one with a
    loop too long for the elemental emitter) or exported drops the rows
    (`regions.drop_rows_first`), with scipy's values as before. Inside another loop
    (gammaincinv's Newton loop, which evaluates P) no rows are built at all."""
    import lowering.compile as comp
    from lowering import lower
    from lowering.export import export_portable, load_portable_artifact
    from pytensor.graph.fg import FunctionGraph

    hlo_texts = record_compiled_hlo(monkeypatch)
    rng = np.random.default_rng(11)
    a, x = pt.dvector("a"), pt.dvector("x")
    values = [rng.uniform(0.1, 100, 4096), rng.uniform(0, 200, 4096)]

    def run(mode):
        hlo_texts.clear()
        got = pytensor.function([a, x], pt.gammainc(a, x), mode=mode)(*values)
        (text,) = hlo_texts
        return got, ",128]" in text

    expected = sp.gammainc(*values)
    got, rows = run("STABLEHLO")
    assert rows
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    got, rows = run("STABLEHLO_NO_FMA")
    assert not rows
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    with monkeypatch.context() as patch:
        patch.setattr(comp, "ELEMENTAL_MAX_OPS", 10)  # every loop is past it
        got, rows = run("STABLEHLO")
    assert not rows
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    n_a, n_x = (pt.tensor(name, dtype="float64", shape=(4096,)) for name in "ax")
    lowered = lower(FunctionGraph([n_a, n_x], [pt.gammainc(n_a, n_x)], clone=True))
    assert "rows_first" in lowered.as_text() and "x128x" in lowered.as_text()
    exported = str(load_portable_artifact(export_portable(lowered)))
    assert "rows_first" not in exported and "x128x" not in exported
    inverse = lower(FunctionGraph([n_a, n_x], [pt.gammaincinv(n_a, n_x)], clone=True)).as_text()
    assert "rows_first" not in inverse and "x128x" not in inverse


def test_incomplete_gamma_of_arguments_that_do_not_broadcast_names_the_node():
    """At 4,096 elements (by rows first, an `if` whose branches then disagree too) the
    error is the elementwise one: the node, and the two shapes that do not broadcast."""
    a, x = pt.dvector("a"), pt.dvector("x")
    f = pytensor.function([a, x], pt.gammainc(a, x), mode="STABLEHLO")
    with pytest.raises(ValueError, match=r"arguments of shapes \(4096,\), \(4095,\) do not fit the graph: "
                       r"\"Gammainc\(a, x\)\": elementwise operands of the shapes \(4095,\) and \(4096,\)"):
        f(np.ones(4096), np.ones(4095))


@pytest.mark.parametrize("n, dynamic", [(4096, True), (200, False)])
def test_a_compacting_loop_refuses_a_step_that_reads_a_tensor_it_was_not_given(n, dynamic):
    """A step that reads a tensor from outside its state and params would read it whole in
    the compacted loop: `converge_compacting` says so when it is lowered (of a size known
    only at run time, nothing else would notice before specialization), also at a static
    size too small to compact, where the same rule would pass unnoticed."""
    from jax.extend.mlir.dialects import stablehlo as hlo

    from lowering.builders import compare, convert, full_like
    from lowering.regions import converge_compacting
    from tests.helpers import run_toy

    def build(index):
        i = convert(index, "float64")

        def step(params, state):
            (k,) = state
            k = hlo.add(k, full_like(k, 1.0))
            return [k], compare(k, i, "GE")  # i, not a param

        return converge_compacting([full_like(i, 0.0)], [], compare(i, full_like(i, 0.0), "GT"), step, 100)

    with pytest.raises(ValueError, match="reads tensor<.*xf64> from outside its state and params"):
        run_toy(n, dynamic, build)
