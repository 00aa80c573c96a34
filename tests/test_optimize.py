"""pytensor.tensor.optimize: MinimizeOp (BFGS, CG, Newton-CG, L-BFGS-B, trust-ncg, dogleg,
Powell, Nelder-Mead), MinimizeScalarOp (Brent, golden, bounded), RootScalarOp (secant, Newton,
Halley; bisect, ridder, brentq, brenth, toms748) and RootOp (hybr, lm, df-sane) against their
performs (scipy.optimize's minimize, minimize_scalar, root_scalar, root).

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
from pytensor.tensor.optimize import minimize, minimize_scalar, root, root_scalar
from scipy.optimize import Bounds

from lowering.errors import UnsupportedParameterError
from tests.helpers import MODE, RAW_MODE, compare_each_with_py, compare_with_py, record_emitter_choices

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
    _takes_scipys_steps(problem, method="BFGS", optimizer_kwargs=optimizer_kwargs)


def _takes_scipys_steps(problem, modes=(MODE,), **kwargs):
    """minimize's solution and success flag for `problem` with `kwargs`, against the
    Python mode's. With the rewritten objective only: the cases walk a method's paths,
    which the raw objective's graph does not change (compiling it too doubled their
    time); `test_every_method_lowers_the_raw_objective` runs each method on it."""
    inputs, objective, x, values = problem()
    solution, success = minimize(objective, x, **kwargs)
    compare_with_py(inputs, [solution, success], values, modes=modes, **CLOSE)


@pytest.mark.parametrize("method, kwargs", [
    ("BFGS", {}), ("CG", {}), ("Nelder-Mead", {}), ("Powell", {}), ("L-BFGS-B", {}),
    ("L-BFGS-B", {"optimizer_kwargs": {"bounds": [(0.5, 2.5)] * 3}}),
    ("Newton-CG", {"hess": True, "use_vectorized_jac": True}),
    ("trust-ncg", {"hess": True, "use_vectorized_jac": True}),
    ("dogleg", {"hess": True, "use_vectorized_jac": True}),
], ids=["BFGS", "CG", "Nelder-Mead", "Powell", "L-BFGS-B", "L-BFGS-B_bounds", "Newton-CG", "trust-ncg", "dogleg"])
def test_every_method_lowers_the_raw_objective(method, kwargs):
    """Each method with the graph as written (no rewrites) in its objective and gradient."""
    _takes_scipys_steps(_quartic, modes=(RAW_MODE,), method=method, **kwargs)


def _saddle():  # negative curvature at the first CG step: steepest descent
    x = pt.vector("x")
    return [x], x[0] ** 2 - x[1] ** 2 + 0.1 * x[1] ** 4, x, [np.array([1.0, 0.5])]


@pytest.mark.parametrize("problem, optimizer_kwargs", [
    (_quartic, None),
    (_rosenbrock, None),  # a local minimum of the 4-variable Rosenbrock function
    (_scalar, None),
    (_poisson_latent, None),
    (_unbounded, None),  # NaN: success False
    (_log_barrier, None),
    (_saddle, None),
    (_rosenbrock, {"options": {"maxiter": 5}}),
    (_rosenbrock, {"tol": 1e-10, "options": {"c1": 0.3, "c2": 0.5}}),
], ids=["quartic", "rosenbrock", "scalar", "poisson_latent", "unbounded", "log_barrier", "saddle", "maxiter",
        "tol_wolfe_constants"])
def test_newton_cg_takes_scipys_steps(problem, optimizer_kwargs):
    _takes_scipys_steps(problem, method="Newton-CG", hess=True, use_vectorized_jac=True,
                        optimizer_kwargs=optimizer_kwargs)


def test_newton_cg_over_several_variables():
    """minimize over a scalar and a vector (packed into one x; the vectorized Hessian
    splits it again, a Blockwise(Split) with the same sizes for every entry)."""
    b0, b1, x, y = pt.dscalar("b0"), pt.dvector("b1"), pt.dmatrix("x"), pt.dvector("y")
    objective = ((y - b0 - x @ b1) ** 2).sum()
    (s0, s1), success = minimize(objective, [b0, b1], method="Newton-CG", hess=True, use_vectorized_jac=True)
    rng = np.random.default_rng(2)
    values = [np.array(0.0), np.zeros(3), rng.normal(size=(20, 3)), rng.normal(size=20)]
    compare_with_py([b0, b1, x, y], [s0, s1, success], values, **CLOSE)


def test_newton_cg_without_hess_uses_the_exact_hessian():
    """scipy differences the gradient for Hessian-vector products there (README); the
    solution agrees to their precision. Without jac, scipy's error."""
    inputs, objective, x, values = _quartic()
    compare_with_py(inputs, list(minimize(objective, x, method="Newton-CG")), values, rtol=1e-6)
    with pytest.raises(ValueError, match="Jacobian is required for Newton-CG method"):
        pytensor.function(inputs, minimize(objective, x, method="Newton-CG", jac=False)[0], mode="STABLEHLO")


def _convex_quadratic_field():
    """A convex objective of 12 variables (a random positive definite quadratic plus
    cosh), where L-BFGS-B takes many steps with a full memory."""
    x, a, b = pt.vector("x"), pt.matrix("a"), pt.vector("b")
    rng = np.random.default_rng(4)
    m = rng.normal(size=(12, 12))
    return [x, a, b], 0.5 * (x @ a @ x) - b @ x + 0.1 * pt.cosh(x).sum(), x, [
        rng.normal(size=12), m @ m.T / 12 + 0.2 * np.eye(12), rng.normal(size=12) * 3]


@pytest.mark.parametrize("problem, optimizer_kwargs", [
    (_quartic, None),
    (_rosenbrock, None),
    (_scalar, None),
    (_poisson_latent, {"tol": 1e-8}),  # pymc-extras' marginal Laplace approximation's setting
    (_convex_quadratic_field, None),
    (_unbounded, None),  # f falls without bound until its relative reduction is within ftol: "converged"
    (_log_barrier, None),  # trial steps into log's NaN
    (_rosenbrock, {"options": {"maxiter": 5}}),  # scipy's driver stops it: success False
    (_rosenbrock, {"options": {"maxfun": 8}}),
    (_rosenbrock, {"tol": 1e-14}),  # ftol and gtol
    (_convex_quadratic_field, {"options": {"maxcor": 3, "maxls": 2, "ftol": 1e-12, "eps": 1e-6}}),
    (_rosenbrock, {"options": {"gtol": -1.0}}),  # the gradient's test never passes: converged by ftol
    (_rosenbrock, {"options": {"maxls": 1}}),  # searches fail: the pairs dropped, then abnormal (success False)
    (_rosenbrock, {"options": {"ftol": -1.0}}),  # errclb's error: x0, success False
    (_rosenbrock, {"bounds": None}),
], ids=["quartic", "rosenbrock", "scalar", "poisson_latent", "convex_field", "unbounded", "log_barrier", "maxiter",
        "maxfun", "tol", "memory_maxls", "negative_gtol", "abnormal", "negative_ftol", "bounds_none"])
def test_lbfgsb_takes_scipys_steps(problem, optimizer_kwargs):
    _takes_scipys_steps(problem, method="L-BFGS-B", optimizer_kwargs=optimizer_kwargs)


