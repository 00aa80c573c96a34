"""Multivariate RandomVariables and orderings: Dirichlet, multivariate normal, permutation,
and `pt.random.choice` with and without replacement (with and without p)."""

from __future__ import annotations

import itertools

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.stats as st

from tests.helpers import N_DRAWS, PY_MODE, assert_distribution, draw


def _same_type(out, inputs=(), values=()):
    """Our draws have the shape and dtype of the Python mode's; returns ours."""
    got = pytensor.function(list(inputs), out, mode="STABLEHLO")(*values)
    expected = pytensor.function(list(inputs), out, mode=PY_MODE)(*values)
    assert got.shape == expected.shape and got.dtype == expected.dtype, (got.shape, expected.shape)
    return got


def _shared_rng(seed=0):
    return pytensor.shared(np.random.default_rng(seed))


def _assert_frequencies(labels, probabilities, min_p=1e-4):
    """Chi-square of the counts of labels 0..len(probabilities)-1 (every label in range)."""
    labels = np.asarray(labels).ravel()
    probabilities = np.asarray(probabilities, dtype=np.float64)
    assert labels.min() >= 0 and labels.max() < len(probabilities)
    counts = np.bincount(labels, minlength=len(probabilities))
    assert counts[probabilities == 0].sum() == 0, "a label of probability 0 was drawn"
    keep = probabilities > 0
    p = st.chisquare(counts[keep], probabilities[keep] * labels.size).pvalue
    assert p > min_p, f"chi-square p-value {p:.2e}"


def _ordering_labels(rows, n):
    """Each row of values in range(n) as one integer (the row's values as base-n digits)."""
    rows = np.asarray(rows, dtype=np.int64)
    return (rows * n ** np.arange(rows.shape[-1])[::-1]).sum(-1)


def _with_size(make_rv, size):
    """The Op `make_rv(rng)` builds, applied again with `size` (choice builds its Op with
    size=None; its own `size` is the core shape)."""
    rng = _shared_rng()
    node = make_rv(rng).owner
    return node.op(*node.inputs[2:], size=size, rng=rng)


# --- Dirichlet ---------------------------------------------------------------------


def _assert_binned(x, dist, min_p=1e-4):
    """Chi-square of the draws in cells from 1e-30 to 1 - 1e-12: for Beta marginals with
    tiny parameters, whose mass sits within rounding of 0 and 1, where a KS test measures
    the rounding of float64 (numpy's own draws fail it)."""
    edges = np.array([1e-30, 1e-12, 1e-6, 1e-2, 0.1, 0.5, 0.9, 1 - 1e-2, 1 - 1e-6, 1 - 1e-12])
    observed = np.diff(np.concatenate([[0], np.searchsorted(np.sort(x), edges), [len(x)]]))
    expected = np.diff(np.concatenate([[0.0], dist.cdf(edges), [1.0]])) * len(x)
    cells_o, cells_e, o, e = [], [], 0, 0.0
    for oi, ei in zip(observed, expected):  # merge neighbouring cells below 5 expected
        o, e = o + oi, e + ei
        if e >= 5:
            cells_o.append(o), cells_e.append(e)
            o, e = 0, 0.0
    cells_o[-1] += o
    cells_e[-1] += e
    p = st.chisquare(cells_o, np.array(cells_e) * len(x) / sum(cells_e)).pvalue
    assert p > min_p, f"chi-square p-value {p:.2e}"


@pytest.fixture(scope="module")
def dirichlet_draws():
    """N_DRAWS Dirichlet vectors of a length-3 alpha (one compile for the tests below)."""
    alpha = pt.dvector("alpha")
    return pytensor.function([alpha], pt.random.dirichlet(alpha, size=N_DRAWS, rng=_shared_rng()), mode="STABLEHLO")


