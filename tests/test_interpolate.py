"""PyMC's SplineWrapper (pm.Interpolated) against PyTensor's Python mode (scipy's splev)."""

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pymc.distributions.dist_math import SplineWrapper
from scipy.interpolate import InterpolatedUnivariateSpline, UnivariateSpline

from tests.helpers import compare_with_py

_KNOTS_X = np.linspace(-3, 3, 13)
_KNOTS_Y = np.exp(-_KNOTS_X**2) + 0.1 * np.sin(3 * _KNOTS_X)
# At knots, between them, at the ends and beyond them, and the values numpy orders last.
_POINTS = np.array([-np.inf, -7.0, -3.0 - 1e-12, -3.0, -2.5, -1.1, 0.0, 0.37, 1.5, 2.999, 3.0, 3.5, 50.0,
                    np.inf, np.nan])


def _splines(ext):
    for k in range(1, 6):
        spline = InterpolatedUnivariateSpline(_KNOTS_X, _KNOTS_Y, k=k, ext=ext)
        yield spline
        yield spline.derivative()  # degree k - 1: the Op PyTensor's gradient builds
    yield UnivariateSpline(_KNOTS_X, _KNOTS_Y, k=3, s=0.05, ext=ext)  # fewer knots than points
    yield InterpolatedUnivariateSpline(_KNOTS_X, _KNOTS_Y, k=2, ext=ext).antiderivative()


@pytest.mark.parametrize("ext", ["extrapolate", "zeros", "const"])
def test_splines_of_every_degree_as_scipy(ext):
    x = pt.dvector("x")
    splines = list(_splines(ext))
    assert {s._eval_args[2] for s in splines} == set(range(6))
    compare_with_py([x], [SplineWrapper(s)(x) for s in splines], [_POINTS], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dtype", ["float32", "int16", "uint8"])
def test_output_has_the_input_dtype(dtype):
    x = pt.tensor("x", shape=(None, 3), dtype=dtype)
    spline = InterpolatedUnivariateSpline(_KNOTS_X * 40, _KNOTS_Y * 100, k=3)
    # (unsigned: points where the spline is positive; numpy wraps a negative float cast
    # to uint8 where XLA saturates, the README's float -> int difference)
    values = (np.arange(12) if dtype == "uint8" else np.arange(-7, 5) * 7).reshape(4, 3).astype(dtype)
    compare_with_py([x], SplineWrapper(spline)(x), [values])


def test_points_outside_the_knots_raise_scipys_error_when_ext_is_raise():
    x = pt.dvector("x")
    f = pytensor.function([x], SplineWrapper(UnivariateSpline(_KNOTS_X, _KNOTS_Y, k=3, s=0, ext="raise"))(x),
                          mode="STABLEHLO")
    with pytest.raises(ValueError, match="Found x value not in the domain"):
        f(np.array([0.0, 3.5]))
    expected = UnivariateSpline(_KNOTS_X, _KNOTS_Y, k=3, s=0)(np.array([-3.0, 0.2, 3.0]))
    np.testing.assert_allclose(f(np.array([-3.0, 0.2, 3.0])), expected, rtol=1e-12)


def test_interpolated_model_logp_and_gradient():
    """pm.Interpolated: the logp is log(spline(x) / Z), its gradient the derivative spline's."""
    with pm.Model() as model:
        pm.Interpolated("x", x_points=_KNOTS_X, pdf_points=np.exp(-_KNOTS_X**2 / 2), shape=4)
    ours = model.logp_dlogp_function(ravel_inputs=True, mode="STABLEHLO")
    reference = model.logp_dlogp_function(ravel_inputs=True, mode="FAST_COMPILE")
    for f in (ours, reference):
        f.set_extra_values({})
    for point in (np.array([-4.0, -0.3, 0.0, 2.2]), np.array([0.1, 5.0, -1.0, 30.0])):
        (logp, grad), (expected_logp, expected_grad) = ours(point), reference(point)
        np.testing.assert_allclose(logp, expected_logp, rtol=1e-12)
        np.testing.assert_allclose(grad, expected_grad, rtol=1e-12, atol=1e-14)