def test_lbfgsb_as_pytensors_own_test_and_its_errors():
    """PyTensor's test_minimize_vector_x[L-BFGS-B]: a shifted Rosenbrock function to
    1e-16; empty x (setulb's error: x0, success False); without jac; scipy's maxls error."""
    x, a, b = pt.vector("x"), pt.scalar("a"), pt.scalar("b")
    objective = (a * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum() + b
    solution, success = minimize(objective, x, method="L-BFGS-B", optimizer_kwargs={"tol": 1e-16},
                                 use_vectorized_jac=True)
    got = compare_with_py([x, a, b], [solution, success], [np.zeros(5), np.array(0.5), np.array(1.0)], **CLOSE)
    np.testing.assert_allclose(got[0], np.ones(5), rtol=1e-8)
    compare_with_py([x], list(minimize((x**2).sum(), x, method="L-BFGS-B")), [np.zeros(0)])
    inputs, objective, x4, values = _quartic()  # jac=False: scipy differences, ours is exact (README)
    compare_with_py(inputs, list(minimize(objective, x4, method="L-BFGS-B", jac=False)), values, rtol=1e-6)
    with pytest.raises(ValueError, match="maxls must be positive"):
        pytensor.function([x], minimize((x**2).sum(), x, method="L-BFGS-B",
                                        optimizer_kwargs={"options": {"maxls": 0}})[0], mode="STABLEHLO")


@pytest.mark.parametrize("problem, optimizer_kwargs", [
    (_quartic, None),
    (_rosenbrock, None),
    (_scalar, None),
    (_poisson_latent, None),
    (_convex_quadratic_field, None),
    (_saddle, None),  # negative curvature: the better boundary point
    (_unbounded, None),  # the radius grows to its largest: maxiter, success False
    (_log_barrier, None),  # proposals into log's NaN are rejected
    (_rosenbrock, {"options": {"maxiter": 3}}),
    (_rosenbrock, {"tol": 1e-10, "options": {"initial_trust_radius": 0.1, "max_trust_radius": 2.0, "eta": 0.2,
                                             "inexact": False}}),
], ids=["quartic", "rosenbrock", "scalar", "poisson_latent", "convex_field", "saddle", "unbounded", "log_barrier",
        "maxiter", "tol_radii_eta"])
def test_trust_ncg_takes_scipys_steps(problem, optimizer_kwargs):
    _takes_scipys_steps(problem, method="trust-ncg", hess=True, use_vectorized_jac=True,
                        optimizer_kwargs=optimizer_kwargs)


def test_trust_ncg_errors_are_scipys():
    """Its argument errors when the function is built; scipy.linalg.norm's ValueError on a
    gradient that is not finite, at the call."""
    x = pt.vector("x")
    for kwargs, error, message in [
        ({"jac": False}, ValueError, "Jacobian is required for Newton-CG trust-region minimization"),
        ({"hess": False}, ValueError, "Either the Hessian or the Hessian-vector product is required"),
        ({"optimizer_kwargs": {"options": {"eta": 0.3}}}, Exception, "invalid acceptance stringency"),
        ({"optimizer_kwargs": {"options": {"max_trust_radius": 0.0}}}, Exception,
         "the max trust radius must be positive"),
        ({"optimizer_kwargs": {"options": {"initial_trust_radius": 0.0}}}, ValueError,
         "the initial trust radius must be positive"),
        ({"optimizer_kwargs": {"options": {"initial_trust_radius": 5e3}}}, ValueError,
         "the initial trust radius must be less than the max trust radius"),
    ]:
        kwargs = {"hess": True, **kwargs}
        with pytest.raises(error, match=message):
            pytensor.function([x], minimize((x**2).sum(), x, method="trust-ncg", **kwargs)[0], mode="STABLEHLO")
    solution, _ = minimize(0.1 * x.sum() - pt.sqrt(x).sum(), x, method="trust-ncg", hess=True)
    f = pytensor.function([x], solution, mode="STABLEHLO")
    with pytest.raises(ValueError, match="array must not contain infs or NaNs"):
        f(np.array([-1.0, 2.0]))
    compare_with_py([x], [solution], [np.array([0.01, 2.0])], **CLOSE)


def _shifted_rosenbrock():  # PyTensor's test_minimize_vector_x
    x, a = pt.vector("x"), pt.scalar("a")
    return [x, a], (a * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum() + 1.0, x, [np.zeros(5), np.array(0.5)]


def _exponentials():
    x, a = pt.vector("x"), pt.scalar("a")
    return [x, a], pt.exp(x).sum() - a * x.sum() + 0.1 * (x[0] - x[1]) ** 2, x, [np.array([5.0, 4.0, 3.0]),
                                                                             np.array(2.0)]


def _nonnegative_least_squares():
    """Half the coefficients below 0 and held at it: the Cauchy point passes breakpoints
    with pairs stored."""
    x, a, y = pt.vector("x"), pt.matrix("a"), pt.vector("y")
    rng = np.random.default_rng(5)
    design = rng.normal(size=(40, 12)) + rng.normal(size=(1, 12))
    truth = np.where(np.arange(12) % 2 == 0, 1.0, -1.0) * rng.uniform(0.5, 2.0, 12)
    return [x, a, y], 0.5 * ((a @ x - y) ** 2).sum(), x, [np.ones(12), design, design @ truth + rng.normal(size=40)]


def _corners():  # unbounded below: every variable runs to a bound
    x = pt.vector("x")
    return [x], -(x**2).sum() + 0.3 * x[0] * x[1], x, [np.array([0.1, -0.2, 0.3])]


@pytest.mark.parametrize("problem, optimizer_kwargs", [
    (_rosenbrock, {"bounds": [(-2.0, 0.5)] * 4}),  # boxed: the first trial step is 1
    # x0 outside them; a projected step that is not a descent direction, cut back
    (_rosenbrock, {"bounds": [(None, 0.5), (0.0, None), (None, None), (1.5, 3.0)]}),
    (_rosenbrock, {"bounds": [(0.0, None)]}),  # one pair for all
    (_rosenbrock, {"bounds": [(-5.0, 5.0)] * 4}),  # never active
    (_quartic, {"bounds": [(0.5, 2.5)] * 3}),
    (_quartic, {"bounds": [(1.0, 1.0), (0.0, 3.0), (-1.0, 2.5)]}),  # one variable fixed
    (_quartic, {"bounds": [(1.0, 1.0)] * 3}),  # all fixed: scipy does not run, x = the bounds, success
    (_quartic, {"bounds": Bounds([0.0, -np.inf, 2.9], [0.2, 1.0, np.inf])}),
    (_poisson_latent, {"tol": 1e-8, "bounds": [(-0.5, 0.8)]}),
    (_convex_quadratic_field, {"bounds": [(-0.5, 0.5)] * 12}),  # a full memory, breakpoints met with it
    (_convex_quadratic_field, {"bounds": [(-0.5, None)] * 6 + [(None, 0.2)] * 6, "options": {"maxcor": 2}}),
    (_nonnegative_least_squares, {"bounds": [(0.0, None)]}),
    (_nonnegative_least_squares, {"bounds": [(0.0, None)], "options": {"maxcor": 3}}),
    (_corners, {"bounds": [(-1.0, 2.0)] * 3}),  # the Cauchy point at the last breakpoint
    (_corners, {"bounds": [(-1.0, None), (-1.0, 2.0), (None, 2.0)]}),  # f unbounded along a free direction
    (_log_barrier, {"bounds": [(1e-3, None)]}),
    (_exponentials, {"bounds": [(None, 0.5), (0.5, 2.0), (-1.0, 0.6)]}),
    (_rosenbrock, {"bounds": [(-2.0, 0.5)] * 4, "options": {"maxiter": 3}}),  # success False
    (_rosenbrock, {"bounds": [(0.0, None)], "options": {"maxfun": 6}}),
    (_rosenbrock, {"bounds": [(0.0, None)], "options": {"maxls": 1}}),  # searches fail: pairs dropped, abnormal
    (_rosenbrock, {"bounds": [(None, None)] * 4}),  # no variable bounded: the unconstrained method
], ids=["box", "mixed", "one_pair", "inactive", "quartic", "one_fixed", "all_fixed", "bounds_object",
        "poisson_latent", "full_memory", "maxcor", "nnls", "nnls_maxcor", "corners", "free_direction", "log_barrier", "exponentials",
        "maxiter", "maxfun", "abnormal", "no_bound"])
def test_lbfgsb_with_bounds_takes_scipys_steps(problem, optimizer_kwargs):
    _takes_scipys_steps(problem, method="L-BFGS-B", optimizer_kwargs=optimizer_kwargs)


def test_lbfgsb_with_bounds_of_a_few_variables_compiles_with_the_elemental_emitter(monkeypatch):
    """formt's L D^-1 L' is a product of two maxcor x maxcor matrices: summed over a
    maxcor**3 tensor (1,000 elements at the default maxcor) it kept every bounded L-BFGS-B
    from XLA's elemental emitter, which compiles the method in half the time."""
    elemental = record_emitter_choices(monkeypatch)
    _takes_scipys_steps(_rosenbrock, method="L-BFGS-B", optimizer_kwargs={"bounds": [(-2.0, 0.5)] * 4})
    assert elemental == [True]


def _bounds_errors_are_scipys(method):
    """scipy's ValueErrors for bounds: reversed ones when lowering; a number that does not
    fit x when lowering where x's length is known, else at the call."""
    def build(variable, bounds):
        solution, _ = minimize(((variable - 1.0) ** 2).sum(), variable, method=method,
                               optimizer_kwargs={"bounds": bounds})
        return pytensor.function([variable], solution, mode="STABLEHLO")

    x3, x = pt.vector("x3", shape=(3,)), pt.vector("x")
    with pytest.raises(ValueError, match="An upper bound is less than the corresponding lower bound"):
        build(x3, [(1.0, 0.0)] * 3)
    with pytest.raises(ValueError, match="The number of bounds is not compatible with the length of `x0`"):
        build(x3, [(0.0, 1.0)] * 2)
    with pytest.raises(ValueError, match="The number of bounds is not compatible with the length of `x0`"):
        build(x, [(0.0, 1.0)] * 2)(np.zeros(3))


def test_lbfgsb_with_bounds_edges_and_errors():
    """jac=False with a fixed variable (scipy takes it out of the problem: its gradient
    leaves theta, and where no other variable is bounded the method runs unconstrained); an
    empty x (all of none fixed: success); float32; scipy's errors."""
    inputs, objective, x, values = _quartic()
    objective = objective + 2.0 * x[0] * (x[1] + x[2]) ** 2  # the fixed variable's gradient moves
    for bounds in ([(1.0, 1.0), (0.0, 3.0), (-1.0, 2.5)], [(1.0, 1.0), (None, None), (None, None)]):
        compare_with_py(inputs, list(minimize(objective, x, method="L-BFGS-B", jac=False,
                                              optimizer_kwargs={"bounds": bounds})), values, rtol=1e-6)
    v = pt.vector("v")
    compare_with_py([v], list(minimize((v**2).sum(), v, method="L-BFGS-B", optimizer_kwargs={"bounds": [(0, 1)]})),
                    [np.zeros(0)])
    f32 = pt.fvector("f32")
    compare_with_py([f32], list(minimize(((f32 - 2) ** 2).sum(), f32, method="L-BFGS-B",
                                         optimizer_kwargs={"bounds": [(0, 1.5)]})), [np.zeros(3, np.float32)])
    _bounds_errors_are_scipys("L-BFGS-B")


def _double_well():
    x, a = pt.vector("x"), pt.scalar("a")
    return [x, a], (x**4 / 4 - x**2 + a * x).sum(), x, [np.array([2.0, 1.5]), np.array(0.5)]


@pytest.mark.parametrize("problem, optimizer_kwargs", [
    (_quartic, None),
    (_scalar, None),
    (_poisson_latent, None),
    (_convex_quadratic_field, None),
    (_shifted_rosenbrock, None),
    (_exponentials, None),
    (_log_barrier, None),
    (_double_well, None),
    (_double_well, {"options": {"initial_trust_radius": 0.3}}),  # Cauchy points cut, the dogleg's second leg
    (_rosenbrock, None),  # a Hessian not positive definite at x0: scipy's LinAlgError, caught: success False
    (_saddle, None),
    (_exponentials, {"tol": 1e-10, "options": {"initial_trust_radius": 0.1, "eta": 0.2, "maxiter": 40}}),
], ids=["quartic", "scalar", "poisson_latent", "convex_field", "shifted_rosenbrock", "exponentials", "log_barrier",
        "double_well", "small_radius", "not_positive_definite", "saddle", "tol_radius_eta_maxiter"])
def test_dogleg_takes_scipys_steps(problem, optimizer_kwargs):
    _takes_scipys_steps(problem, method="dogleg", hess=True, use_vectorized_jac=True, optimizer_kwargs=optimizer_kwargs)


def test_dogleg_errors_are_scipys():
    x = pt.vector("x")
    for kwargs, message in [({"jac": False, "hess": True}, "Jacobian is required for dogleg minimization"),
                            ({}, "Hessian is required for dogleg minimization")]:
        with pytest.raises(ValueError, match=message):
            pytensor.function([x], minimize((x**2).sum(), x, method="dogleg", **kwargs)[0], mode="STABLEHLO")
    solution, _ = minimize(0.1 * x.sum() - pt.sqrt(x).sum(), x, method="dogleg", hess=True)
    with pytest.raises(ValueError, match="array must not contain infs or NaNs"):  # cho_factor's check of the Hessian
        pytensor.function([x], solution, mode="STABLEHLO")(np.array([-1.0, 2.0]))


@pytest.mark.parametrize("problem, optimizer_kwargs", [
    (_shifted_rosenbrock, None),
    (_shifted_rosenbrock, {"tol": 1e-16}),  # PyTensor's own setting: 1,711 evaluations
    (_rosenbrock, None),
    (_exponentials, None),
    (_scalar, None),
    (_poisson_latent, None),
    (_unbounded, None),  # x runs off to 1e154: converged, as scipy says
    (_log_barrier, None),  # steps into log's NaN
    (_rosenbrock, {"options": {"maxiter": 3}}),  # success False
    (_rosenbrock, {"options": {"maxfev": 50}}),  # the wrapper refuses the 51st evaluation mid-search
    (_exponentials, {"options": {"xtol": 1e-2, "ftol": 1e-6, "maxiter": 40, "disp": False}}),
    # bounds: fminbound on each line's segment inside them, on its arctangent where one end
    # is infinite, Brent's method where both are; the extrapolation stops at the bounds
    (_exponentials, {"bounds": [(None, 0.5), (0.5, 2.0), (-1, 0.6)]}),
    (_exponentials, {"bounds": [(0.8, None)]}),
    (_exponentials, {"bounds": [(None, 0.5)]}),  # x0 outside them
    (_quartic, {"bounds": [(0.1, 0.2), (None, None), (2.5, 4)]}),
    (_shifted_rosenbrock, {"bounds": [(-0.5, 0.6)]}),
    (_poisson_latent, {"bounds": [(-0.3, 0.4)]}),
    (_exponentials, {"bounds": [(0.8, None)], "options": {"maxfev": 40}}),
], ids=["shifted_rosenbrock", "pytensors_tol", "rosenbrock", "exponentials", "scalar", "poisson_latent", "unbounded",
        "log_barrier", "maxiter", "maxfev", "xtol_ftol", "bounds", "bounded_below", "x0_outside", "one_free",
        "rosenbrock_bounds", "poisson_latent_bounds", "bounds_maxfev"])
def test_powell_takes_scipys_steps(problem, optimizer_kwargs):
    _takes_scipys_steps(problem, method="Powell", optimizer_kwargs=optimizer_kwargs)


@pytest.mark.parametrize("bounds", [None, [(None, 0.6)]])
def test_powell_starts_from_direc(bounds):
    """Powell's first directions given: the Python mode's first call agrees. scipy updates
    the array in place (np.asarray of a float64 array is the array), so the Op's own
    `direc` changes with each call of the Python mode; ours reads it when lowering, and
    every call starts from it (README)."""
    inputs, objective, x, values = _exponentials()
    direc = np.array([[1.0, 0.5, 0.0], [0.0, 1.0, -0.3], [0.2, 0.0, 2.0]])
    optimizer_kwargs = {"options": {"direc": direc}, "bounds": bounds}
    solution, success = minimize(objective, x, method="Powell", optimizer_kwargs=optimizer_kwargs)
    f = pytensor.function(inputs, solution, mode="STABLEHLO")  # built before any Python-mode call
    first = compare_with_py(inputs, [solution, success], values, **CLOSE)
    assert not np.array_equal(direc, np.array([[1.0, 0.5, 0.0], [0.0, 1.0, -0.3], [0.2, 0.0, 2.0]]))  # scipy's update
    for _ in range(2):
        np.testing.assert_array_equal(f(*values), first[0])
    with pytest.raises(ValueError, match=r"Powell's direc must be an N x N array .* got shape \(3, 3\)"):
        x2 = pt.vector("x2")
        pytensor.function([x2], minimize((x2**2).sum(), x2, method="Powell",
                                         optimizer_kwargs={"options": {"direc": np.eye(3)}})[0],
                          mode="STABLEHLO")(np.ones(2))


def test_powell_errors_are_scipys():
    x = pt.vector("x")
    solution, success = minimize((x**2).sum(), x, method="Powell")
    f = pytensor.function([x], [solution, success], mode="STABLEHLO")
    with pytest.raises(RuntimeError, match="Too many function calls"):  # maxfev N * 1000 = 0 for an empty x
        f(np.zeros(0))
    compare_with_py([x], list(minimize((x**2).sum(), x, method="Powell", optimizer_kwargs={"options": {"maxfev": 10}})),
                    [np.zeros(0)])  # converged at once
    with pytest.raises(ValueError, match="tolerance should be >= 0"):
        negative = {"options": {"xtol": -1.0}}
        pytensor.function([x], minimize((x**2).sum(), x, method="Powell", optimizer_kwargs=negative)[0],
                          mode="STABLEHLO")
    for options, refused in [({"maxiter": np.inf, "maxfev": np.inf}, "maxiter and maxfev both infinite")]:
        with pytest.raises(UnsupportedParameterError, match=refused):
            pytensor.function([x], minimize((x**2).sum(), x, method="Powell", optimizer_kwargs={"options": options})[0],
                              mode="STABLEHLO")
    _bounds_errors_are_scipys("Powell")


@pytest.mark.parametrize("problem, optimizer_kwargs", [
    (_quartic, None),
    (_scalar, None),
    (_poisson_latent, None),
    (_unbounded, None),  # the line searches fail: success False
    (_log_barrier, None),  # trial steps into log's NaN
    (_saddle, None),
    (_shifted_rosenbrock, None),
    (_exponentials, None),  # wolfe2 where dcsrch's step fails the descent condition
    (_rosenbrock, {"options": {"maxiter": 5}}),
    # Each of tol, norm, c1 and c2 moves scipy's solution here by 6e-7 or more. (With tol
    # 1e-7 the last steps' decreases of the objective were near its rounding, and an ulp
    # of exp on another CPU sent the line search another way.)
    (_exponentials, {"tol": 3e-6, "options": {"norm": 2, "c1": 0.3, "c2": 0.5, "disp": False}}),
], ids=["quartic", "scalar", "poisson_latent", "unbounded", "log_barrier", "saddle", "shifted_rosenbrock",
        "exponentials", "maxiter", "tol_norm_wolfe_constants"])
def test_cg_takes_scipys_steps(problem, optimizer_kwargs):
    _takes_scipys_steps(problem, method="CG", optimizer_kwargs=optimizer_kwargs)


def _plateau():  # a step function: no reflection or contraction is better, so the simplex shrinks
    x, a = pt.vector("x"), pt.scalar("a")
    return [x, a], pt.floor(((x - a) ** 2).sum()), x, [np.array([0.3, 0.2]), np.array(0.4)]


def _outside_the_domain():  # log's NaN beyond the unit ball: NaN values sort last, the simplex shrinks
    x, a = pt.vector("x"), pt.scalar("a")
    return [x, a], (x - a).sum() ** 2 + pt.log(1.0 - (x**2).sum()), x, [np.array([0.1, -0.3, 0.2]), np.array(0.4)]


_SIMPLEX = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])


