"""PyMC's distributions: each one's logp, its gradient in the parameters, and its logcdf
where PyMC has one (but LOOP_LOGCDFS), against the Python mode: what NUTS and PyMC's
Truncated and Censored build. Left out: the user-callable ones (CustomDist, DensityDist,
Simulator) and PolyaGamma, whose logp Op calls the optional `polyagamma` package and has no
rule.

One function per distribution; its parameters are inputs, so their gradients are taken,
and its values are one batch (a vector of values for a scalar distribution), support
edges and points outside the support included. The reference is the graph the mode
runs, rewritten, evaluated by each Op's perform: PyMC's logps are written for the
rewrites (at the edge of a support the graph as written can give NaN where the rewritten
one gives a number), and here the backend is under test, not them.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest

from tests.helpers import MODE, PY_MODE, assert_same

COV2 = [[1.0, 0.4], [0.4, 2.0]]
COV3 = [[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.5]]
W4 = np.array([[0, 1, 0, 0], [1, 0, 1, 0], [0, 1, 0, 1], [0, 0, 1, 0]], dtype="float64")
XP = np.linspace(0.0, 1.0, 20)


# (name, dist(**params), params (inputs of their static shapes: floats float64, ints
#  int64), the value (for a scalar distribution, a vector of values))
CASES = [
    # continuous, univariate
    ("Normal", lambda mu, sigma: pm.Normal.dist(mu, sigma), dict(mu=0.3, sigma=1.7), [-40.0, -2.0, 0.0, 3.5]),
    ("Uniform", lambda lower, upper: pm.Uniform.dist(lower, upper), dict(lower=0.5, upper=2.0), [0.5, 1.2, 2.0, 2.5]),
    ("Flat", lambda: pm.Flat.dist(), {}, [0.0, 1.5, -np.inf, np.inf]),
    ("HalfFlat", lambda: pm.HalfFlat.dist(), {}, [0.0, 1.5, -1.0, np.inf]),
    ("TruncatedNormal", lambda mu, sigma, lower, upper: pm.TruncatedNormal.dist(mu, sigma, lower=lower, upper=upper),
     dict(mu=0.5, sigma=1.2, lower=-1.0, upper=2.0), [-1.0, 0.0, 2.0, 3.0]),
    ("Beta", lambda alpha, beta: pm.Beta.dist(alpha, beta), dict(alpha=0.5, beta=0.7), [0.0, 1e-8, 0.5, 1.0]),
    ("Kumaraswamy", lambda a, b: pm.Kumaraswamy.dist(a, b), dict(a=2.0, b=3.0), [0.0, 0.4, 1.0]),
    ("Exponential", lambda lam: pm.Exponential.dist(lam), dict(lam=1.5), [0.0, 2.3, 50.0, -1.0]),
    ("Laplace", lambda mu, b: pm.Laplace.dist(mu, b), dict(mu=0.1, b=2.0), [-60.0, -1.0, 0.1, 3.0]),
    ("AsymmetricLaplace", lambda b, kappa, mu: pm.AsymmetricLaplace.dist(b=b, kappa=kappa, mu=mu),
     dict(b=1.5, kappa=0.7, mu=0.2), [-2.0, 0.2, 3.0]),
    ("StudentT", lambda nu, mu, sigma: pm.StudentT.dist(nu=nu, mu=mu, sigma=sigma),
     dict(nu=3.5, mu=0.2, sigma=1.3), [-3.0, 0.2, 5.0, 1e3]),
    ("Cauchy", lambda alpha, beta: pm.Cauchy.dist(alpha, beta), dict(alpha=0.2, beta=1.3), [-300.0, -3.0, 0.2, 1e10]),
    ("HalfCauchy", lambda beta: pm.HalfCauchy.dist(beta), dict(beta=1.3), [0.0, 2.0, -1.0]),
    ("HalfNormal", lambda sigma: pm.HalfNormal.dist(sigma), dict(sigma=1.3), [0.0, 0.7, 10.0, -1.0]),
    ("HalfStudentT", lambda nu, sigma: pm.HalfStudentT.dist(nu=nu, sigma=sigma), dict(nu=3.0, sigma=1.2),
     [0.0, 1.5, -1.0]),
    ("Gamma", lambda alpha, beta: pm.Gamma.dist(alpha, beta), dict(alpha=0.6, beta=0.9), [0.0, 1e-6, 1.0, 30.0]),
    ("InverseGamma", lambda alpha, beta: pm.InverseGamma.dist(alpha, beta), dict(alpha=2.5, beta=1.3),
     [0.0, 0.5, 3.0, 1e6]),
    ("ChiSquared", lambda nu: pm.ChiSquared.dist(nu), dict(nu=3.0), [0.0, 0.5, 3.0]),
    ("Weibull", lambda alpha, beta: pm.Weibull.dist(alpha, beta), dict(alpha=0.5, beta=2.0), [0.0, 1e-300, 1.0, 1e4]),
    ("LogNormal", lambda mu, sigma: pm.LogNormal.dist(mu, sigma), dict(mu=0.1, sigma=0.8), [0.0, 0.5, 2.0, 1e300]),
    ("Wald", lambda mu, lam: pm.Wald.dist(mu=mu, lam=lam), dict(mu=1.2, lam=2.5), [0.0, 1e-5, 0.5, 2.0]),
    ("Pareto", lambda alpha, m: pm.Pareto.dist(alpha, m), dict(alpha=2.5, m=1.0), [0.5, 1.0, 2.5]),
    ("ExGaussian", lambda mu, sigma, nu: pm.ExGaussian.dist(mu=mu, sigma=sigma, nu=nu),
     dict(mu=0.5, sigma=1.2, nu=0.8), [-30.0, -2.0, 0.5, 3.0]),
    ("VonMises", lambda mu, kappa: pm.VonMises.dist(mu, kappa), dict(mu=0.3, kappa=2.0), [-np.pi, 0.0, 1.0]),
    ("SkewNormal", lambda mu, sigma, alpha: pm.SkewNormal.dist(mu=mu, sigma=sigma, alpha=alpha),
     dict(mu=0.2, sigma=1.2, alpha=2.5), [-10.0, -2.0, 0.2, 3.0]),
    ("Triangular", lambda lower, c, upper: pm.Triangular.dist(lower=lower, c=c, upper=upper),
     dict(lower=0.0, c=0.7, upper=2.0), [0.0, 0.7, 1.5, 2.0, 2.5]),
    ("Gumbel", lambda mu, beta: pm.Gumbel.dist(mu, beta), dict(mu=0.3, beta=1.5), [-2.0, 0.3, 40.0]),
    ("Logistic", lambda mu, s: pm.Logistic.dist(mu, s), dict(mu=0.3, s=1.2), [-800.0, -2.0, 0.3, 800.0]),
    ("LogitNormal", lambda mu, sigma: pm.LogitNormal.dist(mu, sigma), dict(mu=0.2, sigma=0.9), [0.0, 0.3, 0.7, 1.0]),
    ("Rice", lambda nu, sigma: pm.Rice.dist(nu=nu, sigma=sigma), dict(nu=1.5, sigma=1.0), [0.0, 0.5, 2.5, 30.0]),
    ("Moyal", lambda mu, sigma: pm.Moyal.dist(mu, sigma), dict(mu=0.2, sigma=1.1), [-2.0, 0.2, 5.0]),
    ("Interpolated", lambda: pm.Interpolated.dist(XP, 1.0 + np.sin(3 * XP) ** 2), {}, [0.0, 0.2, 0.5, 1.0]),
    ("SkewStudentT", lambda a, b, mu, sigma: pm.SkewStudentT.dist(a=a, b=b, mu=mu, sigma=sigma),
     dict(a=2.0, b=3.0, mu=0.1, sigma=1.2), [-2.0, 0.1, 3.0]),
    ("DiracDelta", lambda c: pm.DiracDelta.dist(c), dict(c=1.5), [1.5, 2.0]),
    # discrete, univariate
    ("Binomial", lambda n, p: pm.Binomial.dist(n, p), dict(n=10, p=0.3), [0, 3, 10, 11]),
    ("BetaBinomial", lambda alpha, beta, n: pm.BetaBinomial.dist(alpha, beta, n),
     dict(alpha=2.0, beta=3.0, n=10), [4, 10]),
    ("Bernoulli", lambda logit_p: pm.Bernoulli.dist(logit_p=logit_p), dict(logit_p=-1.2), [0, 1]),
    ("DiscreteWeibull", lambda q, beta: pm.DiscreteWeibull.dist(q, beta), dict(q=0.5, beta=1.5), [0, 3]),
    ("Poisson", lambda mu: pm.Poisson.dist(mu), dict(mu=2.5), [0, 3, 20, 500]),
    ("NegativeBinomial", lambda mu, alpha: pm.NegativeBinomial.dist(mu=mu, alpha=alpha), dict(mu=3.0, alpha=2.0),
     [0, 5, 100]),
    ("DiscreteUniform", lambda lower, upper: pm.DiscreteUniform.dist(lower, upper),
     dict(lower=2, upper=8), [2, 5, 8, 9]),
    ("Geometric", lambda p: pm.Geometric.dist(p), dict(p=0.3), [0, 1, 4]),
    ("HyperGeometric", lambda N, k, n: pm.HyperGeometric.dist(N, k, n),
     dict(N=20, k=7, n=5), [2, 5]),
    ("Categorical", lambda p: pm.Categorical.dist(p=p), dict(p=[0.2, 0.5, 0.3]), [0, 2, 3]),
    ("OrderedLogistic", lambda eta, cutpoints: pm.OrderedLogistic.dist(eta=eta, cutpoints=cutpoints),
     dict(eta=0.3, cutpoints=[-1.0, 0.5, 2.0]), [0, 1, 3]),
    ("OrderedProbit", lambda eta, cutpoints, sigma: pm.OrderedProbit.dist(eta=eta, cutpoints=cutpoints, sigma=sigma),
     dict(eta=0.3, cutpoints=[-1.0, 0.5, 2.0], sigma=1.2), [0, 1, 3]),
    # multivariate
    ("MvNormal", lambda mu, cov: pm.MvNormal.dist(mu, cov=cov), dict(mu=[0.1, -0.2, 0.3], cov=COV3),
     [[0.1, 0.5, -1.0], [0.0, 0.0, 0.0]]),
    ("MvStudentT", lambda nu, mu, scale: pm.MvStudentT.dist(nu=nu, mu=mu, scale=scale),
     dict(nu=4.0, mu=[0.1, -0.2, 0.3], scale=COV3), [[0.1, 0.5, -1.0], [3.0, -2.0, 1.0]]),
    ("Dirichlet", lambda a: pm.Dirichlet.dist(a), dict(a=[1.5, 2.0, 3.0]), [[0.2, 0.3, 0.5], [0.0, 0.5, 0.5]]),
    ("Multinomial", lambda n, p: pm.Multinomial.dist(n, p), dict(n=10, p=[0.2, 0.3, 0.5]),
     [[2, 3, 5], [0, 0, 10], [1, 1, 1]]),
    ("DirichletMultinomial", lambda n, a: pm.DirichletMultinomial.dist(n, a), dict(n=10, a=[1.5, 2.0, 3.0]),
     [[2, 3, 5], [0, 0, 10]]),
    ("OrderedMultinomial", lambda eta, cutpoints, n: pm.OrderedMultinomial.dist(eta=eta, cutpoints=cutpoints, n=n),
     dict(eta=0.3, cutpoints=[-1.0, 0.5, 2.0], n=10), [2, 3, 4, 1]),
    ("KroneckerNormal", lambda mu, a, b: pm.KroneckerNormal.dist(mu=mu, covs=[a, b]),
     dict(mu=np.linspace(-0.5, 0.5, 6), a=COV2, b=COV3), [0.1, 0.5, -1.0, 0.3, 0.0, 1.2]),
    ("MatrixNormal", lambda mu, rowcov, colcov: pm.MatrixNormal.dist(mu=mu, rowcov=rowcov, colcov=colcov),
     dict(mu=np.full((2, 3), 0.1), rowcov=COV2, colcov=COV3), [[0.1, 0.5, -1.0], [0.3, 0.0, 1.2]]),
    ("Wishart", lambda nu, v: pm.Wishart.dist(nu=nu, V=v), dict(nu=5.0, v=COV3),
     np.array(COV3) * 3.0 + np.eye(3)),
    ("LKJCholeskyCov", lambda: pm.LKJCholeskyCov.dist(eta=2.0, n=3, sd_dist=pm.Exponential.dist(1.0, shape=3),
                                                      compute_corr=False),
     {}, [1.0, 0.2, 0.9, -0.1, 0.3, 1.1]),  # PyMC's logp takes a constant eta only
    ("LKJCorr", lambda: pm.LKJCorr.dist(n=3, eta=2.0), {}, [0.1, -0.2, 0.3]),
    ("CAR", lambda mu, alpha, tau: pm.CAR.dist(mu=mu, W=W4, alpha=alpha, tau=tau),
     dict(mu=[0.0, 0.1, -0.1, 0.2], alpha=0.5, tau=1.5), [0.1, -0.3, 0.5, 0.2]),
    ("ICAR", lambda sigma: pm.ICAR.dist(W=W4, sigma=sigma), dict(sigma=1.2), [0.3, -0.1, -0.4, 0.2]),
    ("StickBreakingWeights", lambda alpha: pm.StickBreakingWeights.dist(alpha=alpha, K=4), dict(alpha=1.5),
     [0.3, 0.25, 0.2, 0.15, 0.1]),
    ("ZeroSumNormal", lambda sigma: pm.ZeroSumNormal.dist(sigma=sigma, n_zerosum_axes=2, shape=(2, 3)),
     dict(sigma=1.3), [[0.5, -0.2, -0.3], [-0.5, 0.2, 0.3]]),
    # time series (Scans and their gradients)
    ("GaussianRandomWalk", lambda mu, sigma: pm.GaussianRandomWalk.dist(mu=mu, sigma=sigma,
                                                                        init_dist=pm.Normal.dist(0, 1), steps=4),
     dict(mu=0.1, sigma=1.2), [0.0, 0.3, -0.5, 1.0, 1.2]),
    ("MvGaussianRandomWalk", lambda mu, cov: pm.MvGaussianRandomWalk.dist(
        mu=mu, cov=cov, init_dist=pm.MvNormal.dist(np.zeros(2), np.eye(2)), steps=3),
     dict(mu=[0.1, -0.1], cov=COV2), [[0.0, 0.1], [0.3, -0.2], [0.5, 0.4], [1.0, 0.2]]),
    ("AR", lambda rho, sigma: pm.AR.dist(rho=rho, sigma=sigma, constant=True,
                                         init_dist=pm.Normal.dist(0, 1, shape=1), steps=5),
     dict(rho=[0.3, 0.5], sigma=1.1), [0.1, -0.2, 0.3, 0.0, 0.5, -0.4]),
    ("GARCH11", lambda omega, alpha_1, beta_1, initial_vol: pm.GARCH11.dist(
        omega=omega, alpha_1=alpha_1, beta_1=beta_1, initial_vol=initial_vol, steps=5),
     dict(omega=0.1, alpha_1=0.2, beta_1=0.6, initial_vol=0.5), [0.1, -0.2, 0.3, 0.0, 0.5, -0.4]),
    ("EulerMaruyama", lambda k: pm.EulerMaruyama.dist(dt=0.1, sde_fn=lambda x, k: (-k * x, 1.0), sde_pars=(k,),
                                                      init_dist=pm.Normal.dist(0, 1), steps=5),
     dict(k=0.7), [0.1, -0.2, 0.3, 0.0, 0.5, -0.4]),
    # mixtures, truncation, censoring
    ("Mixture", lambda w, mu1, mu2: pm.Mixture.dist(w=w, comp_dists=[pm.Poisson.dist(mu1), pm.Poisson.dist(mu2)]),
     dict(w=[0.3, 0.7], mu1=1.0, mu2=6.0), [0, 3, 10]),
    ("NormalMixture", lambda w, mu, sigma: pm.NormalMixture.dist(w=w, mu=mu, sigma=sigma),
     dict(w=[0.2, 0.5, 0.3], mu=[-1.0, 0.5, 3.0], sigma=[0.5, 1.0, 2.0]), [-1.0, 0.0, 2.0, 40.0]),
    ("Truncated", lambda lam: pm.Truncated.dist(pm.Exponential.dist(lam), lower=0.5, upper=5.0),
     dict(lam=0.7), [0.5, 1.0, 5.0, 6.0]),
    ("Censored", lambda mu, sigma: pm.Censored.dist(pm.Normal.dist(mu, sigma), lower=-1.0, upper=2.0),
     dict(mu=0.3, sigma=1.2), [-1.0, 0.5, 2.0]),
    ("HurdleLogNormal", lambda psi, mu, sigma: pm.HurdleLogNormal.dist(psi=psi, mu=mu, sigma=sigma),
     dict(psi=0.7, mu=0.2, sigma=0.8), [0.0, 0.5, 3.0]),
    ("ZeroInflatedBinomial", lambda psi, n, p: pm.ZeroInflatedBinomial.dist(psi=psi, n=n, p=p),
     dict(psi=0.7, n=10, p=0.3), [0, 1, 4, 10]),
]


# Their logcdfs are loops that compile for seconds each: the incomplete beta and gamma
# functions' series (tested with PyMC's logcdfs in tests/test_series.py), or a sum over the
# support (BetaBinomial, HyperGeometric, which PyMC takes for one scalar value at a time).
LOOP_LOGCDFS = {"Beta", "Gamma", "InverseGamma", "ChiSquared", "StudentT", "Binomial", "BetaBinomial",
                "Poisson", "NegativeBinomial", "HyperGeometric"}


def _logcdf(name, dist, value) -> list:
    """PyMC's logcdf, if it has one and it is not in LOOP_LOGCDFS."""
    if name in LOOP_LOGCDFS:
        return []
    try:
        return [pm.logcdf(dist, value)]
    except NotImplementedError:
        return []


