"""PyMC's own RandomVariables (rules in dialect_rules/random_continuous.py and
random_discrete.py, registered by name): the distributions against scipy.stats, edge
parameters and errors against each Op's `rng_fn`, and a PyMC model's prior predictive
sampling on the STABLEHLO mode."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.stats as st

pm = pytest.importorskip("pymc")

from pymc.distributions import continuous, discrete, multivariate  # noqa: E402

from tests.helpers import N_DRAWS, PY_MODE, assert_distribution, assert_family, draw  # noqa: E402

# name: (the Op, the scipy distribution of the same parameters, parameter sets in
#        float64 (one column each), those in float32).
FAMILIES = {
    "truncatednormal": (
        continuous.TruncatedNormalRV(),
        lambda mu, s, lo, hi: st.truncnorm((lo - mu) / s, (hi - mu) / s, loc=mu, scale=s),
        # both sides of 0, one tail or the other (mirrored), far out (Q(40) ~ 1e-350
        # underflows), a narrow interval, no bounds
        [(0.0, 1.0, -1.0, 1.0), (1.0, 2.0, 0.0, np.inf), (0.0, 1.0, 2.0, 2.5), (0.0, 1.0, -5.0, -3.0),
         (0.0, 1.0, 40.0, 41.0), (0.0, 1.0, -41.0, -40.0), (2.0, 0.5, 1.9, 2.0), (0.0, 1.0, -np.inf, np.inf)],
        [(1.0, 2.0, 0.0, np.inf), (0.0, 1.0, -5.0, -3.0)],
    ),
    "wald": (
        continuous.WaldRV(), lambda mu, lam, alpha: st.invgauss(mu / lam, loc=alpha, scale=lam),
        [(1.0, 1.0, 0.0), (3.0, 0.2, 1.5), (0.5, 50.0, -2.0)], [(3.0, 0.2, 1.5)],
    ),
    "moyal": (continuous.MoyalRV(), lambda mu, s: st.moyal(mu, s), [(0.0, 1.0), (2.0, 0.5)], [(-1.0, 2.0)]),
    "skewnormal": (
        continuous.SkewNormalRV(), lambda mu, s, a: st.skewnorm(a, mu, s),
        [(0.0, 1.0, 0.0), (1.0, 2.0, 4.0), (-1.0, 0.5, -0.3), (0.0, 1.0, 30.0)], [(1.0, 2.0, 4.0)],
    ),
    "rice": (continuous.RiceRV(), lambda b, s: st.rice(b, scale=s), [(0.0, 1.0), (0.5, 2.0), (5.0, 1.0)], [(1.5, 1.0)]),
    "skewstudentt": (
        continuous.SkewStudentTRV(), lambda a, b, mu, s: st.jf_skew_t(a, b, mu, s),
        [(3.0, 3.0, 0.0, 1.0), (2.0, 5.0, 1.0, 2.0), (6.0, 3.0, 0.0, 1.0), (0.3, 4.0, 0.0, 1.0)],
        [(2.0, 5.0, 1.0, 2.0)],
    ),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", FAMILIES)
def test_distribution(name, dtype):
    op, scipy_dist, sets64, sets32 = FAMILIES[name]
    assert_family(op, scipy_dist, sets64 if dtype == "float64" else sets32, dtype)


def test_skewnormal_with_a_huge_alpha_is_the_half_normal():
    """alpha = -1e200: scipy's alpha / sqrt(1 + alpha^2) is -1e200 / inf = -0, a plain
    normal; the limit, and ours, is the negated half-normal."""
    x = draw(lambda r, size: continuous.SkewNormalRV()(0.0, 1.0, -1e200, size=size, rng=r))
    assert (x <= 0).all()
    assert_distribution(-x, st.halfnorm())


@pytest.mark.parametrize("bounds", [(0, 5), (-3, 3), (7, 7), (-(2**62), 2**62)])
def test_discrete_uniform(bounds):
    lower, upper = (pt.lscalar(n) for n in ("lower", "upper"))
    make = lambda r, size: discrete.DiscreteUniformRV()(lower, upper, size=size, rng=r)  # noqa: E731
    x = draw(make, inputs=[lower, upper], values=bounds)
    reference = draw(make, n=10, mode=PY_MODE, inputs=[lower, upper], values=bounds)
    assert x.dtype == reference.dtype == np.int64
    assert x.min() >= bounds[0] and x.max() <= bounds[1]
    if bounds[0] == bounds[1]:
        assert (x == bounds[0]).all()
    elif bounds[1] - bounds[0] < 100:
        assert_distribution(x, st.randint(bounds[0], bounds[1] + 1), discrete=True)
    else:  # too many values for a chi-square: the mean and the halves' balance
        span = (bounds[1] - bounds[0]) / 2
        assert abs(x.mean() - (bounds[0] + span)) < 6 * span / np.sqrt(3 * N_DRAWS)
        assert abs((x > bounds[0] + span).mean() - 0.5) < 6 * 0.5 / np.sqrt(N_DRAWS)


# Parameter rows whose draws are one number whatever the state, and rows the Op's
# `rng_fn` refuses (repeated in every row of one call).
EDGES = {
    "truncatednormal": [(2, 0, 1, 3), (-3, 0, -np.inf, np.inf)],
    "wald": [(np.nan, 1, 0), (1, np.nan, 0), (np.inf, 1, 0), (2, 1, np.nan), (2, 1, np.inf)],
    "moyal": [(np.nan, 1), (np.inf, 1), (3, 0)],
    "skewnormal": [(np.nan, 1, 1), (np.inf, 1, 2), (3, 0, 1)],
    "rice": [(np.inf, 1), (2, 0), (0, 0)],
    "skewstudentt": [(1, 1, np.nan, 1), (1, 1, np.inf, 1), (2, 3, 3, 0)],
}
ERRORS = {
    "truncatednormal": [(0, 1, 1, 1), (0, 1, 2, 1), (np.nan, 1, 0, 1), (0, 1, np.nan, 1), (0, -1, -1, 1)],
    "wald": [(0, 1, 0), (1, -1, 0), (1, 0, 0)],
    "moyal": [(0, -1), (0, np.nan)],
    "skewnormal": [(0, 1, np.inf), (0, 1, np.nan), (0, -1, 1)],
    "rice": [(-1, 1), (np.nan, 1), (1, -1)],
    "skewstudentt": [(0, 1, 0, 1), (1, -1, 0, 1), (1, 1, 0, -1), (np.nan, 1, 0, 1)],
}


def _rng_fn(op, rows, seed):
    columns = [np.array(c, dtype=np.float64) for c in zip(*rows)]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return op.rng_fn(np.random.default_rng(seed), *columns, None)


@pytest.mark.parametrize("name", EDGES)
def test_edge_parameters_and_errors_as_the_rng_fn(name):
    """One row per edge case, as vectors of unknown length: on each row the `rng_fn`'s
    one number; a bad row in every row: its ValueError, message and all."""
    op = FAMILIES[name][0]
    rows = EDGES[name]
    params = [pt.dvector(f"p{i}") for i in range(len(rows[0]))]
    f = pytensor.function(params, op(*params), mode="STABLEHLO")
    expected = _rng_fn(op, rows, 0)
    np.testing.assert_array_equal(expected, _rng_fn(op, rows, 1))  # one number per row
    got = f(*(np.array(c, dtype=np.float64) for c in zip(*rows)))
    np.testing.assert_allclose(got, expected, rtol=1e-12, equal_nan=True)
    for bad in ERRORS[name]:
        bad_rows = [bad] * 3
        with pytest.raises(ValueError) as reference_error:
            _rng_fn(op, bad_rows, 0)
        with pytest.raises(ValueError, match="^" + re.escape(str(reference_error.value))):
            f(*(np.array(c, dtype=np.float64) for c in zip(*bad_rows)))


def test_discrete_uniform_refuses_what_scipy_refuses():
    op = discrete.DiscreteUniformRV()
    lower, upper = pt.lscalar("lower"), pt.lscalar("upper")
    f = pytensor.function([lower, upper], op(lower, upper), mode="STABLEHLO")
    assert f(4, 4) == 4
    with pytest.raises(ValueError) as scipy_error:
        op.rng_fn(np.random.default_rng(0), np.int64(5), np.int64(3), None)
    with pytest.raises(ValueError, match="^" + re.escape(str(scipy_error.value))):
        f(5, 3)
    a, b = pt.dscalar("a"), pt.dscalar("b")
    g = pytensor.function([a, b], op(a, b), mode="STABLEHLO")
    assert 1 <= g(1.0, 3.0) <= 3
    with pytest.raises(ValueError, match="^" + re.escape(str(scipy_error.value))):
        g(1.5, 3.0)


def test_prior_predictive_of_a_model_with_pymc_own_random_variables():
    """`pm.sample_prior_predictive` on the STABLEHLO mode: each variable's draws against
    scipy, and the observed one's shape."""
    with pm.Model() as model:
        skew = pm.SkewNormal("skew", mu=1.0, sigma=2.0, alpha=3.0)
        wald = pm.Wald("wald", mu=2.0, lam=3.0, alpha=0.5)
        moyal = pm.Moyal("moyal", mu=0.0, sigma=1.0)
        rice = pm.Rice("rice", nu=1.0, sigma=1.5)
        k = pm.DiscreteUniform("k", lower=-2, upper=4)
        tn = pm.TruncatedNormal("tn", mu=1.0, sigma=2.0, lower=3.0)
        pm.SkewStudentT("y", a=2.0, b=3.0, mu=skew, sigma=wald, observed=np.zeros(3))
    del moyal, rice, k, tn
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prior = pm.sample_prior_predictive(draws=20_000, model=model, random_seed=1,
                                           compile_kwargs={"mode": "STABLEHLO"})
    values = {name: prior.prior[name].values.ravel() for name in ("skew", "wald", "moyal", "rice", "k", "tn")}
    assert_distribution(values["skew"], st.skewnorm(3.0, 1.0, 2.0))
    assert_distribution(values["wald"], st.invgauss(2.0 / 3.0, loc=0.5, scale=3.0))
    assert_distribution(values["moyal"], st.moyal())
    assert_distribution(values["rice"], st.rice(1.0 / 1.5, scale=1.5))
    assert_distribution(values["k"], st.randint(-2, 5), discrete=True)
    assert_distribution(values["tn"], st.truncnorm(1.0, np.inf, loc=1.0, scale=2.0))
    assert prior.prior_predictive["y"].shape == (1, 20_000, 3)