@pytest.mark.parametrize("problem, optimizer_kwargs", [
    (_quartic, None),
    (_rosenbrock, None),
    (_scalar, None),
    (_poisson_latent, None),  # stopped at maxfev: success False
    (_unbounded, None),
    (_log_barrier, None),
    (_saddle, None),
    (_exponentials, None),
    (_plateau, None),
    (_outside_the_domain, None),
    (_rosenbrock, {"options": {"maxiter": 5}}),
    (_rosenbrock, {"options": {"maxfev": 50}}),  # the wrapper refuses the 51st evaluation
    (_plateau, {"options": {"maxfev": 14}}),  # ... the 15th, halfway through a shrink
    (_rosenbrock, {"options": {"adaptive": True, "xatol": 1e-6, "fatol": 1e-8, "disp": False}}),
    (_exponentials, {"bounds": [(None, 1.0), (0.5, 2.0), (-1, None)]}),
    (_rosenbrock, {"bounds": [(-1, 0.5)]}),  # one pair for every variable
    (_exponentials, {"tol": 1e-3, "options": {"initial_simplex": _SIMPLEX}}),
], ids=["quartic", "rosenbrock", "scalar", "poisson_latent", "unbounded", "log_barrier", "saddle", "exponentials",
        "plateau", "outside_the_domain", "maxiter", "maxfev", "refused_in_shrink", "adaptive_xatol_fatol", "bounds",
        "one_bound_pair", "tol_initial_simplex"])
