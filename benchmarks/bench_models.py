"""Per-call time of PyMC models' logp+dlogp on every PyTensor backend, in one run.

    python benchmarks/bench_models.py [--repeat N] [--only NAME ...] [--modes MODE ...] [--raveled]

Prints, per workload, the build time (`pytensor.function`), the first call's time and the
median per-call time (outputs read back as numpy arrays) for STABLEHLO, STABLEHLO_NO_FMA
(ours with every multiply and add rounded alone), JAX, NUMBA and C, and each backend's
ratio to STABLEHLO; then `pm.sample` end to end (NUTS, the backend as
PyMC's compile mode); then how lowering time grows with graph size.
Each backend runs in its own process. Numbers depend on the machine; compare ratios
within one run only.
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pytensor  # noqa: E402
import pytensor.tensor as pt  # noqa: E402

import lowering  # noqa: E402,F401  (registers the STABLEHLO mode)
from lowering.examples import Graph, eight_schools_model, example, model_graph  # noqa: E402

# STABLEHLO_NO_FMA: ours with no multiply-add contracted into an FMA
# (README, "Multiply-adds and FMA").
MODES = ("STABLEHLO", "STABLEHLO_NO_FMA", "STABLEHLO_CUDA", "JAX", "NUMBA", "C")
# What runs without --modes: everything but the GPU mode, which needs jax's CUDA plugin.
DEFAULT_MODES = tuple(m for m in MODES if m != "STABLEHLO_CUDA")


def linear_regression():
    import pymc as pm

    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 10))
    y = X @ rng.normal(size=10) + rng.normal(size=500)
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 1, shape=10)
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("y", X @ beta, sigma, observed=y)
    return model_graph(model, "linear-regression")


def scan_rnn(steps: int = 1000, gradient: bool = False):
    """A 1,000-step Scan, h_t = tanh(w * h_{t-1} + x_t), and its gradient."""
    import pytensor.tensor as pt

    x, w, h0 = pt.dvector("x"), pt.dscalar("w"), pt.dscalar("h0")
    hs = pytensor.scan(
        lambda x_t, h: pt.tanh(w * h + x_t), sequences=[x], outputs_info=[h0], return_updates=False
    )
    cost = (hs**2).sum()
    outputs = [cost, *pytensor.grad(cost, [x, w])] if gradient else [hs]
    rng = np.random.default_rng(0)
    name = f"scan-{steps}" + ("-grad" if gradient else "")
    return Graph(name, [x, w, h0], outputs, [rng.normal(size=steps), np.float64(0.7), np.float64(0.1)])


def logistic_glm(n: int = 5000, d: int = 20):
    """PyMC logistic regression, the data as constants (as in a logp function)."""
    import pymc as pm

    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, d))
    y = rng.random(n) < 1 / (1 + np.exp(-(X @ rng.normal(scale=0.5, size=d))))
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 1, shape=d)
        alpha = pm.Normal("alpha", 0, 2)
        pm.Bernoulli("y", logit_p=alpha + X @ beta, observed=y.astype("int64"))
    return model_graph(model, f"logistic-glm-{n}x{d}")


def normal_mixture(n: int = 1000, k: int = 3):
    """PyMC NormalMixture of three components over 1,000 points."""
    import pymc as pm

    rng = np.random.default_rng(2)
    y = np.concatenate([rng.normal(m, 0.5, size=n // k + 1) for m in (-2.0, 0.0, 3.0)])[:n]
    with pm.Model() as model:
        w = pm.Dirichlet("w", np.ones(k))
        mu = pm.Normal("mu", 0, 5, shape=k, transform=pm.distributions.transforms.ordered,
                       initval=np.linspace(-1, 1, k))
        sigma = pm.HalfNormal("sigma", 1, shape=k)
        pm.NormalMixture("y", w=w, mu=mu, sigma=sigma, observed=y)
    return model_graph(model, "normal-mixture")


def hierarchical_regression(n: int = 2000, groups: int = 50):
    """Varying intercepts and slopes (non-centered) over 50 groups, 2,000 points."""
    return model_graph(hierarchical_model(n, groups), "hierarchical-regression")


def hierarchical_model(n: int = 2000, groups: int = 50):
    import pymc as pm

    rng = np.random.default_rng(4)
    g = rng.integers(0, groups, size=n)
    x = rng.normal(size=n)
    y = rng.normal(size=groups)[g] + rng.normal(size=groups)[g] * x + rng.normal(scale=0.5, size=n)
    with pm.Model() as model:
        mu_a, mu_b = pm.Normal("mu_a", 0, 1), pm.Normal("mu_b", 0, 1)
        s_a, s_b = pm.HalfNormal("s_a", 1), pm.HalfNormal("s_b", 1)
        z_a = pm.Normal("z_a", 0, 1, shape=groups)
        z_b = pm.Normal("z_b", 0, 1, shape=groups)
        sigma = pm.HalfNormal("sigma", 1)
        a, b = mu_a + s_a * z_a, mu_b + s_b * z_b
        pm.Normal("y", a[g] + b[g] * x, sigma, observed=y)
    return model


def arma(n: int = 500):
    """PyMC ARMA(1,1): the residuals are a recursion, a Scan over the series."""
    import pymc as pm

    rng = np.random.default_rng(5)
    y = np.zeros(n)
    e = rng.normal(scale=0.3, size=n)
    for t in range(1, n):
        y[t] = 0.1 + 0.6 * y[t - 1] + e[t] + 0.3 * e[t - 1]
    with pm.Model() as model:
        c = pm.Normal("c", 0, 1)
        phi = pm.Uniform("phi", -1, 1)
        theta = pm.Uniform("theta", -1, 1)
        sigma = pm.HalfNormal("sigma", 1)

        def residual(y_t, y_prev, e_prev, c, phi, theta):
            return y_t - c - phi * y_prev - theta * e_prev

        errors = pytensor.scan(
            residual, sequences=[pt.as_tensor(y[1:]), pt.as_tensor(y[:-1])],
            outputs_info=[pt.constant(np.float64(0.0))], non_sequences=[c, phi, theta],
            return_updates=False,
        )
        pm.Potential("likelihood", pm.logp(pm.Normal.dist(0, sigma), errors).sum())
    return model_graph(model, "arma")


def logistic_numpy_inputs(n: int = 100_000, d: int = 50):
    """Logistic regression logp and gradient with X (40 MB) and y passed at every call."""
    beta, X, y = pt.dvector("beta"), pt.dmatrix("X"), pt.dvector("y")
    eta = X @ beta
    logp = (y * eta - pt.softplus(eta)).sum() - 0.5 * (beta**2).sum()
    rng = np.random.default_rng(6)
    X_value = rng.normal(size=(n, d))
    y_value = (rng.random(n) < 0.5).astype("float64")
    return Graph(f"logistic-{n}x{d}-numpy", [beta, X, y], [logp, pytensor.grad(logp, beta)],
                 [np.zeros(d), X_value, y_value])


def beta_regression(n: int = 1000, d: int = 5):
    """Beta regression (mean and precision): a gammaln and a digamma per point."""
    import pymc as pm

    rng = np.random.default_rng(5)
    X = rng.normal(size=(n, d))
    mu = 1 / (1 + np.exp(-(X @ rng.normal(scale=0.5, size=d))))
    y = np.clip(rng.beta(mu * 20, (1 - mu) * 20), 1e-6, 1 - 1e-6)
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 1, shape=d)
        kappa = pm.HalfNormal("kappa", 50)
        m = pm.math.invlogit(X @ beta)
        pm.Beta("y", alpha=m * kappa, beta=(1 - m) * kappa, observed=y)
    return model_graph(model, "beta-regression")


def censored_gamma(n: int = 1000):
    """Gamma survival times, right-censored: the upper regularized incomplete gamma per point."""
    import pymc as pm

    rng = np.random.default_rng(6)
    t = rng.gamma(2.0, 1.5, size=n)
    y = np.minimum(t, 4.0)
    with pm.Model() as model:
        alpha = pm.HalfNormal("alpha", 5)
        theta = pm.HalfNormal("theta", 5)
        pm.Censored("y", pm.Gamma.dist(alpha=alpha, beta=1 / theta), lower=None, upper=4.0, observed=y)
    return model_graph(model, "censored-gamma")


def censored_normal(n: int = 2000, d: int = 3):
    """A linear regression whose top 20% of outcomes are right-censored: normal_lccdf
    (erfcx and erfc) per point."""
    import pymc as pm

    rng = np.random.default_rng(12)
    X = rng.normal(size=(n, d))
    y = X @ rng.normal(size=d) + rng.normal(size=n)
    upper = float(np.quantile(y, 0.8))
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 1, shape=d)
        sigma = pm.HalfNormal("sigma", 1)
        pm.Censored("y", pm.Normal.dist(X @ beta, sigma), lower=None, upper=upper, observed=np.minimum(y, upper))
    return model_graph(model, "censored-normal")


def student_t_regression(n: int = 2000, d: int = 10):
    """Robust regression: StudentT errors with their degrees of freedom a parameter."""
    import pymc as pm

    rng = np.random.default_rng(7)
    X = rng.normal(size=(n, d))
    y = X @ rng.normal(size=d) + rng.standard_t(3, size=n)
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 1, shape=d)
        sigma = pm.HalfNormal("sigma", 1)
        nu = pm.Gamma("nu", 2, 0.1)
        pm.StudentT("y", nu=nu, mu=X @ beta, sigma=sigma, observed=y)
    return model_graph(model, "student-t-regression")


def count_regressions(zero_inflated: bool, n: int = 2000, d: int = 5):
    """Counts with a log link: zero-inflated Poisson, or negative binomial."""
    import pymc as pm

    rng = np.random.default_rng(8)
    X = rng.normal(size=(n, d))
    counts = rng.poisson(np.exp(X @ np.full(d, 0.2)))
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 1, shape=d)
        mu = pm.math.exp(X @ beta)
        if zero_inflated:
            psi = pm.Beta("psi", 2, 2)
            pm.ZeroInflatedPoisson("y", psi=psi, mu=mu, observed=counts * (rng.random(n) > 0.3))
        else:
            alpha = pm.Exponential("alpha", 1)
            pm.NegativeBinomial("y", mu=mu, alpha=alpha, observed=counts)
    return model_graph(model, "zero-inflated-poisson" if zero_inflated else "negative-binomial")


def lkj_mvnormal(n: int = 500):
    """Correlated 3-d data: MvNormal with an LKJ Cholesky covariance."""
    import pymc as pm

    rng = np.random.default_rng(9)
    y = rng.normal(size=(n, 3)) @ np.array([[1.0, 0.5, 0.0], [0.0, 1.0, 0.3], [0.0, 0.0, 1.0]])
    with pm.Model() as model:
        chol, _, _ = pm.LKJCholeskyCov(
            "chol", n=3, eta=2.0, sd_dist=pm.Exponential.dist(1.0, shape=3), compute_corr=True
        )
        mu = pm.Normal("mu", 0, 2, shape=3)
        pm.MvNormal("y", mu, chol=chol, observed=y)
    return model_graph(model, "lkj-mvnormal")


def dirichlet_multinomial(n: int = 300):
    """300 draws of 50 counts over 3 categories, DirichletMultinomial."""
    import pymc as pm

    rng = np.random.default_rng(10)
    y = rng.multinomial(50, [0.2, 0.3, 0.5], size=n)
    with pm.Model() as model:
        a = pm.Exponential("a", 1, shape=3)
        pm.DirichletMultinomial("y", n=50, a=a, observed=y)
    return model_graph(model, "dirichlet-multinomial")


def random_walk(n: int = 500):
    """A latent Gaussian random walk of 500 steps under noisy observations."""
    import pymc as pm

    rng = np.random.default_rng(11)
    y = np.cumsum(rng.normal(size=n)) + rng.normal(size=n)
    with pm.Model() as model:
        sigma = pm.HalfNormal("sigma", 1)
        noise = pm.HalfNormal("noise", 1)
        x = pm.GaussianRandomWalk("x", sigma=sigma, init_dist=pm.Normal.dist(0, 10), shape=n)
        pm.Normal("y", x, noise, observed=y)
    return model_graph(model, "random-walk")


def gp_marginal(n: int):
    """PyMC's GP marginal likelihood: ExpQuad kernel plus noise, Cholesky-based MvNormal."""
    import pymc as pm

    rng = np.random.default_rng(0)
    X = np.sort(rng.uniform(0, 10, size=n))[:, None]
    y = np.sin(X[:, 0]) + 0.3 * rng.normal(size=n)
    with pm.Model() as model:
        ell = pm.Gamma("ell", 2, 1)
        eta = pm.HalfNormal("eta", 1)
        sigma = pm.HalfNormal("sigma", 1)
        gp = pm.gp.Marginal(cov_func=eta**2 * pm.gp.cov.ExpQuad(1, ell))
        gp.marginal_likelihood("y", X=X, y=y, sigma=sigma)
    return model_graph(model, f"gp-marginal-{n}")


