"""pytensor.tensor.optimize: MinimizeOp (BFGS) against its perform (scipy.optimize.minimize).

The Python mode's perform compiles the objective with the default mode (its rewrites, and
with no C compiler in the test session, Op.perform). Our BFGS takes scipy's steps (its line
searches, dcsrch and the wolfe2 fallback, are ported), so the iterates are scipy's up to
the objective's roundings: results agree far below the tolerance that stops them.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.raise_op import Assert
from pytensor.tensor.optimize import minimize

from lowering.errors import UnsupportedParameterError
from tests.helpers import compare_with_py

# the iterates are scipy's; XLA's roundings of the objective move them in the last bits
CLOSE = dict(rtol=1e-8, atol=1e-10)


def _quartic():
    x, a, b = pt.vector("x"), pt.vector("a"), pt.scalar("b")
    return [x, a, b], ((x - a) ** 2).sum() + b * (x**4).sum(), x, [np.zeros(3), np.array([1.0, 2.0, 3.0]), np.array(0.1)]


def _rosenbrock(n=4):
    x, a = pt.vector("x"), pt.scalar("a")
    objective = ((a - x[:-1]) ** 2).sum() + 100 * ((x[1:] - x[:-1] ** 2) ** 2).sum()
    return [x, a], objective, x, [np.array([-1.2, 1.0, 0.5, 2.0][:n]), np.array(1.0)]


def _scalar():
    s, c = pt.scalar("s"), pt.scalar("c")
    return [s, c], (s - c) ** 2 + pt.cosh(s), s, [np.array(0.0), np.array(3.0)]


def _poisson_latent():
    """A latent field's conditional mode, as pymc-extras' INLA finds it: PyMC's logps,
    their parameter checks in the objective."""
    x, mu, sigma = pt.vector("x"), pt.scalar("mu"), pt.scalar("sigma")
    y = np.array([0, 3, 1, 5, 2, 7, 1, 0, 4, 2])
    logp = pm.logp(pm.Normal.dist(mu, sigma), x).sum() + pm.logp(pm.Poisson.dist(pt.exp(x)), y).sum()
    return [x, mu, sigma], -logp, x, [np.zeros(10), np.array(0.5), np.array(1.3)]


def _unbounded():
    x = pt.vector("x")
    return [x], -(x**2).sum(), x, [np.array([1.0, 2.0])]


def _log_barrier():
    x = pt.vector("x")
    return [x], x.sum() - pt.log(x).sum(), x, [np.array([3.0, 0.1])]


@pytest.mark.parametrize("problem, optimizer_kwargs", [
    (_quartic, None),
    (_rosenbrock, None),
    (_scalar, None),
    (_poisson_latent, None),
    # scipy's dcsrch fails once the steps are too small to change the value: its wolfe2
    # fallback then doubles the step ten times, and success is False
    (_unbounded, None),
    (_log_barrier, None),  # trial steps into log's NaN
    (_rosenbrock, {"options": {"maxiter": 5}}),  # stopped early: success False, scipy's iterate
    (_rosenbrock, {"tol": 1e-6, "options": {"norm": 2}}),
    (_rosenbrock, {"options": {"c1": 0.3, "c2": 0.5, "xrtol": 1e-3, "disp": False}}),
], ids=["quartic", "rosenbrock", "scalar", "poisson_latent", "unbounded", "log_barrier", "maxiter", "tol_norm",
        "wolfe_constants"])
def test_bfgs_takes_scipys_steps(problem, optimizer_kwargs):
    inputs, objective, x, values = problem()
    solution, success = minimize(objective, x, optimizer_kwargs=optimizer_kwargs)
    compare_with_py(inputs, [solution, success], values, **CLOSE)


def test_the_solutions_gradient_by_the_implicit_function_theorem():
    x, mu, sigma = pt.vector("x"), pt.scalar("mu"), pt.scalar("sigma")
    solution, _ = minimize(((x - mu) ** 2).sum() / sigma + pt.exp(x).sum(), x)
    cost = (solution**3).sum()
    compare_with_py([x, mu, sigma], pytensor.grad(cost, [mu, sigma]), [np.zeros(4), np.array(0.5), np.array(1.3)],
                    **CLOSE)


def test_float32_and_the_exact_gradient_where_scipy_differentiates_numerically():
    """x of float32: the objective in float32 (perform casts scipy's float64 x), BFGS in
    float64, the result float32. jac=False: scipy's finite differences move its result
    by about their step; we use the exact gradient (README)."""
    xf, af = pt.fvector("xf"), pt.fscalar("af")
    solution, _ = minimize(((xf - af) ** 2).sum() + pt.exp(xf).sum(), xf)
    f = pytensor.function([xf, af], solution, mode="STABLEHLO")
    got = f(np.array([1, 2, 3], "float32"), np.float32(2))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, 0.84083, rtol=1e-3)  # (x - 2)^2 + e^x, to float32 precision loss
    inputs, objective, x, values = _rosenbrock(2)
    solution, success = minimize(objective, x, jac=False)
    compare_with_py(inputs, [solution, success], values, rtol=1e-4)


def test_the_objectives_checks_raise_after_the_loop():
    inputs, objective, x, values = _poisson_latent()
    solution, _ = minimize(objective, x)
    f = pytensor.function(inputs, solution, mode="STABLEHLO")
    with pytest.raises(pm.logprob.utils.ParameterValueError, match=r"sigma > 0 \(node: Check"):
        f(values[0], values[1], np.array(-1.0))
    x, a = pt.vector("x"), pt.scalar("a")
    solution, _ = minimize(Assert("a must be positive")(((x - a) ** 2).sum(), pt.gt(a, 0)), x)
    f = pytensor.function([x, a], solution, mode="STABLEHLO")
    np.testing.assert_allclose(f(np.zeros(2), 1.0), [1.0, 1.0])
    with pytest.raises(AssertionError, match="a must be positive"):
        f(np.zeros(2), -1.0)


@pytest.mark.parametrize("kwargs, refused", [
    ({"method": "L-BFGS-B"}, "method 'L-BFGS-B'"),
    ({"optimizer_kwargs": {"callback": print}}, r"optimizer_kwargs \['callback'\]"),
    ({"optimizer_kwargs": {"options": {"hess_inv0": np.eye(2)}}}, r"optimizer_kwargs \['hess_inv0'\]"),
    ({"optimizer_kwargs": {"options": {"norm": 0}}}, "norm 0"),
])
def test_what_cannot_be_honoured_is_refused_by_name(kwargs, refused):
    inputs, objective, x, _ = _rosenbrock(2)
    solution, _ = minimize(objective, x, **kwargs)
    with pytest.raises(UnsupportedParameterError, match=refused):
        pytensor.function(inputs, solution, mode="STABLEHLO")