def test_nelder_mead_takes_scipys_steps(problem, optimizer_kwargs):
    _takes_scipys_steps(problem, method="Nelder-Mead", optimizer_kwargs=optimizer_kwargs)


@pytest.mark.parametrize("method, rtol", [("CG", 1e-6), ("Nelder-Mead", 1e-8)])
def test_cg_and_nelder_mead_on_random_problems(method, rtol):
    """Convex quadratics with quartic and cosine terms, 1 to 6 variables, one function.
    CG stops where the gradient's norm falls below 1e-5, which roundings decide to about
    1e-7 relatively here (seeds of 30 agree to 6e-8 or better)."""
    x, A, b = pt.vector("x"), pt.matrix("A"), pt.vector("b")
    objective = 0.5 * (x @ (A @ x)) - b @ x + 0.05 * (x**4).sum() + 0.3 * pt.cos(x).sum()
    value_sets = []
    for seed in range(5):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(1, 7))
        m = rng.normal(size=(n, n))
        value_sets.append([rng.normal(size=n) * 2, m @ m.T + 0.5 * np.eye(n), rng.normal(size=n)])
    compare_each_with_py([x, A, b], list(minimize(objective, x, method=method)), value_sets, rtol=rtol, atol=1e-10)


def test_nelder_mead_in_float32_and_float16():
    """The simplex in x's dtype, as scipy keeps it; f's values in float64. float16 agrees
    exactly; float32 to 1e-5 (2e-6 seen after 10 iterations: the paths part at an
    expansion point an ulp apart, README)."""
    for dtype, rtol in [("float16", 0.0), ("float32", 1e-5)]:
        x, a = pt.vector("x", dtype=dtype), pt.scalar("a", dtype=dtype)
        objective = pt.exp(x).sum() - a * x.sum() + 0.1 * (x[0] - x[1]) ** 2
        for options in [{"maxiter": 10}, {"maxiter": 10, "adaptive": True}]:
            solution, success = minimize(objective, x, method="Nelder-Mead", optimizer_kwargs={"options": options})
            got = compare_with_py([x, a], [solution, success], [np.array([0.5, 0.4, 0.3], dtype), np.array(2.0, dtype)],
                                  rtol=rtol, atol=0.0)
            assert got[0].dtype == dtype


def test_nelder_mead_errors_are_scipys():
    x3 = pt.vector("x3", shape=(3,))
    x = pt.vector("x")

    def build(variable, **optimizer_kwargs):
        solution, success = minimize(((variable - 1.0) ** 2).sum(), variable, method="Nelder-Mead",
                                     optimizer_kwargs=optimizer_kwargs)
        return pytensor.function([variable], [solution, success], mode="STABLEHLO")

    _bounds_errors_are_scipys("Nelder-Mead")
    np.testing.assert_allclose(build(x, bounds=[(0.0, 0.5)] * 2)(np.zeros(2))[0], [0.5, 0.5])
    with pytest.raises(ValueError, match=r"`initial_simplex` should be an array of shape \(N\+1,N\)"):
        build(x3, options={"initial_simplex": np.zeros((3, 3))})
    with pytest.raises(ValueError, match="Size of `initial_simplex` is not consistent with `x0`"):
        build(x3, options={"initial_simplex": np.zeros((3, 2))})
    with pytest.raises(ValueError, match="Size of `initial_simplex` is not consistent with `x0`"):
        build(x, options={"initial_simplex": np.zeros((3, 2))})(np.zeros(3))
    empty = build(x)(np.zeros(0))  # maxfev 200 N = 0: no evaluation, success False
    assert empty[0].shape == (0,) and not empty[1]
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        build(x, options={"maxfev": 10})(np.zeros(0))  # as scipy's np.max of no differences
    for options, refused in [({"xtol": 1e-3}, r"optimizer_kwargs \['xtol'\]"),
                             ({"maxiter": np.inf, "maxfev": np.inf}, "maxiter and maxfev both infinite")]:
        with pytest.raises(UnsupportedParameterError, match=refused):
            build(x, options=options)
    with pytest.raises(UnsupportedParameterError, match=r"optimizer_kwargs \['callback'\]"):
        build(x, callback=print)


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
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        pytensor.function([x], minimize((x**2).sum(), x)[0], mode="STABLEHLO")(np.zeros(0))  # as scipy's
    solution, _ = minimize(Assert("a must be positive")(((x - a) ** 2).sum(), pt.gt(a, 0)), x)
    f = pytensor.function([x, a], solution, mode="STABLEHLO")
    np.testing.assert_allclose(f(np.zeros(2), 1.0), [1.0, 1.0])
    with pytest.raises(AssertionError, match="a must be positive"):
        f(np.zeros(2), -1.0)