# --- matrix-variate ------------------------------------------------------------------------

_ROWCHOL = np.array([[1.0, 0.0], [0.5, 2.0]])
_COLCHOL = np.array([[1.0, 0.0, 0.0], [0.3, 1.0, 0.0], [0.2, -0.4, 0.7]])
_V = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.2], [0.0, 0.2, 0.5]])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_matrix_normal_has_the_kronecker_covariance(dtype):
    """vec(X) ~ N(vec(mu), (R R^T) kron (C C^T)); every entry a normal."""
    op = multivariate.MatrixNormalRV()
    mu, rowchol, colchol = (pt.matrix(n, dtype=dtype) for n in ("mu", "rowchol", "colchol"))
    values = [np.arange(6.0).reshape(2, 3).astype(dtype), _ROWCHOL.astype(dtype), _COLCHOL.astype(dtype)]
    make = lambda r, size: op(mu, rowchol, colchol, size=size, rng=r, dtype=dtype)  # noqa: E731
    x = draw(make, inputs=[mu, rowchol, colchol], values=values)
    reference = draw(make, n=3, mode=PY_MODE, inputs=[mu, rowchol, colchol], values=values)
    assert x.dtype == reference.dtype == dtype and x.shape[1:] == reference.shape[1:] == (2, 3)
    flat = x.reshape(N_DRAWS, 6).astype(np.float64)
    cov = np.kron(_ROWCHOL @ _ROWCHOL.T, _COLCHOL @ _COLCHOL.T)
    scale = np.sqrt(np.outer(np.diag(cov), np.diag(cov)) + cov**2)  # sd of a product of two normals
    assert (np.abs(np.cov(flat.T) - cov) <= 6 * scale / np.sqrt(N_DRAWS)).all()
    for j in range(6):
        assert_distribution(flat[:, j], st.norm(values[0].ravel()[j], np.sqrt(cov[j, j])))


