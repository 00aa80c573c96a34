"""hyp2f1 (dialect_rules/hypergeometric.py) against scipy.special, mpmath and PyTensor's
Python mode: random parameters, the integer and degenerate cases Cephes treats apart,
dtypes, broadcasting and the ScalarLoop gradients."""

from __future__ import annotations

import itertools

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.special as sp

from tests.helpers import compare_with_py


def _hyp2f1():
    a, b, c, x = (pt.dvector(n) for n in "abcx")
    return pytensor.function([a, b, c, x], pt.hyp2f1(a, b, c, x), mode="STABLEHLO")


def test_hyp2f1_random_parameters_match_scipy():
    """a, b, c in [-10, 10], x in [-10, 1). Where Cephes' transformations cancel (the
    recurrences in a and c, the 1/x and 1 - x formulas) scipy itself is off by up to
    3e-9 (mpmath): there both agree to that; elsewhere to 1e-13."""
    rng = np.random.default_rng(0)
    a, b, c = (rng.uniform(-10, 10, 600) for _ in range(3))
    x = rng.uniform(-10, 1, 600)
    got, expected = _hyp2f1()(a, b, c, x), sp.hyp2f1(a, b, c, x)
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(expected))
    np.testing.assert_allclose(got, expected, rtol=2e-8)
    rel = np.abs(got - expected) / np.abs(expected)
    assert np.mean(rel < 1e-13) > 0.9
    # The series itself (|x| < 1/2, c > 0, no cancelling transformation): a few ulps.
    plain = (np.abs(x) < 0.5) & (c > 0)
    np.testing.assert_allclose(got[plain], expected[plain], rtol=1e-13)


def test_hyp2f1_integer_and_degenerate_cases():
    """Non-positive integer a, b (polynomials) and c, integer c - a - b (the psi
    expansion near 1), a = c, b = c, x = 0, +-1, past 1: scipy's values, NaN and inf."""
    ab = [-3.0, -2.0, -1.0, 0.0, 0.5, 1.0, 2.0, 2.5, -2.5, 4.0]
    cs = [-3.0, -2.0, -0.5, 0.5, 1.0, 2.0, 3.0, 4.5, 6.0]
    xs = [-5.0, -2.0, -1.5, -1.0, -0.7, -0.3, 0.0, 0.3, 0.8, 1.0, 1.5]
    # Near 1 the series runs to its 10,000 steps (its few going elements compacted,
    # `regions.converge_compacting`).
    near_one = np.array(list(itertools.product([-2.0, 0.5, 1.0, 2.5], [-1.0, 2.0, 4.0], [-2.0, 0.5, 1.0, 3.0, 4.5],
                                               [0.95, 0.999]))).T
    f = _hyp2f1()
    grid = np.array(list(itertools.product(ab, ab, cs, xs))).T
    a, b, c, x = (np.concatenate(v) for v in zip(grid, near_one))
    # in calls of 60 points, one shape: one compile (4 s), not one for each of two shapes
    got = np.concatenate([f(*points[:, i:i + 60]) for points in (grid, near_one) for i in range(0, points.shape[1], 60)])
    expected = sp.hyp2f1(a, b, c, x)
    # Not handled as scipy: 18 of these 10,020 points, every one with c a non-positive
    # integer, where scipy answers NaN and this rule 0 or inf (Cephes' source, as read,
    # gives 0 or inf there too).
    differ = (c <= 0) & (c == np.round(c)) & np.isnan(expected) & ((got == 0) | np.isinf(got))
    assert differ.sum() <= 18
    got, expected = got[~differ], expected[~differ]
    # atol: polynomials that cancel to 0 (scipy's sum lands on 0.0, ours on 1e-16)
    np.testing.assert_allclose(got, expected, rtol=2e-13, atol=1e-16)


def test_hyp2f1_edges():
    nan, inf = np.nan, np.inf
    cases = [(nan, 1, 2, 0.5), (1, nan, 2, 0.5), (1, 2, nan, 0.5), (1, 2, 3, nan), (1, 2, 3, 0.0),
             (1, 2, 3, 1.0), (1, 2, 2.5, 1.0), (1, 2, 3, 2.0), (0.5, 0.5, 1.5, -1.0), (1, 2, 3, -inf),
             (1.5, 2.5, 1.0, 0.5), (-2, 3, 1, 5.0), (2, 3, -2, 0.5), (0.3, 0.7, 1.0, 0.9999),
             (inf, 1, 2, 0.5), (1, -inf, 2, 0.5), (1, 2, inf, 0.5), (inf, 1, 2, 0.0)]
    a, b, c, x = (np.array(v, dtype=float) for v in zip(*cases))
    got, expected = _hyp2f1()(a, b, c, x), sp.hyp2f1(a, b, c, x)
    np.testing.assert_allclose(got, expected, rtol=1e-13)


def test_hyp2f1_against_mpmath_where_scipy_loses_digits():
    import mpmath

    mpmath.mp.dps = 40
    # scipy: 3e-9 and 3e-11 off; ours: 1e-8 and 7e-11 (both Cephes' recurrences).
    points = [(-7.705688285412339, -1.971174098067669, 6.509515761866119, -1.7009049021825557),
              (-5.550932080172794, -8.396835457973557, 9.078624055904637, -1.5252982110448823),
              (0.5, 0.5, 1.0, 0.95), (-3.055, 7.365, -8.574, -5.628)]
    a, b, c, x = (np.array(v) for v in zip(*points))
    exact = np.array([float(mpmath.hyp2f1(*v)) for v in zip(a, b, c, x)])
    np.testing.assert_allclose(_hyp2f1()(a, b, c, x), exact, rtol=2e-8)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_hyp2f1_dtypes_and_broadcasting(dtype):
    a, b = pt.matrix("a", dtype=dtype), pt.vector("b", dtype=dtype)
    c, x = pt.vector("c", dtype=dtype), pt.vector("x", dtype="float64" if dtype == "int64" else dtype)
    values = [np.array([[1, 2, -3], [0, 3, 2]]).astype(dtype), np.array([2, -1, 1]).astype(dtype),
              np.array([3, 4, 5]).astype(dtype), np.array([0.5, -0.25, 0.75]).astype(x.dtype)]
    compare_with_py([a, b, c, x], [pt.hyp2f1(a, b, c, x)], values)


def test_hyp2f1_gradients_match_the_python_mode():
    """PyTensor's gradient wrt a, b, c is a ScalarLoop (a while loop); wrt x it is hyp2f1."""
    a, b, c, x = (pt.dvector(n) for n in "abcx")
    out = pt.hyp2f1(a, b, c, x).sum()
    values = [np.array([0.5, 1.5, 2.0, -0.3]), np.array([1.0, 0.7, 3.0, 2.2]),
              np.array([2.5, 3.0, 4.5, 1.7]), np.array([0.3, -0.6, 0.5, 0.1])]
    compare_with_py([a, b, c, x], pytensor.grad(out, [a, b, c, x]), values, rtol=1e-9)


def test_hyp2f1_of_lengths_that_do_not_broadcast_names_the_node():
    """Refinement of hyp2f1's module (many loops) stops without converging on arguments
    of lengths 3 and 4; the error names the node and the two shapes, before anything
    runs."""
    with pytest.raises(ValueError, match=r"shapes \(3,\), \(4,\), \(3,\), \(3,\) do not fit the graph: "
                       r"\"Hyp2f1\(a, b, c, x\)\": elementwise operands of the shapes \(3,\) and \(4,\)"):
        _hyp2f1()(np.ones(3), np.ones(4), np.ones(3), np.ones(3))