@pytest.mark.parametrize("kwargs, refused", [
    ({"method": "COBYLA"}, "method 'COBYLA'"),
    ({"method": "Powell", "optimizer_kwargs": {"constraints": ()}}, r"optimizer_kwargs \['constraints'\]"),
    ({"method": "L-BFGS-B", "optimizer_kwargs": {"options": {"callback": print}}}, r"optimizer_kwargs \['callback'\]"),
    ({"optimizer_kwargs": {"callback": print}}, r"optimizer_kwargs \['callback'\]"),
    ({"optimizer_kwargs": {"options": {"hess_inv0": np.eye(2)}}}, r"optimizer_kwargs \['hess_inv0'\]"),
    ({"optimizer_kwargs": {"options": {"norm": 0}}}, "norm 0"),
])
def test_what_cannot_be_honoured_is_refused_by_name(kwargs, refused):
    inputs, objective, x, _ = _rosenbrock(2)
    solution, _ = minimize(objective, x, **kwargs)
    with pytest.raises(UnsupportedParameterError, match=refused):
        pytensor.function(inputs, solution, mode="STABLEHLO")


def _cube_root():
    x, a = pt.scalar("x"), pt.scalar("a")
    return [x, a], x**3 - a, x, [np.array(1.0), np.array(8.0)]


def _transcendental():
    x, a = pt.scalar("x"), pt.scalar("a")
    return [x, a], pt.exp(x) - a * pt.cos(x), x, [np.array(0.0), np.array(5.0)]


@pytest.mark.parametrize("problem, kwargs", [
    (_cube_root, {}),  # secant, the default, from x0 and x0 (1 + 1e-4) + 1e-4
    (_transcendental, {"optimizer_kwargs": {"x1": np.float64(3.0)}}),
    (_cube_root, {"method": "newton", "jac": True}),
    (_transcendental, {"method": "halley", "jac": True, "hess": True}),
    (_cube_root, {"optimizer_kwargs": {"maxiter": 3}}),  # stopped: converged False, scipy's last iterate
    (_cube_root, {"optimizer_kwargs": {"xtol": 1e-3, "rtol": 1e-2}}),
], ids=["secant", "secant_x1", "newton", "halley", "maxiter", "tolerances"])
def test_root_scalar_takes_scipys_steps(problem, kwargs):
    inputs, equation, x, values = problem()
    compare_with_py(inputs, list(root_scalar(equation, x, **kwargs)), values, **CLOSE)


def test_root_scalar_where_scipy_stops_without_a_root():
    """A flat secant (q1 == q0: the midpoint) and a zero derivative (Newton: x0 as it is),
    both converged False; float32 x keeps its dtype."""
    x, a = pt.scalar("x"), pt.scalar("a")
    compare_with_py([x, a], list(root_scalar(pt.exp(-x * x) * 0 + a, x)), [np.array(1.0), np.array(1.0)])
    compare_with_py([x, a], list(root_scalar(x**2 + a, x, method="newton", jac=True)), [np.array(0.0), np.array(1.0)])
    xf = pt.fscalar("xf")
    compare_with_py([xf], list(root_scalar(xf**3 - 8, xf)), [np.float32(1.0)])


def test_root_scalar_newton_without_jac_uses_the_exact_derivative():
    """scipy differentiates numerically there (README); the root agrees to its tolerance."""
    inputs, equation, x, values = _transcendental()
    compare_with_py(inputs, list(root_scalar(equation, x, method="newton")), values, rtol=1e-7)


def test_root_scalar_errors_are_scipys_or_name_what_is_refused():
    inputs, equation, x, values = _cube_root()
    root, _ = root_scalar(equation, x, optimizer_kwargs={"x1": np.float64(1.0)})
    with pytest.raises(ValueError, match=r"x1 and x0 must be different \(node: RootScalarOp"):
        pytensor.function(inputs, root, mode="STABLEHLO")(*values)
    with pytest.raises(ValueError, match="fprime2 must be specified for halley"):
        pytensor.function(inputs, root_scalar(equation, x, method="halley", jac=True)[0], mode="STABLEHLO")
    for kwargs, refused in [({"method": "steffensen"}, "method 'steffensen'"),  # (no scipy method is left out)
                            ({"optimizer_kwargs": {"full_output": True}}, r"optimizer_kwargs \['full_output'\]")]:
        with pytest.raises(UnsupportedParameterError, match=refused):
            pytensor.function(inputs, root_scalar(equation, x, **kwargs)[0], mode="STABLEHLO")
    a = inputs[1]
    root, _ = root_scalar(Assert("a must be positive")(equation, pt.gt(a, 0)), x)
    with pytest.raises(AssertionError, match="a must be positive"):
        pytensor.function(inputs, root, mode="STABLEHLO")(values[0], np.array(-8.0))


_BRACKETED = {
    "cubic": (lambda x, a: x**3 - a, (0.0, 3.0), 8.0),
    "transcendental": (lambda x, a: pt.exp(x) - a * pt.cos(x), (-1.0, 2.0), 5.0),
    "flat": (lambda x, a: pt.tanh(10 * (x - a)), (-5.0, 7.0), 0.3),
    "root_at_a": (lambda x, a: x - a, (2.0, 5.0), 2.0),
    "root_at_b": (lambda x, a: x - a, (2.0, 5.0), 5.0),
    "nan_inside": (lambda x, a: pt.sqrt(x) - a, (-1.0, 9.0), 2.0),  # scipy stops at the NaN: not converged
    "nan_at_a": (lambda x, a: pt.log(x) - a, (-1.0, 9.0), 1.0),
}
_TOMS748_BRANCHES = {  # toms748's bisections, and a step nudged off the bracket's end
    "power_9": (lambda x, a: x**9 - a, (0.0, 2.0), 0.3),
    "flat_cubic": (lambda x, a: (x - a) ** 3, (0.0, 1.3), 0.5),  # 25 bisections
}


@pytest.mark.parametrize("method", ["bisect", "ridder", "brentq", "brenth", "toms748"])
@pytest.mark.parametrize("options", [{}, {"maxiter": 4}, {"xtol": 1e-3, "rtol": 1e-6}], ids=["default", "maxiter",
                                                                                           "tolerances"])
def test_root_scalar_bracketing_solvers_take_scipys_steps(method, options):
    """Against scipy's root_scalar on the same compiled equation: PyTensor 2.38.3's
    perform fails for these methods (its cache calls `.astype` on the Python floats
    scipy's C solvers pass; README)."""
    from scipy.optimize import root_scalar as scipy_root_scalar

    x, a = pt.scalar("x"), pt.scalar("a")
    equations = {**_BRACKETED, **(_TOMS748_BRANCHES if method == "toms748" else {})}
    for name, (equation, bracket, value) in equations.items():
        kwargs = {"bracket": list(bracket), **options}
        got = pytensor.function([x, a], list(root_scalar(equation(x, a), x, method=method, optimizer_kwargs=kwargs)),
                                mode="STABLEHLO")(0.0, value)
        residual = pytensor.function([x, a], equation(x, a))
        expected = scipy_root_scalar(lambda v: float(residual(v, value)), method=method, **kwargs)
        # toms748 returns the midpoint of a bracket narrower than xtol + rtol |b| (2e-12
        # here), whose ends follow the equation's last bits: scipy's own root moves by 1e-12
        # between numpy's exp and the compiled equation's
        np.testing.assert_allclose(got[0], expected.root, rtol=5e-12 if method == "toms748" else 1e-12, err_msg=name)
        assert bool(got[1]) == expected.converged, name


def test_root_scalar_toms748_errors_are_scipys():
    """toms748's own argument checks, and its ValueError at an infinite value (a NaN one
    stops it there, as the other bracketing solvers)."""
    x, a = pt.scalar("x"), pt.scalar("a")
    for kwargs, message in [({"bracket": [1.0, 0.0]}, r"a and b are not an interval \[1.0, 0.0\]"),
                            ({"bracket": [0.0, np.inf]}, "b is not finite inf"),
                            ({"bracket": [0.0, 1.0], "maxiter": 0}, "maxiter must be greater than 0"),
                            ({"bracket": [0.0, 1.0], "rtol": 1e-16}, r"rtol too small \(1e-16 < 2.22045e-16\)")]:
        with pytest.raises(ValueError, match=message):
            pytensor.function([x, a], root_scalar(x - a, x, method="toms748", optimizer_kwargs=kwargs)[0],
                              mode="STABLEHLO")
    root, _ = root_scalar(pt.tan(x) - a, x, method="toms748", optimizer_kwargs={"bracket": [0.0, 3.0]})
    f = pytensor.function([x, a], root, mode="STABLEHLO")
    with pytest.raises(ValueError, match="Invalid function value"):
        f(0.0, np.inf)  # f(a) = -inf