def test_matrix_normal_with_batched_parameters_has_the_python_modes_shapes():
    op = multivariate.MatrixNormalRV()
    mu, rowchol, colchol = pt.tensor3("mu"), pt.dmatrix("rowchol"), pt.tensor3("colchol")
    values = [np.zeros((4, 2, 3)), _ROWCHOL, np.stack([_COLCHOL, 2 * _COLCHOL, _COLCHOL, _COLCHOL])]
    for size in [None, (5, 4)]:
        make = lambda r, s: op(mu, rowchol, colchol, size=size, rng=r)  # noqa: E731
        got = draw(make, inputs=[mu, rowchol, colchol], values=values)
        reference = draw(make, mode=PY_MODE, inputs=[mu, rowchol, colchol], values=values)
        assert got.shape == reference.shape
    x = draw(lambda r, s: op(mu, rowchol, colchol, size=(20000, 4), rng=r), inputs=[mu, rowchol, colchol], values=values)
    assert np.std(x[:, 1]) > 1.5 * np.std(x[:, 0])  # the second batch entry's colchol is doubled


@pytest.mark.parametrize("nu", [3.0, 5.7, 40.0])
def test_wishart_diagonal_is_a_scaled_chi_square_and_the_mean_is_df_v(nu):
    """X ~ Wishart(int(nu), V): X_ii / V_ii ~ chi2(df) for each i, E[X] = df V."""
    op = multivariate.WishartRV()
    nu_in, v = pt.dscalar("nu"), pt.dmatrix("V")
    x = draw(lambda r, size: op(nu_in, v, size=size, rng=r), inputs=[nu_in, v], values=[nu, _V])
    df = int(nu)
    for i in range(3):
        assert_distribution(x[:, i, i] / _V[i, i], st.chi2(df))
    sd = np.sqrt(df * (_V**2 + np.outer(np.diag(_V), np.diag(_V))))
    assert (np.abs(x.mean(0) - df * _V) <= 6 * sd / np.sqrt(N_DRAWS)).all()
    np.testing.assert_array_equal(x, np.swapaxes(x, 1, 2))