def schur_sort(n: int = 100):
    """Schur form with the left-half-plane eigenvalues first (scipy's schur(sort='lhp')).
    The result compared is T's diagonal, the eigenvalue order sorting decides."""
    from pytensor.tensor.slinalg import schur

    a = pt.dmatrix("a")
    t, _ = schur(a, sort="lhp")
    value = np.random.default_rng(0).normal(size=(n, n))
    return Graph(f"schur-sort-{n}", [a], [pt.diagonal(t)], [value])


def dare_batched(batch: int = 8, m: int = 4, n: int = 2):
    """solve_discrete_are over a batch of 8 systems (m = 4 states, n = 2 inputs): QZ on
    the host per entry (our per-entry loop; PyTensor's Blockwise.perform loops too)."""
    from pytensor.tensor.linalg import solve_discrete_are

    rng = np.random.default_rng(0)
    a, b, q, r = (pt.tensor3(name) for name in "abqr")
    values = [rng.normal(size=(batch, m, m)) * 0.3, rng.normal(size=(batch, m, n)),
              np.tile(np.eye(m), (batch, 1, 1)), np.tile(np.eye(n), (batch, 1, 1))]
    return Graph(f"dare-batched-{batch}", [a, b, q, r], [solve_discrete_are(a, b, q, r)], values)