def test_root_scalar_bracketing_errors_are_scipys():
    x, a = pt.scalar("x"), pt.scalar("a")
    root, _ = root_scalar(x**2 + a, x, method="brentq", optimizer_kwargs={"bracket": [-1.0, 1.0]})
    with pytest.raises(ValueError, match=r"f\(a\) and f\(b\) must have different signs \(node: RootScalarOp"):
        pytensor.function([x, a], root, mode="STABLEHLO")(0.0, 1.0)
    for kwargs, message in [({}, "Bracket needed for bisect"),
                            ({"bracket": [0, 1], "xtol": 0.0}, r"xtol too small \(0 <= 0\)"),
                            ({"bracket": [0, 1], "rtol": 1e-16}, r"rtol too small \(1e-16 < 8.88178e-16\)")]:
        with pytest.raises(ValueError, match=message):
            pytensor.function([x, a], root_scalar(x - a, x, method="bisect", optimizer_kwargs=kwargs)[0],
                              mode="STABLEHLO")


@pytest.mark.parametrize("objective, kwargs, values", [
    (lambda x, a: (x - a) ** 2, {}, (0.0, -7.5)),  # bracketed downhill from (0, 1)
    (lambda x, a: pt.cosh(x - a) + x**4, {}, (0.0, 2.0)),
    (lambda x, a: (x - a) ** 2 + pt.sin(3 * x), {"optimizer_kwargs": {"bracket": (-3.0, -2.0)}}, (0.0, 1.0)),
    (lambda x, a: pt.cosh(x - a) + x**4, {"optimizer_kwargs": {"options": {"maxiter": 3}}}, (0.0, 2.0)),
    (lambda x, a: pt.cosh(x - a) + x**4, {"optimizer_kwargs": {"tol": 1e-3}}, (0.0, 2.0)),
    # no valid bracket (scipy's recovery: the lowest point, success False), and NaN there
    (lambda x, a: x * 0 + a, {}, (0.0, 1.0)),
    (lambda x, a: pt.log(x - a), {}, (0.0, 1.0)),
], ids=["quadratic", "cosh", "bracket", "maxiter", "tol", "flat", "nan"])
def test_minimize_scalar_takes_scipys_steps(objective, kwargs, values):
    """x0 is not read (scipy's minimize_scalar has no start: it brackets from (0, 1))."""
    x, a = pt.scalar("x"), pt.scalar("a")
    compare_with_py([x, a], list(minimize_scalar(objective(x, a), x, **kwargs)), [np.array(v) for v in values],
                    **CLOSE)


@pytest.mark.parametrize("objective, kwargs, values", [
    (lambda x, a: (x - a) ** 2, {}, (0.0, 2.0)),
    (lambda x, a: (x - a) ** 2 + pt.cos(3 * x), {}, (0.0, 2.0)),
    (lambda x, a: (x - a) ** 2 + pt.sin(3 * x), {"optimizer_kwargs": {"bracket": (-3.0, -2.0)}}, (0.0, 1.0)),
    (lambda x, a: (x - a) ** 2 + pt.cos(3 * x), {"optimizer_kwargs": {"options": {"maxiter": 5}}}, (0.0, 2.0)),
    (lambda x, a: (x - a) ** 2 + pt.cos(3 * x), {"optimizer_kwargs": {"tol": 1e-3}}, (0.0, 2.0)),
    (lambda x, a: pt.log(x - a), {}, (0.0, 1.0)),  # no valid bracket, NaN there
], ids=["quadratic", "cos", "bracket", "maxiter", "tol", "nan"])
def test_minimize_scalar_golden_takes_scipys_steps(objective, kwargs, values):
    x, a = pt.scalar("x"), pt.scalar("a")
    outputs = list(minimize_scalar(objective(x, a), x, method="golden", **kwargs))
    compare_with_py([x, a], outputs, [np.array(v) for v in values], **CLOSE)


@pytest.mark.parametrize("objective, kwargs, values", [
    (lambda x, a: (x - a) ** 2, {}, (0.0, 2.0)),
    (lambda x, a: (x - a) ** 2 + pt.cos(3 * x), {}, (0.0, 2.0)),
    (lambda x, a: x * a, {}, (0.0, 1.0)),  # the minimum at the lower bound
    (lambda x, a: (x - a) ** 2 + pt.cos(3 * x), {"options": {"maxiter": 4}}, (0.0, 2.0)),  # success False
    (lambda x, a: (x - a) ** 2 + pt.cos(3 * x), {"options": {"xatol": 1e-9}}, (0.0, 2.0)),
    (lambda x, a: pt.log(x - a), {}, (0.0, 1.0)),  # NaN below a: success False
    (lambda x, a: (x - a) ** 2, {"bounds": (1.0, 1.0)}, (0.0, 2.0)),  # an interval of one point
], ids=["quadratic", "cos", "at_bound", "maxiter", "xatol", "nan", "point"])
def test_minimize_scalar_bounded_takes_scipys_steps(objective, kwargs, values):
    x, a = pt.scalar("x"), pt.scalar("a")
    kwargs = {"bounds": (0.0, 5.0), **kwargs}
    outputs = list(minimize_scalar(objective(x, a), x, method="bounded", optimizer_kwargs=kwargs))
    compare_with_py([x, a], outputs, [np.array(v) for v in values], **CLOSE)


def test_minimize_scalar_errors_are_scipys_or_name_what_is_refused():
    x, a = pt.scalar("x"), pt.scalar("a")
    solution, _ = minimize_scalar(x * a, x)  # downhill forever
    f = pytensor.function([x, a], solution, mode="STABLEHLO")
    with pytest.raises(RuntimeError, match="No valid bracket was found before the iteration limit"):
        f(0.0, 1.0)
    for kwargs, error, message in [
        ({"method": "Nelder-Mead"}, UnsupportedParameterError, "method 'Nelder-Mead'"),
        ({"optimizer_kwargs": {"bracket": (0.0, 1.0, 2.0)}}, UnsupportedParameterError, "a bracket of three points"),
        ({"optimizer_kwargs": {"bounds": (0.0, 1.0)}}, ValueError, "Use of `bounds` is incompatible"),
        ({"method": "bounded"}, ValueError, "The `bounds` parameter is mandatory for method `bounded`"),
        ({"method": "bounded", "optimizer_kwargs": {"bounds": (0.0,)}}, ValueError, "bounds must have two elements"),
        ({"method": "bounded", "optimizer_kwargs": {"bounds": (0.0, np.inf)}}, ValueError,
         "Optimization bounds must be finite scalars"),
        ({"method": "bounded", "optimizer_kwargs": {"bounds": (1.0, 0.0)}}, ValueError,
         "The lower bound exceeds the upper bound"),
    ]:
        with pytest.raises(error, match=message):
            pytensor.function([x, a], minimize_scalar((x - a) ** 2, x, **kwargs)[0], mode="STABLEHLO")


def test_vectorized_optimizers_run_per_entry():
    """`vectorize_graph` of a solution (a Blockwise of the Op) runs the Op once per batch
    entry: PyTensor gives the Ops no `infer_shape`, and the per-entry loop takes the
    solution's shape from x's (it was refused as value-dependent)."""
    from pytensor.graph.replace import vectorize_graph

    x, a, batch = pt.vector("x"), pt.vector("a"), pt.matrix("batch")
    solution, success = minimize(((x - a) ** 2).sum() + pt.exp(x).sum(), x)
    outputs = vectorize_graph([solution, success], {a: batch})
    compare_with_py([x, batch], outputs, [np.zeros(3), np.arange(6.0).reshape(2, 3)], **CLOSE)
    s, c, cs = pt.scalar("s"), pt.scalar("c"), pt.vector("cs")
    root, converged = root_scalar(s**3 - c, s)
    compare_with_py([s, cs], vectorize_graph([root, converged], {c: cs}), [np.array(1.0), np.array([8.0, 27.0, -1.0])],
                    **CLOSE)


# --- root (RootOp): MINPACK's hybrj -----------------------------------------------------


def _circle_and_hyperbola(x, a):
    return pt.stack([x[0] ** 2 + x[1] ** 2 - a, x[0] * x[1] - 1]), np.array([2.0, 0.3])


def _rosenbrock_system(x, a):  # its second Jacobian after two failed steps
    return pt.stack([10 * (x[1] - x[0] ** 2), a - x[0]]), np.array([-1.2, 1.0])


def _coupled_exponentials(x, a):
    return pt.exp(x) - pt.arange(1, 6) * a / 4 + 0.1 * pt.roll(x, 1), np.zeros(5)