def test_dirichlet_marginals_are_beta_across_regimes(dirichlet_draws):
    # numpy switches to beta stick-breaking for max(alpha) < 0.1: the second set.
    for values in ([0.5, 1.0, 3.5], [0.01, 0.03, 0.08], [250.0, 40.0, 0.001]):
        x = dirichlet_draws(np.array(values))
        assert (x >= 0).all()
        np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-12)
        total = sum(values)
        for i, a in enumerate(values):
            dist = st.beta(a, total - a)
            _assert_binned(x[:, i], dist)
            if min(a, total - a) >= 0.5:
                assert_distribution(x[:, i], dist)
            else:
                assert abs(x[:, i].mean() - dist.mean()) < 6 * dist.std() / np.sqrt(N_DRAWS)


def test_dirichlet_edge_parameters_as_numpy(dirichlet_draws):
    def draws(*alpha):
        return dirichlet_draws(np.array(alpha))

    np.testing.assert_array_equal(np.unique(draws(0.0, 1.0, 0.0), axis=0), [[0.0, 1.0, 0.0]])
    assert (draws(0.0, 0.0, 0.0) == 0.0).all()
    x = draws(np.inf, 1.0, 2.0)
    assert np.isnan(x[:, 0]).all() and (x[:, 1:] == 0.0).all()
    assert np.isnan(draws(np.nan, 1.0, 1.0)).all()
    tiny = draws(1e-300, 1e-300, 1e-300)  # one-hot, each vertex a third of the time
    np.testing.assert_array_equal(np.sort(tiny, axis=1)[:, 1:], np.tile([0.0, 1.0], (N_DRAWS, 1)))
    _assert_frequencies(tiny.argmax(1), np.full(3, 1 / 3))
    with pytest.raises(ValueError, match="alpha < 0"):
        draws(-1.0, 1.0, 1.0)


def test_dirichlet_float32_float16_and_batched_alphas():
    alphas = np.array([[0.2, 1.5, 6.0], [3.0, 3.0, 0.05]], dtype="float32")
    alpha = pt.fmatrix("alpha")
    rng = _shared_rng()
    big = pt.random.dirichlet(alpha, size=(N_DRAWS // 2, 2), rng=rng, dtype="float32")
    small = pt.random.dirichlet(alpha, size=(4, 2), rng=rng, dtype="float16")
    x, y = pytensor.function([alpha], [big, small], mode="STABLEHLO")(alphas)
    expected = pytensor.function([alpha], small, mode=PY_MODE)(alphas)
    assert (y.shape, y.dtype) == (expected.shape, expected.dtype)
    assert x.dtype == np.float32 and x.shape == (N_DRAWS // 2, 2, 3)
    np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-5)
    for b in range(2):
        total = alphas[b].sum(dtype=np.float64)
        for i, a in enumerate(alphas[b].astype(np.float64)):
            _assert_binned(x[:, b, i].astype(np.float64), st.beta(a, total - a))


# --- multivariate normal -----------------------------------------------------------------

MEAN = np.array([1.0, -2.0, 0.5])
COV = np.array([[2.0, 0.6, -0.4], [0.6, 1.0, 0.3], [-0.4, 0.3, 0.8]])


def _assert_moments(x, mean, cov, sigmas=6.0):
    """Sample mean and covariance within `sigmas` standard errors of mean and cov."""
    n = len(x)
    np.testing.assert_array_less(np.abs(x.mean(0) - mean), sigmas * np.sqrt(np.diag(cov) / n))
    se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov**2) / n)
    np.testing.assert_array_less(np.abs(np.cov(x, rowvar=False) - cov), sigmas * se)


