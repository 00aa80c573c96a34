"""PyMC's own entry points with the mode as their compile mode: what a sampler calls."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
from pytensor.compile.mode import get_mode

from lowering.examples import eight_schools_model


def _assert_nuts_function_matches_pytensor(model, scale=2.0):
    """`logp_dlogp_function` with raveled inputs (PyMC's NUTS and its ValueGradFunction)
    against the Python mode's at random points."""
    ours = model.logp_dlogp_function(ravel_inputs=True, mode="STABLEHLO")
    reference = model.logp_dlogp_function(ravel_inputs=True, mode="FAST_COMPILE")
    for f in (ours, reference):
        f.set_extra_values({})
    rng = np.random.default_rng(0)
    size = sum(int(np.prod(v.shape)) for v in model.initial_point().values())
    for _ in range(5):
        point = rng.normal(scale=scale, size=size)
        logp, grad = ours(point)
        expected_logp, expected_grad = reference(point)
        np.testing.assert_allclose(logp, expected_logp, rtol=1e-12)
        np.testing.assert_allclose(grad, expected_grad, rtol=1e-10, atol=1e-12)


def test_the_function_nuts_calls_matches_pytensor_on_random_points():
    _assert_nuts_function_matches_pytensor(eight_schools_model())


def test_gp_marginal_likelihood_factors_its_covariance_once():
    """PyTensor leaves exp(expand_dims(eta)) in this logp and expand_dims(exp(eta)) in its
    gradient; computed in one order (`passes.elementwise_before_layout`), the covariance
    and its Cholesky factor are one expression, and the LAPACK call runs once."""
    rng = np.random.default_rng(0)
    X = np.sort(rng.uniform(0, 10, size=30))[:, None]
    with pm.Model() as model:
        ell = pm.Gamma("ell", 2, 1)
        eta = pm.HalfNormal("eta", 1)
        gp = pm.gp.Marginal(cov_func=eta**2 * pm.gp.cov.ExpQuad(1, ell))
        gp.marginal_likelihood("y", X=X, y=np.sin(X[:, 0]), sigma=pm.HalfNormal("sigma", 1))
    _assert_nuts_function_matches_pytensor(model, scale=0.5)
    function = model.logp_dlogp_function(ravel_inputs=True, mode="STABLEHLO")._pytensor_function
    assert sum("Cholesky" in str(node.op) for node in function.maker.fgraph.apply_nodes) == 2
    text = function.vm.jit_fn.compiled.specialized_text(np.zeros(3))
    assert text.count("custom_call @lapack_dpotrf") == 1


def test_models_checking_positive_definiteness():
    """LKJCorr's and Wishart's logps test their matrix with PyMC's own PosDefMatrix Op."""
    observed = np.random.default_rng(1).normal(size=(10, 3))
    with pm.Model() as lkj:
        pm.LKJCorr("r", n=4, eta=1.5)
    with pm.Model() as wishart:
        cov = pm.Wishart("W", nu=5, V=np.eye(3))
        pm.MvNormal("y", mu=np.zeros(3), cov=cov, observed=observed)
    for model in (lkj, wishart):
        _assert_nuts_function_matches_pytensor(model, scale=0.5)


def test_pymc_dims_models():
    """`pymc.dims` models (xtensor variables with named dims) reach the sampler with
    casts between xtensor and tensor types in their logp graph."""
    import pymc.dims as pmd

    rng = np.random.default_rng(0)
    with pm.Model(coords={"group": range(3), "obs": range(4)}) as model:
        mu = pmd.Normal("mu", 0, 1, dims="group")
        sigma = pmd.HalfNormal("sigma", 1)
        x = pmd.Data("x", rng.normal(size=(3, 4)), dims=("group", "obs"))
        pmd.Normal("y", mu + x / 2, sigma, dims=("group", "obs"),
                   observed=pmd.as_xtensor(rng.normal(size=(3, 4)), dims=("group", "obs")))
    _assert_nuts_function_matches_pytensor(model, scale=0.5)
    with model:
        prior = pm.sample_prior_predictive(4, random_seed=1, compile_kwargs={"mode": "STABLEHLO"})
    assert prior.prior_predictive["y"].shape == (1, 4, 3, 4)
    assert np.unique(prior.prior_predictive["y"].values).size == 48


def test_pm_sample_runs_on_the_mode(monkeypatch):
    """With the mode as PyTensor's default, every function `pm.sample` builds runs on it
    (`compile_kwargs={"mode": ...}` reaches only the logp and gradient: PyMC builds the
    trace's function in the default mode), but the initial point's, which PyMC builds with
    FAST_COMPILE (the Python VM, no C)."""
    from pytensor.compile.function.types import FunctionMaker

    linkers = []
    make = FunctionMaker.__init__

    def recording(self, *args, **kwargs):
        make(self, *args, **kwargs)
        if "fast_compile" not in self.mode.provided_optimizer.include:
            linkers.append(type(self.linker).__name__)

    monkeypatch.setattr(FunctionMaker, "__init__", recording)
    with eight_schools_model(), pytensor.config.change_flags(mode=get_mode("STABLEHLO")):
        idata = pm.sample(draws=50, tune=50, chains=1, cores=1, random_seed=3,
                          progressbar=False, compute_convergence_checks=False)
    assert len(linkers) >= 2 and set(linkers) == {"StableHLOLinker"}, linkers
    draws = idata.posterior["theta_raw"].values
    assert draws.shape == (1, 50, 8)
    assert np.isfinite(draws).all()
    assert np.unique(draws[0, :, 0]).size > 1  # the chain moved