def _no_root(x, a):  # x0**2 + a has none: hybrj's info 5 (no progress in ten steps)
    return pt.stack([x[0] ** 2 + a, x[1] - 2]), np.array([0.5, 0.0])


def _log_domain(x, a):  # steps into log's NaN from a start outside its domain
    return pt.log(x) - a, np.array([-1.0, 2.0])


@pytest.mark.parametrize("problem, optimizer_kwargs", [
    (_circle_and_hyperbola, None),
    (_rosenbrock_system, None),
    (_coupled_exponentials, None),
    (_no_root, None),
    (_log_domain, None),
    (_circle_and_hyperbola, {"options": {"maxfev": 3}}),  # stopped: success False, hybrj's iterate
    (_circle_and_hyperbola, {"tol": 1e-3}),
    (_rosenbrock_system, {"options": {"factor": 0.5, "col_deriv": True}}),  # the Jacobian read transposed
    (_circle_and_hyperbola, {"options": {"xtol": -1.0}}),  # improper input (info 0): x0, success False
], ids=["circle", "rosenbrock", "exponentials", "no_root", "log_domain", "maxfev", "tol", "factor_col_deriv",
        "improper"])
def test_root_takes_hybrjs_steps(problem, optimizer_kwargs):
    x, a = pt.vector("x"), pt.scalar("a")
    equations, x0 = problem(x, a)
    solution, success = root(equations, x, optimizer_kwargs=optimizer_kwargs)
    compare_with_py([x, a], [solution, success], [x0, np.array(1.0 if problem is _no_root else 4.0)], **CLOSE)


def test_root_of_random_systems_of_every_size():
    """A x-dependent system (tanh and cubes mixed by random matrices) of 1 to 11 variables,
    one function called with each: converged or stopped, the iterates agree. The raw
    graph at one size (each size is a compile of its own)."""
    x, m1, m2, c = pt.vector("x"), pt.matrix("m1"), pt.matrix("m2"), pt.vector("c")
    solution, success = root(m1 @ pt.tanh(x) + m2 @ x**3 / 10 + x - c, x)
    value_sets = []
    for seed in range(8):
        rng = np.random.default_rng(seed)
        n = [1, 2, 3, 5, 7, 8, 10, 11][seed]
        value_sets.append([rng.normal(size=n) * 2, rng.normal(size=(n, n)), rng.normal(size=(n, n)) * (seed % 3),
                           rng.normal(size=n) * 3])
    compare_each_with_py([x, m1, m2, c], [solution, success], value_sets, modes=(MODE,), **CLOSE)
    compare_with_py([x, m1, m2, c], [solution, success], value_sets[-1], modes=(RAW_MODE,), **CLOSE)


def test_root_of_a_scalar_float32_and_empty_x():
    s, a = pt.scalar("s"), pt.scalar("a")
    compare_with_py([s, a], list(root(s**3 - a, s)), [np.array(1.0), np.array(4.0)], **CLOSE)
    xf = pt.fvector("xf")
    solution, success = root(xf**2 - 4, xf)
    got = compare_with_py([xf], [solution, success], [np.ones(2, "float32")])
    assert got[0].dtype == np.float32
    x = pt.vector("x")
    compare_with_py([x], list(root(x**2 - 4, x)), [np.zeros(0)])  # hybrj's info 0: success False


def test_root_gradient_checks_and_batches():
    x, a, b = pt.vector("x"), pt.scalar("a"), pt.scalar("b")
    equations = pt.stack([x[0] ** 2 + x[1] ** 2 - a, x[0] * x[1] - b])
    solution, _ = root(equations, x)
    x0 = np.array([2.0, 0.3])
    compare_with_py([x, a, b], pytensor.grad((solution**3).sum(), [a, b]), [x0, np.array(4.0), np.array(1.0)],
                    **CLOSE)
    from pytensor.graph.replace import vectorize_graph

    av = pt.vector("av")
    compare_with_py([x, av, b], vectorize_graph(list(root(equations, x)), {a: av}),
                    [x0, np.array([4.0, 5.0, 9.0]), np.array(1.0)], **CLOSE)
    solution, _ = root(Assert("a must be positive")(equations, pt.gt(a, 0)), x)
    f = pytensor.function([x, a, b], solution, mode="STABLEHLO")
    with pytest.raises(AssertionError, match="a must be positive"):
        f(x0, -4.0, 1.0)


def test_root_errors_are_scipys_or_name_what_is_refused():
    x, a = pt.vector("x"), pt.scalar("a")
    solution, _ = root(pt.concatenate([x**2 - a, x[:1]]), x)
    with pytest.raises(TypeError, match="fsolve: there is a mismatch between the input and output shape"):
        pytensor.function([x, a], solution, mode="STABLEHLO")(np.ones(2), 4.0)
    xs = pt.vector("xs", shape=(2,))
    with pytest.raises(TypeError, match=r"Shape should be \(2,\) but it is \(3,\) \(node: RootOp"):
        pytensor.function([xs, a], root(pt.concatenate([xs**2 - a, xs[:1]]), xs)[0], mode="STABLEHLO")
    m = pt.matrix("m")
    for equations, variables, kwargs, refused in [
        (x**2 - a, x, {"method": "krylov"}, "method 'krylov'"),
        (x**2 - a, x, {"optimizer_kwargs": {"options": {"diag": [1.0, 2.0]}}}, r"optimizer_kwargs \['diag'\]"),
        (m**2 - a, m, {}, "x of 2 dimensions"),
    ]:
        with pytest.raises(UnsupportedParameterError, match=refused):
            pytensor.function([variables, a], root(equations, variables, **kwargs)[0], mode="STABLEHLO")


# --- root(method="df-sane") (RootOp): the spectral residual method -----------------------


@pytest.mark.parametrize("problem, optimizer_kwargs", [
    (_circle_and_hyperbola, None),
    (_coupled_exponentials, {"tol": 1e-12}),
    (_coupled_exponentials, {"options": {"line_search": "cheng", "ftol": 1e-12}}),
    (_log_domain, None),  # NaN from the start: the searches run out of evaluations, success False
    (_circle_and_hyperbola, {"options": {"maxfev": 7}}),  # the wrapper refuses the 8th, mid-search
    (_circle_and_hyperbola, {"options": {"M": 2, "sigma_0": 0.5, "sigma_eps": 1e-3, "fatol": 1e-6, "disp": False}}),
], ids=["circle", "exponentials", "cheng", "log_domain", "maxfev", "options"])
def test_root_df_sane_takes_scipys_steps(problem, optimizer_kwargs):
    """scipy's df-sane (jac=False: with jac=True, PyTensor's perform hands scipy the
    equations and the Jacobian as one function, which df-sane cannot read). Where it does
    not converge in 1,000 evaluations its iterates are decided by roundings (scipy's own
    move by 1e-2 when x0 changes by 1e-15), so these problems converge or stop early."""
    x, a = pt.vector("x"), pt.scalar("a")
    equations, x0 = problem(x, a)
    solution, success = root(equations, x, method="df-sane", jac=False, optimizer_kwargs=optimizer_kwargs)
    compare_with_py([x, a], [solution, success], [x0, np.array(4.0)], **CLOSE)


def test_root_df_sane_in_float32_with_jac_and_its_errors():
    """In x's dtype, as scipy keeps it: float32 to 1e-6. With jac=True (PyTensor's
    default, which fails in the Python mode) the same result: df-sane does not use it."""
    x, a = pt.vector("x", dtype="float32"), pt.scalar("a", dtype="float32")
    equations = pt.exp(x) - pt.arange(1, 6).astype("float32") * a / 4 + np.float32(0.1) * pt.roll(x, 1)
    values = [np.zeros(5, "float32"), np.array(4.0, "float32")]
    got = compare_with_py([x, a], list(root(equations, x, method="df-sane", jac=False)), values, rtol=1e-6, atol=0.0)
    assert got[0].dtype == np.float32
    with_jac = pytensor.function([x, a], root(equations, x, method="df-sane")[0], mode="STABLEHLO")
    np.testing.assert_array_equal(with_jac(*values), got[0])
    s, c = pt.scalar("s"), pt.scalar("c")  # (the Python mode fails on a scalar x too: README)
    scalar_root = pytensor.function([s, c], root(pt.exp(s) - c, s, method="df-sane")[0], mode="STABLEHLO")
    np.testing.assert_allclose(scalar_root(np.array(0.3), np.array(3.0)), np.log(3.0), rtol=1e-8)
    y = pt.vector("y")
    for options, error, message in [
        ({"line_search": "armijo"}, ValueError, "Invalid value 'armijo' for 'line_search'"),
        ({"fnorm": np.linalg.norm}, UnsupportedParameterError, "options 'fnorm'"),
    ]:
        with pytest.raises(error, match=message):
            pytensor.function([y], root(y**2 - 1, y, method="df-sane", optimizer_kwargs={"options": options})[0],
                              mode="STABLEHLO")
    too_many = pytensor.function([y], root(pt.concatenate([y, y]) - 1, y, method="df-sane")[0], mode="STABLEHLO")
    with pytest.raises(ValueError, match="df-sane: the equations must be as many as the variables"):
        too_many(np.zeros(2))