@pytest.mark.parametrize("method", ["cholesky", "svd", "eigh"])
def test_mv_normal_moments_and_projections(method):
    x = draw(lambda r, size: pt.random.multivariate_normal(MEAN, COV, size=size, rng=r, method=method))
    _assert_moments(x, MEAN, COV)
    # Every linear projection of a multivariate normal is normal.
    for v in ([1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [1.0, 1.0, 1.0], [1.0, -2.0, 0.5]):
        v = np.array(v)
        assert_distribution(x @ v, st.norm(v @ MEAN, np.sqrt(v @ COV @ v)))


@pytest.mark.parametrize("method, dtype", [("cholesky", "float64"), ("eigh", "float32"), ("svd", "float64")])
def test_mv_normal_batched_covariances(method, dtype):
    covs = np.stack([COV, np.diag([0.5, 3.0, 1.0])])
    means = np.stack([MEAN, -MEAN])
    x = draw(lambda r, size: pt.random.multivariate_normal(means, covs, size=(size[0] // 2, 2), rng=r,
                                                           method=method, dtype=dtype))
    assert x.shape == (N_DRAWS // 2, 2, 3) and x.dtype == dtype
    for b in range(2):
        _assert_moments(x[:, b].astype(np.float64), means[b], covs[b])


def test_mv_normal_shapes_broadcast_mean_and_covariance():
    cov = pt.tensor3("cov")
    covs = np.stack([COV, np.eye(3)])
    _same_type(pt.random.multivariate_normal(MEAN, cov, size=(4, 2), rng=_shared_rng()), [cov], [covs])
    mean = pt.dmatrix("mean")
    _same_type(pt.random.multivariate_normal(mean, COV, rng=_shared_rng(), dtype="float16"), [mean],
               [np.zeros((5, 3))])


def test_mv_normal_singular_and_invalid_covariances_as_perform():
    mean, cov = pt.dvector("mean"), pt.dmatrix("cov")
    singular = np.array([[1.0, 1.0], [1.0, 1.0]])
    indefinite = np.array([[1.0, 2.0], [2.0, 1.0]])

    def function(method):
        rv = pt.random.multivariate_normal(mean, cov, size=(1000,), rng=_shared_rng(), method=method)
        return pytensor.function([mean, cov], rv, mode="STABLEHLO")

    cholesky, svd, eigh = function("cholesky"), function("svd"), function("eigh")
    with pytest.raises(np.linalg.LinAlgError, match="Matrix is not positive definite"):
        cholesky(np.zeros(2), singular)
    with pytest.raises(np.linalg.LinAlgError, match="Matrix is not positive definite"):
        cholesky(np.zeros(2), indefinite)
    for f in (svd, eigh):  # a rank-one covariance: both coordinates equal
        x = f(np.zeros(2), singular)
        # The zero eigenvalue comes back as rounding (LAPACK gives 0 or ~3e-17 depending on
        # the CPU's kernels), and its square root (~6e-9) scales a normal draw: numpy's own
        # svd sampler differs by 3e-8 here. A real mixing of the coordinates would be O(1).
        np.testing.assert_allclose(x[:, 0], x[:, 1], atol=10 * np.sqrt(np.finfo(float).eps))
        assert 0.8 < x[:, 0].var() < 1.2
    assert np.isnan(eigh(np.zeros(2), indefinite)).all()  # sqrt of a negative eigenvalue
    x = svd(np.zeros(2), indefinite)  # U sqrt(s) ignores the sign, as numpy's svd does
    # (s = 3 and 1 on the eigenvectors (1, +-1) / sqrt 2: each coordinate's variance is 2,
    # which a normal's sampling variance over 1,000 draws moves by 0.09 a standard deviation)
    assert np.isfinite(x).all() and abs(x[:, 0].var() - 2.0) < 0.45
    with pytest.raises(ValueError):
        cholesky(np.zeros(2), np.ones((2, 3)))


# --- permutations ------------------------------------------------------------------------


def test_permutation_of_an_int_is_uniform_over_orderings():
    x = draw(lambda r, size: pt.random.permutation(4, size=size, rng=r))
    assert x.shape == (N_DRAWS, 4)
    assert (np.sort(x, axis=1) == np.arange(4)).all()
    _assert_frequencies(_ordering_labels(x, 4), np.isin(np.arange(4**4), _all_orderings(4, 4)) / 24)


def _all_orderings(n, k):
    return _ordering_labels(list(itertools.permutations(range(n), k)), n)


def test_permutation_of_an_array_moves_whole_rows():
    values = np.arange(6, dtype=np.int16).reshape(3, 2) * 10
    rv = _with_size(lambda r: pt.random.permutation(values, rng=r), (N_DRAWS,))
    x = pytensor.function([], rv, mode="STABLEHLO")()
    assert x.shape == (N_DRAWS, 3, 2) and x.dtype == np.int16
    rows = x[..., 0] // 20
    np.testing.assert_array_equal(x[..., 1], x[..., 0] + 10)
    _assert_frequencies(_ordering_labels(rows, 3), np.isin(np.arange(27), _all_orderings(3, 3)) / 6)


def test_permutation_shapes():
    x = pt.dmatrix("x")
    got = _same_type(pt.random.permutation(x, rng=_shared_rng()), [x], [np.arange(8.0).reshape(4, 2)])
    np.testing.assert_array_equal(np.sort(got[:, 0]), [0, 2, 4, 6])
    n = pt.lscalar("n")
    assert sorted(_same_type(pt.random.permutation(n, rng=_shared_rng()), [n], [7])) == list(range(7))
    assert _same_type(pt.random.permutation(n, rng=_shared_rng()), [n], [-1]).shape == (0,)
    # A batch of vectors (the Op as vectorize builds it): each row permuted on its own.
    batched = pytensor.tensor.random.basic.PermutationRV(signature="(x0)->(x0)", dtype="float32")
    got = _same_type(batched(x.astype("float32"), rng=_shared_rng()), [x], [np.arange(12.0).reshape(3, 4)])
    np.testing.assert_array_equal(np.sort(got, axis=1), np.arange(12.0).reshape(3, 4))


# --- choice without replacement ----------------------------------------------------------


def test_choice_without_replacement_is_a_uniform_ordered_sample():
    x = pytensor.function([], _with_size(lambda r: pt.random.choice(6, size=2, replace=False, rng=r), (N_DRAWS,)),
                          mode="STABLEHLO")()
    assert x.shape == (N_DRAWS, 2) and (x[:, 0] != x[:, 1]).all()
    _assert_frequencies(_ordering_labels(x, 6), np.isin(np.arange(36), _all_orderings(6, 2)) / 30)


def test_choice_without_replacement_with_p_draws_successively():
    # Ordered pairs (i, j): p_i p_j / (1 - p_i), numpy's successive sampling.
    p = np.array([0.5, 0.25, 0.15, 0.1, 0.0, 0.0])
    pairs = np.outer(p, p) / (1 - p)[:, None]
    np.fill_diagonal(pairs, 0.0)
    rv = _with_size(lambda r: pt.random.choice(np.arange(6) * 3, size=2, replace=False, p=p, rng=r), (N_DRAWS,))
    x = pytensor.function([], rv, mode="STABLEHLO")()
    assert x.shape == (N_DRAWS, 2)
    _assert_frequencies(_ordering_labels(x // 3, 6), pairs.ravel())


def test_choice_without_replacement_from_batched_populations():
    # choice(a, 3, replace=False) vectorized over a = 3, 10, 3, 10, ...: 3 draws from
    # arange(3) are its 6 orderings, uniformly; from arange(10), its 720 ordered triples.
    from pytensor.graph.replace import vectorize_graph

    a, populations = pt.lscalar("a"), pt.lvector("populations")
    rv = vectorize_graph(pt.random.choice(a, size=3, replace=False, rng=_shared_rng()), {a: populations})
    x = pytensor.function([populations], rv, mode="STABLEHLO")(np.tile([3, 10], N_DRAWS // 2))
    assert x.shape == (N_DRAWS, 3)
    _assert_frequencies(_ordering_labels(x[0::2], 3), np.isin(np.arange(3**3), _all_orderings(3, 3)) / 6)
    _assert_frequencies(_ordering_labels(x[1::2], 10), np.isin(np.arange(10**3), _all_orderings(10, 3)) / 720)


def test_choice_without_replacement_shapes():
    a = pt.fmatrix("a")
    values = np.arange(10, dtype=np.float32).reshape(5, 2)
    p = np.array([0.1, 0.2, 0.3, 0.4, 0.0])
    x = _same_type(pt.random.choice(a, size=(2, 2), replace=False, p=p, rng=_shared_rng()), [a], [values])
    assert x.shape == (2, 2, 2) and (x[..., 1] == x[..., 0] + 1).all()
    assert len(set(x[..., 0].ravel())) == 4 and 8.0 not in x
    n = pt.lscalar("n")
    x = _same_type(pt.random.choice(7, size=(n,), replace=False, rng=_shared_rng()), [n], [7])
    assert sorted(x) == list(range(7))
    assert _same_type(pt.random.choice(values[:, 0], size=(), replace=False, rng=_shared_rng())).shape == ()


def test_choice_without_replacement_errors_as_numpy():
    a, n, p = pt.lscalar("a"), pt.lscalar("n"), pt.dvector("p")
    f = pytensor.function([a, n], pt.random.choice(a, size=(n,), replace=False, rng=_shared_rng()), mode="STABLEHLO")
    assert f(0, 0).shape == (0,)
    for args, message in [((5, 6), "Cannot take a larger sample than population when replace is False"),
                          ((0, 1), "a must be a positive integer unless no samples are taken"),
                          ((5, -1), "negative dimensions are not allowed")]:
        with pytest.raises(ValueError, match=message):
            f(*args)
    empty = pytensor.function([p], pt.random.choice(p, size=1, replace=False, rng=_shared_rng()), mode="STABLEHLO")
    with pytest.raises(ValueError, match="a cannot be empty unless no samples are taken"):
        empty(np.array([]))
    f = pytensor.function([p, n], pt.random.choice(3, size=(n,), p=p, replace=False, rng=_shared_rng()),
                          mode="STABLEHLO")
    assert sorted(f(np.array([0.5, 0.5, 0.0]), 2)) == [0, 1]
    for values, k, message in [([0.5, 0.5, 0.0], 3, "Fewer non-zero entries in p than size"),
                               ([0.5, 0.6, 0.0], 2, "Probabilities do not sum to 1"),
                               ([1.5, -0.5, 0.0], 2, "Probabilities are not non-negative"),
                               ([np.nan, 0.5, 0.5], 2, "Probabilities contain NaN"),
                               ([np.inf, 0.5, 0.5], 2, "Probabilities contain NaN"),
                               ([0.5, 0.5, 0.0], 4, "Cannot take a larger sample")]:
        with pytest.raises(ValueError, match=message):
            f(np.array(values), k)
    # numpy's tolerance on the sum is sqrt(eps) of p's own dtype where wider than float64's.
    almost = np.array([0.5, 0.4999, 0.0])
    with pytest.raises(ValueError, match="Probabilities do not sum to 1"):
        f(almost, 2)
    p32 = pt.fvector("p32")
    g = pytensor.function([p32], pt.random.choice(3, size=2, p=p32, replace=False, rng=_shared_rng()),
                          mode="STABLEHLO")
    assert sorted(g(almost.astype(np.float32))) == [0, 1]


# --- choice with replacement (integers and categorical, in random_discrete) -----------------------------------


def test_choice_with_replacement_is_uniform():
    rng = _shared_rng()
    from_int = pt.random.choice(7, size=N_DRAWS, rng=rng)
    from_array = pt.random.choice(np.array([5.0, 6.0, 7.0]), size=N_DRAWS, rng=rng)
    x, y = pytensor.function([], [from_int, from_array], mode="STABLEHLO")()
    _assert_frequencies(x, np.full(7, 1 / 7))
    _assert_frequencies((y - 5).astype(int), np.full(3, 1 / 3))


def test_choice_with_replacement_follows_p():
    p = np.array([0.1, 0.0, 0.2, 0.3, 0.4])
    x = draw(lambda r, size: pt.random.choice(np.arange(5) * 2, size=size, p=p, rng=r))
    _assert_frequencies(x // 2, p)
    # A batch of probability vectors (categorical with batched p).
    ps = np.array([[0.7, 0.2, 0.1], [0.05, 0.05, 0.9]])
    x = draw(lambda r, size: pt.random.categorical(ps, size=(size[0] // 2, 2), rng=r))
    assert x.shape == (N_DRAWS // 2, 2)
    for b in range(2):
        _assert_frequencies(x[:, b], ps[b])