def test_wishart_refuses_what_the_rng_fn_refuses():
    op = multivariate.WishartRV()
    nu, v = pt.dscalar("nu"), pt.dmatrix("V")
    f = pytensor.function([nu, v], op(nu, v), mode="STABLEHLO")
    not_pd = np.array([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    for bad in [(2.9, _V), (np.nan, _V), (np.inf, _V), (5.0, not_pd)]:
        with pytest.raises(Exception) as reference_error:
            op.rng_fn(np.random.default_rng(0), np.array(bad[0]), bad[1], None)
        error = reference_error.type
        if error is np.linalg.LinAlgError:  # scipy names the minor; we name the matrix
            with pytest.raises(np.linalg.LinAlgError, match="V is not positive definite"):
                f(*bad)
        else:
            with pytest.raises(error, match="^" + re.escape(str(reference_error.value))):
                f(*bad)


def test_prior_predictive_of_matrix_variate_pymc_variables():
    with pm.Model() as model:
        pm.MatrixNormal("m", mu=np.zeros((2, 3)), rowchol=_ROWCHOL, colchol=_COLCHOL)
        pm.Wishart("w", nu=6, V=_V)
        pm.StickBreakingWeights("sb", alpha=2.0, K=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prior = pm.sample_prior_predictive(draws=20_000, model=model, random_seed=2,
                                           compile_kwargs={"mode": "STABLEHLO"}).prior
    m, w = prior["m"].values[0], prior["w"].values[0]
    assert m.shape == (20_000, 2, 3) and w.shape == (20_000, 3, 3)
    assert_distribution(m[:, 1, 2], st.norm(0, np.sqrt((_ROWCHOL @ _ROWCHOL.T)[1, 1] * (_COLCHOL @ _COLCHOL.T)[2, 2])))
    assert_distribution(w[:, 0, 0] / _V[0, 0], st.chi2(6))
    sb = prior["sb"].values[0]
    assert sb.shape == (20_000, 5)
    assert_distribution(sb[:, 0], st.beta(1, 2.0))


@pytest.mark.parametrize("alpha", [0.3, 1.0, 4.0])
def test_stick_breaking_weights_break_beta_fractions_off_the_stick(alpha):
    """w_0 ~ Beta(1, alpha), w_1 / (1 - w_0) ~ Beta(1, alpha) independently of it, and the
    K + 1 weights sum to 1; K is an input, so the length is known only at run time."""
    op = multivariate.StickBreakingWeightsRV()
    a, k = pt.dscalar("alpha"), pt.lscalar("K")
    w = draw(lambda r, size: op(a, k, size=size, rng=r), inputs=[a, k], values=[alpha, 6])
    reference = draw(lambda r, size: op(a, k, size=size, rng=r), n=3, mode=PY_MODE, inputs=[a, k], values=[alpha, 6])
    assert w.shape[1:] == reference.shape[1:] == (7,) and w.dtype == reference.dtype
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-14)
    assert (w >= 0).all()
    assert_distribution(w[:, 0], st.beta(1, alpha))
    second = w[:, 1] / w[:, 1:].sum(-1)  # of what w_0 left (1 - w_0 would round)
    assert_distribution(second, st.beta(1, alpha))
    assert abs(np.corrcoef(w[:, 0], second)[0, 1]) < 6 / np.sqrt(N_DRAWS)


def test_stick_breaking_weights_edges_and_errors():
    op = multivariate.StickBreakingWeightsRV()
    a, k = pt.dscalar("alpha"), pt.lscalar("K")
    f = pytensor.function([a, k], op(a, k, size=(3,)), mode="STABLEHLO")
    np.testing.assert_array_equal(f(2.0, 0), np.ones((3, 1)))  # K = 0: the whole stick
    np.testing.assert_array_equal(f(1e-300, 3), np.tile([1.0, 0, 0, 0], (3, 1)))  # each fraction all of it
    for bad in [(1.0, -1), (0.0, 3), (-1.0, 3)]:
        with pytest.raises(ValueError) as reference_error:
            op.rng_fn(np.random.default_rng(0), np.array(bad[0]), np.array(bad[1]), (3,))
        with pytest.raises(ValueError, match="^" + re.escape(str(reference_error.value))):
            f(*bad)


# --- Interpolated ------------------------------------------------------------------------


class _PiecewiseLinearDensity:
    """The distribution whose density is linear between points (x, pdf) and whose cdf
    at the points is `cdf`: the quadratic cdf pm.Interpolated draws from."""

    def __init__(self, x, pdf, cdf):
        self.x, self.pdf, self.cdf_at = (np.asarray(v, dtype=np.float64) for v in (x, pdf, cdf))

    def cdf(self, t):
        x, f, c = self.x, self.pdf, self.cdf_at
        i = np.clip(np.searchsorted(x, t, side="right") - 1, 0, len(x) - 2)
        d = t - x[i]
        return np.clip(c[i] + f[i] * d + (f[i + 1] - f[i]) / (x[i + 1] - x[i]) * d * d / 2, 0.0, 1.0)

    def stats(self, moments):  # the KS test alone decides
        return (np.nan,) * len(moments)


def _interpolated_points(pdf):
    """pm.Interpolated's own normalization of (x, pdf) and its cdf at the points."""
    x = np.linspace(0.0, 2.0, len(pdf))
    with pm.Model() as model:
        pm.Interpolated("v", x, np.asarray(pdf, dtype=np.float64))
    return [i.data for i in model["v"].owner.inputs[2:]]


@pytest.mark.parametrize("pdf", [
    [0.0, 1.0, 2.0, 1.0, 0.5],  # zero density at an end: the first piece's root is sqrt(2d/s)
    [1.0, 1.0, 1.0, 1.0],  # flat: slope 0 everywhere, where the rng_fn switches formulas
    [0.2, 0.0, 0.0, 3.0, 0.1, 0.1, 2.0],  # a piece of zero density, which no draw may land in
])
def test_interpolated_draws_the_piecewise_linear_density(pdf):
    x, density, cdf = _interpolated_points(pdf)
    op = continuous.InterpolatedRV()
    got = draw(lambda r, size: op(x, density, cdf, size=size, rng=r))
    reference = draw(lambda r, size: op(x, density, cdf, size=size, rng=r), n=3, mode=PY_MODE)
    assert got.dtype == reference.dtype
    assert (got >= x[0]).all() and (got <= x[-1]).all()
    dist = _PiecewiseLinearDensity(x, density, cdf)
    assert_distribution(got, dist)
    zero_piece = [(a, b) for a, b, fa, fb in zip(x, x[1:], density, density[1:]) if fa == fb == 0]
    for a, b in zero_piece:
        assert not ((got > a) & (got < b)).any()


def test_interpolated_with_batched_points():
    """Two sets of points in one RV (the rng_fn refuses this; we draw each set's own)."""
    first, second = _interpolated_points([0.0, 1.0, 2.0, 1.0, 0.5]), _interpolated_points([2.0, 0.5, 0.5, 0.5, 3.0])
    params = [np.stack([a, b]) for a, b in zip(first, second)]
    got = draw(lambda r, size: continuous.InterpolatedRV()(*params, size=(size[0], 2), rng=r))
    for column, points in zip(got.T, (first, second)):
        assert_distribution(column, _PiecewiseLinearDensity(*points))


# --- CAR -----------------------------------------------------------------------------------

_W = np.array([[0, 1, 0, 0, 1], [1, 0, 1, 0, 0], [0, 1, 0, 1, 1], [0, 0, 1, 0, 1], [1, 0, 1, 1, 0.0]])


def _car_precision(alpha, tau):
    return tau * (np.diag(_W.sum(0)) - alpha * _W)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("alpha, tau", [(0.5, 2.0), (-0.9, 0.3), (0.99, 1.0)])
def test_car_draws_have_the_covariance_its_logp_means(alpha, tau, sparse):
    """Q^-1 for Q = tau (D - alpha W): each entry normal with its variance, and the whole
    covariance within sampling error."""
    import scipy.sparse

    w = scipy.sparse.csr_matrix(_W) if sparse else _W
    mu = np.arange(5.0)
    x = pm.draw(pm.CAR.dist(mu=mu, W=w, alpha=alpha, tau=tau, size=N_DRAWS), random_seed=3, mode="STABLEHLO")
    cov = np.linalg.inv(_car_precision(alpha, tau))
    scale = np.sqrt(np.outer(np.diag(cov), np.diag(cov)) + cov**2)
    assert (np.abs(np.cov(x.T) - cov) <= 6 * scale / np.sqrt(N_DRAWS)).all()
    for j in range(5):
        assert_distribution(x[:, j], st.norm(mu[j], np.sqrt(cov[j, j])))


def test_pymc_car_rng_fn_draws_with_the_precision_squared():
    """README, "Where we knowingly differ": PyMC's own CAR rng_fn solves with all of Q, so
    its draws have covariance Q^-2 rather than Q^-1. If PyMC fixes it, this fails and
    the README's row goes."""
    q = _car_precision(0.5, 2.0)
    x = multivariate.CARRV.rng_fn(np.random.default_rng(0), np.zeros(5), _W, np.array(0.5), np.array(2.0),
                                  np.array(True), (N_DRAWS,))
    inverse = np.linalg.inv(q)
    np.testing.assert_allclose(np.cov(x.T), inverse @ inverse, atol=0.01)
    assert np.abs(np.cov(x.T) - inverse).max() > 0.1


def test_car_shapes_and_errors():
    mu = pt.dmatrix("mu")
    x = pm.CAR.dist(mu=mu, W=_W, alpha=0.5, tau=2.0, size=(2, 3))
    f = pytensor.function([mu], x, mode="STABLEHLO")
    assert f(np.zeros((3, 5))).shape == pytensor.function([mu], x, mode=PY_MODE)(np.zeros((3, 5))).shape == (2, 3, 5)
    alpha, tau = pt.dscalar("alpha"), pt.dscalar("tau")
    g = pytensor.function([alpha, tau], pm.CAR.dist(mu=np.zeros(5), W=_W, alpha=alpha, tau=tau), mode="STABLEHLO")
    for bad in [1.0, -1.0, 3.0]:
        with pytest.raises(ValueError, match=re.escape("the domain of alpha is: -1 < alpha < 1")):
            g(bad, 1.0)
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        g(0.5, -1.0)
    asymmetric = _W.copy()
    asymmetric[0, 2] = 1.0
    h = pytensor.function([], pm.CAR.dist(mu=np.zeros(5), W=asymmetric, alpha=0.5, tau=1.0), mode="STABLEHLO")
    with pytest.raises(ValueError, match="W must be a valid adjacency matrix"):
        h()


def test_truncated_discrete_draws_by_rejection_in_a_scan():
    """pm.Truncated of a discrete distribution redraws `x[reject] = new[reject]` in a
    while-Scan: a compaction no loop body can size, so the write is a select (no draw
    worked before)."""
    z = pm.Truncated.dist(pm.Poisson.dist(3.0), lower=1, upper=10, shape=N_DRAWS)
    x = pm.draw(z, random_seed=1, mode="STABLEHLO")
    assert x.dtype == np.int64 and x.min() >= 1 and x.max() <= 10
    support = np.arange(1, 11)
    truncated = st.rv_discrete(values=(support, st.poisson(3.0).pmf(support) / st.poisson(3.0).pmf(support).sum()))
    assert_distribution(x, truncated, discrete=True)