# --- root(method="lm") (RootOp): MINPACK's lmder ---------------------------------------


def _overdetermined(x, a):  # three equations in two variables: their least squares solution
    return pt.stack([x[0] ** 2 + x[1] ** 2 - a, x[0] * x[1] - 1, x[0] - x[1] - 0.5]), np.array([2.0, 0.3])


def _one_variable_three_equations(x, a):
    return pt.stack([x[0] ** 2 - a, x[0] - 2.1, pt.sin(x[0])]), np.array([1.0])


@pytest.mark.parametrize("problem, optimizer_kwargs", [
    (_circle_and_hyperbola, None),
    (_overdetermined, None),
    (_rosenbrock_system, None),
    (_coupled_exponentials, None),
    (_no_root, None),  # the least squares solution x0 = 0, converged
    (_log_domain, None),  # NaN at x0: lmder's gradient test skips NaN (C's fmax), info 4
    (_one_variable_three_equations, None),
    (_one_variable_three_equations, {"options": {"col_deriv": True}}),  # (3, 1) read as (1, 3): the same
    (_overdetermined, {"options": {"maxiter": 3}}),  # stopped (info 5): success False, lmder's iterate
    (_overdetermined, {"tol": 1e-3}),
    (_coupled_exponentials, {"options": {"ftol": 1e-3, "gtol": 1e-2, "factor": 0.5}}),
    (_rosenbrock_system, {"options": {"factor": 0.5, "col_deriv": True}}),  # the Jacobian read transposed
    (_circle_and_hyperbola, {"options": {"gtol": -1.0}}),  # improper input (info 0): x0, success False
], ids=["circle", "overdetermined", "rosenbrock", "exponentials", "no_root", "log_domain", "one_variable",
        "one_variable_col_deriv", "maxiter", "tol", "ftol_gtol_factor", "factor_col_deriv", "improper"])
def test_root_lm_takes_lmders_steps(problem, optimizer_kwargs):
    x, a = pt.vector("x"), pt.scalar("a")
    equations, x0 = problem(x, a)
    solution, success = root(equations, x, method="lm", optimizer_kwargs=optimizer_kwargs)
    compare_with_py([x, a], [solution, success], [x0, np.array(1.0 if problem is _no_root else 4.0)], **CLOSE)


def test_root_lm_of_random_systems_of_every_size():
    """Systems of 1 to 9 variables in as many or more equations that a point solves (where
    none does, lmder stops at a relative reduction of ftol and roundings decide where; where
    the Jacobian is singular they decide the iterates, README), one function called with
    each: the iterates agree. The raw graph at one size."""
    x, m1, m2, c, e = pt.vector("x"), pt.matrix("m1"), pt.matrix("m2"), pt.vector("c"), pt.matrix("e")
    solution, success = root(m1 @ pt.tanh(x) + m2 @ x**3 / 10 + e @ x - c, x, method="lm")
    value_sets = []
    for seed, (n, extra) in enumerate([(1, 0), (2, 2), (4, 3), (6, 0), (9, 1)]):
        rng = np.random.default_rng(seed)
        m = n + extra
        a, b, eye = rng.normal(size=(m, n)), rng.normal(size=(m, n)) * (seed % 3), np.eye(m, n)
        solved = rng.normal(size=n)
        value_sets.append([solved + rng.normal(size=n), a, b, a @ np.tanh(solved) + b @ solved**3 / 10 + eye @ solved,
                           eye])
    compare_each_with_py([x, m1, m2, c, e], [solution, success], value_sets, modes=(MODE,), **CLOSE)
    compare_with_py([x, m1, m2, c, e], [solution, success], value_sets[2], modes=(RAW_MODE,), **CLOSE)


def test_root_lm_of_a_scalar_float32_and_empty_x():
    s, a = pt.scalar("s"), pt.scalar("a")  # PyTensor's test_root_simple
    solution, success = root(s + 2 * a * pt.cos(s), s, method="lm", optimizer_kwargs={"tol": 1e-8})
    got = compare_with_py([s, a], [solution, success], [np.array(0.0), np.array(1.0)], **CLOSE)
    np.testing.assert_allclose(got[0], -1.02986653, rtol=1e-8)
    xf = pt.fvector("xf")
    got = compare_with_py([xf], list(root(xf**2 - 4, xf, method="lm")), [np.ones(2, "float32")])
    assert got[0].dtype == np.float32
    x = pt.vector("x")
    compare_with_py([x], list(root(x**2 - 4, x, method="lm")), [np.zeros(0)])  # lmder's info 0: success False


def test_root_lm_gradient_and_checks():
    x, a, b = pt.vector("x"), pt.scalar("a"), pt.scalar("b")
    equations = pt.stack([x[0] ** 2 + x[1] ** 2 - a, x[0] * x[1] - b])
    solution, _ = root(equations, x, method="lm")
    x0 = np.array([2.0, 0.3])
    compare_with_py([x, a, b], pytensor.grad((solution**3).sum(), [a, b]), [x0, np.array(4.0), np.array(1.0)],
                    **CLOSE)
    solution, _ = root(Assert("a must be positive")(equations, pt.gt(a, 0)), x, method="lm")
    f = pytensor.function([x, a, b], solution, mode="STABLEHLO")
    with pytest.raises(AssertionError, match="a must be positive"):
        f(x0, -4.0, 1.0)


@pytest.mark.parametrize("method, problem", [("hybr", _coupled_exponentials), ("lm", _overdetermined)])
def test_root_without_jac_uses_the_exact_jacobian(method, problem):
    """scipy's hybrd or lmdif differences the equations where PyTensor gives it no
    Jacobian (and PyTensor 2.38.3's Python mode fails there: the equations come back as a
    (1, n) array); ours takes hybrj's or lmder's steps with the exact Jacobian, against the
    differencing routine's budget of evaluations: the root scipy's differences find, to
    their precision (README)."""
    from scipy.optimize import root as scipy_root

    x, a = pt.vector("x"), pt.scalar("a")
    equations, x0 = problem(x, a)
    solved = pytensor.function([x, a], list(root(equations, x, method=method, jac=False)), mode="STABLEHLO")
    got, success = solved(x0, 4.0)
    residual = pytensor.function([x, a], equations)
    expected = scipy_root(lambda v: residual(v, 4.0), x0, method=method)
    assert success and expected.success
    np.testing.assert_allclose(got, expected.x, rtol=1e-7)


def test_root_lm_errors_are_scipys():
    x, a = pt.vector("x"), pt.scalar("a")
    few = root(x[:1] ** 2 - a, x, method="lm")[0]  # fewer equations than variables
    with pytest.raises(TypeError, match="Improper input: func input vector length N must not exceed"):
        pytensor.function([x, a], few, mode="STABLEHLO")(np.ones(2), 4.0)
    xs = pt.vector("xs", shape=(2,))
    with pytest.raises(TypeError, match=r"N=2 must not exceed func output vector length M=1 \(node: RootOp"):
        pytensor.function([xs, a], root(xs[:1] ** 2 - a, xs, method="lm")[0], mode="STABLEHLO")
    by_columns = {"options": {"col_deriv": True}}
    equations, x0 = _overdetermined(x, a)
    with pytest.raises(TypeError, match="argument 'derivative'. The Jacobian read by columns"):
        pytensor.function([x, a], root(equations, x, method="lm", optimizer_kwargs=by_columns)[0],
                          mode="STABLEHLO")(x0, 4.0)
    equations, _ = _overdetermined(xs, a)
    with pytest.raises(TypeError, match=r"Shape should be \(2, 3\) but it is \(3, 2\)"):
        pytensor.function([xs, a], root(equations, xs, method="lm", optimizer_kwargs=by_columns)[0], mode="STABLEHLO")
    with pytest.raises(UnsupportedParameterError, match=r"optimizer_kwargs \['diag'\]"):
        pytensor.function([x, a], root(x**2 - a, x, method="lm", optimizer_kwargs={"options": {"diag": [1.0, 2.0]}})[0],
                          mode="STABLEHLO")