def latent_mode(n: int = 50, method: str = "BFGS", optimizer_kwargs: dict | None = None, name: str = "latent-mode"):
    """pymc-extras' INLA inner step: the mode of a latent Gaussian field under Poisson
    counts (`pytensor.tensor.optimize.minimize`, BFGS; or L-BFGS-B with tol 1e-8, the
    default of pymc-extras' marginal Laplace approximation), and that mode's gradient in
    the field's parameters (the implicit function theorem's graph)."""
    import pymc as pm
    from pytensor.tensor.optimize import minimize

    rng = np.random.default_rng(3)
    y = rng.poisson(np.exp(rng.normal(0.5, 0.8, size=n)))
    x, mu, log_sigma = pt.dvector("x"), pt.dscalar("mu"), pt.dscalar("log_sigma")
    logp = pm.logp(pm.Normal.dist(mu, pt.exp(log_sigma)), x).sum() + pm.logp(pm.Poisson.dist(pt.exp(x)), y).sum()
    mode, _ = minimize(-logp, x, method=method, optimizer_kwargs=optimizer_kwargs, use_vectorized_jac=True)
    outputs = [mode, *pytensor.grad(mode.sum(), [mu, log_sigma])]
    return Graph(f"{name}-{n}", [x, mu, log_sigma], outputs, [np.zeros(n), 0.5, np.log(0.8)])