@pytest.mark.parametrize("name, make, params, values", CASES, ids=[c[0] for c in CASES])
def test_logp_logcdf_and_gradient_match_pytensor(name, make, params, values):
    params = {k: np.asarray(v, dtype="int64" if np.asarray(v).dtype.kind == "i" else "float64")
              for k, v in params.items()}
    inputs = {k: pt.tensor(k, dtype=v.dtype, shape=v.shape) for k, v in params.items()}
    dist = make(**inputs)
    values = np.asarray(values, dtype=dist.dtype)
    value = pt.tensor("value", dtype=dist.dtype, shape=values.shape)
    logp = pm.logp(dist, value)
    outputs = [logp] + _logcdf(name, dist, value)
    floats = [v for k, v in inputs.items() if params[k].dtype.kind == "f"]
    if floats:
        outputs += pytensor.grad(logp.sum(), floats)
    ours = pytensor.function([*inputs.values(), value], outputs, mode=MODE)
    graph = ours.maker.fgraph.clone()  # the rewritten graph, run by Op.perform
    reference = pytensor.function(graph.inputs, graph.outputs, mode=PY_MODE)
    args = [*params.values(), values]
    before = [np.copy(a) for a in args]
    for i, (got, expected) in enumerate(zip(ours(*args), reference(*args), strict=True)):
        assert_same(got, expected, rtol=1e-9, atol=1e-12, label=f"{name}: output {i}")
    for arg, copy in zip(args, before):
        np.testing.assert_array_equal(arg, copy)