def shifted_rosenbrock(method: str, n: int = 5):
    """PyTensor's own `test_minimize_vector_x` problem, a shifted Rosenbrock function of 5
    variables minimized from 0 (Powell at tol 1e-16, as the test runs it; trust-ncg with
    the exact Hessian at tol 1e-10, as dogleg), the minimizer and the success flag. CG and Nelder-Mead
    at their defaults, from x0 = (-0.5 ... 0.5): from 0 the first simplex's values tie,
    which numpy's argsort orders as the CPU's sort kernel does (README)."""
    from pytensor.tensor.optimize import minimize

    x, a = pt.dvector("x"), pt.dscalar("a")
    objective = (a * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum() + 1.0
    kwargs, x0 = {}, np.zeros(n)
    if method == "Powell":
        kwargs = {"optimizer_kwargs": {"tol": 1e-16}}
    elif method in ("trust-ncg", "dogleg"):
        kwargs = {"hess": True, "use_vectorized_jac": True, "optimizer_kwargs": {"tol": 1e-10}}
    else:
        x0 = np.linspace(-0.5, 0.5, n)
    solution, success = minimize(objective, x, method=method, **kwargs)
    return Graph(f"{method.lower()}-rosenbrock-{n}", [x, a], [solution, success], [x0, 0.5])


def nnls(n: int = 40, rows: int = 200):
    """Nonnegative least squares by `minimize(method="L-BFGS-B")` with bounds (0, None): a
    regression whose true coefficients are half zero, so that about half the bounds are
    active at the solution, from x0 = 1; the minimizer and the success flag."""
    from pytensor.tensor.optimize import minimize

    rng = np.random.default_rng(5)
    a = rng.normal(size=(rows, n))
    y = a @ np.where(np.arange(n) % 2 == 0, rng.uniform(0.5, 2.0, n), -rng.uniform(0.5, 2.0, n)) + rng.normal(size=rows)
    x, design, observed = pt.dvector("x"), pt.dmatrix("design"), pt.dvector("observed")
    objective = 0.5 * ((design @ x - observed) ** 2).sum()
    solution, success = minimize(objective, x, method="L-BFGS-B", optimizer_kwargs={"bounds": [(0.0, None)]})
    return Graph(f"nnls-lbfgsb-{n}", [x, design, observed], [solution, success], [np.ones(n), a, y])


def steady_state(n: int = 20, method: str = "hybr", name: str = "steady-state"):
    """A multisector steady state (`pytensor.tensor.optimize.root`, hybr, lm or df-sane, the
    last without the Jacobian it does not use, which the Python mode cannot take): each sector's
    marginal product of capital, which its suppliers' capital raises through an
    input-output matrix, equals the user cost of capital; x is log capital. With the
    steady state's gradient in the discount factor and depreciation (the implicit
    function theorem's graph), as a DSGE model's estimation needs it."""
    from pytensor.tensor.optimize import root

    rng = np.random.default_rng(5)
    alpha = rng.uniform(0.25, 0.4, size=n)
    weights = rng.uniform(0.0, 1.0, size=(n, n)) * (1 - rng.uniform(0.1, 0.3, size=(n, 1)))
    weights *= 0.3 / weights.sum(axis=1, keepdims=True)
    x, beta, delta = pt.dvector("x"), pt.dscalar("beta"), pt.dscalar("delta")
    marginal_product = alpha * pt.exp((alpha - 1) * x + weights @ x)
    steady, _ = root(pt.log(marginal_product) - pt.log(1 / beta - 1 + delta), x, method=method, jac=method != "df-sane")
    outputs = [steady, *pytensor.grad(steady.sum(), [beta, delta])]
    return Graph(f"{name}-{n}", [x, beta, delta], outputs, [np.zeros(n), 0.99, 0.025])


MODELS = {
    "eight-schools": lambda: example("eight-schools"),
    "linear-regression": linear_regression,
    "logistic-glm": logistic_glm,
    "normal-mixture": normal_mixture,
    "hierarchical-regression": hierarchical_regression,
    "arma": arma,
    "logistic-numpy-inputs": logistic_numpy_inputs,
    "scan-1000": scan_rnn,
    "scan-1000-grad": lambda: scan_rnn(gradient=True),
    "garch": lambda: example("garch"),
    "beta-regression": beta_regression,
    "censored-gamma": censored_gamma,
    "censored-normal": censored_normal,
    "gp-marginal-100": lambda: gp_marginal(100),
    "gp-marginal-1000": lambda: gp_marginal(1000),
    "schur-sort-100": schur_sort,
    "dare-batched-8": dare_batched,
    "student-t-regression": student_t_regression,
    "zero-inflated-poisson": lambda: count_regressions(zero_inflated=True),
    "negative-binomial": lambda: count_regressions(zero_inflated=False),
    "lkj-mvnormal": lkj_mvnormal,
    "dirichlet-multinomial": dirichlet_multinomial,
    "random-walk": random_walk,
    "latent-mode-50": latent_mode,
    "latent-mode-lbfgsb-50": lambda: latent_mode(50, "L-BFGS-B", {"tol": 1e-8}, "latent-mode-lbfgsb"),
    "nnls-lbfgsb-40": nnls,
    "steady-state-20": steady_state,
    "steady-state-lm-20": lambda: steady_state(20, "lm", "steady-state-lm"),
    "steady-state-df-sane-20": lambda: steady_state(20, "df-sane", "steady-state-df-sane"),
    "powell-rosenbrock-5": lambda: shifted_rosenbrock("Powell"),
    "trust-ncg-rosenbrock-5": lambda: shifted_rosenbrock("trust-ncg"),
    "dogleg-rosenbrock-5": lambda: shifted_rosenbrock("dogleg"),
    "cg-rosenbrock-5": lambda: shifted_rosenbrock("CG"),
    "nelder-mead-rosenbrock-5": lambda: shifted_rosenbrock("Nelder-Mead"),
}


# Workloads that are a PyMC model's logp and dlogp (`model_graph`): `--raveled` passes
# their value variables as one vector, as PyMC's samplers call `logp_dlogp_function`
# (`ravel_inputs=True`): one argument per call instead of one per variable.
PYMC_MODELS = {
    "eight-schools", "linear-regression", "logistic-glm", "normal-mixture",
    "hierarchical-regression", "arma", "garch", "beta-regression", "censored-gamma",
    "censored-normal", "gp-marginal-100", "gp-marginal-1000", "student-t-regression",
    "zero-inflated-poisson", "negative-binomial", "lkj-mvnormal", "dirichlet-multinomial",
    "random-walk",
}


def raveled(graph):
    """`graph` with its inputs joined into one flat vector (PyMC's `join_nonshared_inputs`)."""
    from pymc.pytensorf import join_nonshared_inputs

    point = {v.name: value for v, value in zip(graph.inputs, graph.values)}
    outputs, flat = join_nonshared_inputs(point, graph.outputs, graph.inputs)
    values = [np.concatenate([np.ravel(v) for v in graph.values]).astype(flat.type.dtype)]
    return Graph(graph.name, [flat], list(outputs), values)


def call_arguments(graph) -> list[np.ndarray]:
    """The graph's input values as arrays of its inputs' dtypes: what a function built with
    `trust_input=True` must be called with."""
    return [np.asarray(v, dtype=i.type.dtype) for v, i in zip(graph.values, graph.inputs)]


def time_mode(graph, mode, repeat):
    """Build time, first-call time, median per-call time and the result. Each call's time
    includes reading its outputs as numpy arrays: JAX returns before its computation
    has finished, and a caller (a sampler) needs the numbers."""
    start = time.perf_counter()
    fn = pytensor.function(graph.inputs, graph.outputs, mode=mode, trust_input=True)
    build_s = time.perf_counter() - start
    args = call_arguments(graph)
    start = time.perf_counter()
    result = [np.asarray(r) for r in fn(*args)]
    first_s = time.perf_counter() - start
    for _ in range(min(10, repeat)):
        fn(*args)
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        [np.asarray(r) for r in fn(*args)]
        samples.append(time.perf_counter() - t)
    return build_s, first_s, statistics.median(samples), result


# End to end: what a PyMC user waits for. `pm.sample` with the backend as PyTensor's mode,
# one chain (NUTS, 500 tuning and 500 kept draws), in a fresh process per backend.
SAMPLERS = {
    "nuts-eight-schools": eight_schools_model,
    "nuts-hierarchical-regression": hierarchical_model,
}


def time_sampling(build_model, mode):
    """Wall seconds of `pm.sample` (compiling included), PyMC's own sampling time, and the
    posterior mean of the first free variable. The backend is PyTensor's default mode, so
    every function PyMC builds runs on it: `compile_kwargs={"mode": ...}` reaches only the
    logp and gradient, and PyMC builds the trace's function in the default mode (C)."""
    import pymc as pm
    from pytensor.compile.mode import get_mode

    model = build_model()
    start = time.perf_counter()
    with model, pytensor.config.change_flags(mode=get_mode(mode)):
        idata = pm.sample(draws=500, tune=500, chains=1, cores=1, random_seed=1,
                          progressbar=False)
    total_s = time.perf_counter() - start
    first = model.free_RVs[0].name
    return total_s, idata.sample_stats.attrs["sampling_time"], float(idata.posterior[first].mean())


def print_sampling(name, modes):
    rows = {mode: row for mode in modes if (row := run_isolated(name, mode, 0)) is not None}
    if "STABLEHLO" not in rows:
        return
    ours = rows["STABLEHLO"][1]
    print(f"\n{name} (pm.sample, 1 chain, 500 + 500 draws)")
    print(f"{'mode':<17} {'total s':>8} {'sampling s':>11} {'vs STABLEHLO':>13}  posterior mean")
    for mode, (total_s, sampling_s, mean) in rows.items():
        print(f"{mode:<17} {total_s:>8.2f} {sampling_s:>11.2f} {sampling_s / ours:>12.2f}x  {mean:.3f}",
              flush=True)


def lowering_scaling(sizes=(1_000, 3_000, 10_000)):
    """Seconds to lower (PyTensor graph -> StableHLO, our passes included) and to compile a
    graph of `n` elementwise nodes, to show lowering time grows linearly. Each step adds
    five nodes: sin, or multiply and add with two broadcast constants."""
    from pytensor.graph.fg import FunctionGraph

    from lowering import lower

    print("\nlowering time, a chain of n elementwise nodes (best of 3)")
    print(f"{'nodes':>7} {'lower s':>9} {'compile s':>10} {'lower us/node':>14}")
    for n in sizes:
        x = pt.dvector("x")
        out = x
        for i in range(n * 2 // 5):
            out = pt.sin(out) if i % 2 else out * 1.0001 + 0.5
        fgraph = FunctionGraph([x], [out], clone=False)
        lower_s = np.inf
        for _ in range(3):
            start = time.perf_counter()
            lowered = lower(fgraph)
            lower_s = min(lower_s, time.perf_counter() - start)
        start = time.perf_counter()
        lowered.compile()(np.ones(4))
        compile_s = time.perf_counter() - start
        nodes = len(fgraph.apply_nodes)
        print(f"{nodes:>7} {lower_s:>9.3f} {compile_s:>10.3f} {lower_s / nodes * 1e6:>14.1f}")


def run_isolated(name: str, mode: str, repeat: int, ravel: bool = False):
    """`time_mode` in a child process: a backend that crashes (PyTensor's C code aborts on
    the normal mixture) loses its row only. Returns None on failure, after saying why."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "row.pkl"
        proc = subprocess.run(
            [sys.executable, __file__, "--worker", name, mode, str(out), "--repeat", str(repeat),
             *(["--raveled"] if ravel else [])],
            capture_output=True, text=True,
        )
        if proc.returncode != 0 or not out.exists():
            lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
            why = next((ln for ln in reversed(lines) if "Error" in ln or "error" in ln),
                       lines[-1] if lines else f"exit status {proc.returncode}")
            print(f"{name}: {mode} failed: {why.strip()[:200]}")
            return None
        return pickle.loads(out.read_bytes())


def worker(name: str, mode: str, out: str, repeat: int, ravel: bool) -> int:
    import warnings

    warnings.simplefilter("ignore")
    if name in SAMPLERS:
        row = time_sampling(SAMPLERS[name], mode)
    else:
        graph = MODELS[name]()
        row = time_mode(raveled(graph) if ravel and name in PYMC_MODELS else graph, mode, repeat)
    Path(out).write_bytes(pickle.dumps(row))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2000)
    parser.add_argument("--only", nargs="*", choices=[*MODELS, *SAMPLERS, "lowering-scaling"],
                        help="run these workloads only")
    parser.add_argument("--modes", nargs="*", choices=MODES, default=list(DEFAULT_MODES),
                        help="the backends to run (STABLEHLO always runs: ratios are to it; STABLEHLO_CUDA "
                             "only when named)")
    parser.add_argument("--raveled", action="store_true",
                        help="call PyMC models with their value variables in one vector, as "
                             "PyMC's samplers do")
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(*args.worker, args.repeat, args.raveled)
    modes = ["STABLEHLO", *(m for m in args.modes if m != "STABLEHLO")]
    for name in MODELS:
        if args.only and name not in args.only:
            continue
        rows = {}
        for mode in modes:
            row = run_isolated(name, mode, args.repeat, args.raveled)
            if row is not None:
                rows[mode] = row
        if "STABLEHLO" not in rows:
            continue
        reference = rows["STABLEHLO"][3]
        ours = rows["STABLEHLO"][2]
        print(f"\n{name}" + (" (raveled inputs)" if args.raveled and name in PYMC_MODELS else ""))
        print(f"{'mode':<17} {'build s':>8} {'1st call s':>10} {'per call us':>12} {'vs STABLEHLO':>13}  same result")
        for mode, (build_s, first_s, per_call, result) in rows.items():
            same = all(np.allclose(a, b, rtol=1e-6) for a, b in zip(result, reference))
            print(f"{mode:<17} {build_s:>8.3f} {first_s:>10.3f} {per_call * 1e6:>12.1f} "
                  f"{per_call / ours:>12.2f}x  {same}", flush=True)
    for name in SAMPLERS:
        if not args.only or name in args.only:
            print_sampling(name, modes)
    if not args.only or "lowering-scaling" in args.only:
        lowering_scaling()
    return 0


if __name__ == "__main__":
    sys.exit(main())
