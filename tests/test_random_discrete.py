"""Discrete random variables: every sampler against scipy.stats in each regime where its
algorithm changes branch, shapes and dtypes as PyTensor's Python mode, numpy's errors.

A compile costs seconds here (rejection loops), so each distribution is compiled once:
vector parameters of unknown length, one column of draws per parameter value, `size`
read from them at run time; its error tests call the same function with one bad value.
"""

from __future__ import annotations

import functools

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.stats as st

from tests.helpers import N_DRAWS, PY_MODE, assert_distribution, device_put, draw, record_emitter_choices

N = N_DRAWS
INF, NAN = np.inf, np.nan


def _vector(i, dtype, ndim=1):
    return pt.tensor(f"param{i}", shape=(None,) * ndim, dtype=dtype)


@functools.cache
def _functions(name):
    """(ours, Python mode's) for draws of shape (n, m) from m parameter values."""
    make, dtypes = _DISTRIBUTIONS[name]
    params = [_vector(i, dtype, ndim) for i, (dtype, ndim) in enumerate(dtypes)]
    n = pt.lscalar("n")
    rng = pytensor.shared(np.random.default_rng(0))
    x = make(*params, size=(n, params[0].shape[0]), rng=rng)
    inputs = [n, *params]
    return pytensor.function(inputs, x, mode="STABLEHLO"), pytensor.function(inputs, x, mode=PY_MODE)


def _draws(name, *values):
    """N draws per parameter value, checked against the Python mode's shape and dtype."""
    ours, python = _functions(name)
    x = ours(N, *values)
    expected = python(3, *values)
    assert x.dtype == expected.dtype and x.shape == (N, *expected.shape[1:])
    return x


def _same_error(name, *values):
    """Our draws raise the Python mode's error, word for word. The values have the shapes
    of the distribution test's (no new compile), and cheap ones around the bad one: the
    draws are made before the error is raised."""
    ours, python = _functions(name)
    with pytest.raises(Exception) as theirs:
        python(3, *values)
    with pytest.raises(theirs.type) as got:
        ours(N, *values)
    assert _message(got.value) == _message(theirs.value)


def _message(error):
    """The error's own words, without what PyTensor and our runtime add about the node."""
    return str(error).split("\n")[0].split(" (node: ")[0]


_DISTRIBUTIONS = {
    "bernoulli": (lambda p, **kw: pt.random.bernoulli(p, **kw), [("float64", 1)]),
    "poisson": (lambda lam, **kw: pt.random.poisson(lam, **kw), [("float64", 1)]),
    # p in float32: the parameters of integer draws are computed with in float64
    "binomial": (lambda n, p, **kw: pt.random.binomial(n, p, **kw), [("int64", 1), ("float32", 1)]),
    "betabinom": (lambda n, a, b, **kw: pt.random.betabinom(n, a, b, **kw), [("int64", 1), ("float64", 1), ("float64", 1)]),
    "nbinom": (lambda n, p, **kw: pt.random.negative_binomial(n, p, **kw), [("float64", 1), ("float64", 1)]),
    "geometric": (lambda p, **kw: pt.random.geometric(p, **kw), [("float64", 1)]),
    "hypergeometric": (
        lambda g, b, s, **kw: pt.random.hypergeometric(g, b, s, **kw), [("int64", 1), ("int64", 1), ("int64", 1)],
    ),
    # p: (m, K), K known only at run time
    "categorical": (lambda p, **kw: pt.random.categorical(p, **kw), [("float64", 2)]),
    # p in float32, where numpy words one error differently
    "multinomial": (lambda n, p, **kw: pt.random.multinomial(n, p, **kw), [("int64", 1), ("float32", 2)]),
    "integers": (lambda low, high, **kw: pt.random.integers(low, high, **kw), [("int64", 1), ("int64", 1)]),
}


def _check(column, dist):
    """The chi-square test where the support is small enough to count, else Kolmogorov-
    Smirnov (the atoms of such a distribution are far below its resolution)."""
    assert_distribution(column, dist, discrete=np.sqrt(dist.var()) < 500)


# --- distributions ---------------------------------------------------------------------


def test_bernoulli():
    p = np.array([0.0, 1.0, 0.3, 0.999])
    x = _draws("bernoulli", p)
    assert (x[:, 0] == 0).all() and (x[:, 1] == 1).all()
    for i in (2, 3):
        _check(x[:, i], st.bernoulli(p[i]))
    for bad in (1.5, NAN):
        _same_error("bernoulli", np.array([0.5, bad, 0.5, 0.5]))


POISSON_LAM = np.array([0.0, 1e-300, 0.3, 4.5, 9.99, 10.0, 37.5, 1e4, 1e9])


def test_poisson_on_both_sides_of_the_switch_to_ptrs():
    x = _draws("poisson", POISSON_LAM)
    assert (x[:, :2] == 0).all()
    for i in range(2, len(POISSON_LAM)):
        _check(x[:, i], st.poisson(POISSON_LAM[i]))


@pytest.mark.parametrize("bad", [-1.0, NAN, 1e19, INF])
def test_poisson_errors(bad):
    lam = np.zeros_like(POISSON_LAM)
    lam[3] = bad
    _same_error("poisson", lam)


BINOMIAL_N = np.array([0, 7, 7, 20, 49, 50, 1000, 30, 10**6, 10**12, 2**62])
BINOMIAL_P = np.array([0.3, 0.0, 1.0, 0.2, 0.2, 0.2, 0.7, 0.9, 0.5, 1e-12, 0.25], dtype=np.float32)


def test_binomial_by_inversion_and_by_btrs_with_symmetry():
    # n*min(p, q): 4 and 9.8 (inversion), 10 (BTRS), 300 (BTRS of q), 3 (inversion of q), ...
    x = _draws("binomial", BINOMIAL_N, BINOMIAL_P)
    assert (x[:, :2] == 0).all() and (x[:, 2] == 7).all()
    for i in range(3, len(BINOMIAL_N) - 1):
        _check(x[:, i], st.binom(int(BINOMIAL_N[i]), float(BINOMIAL_P[i])))
    # scipy's binomial CDF takes minutes at n = 2**62, where the normal law is exact to 1e-9.
    n, p = 2.0**62, 0.25
    _check(x[:, -1], st.norm(n * p, np.sqrt(n * p * (1 - p))))


@pytest.mark.parametrize("position, bad", [(1, -0.1), (1, NAN), (0, -1)])
def test_binomial_errors(position, bad):
    values = [np.zeros_like(BINOMIAL_N), np.zeros_like(BINOMIAL_P)]
    values[position][4] = bad
    _same_error("binomial", *values)


BETABINOM = np.array([(0, 1.0, 1.0), (10, 1.0, 1.0), (20, 0.05, 0.1), (30, 50.0, 20.0), (1000, 2.5, 0.5), (5, 1e-3, 2e-3)])


def test_beta_binomial_with_tiny_and_large_shapes():
    n, a, b = BETABINOM.T
    x = _draws("betabinom", n.astype(np.int64), a, b)
    assert (x[:, 0] == 0).all()
    for i in range(1, len(n)):
        _check(x[:, i], st.betabinom(int(n[i]), a[i], b[i]))


@pytest.mark.parametrize("position, bad", [(0, -1), (1, 0.0), (2, NAN), (1, INF)])
def test_beta_binomial_errors(position, bad):
    values = [np.zeros(len(BETABINOM), np.int64), np.ones(len(BETABINOM)), np.ones(len(BETABINOM))]
    values[position][2] = bad
    _same_error("betabinom", *values)


NBINOM = np.array([(1.0, 0.5), (2.5, 0.3), (10.0, 0.9), (0.5, 0.01), (100.0, 0.2), (3.0, 1.0)])


def test_negative_binomial_counts_failures_and_takes_real_n():
    n, p = NBINOM.T
    x = _draws("nbinom", n, p)
    assert (x[:, -1] == 0).all()
    for i in range(len(n) - 1):
        _check(x[:, i], st.nbinom(n[i], p[i]))


@pytest.mark.parametrize("position, bad", [(0, 0.0), (0, NAN), (1, 0.0), (1, 1.5)])
def test_negative_binomial_errors(position, bad):
    values = [np.ones(len(NBINOM)), np.ones(len(NBINOM))]
    values[position][1] = bad
    _same_error("nbinom", *values)


def test_negative_binomial_error_for_a_mean_beyond_poisson_range():
    _same_error("nbinom", np.ones(len(NBINOM)), np.array([1.0, 1.0, 1.0, 1e-300, 1.0, 1.0]))


GEOMETRIC_P = np.array([1.0, 0.9, 0.5, 0.3, 0.01, 1e-6, 1e-300])


def test_geometric_counts_trials_from_one():
    x = _draws("geometric", GEOMETRIC_P)
    assert (x[:, 0] == 1).all() and x.min() >= 1
    assert (x[:, -1] == np.iinfo(np.int64).max).all()  # numpy's saturation past int64
    for i in range(1, len(GEOMETRIC_P) - 1):
        _check(x[:, i], st.geom(GEOMETRIC_P[i]))
    for bad in (0.0, 1.5, NAN):
        _same_error("geometric", np.array([1.0, 1.0, bad, 1.0, 1.0, 1.0, 1.0]))


HYPERGEOMETRIC = np.array([
    (10, 20, 5),  # urn
    (50, 60, 105),  # urn over the 5 left out
    (100, 200, 50),  # HRUA
    (200, 100, 250),  # HRUA, more good than bad, the sample over half
    (10**8, 2 * 10**8, 10**6),  # HRUA, large counts
    (999_999_999, 999_999_999, 10),  # HRUA at numpy's limit
    (5, 3, 8), (0, 5, 3), (5, 0, 3), (5, 5, 0),
])


def test_hypergeometric_by_urn_and_by_hrua():
    good, bad, sample = HYPERGEOMETRIC.T
    x = _draws("hypergeometric", good, bad, sample)
    np.testing.assert_array_equal(x[:, 6:], np.broadcast_to([5, 0, 3, 0], (N, 4)))
    for i in range(6):
        _check(x[:, i], _hypergeometric_law(good[i], bad[i], sample[i]))


def _hypergeometric_law(good, bad, sample):
    """scipy's hypergeom, without its seconds-long PMF at a billion items: the mass within
    15 sd of the mean, from log-binomials."""
    from scipy.special import gammaln

    total = good + bad
    mean = sample * good / total
    sd = np.sqrt(mean * bad / total * (total - sample) / max(total - 1, 1))
    k = np.arange(max(0, sample - bad, int(mean - 15 * sd)), min(good, sample, int(mean + 15 * sd)) + 1)
    def log_choose(a, b):
        return gammaln(a + 1.0) - gammaln(b + 1.0) - gammaln(a - b + 1.0)
    log_p = log_choose(good, k) + log_choose(bad, sample - k) - log_choose(total, sample)
    p = np.exp(log_p)
    # Shifted by loc: rv_discrete's moments from raw sums lose every digit at k ~ 3e5.
    return st.rv_discrete(values=(k - k[0], p / p.sum()))(loc=k[0])


@pytest.mark.parametrize("values", [(-1, 50, 2), (50, -1, 2), (5, 5, -1), (5, 5, 11), (10**9, 5, 2)])
def test_hypergeometric_errors(values):
    params = np.zeros_like(HYPERGEOMETRIC.T)
    params[:, 2] = values
    _same_error("hypergeometric", *params)


CATEGORICAL_P = np.array([
    [0.2, 0.5, 0.3, 0.0],
    [0.1, 0.1, 0.1, 0.1],  # sums to 0.4: category 4 with probability 0.6, as numpy's search
    [0.0, 1.0, 0.0, 0.0],
    [0.6, 0.6, 0.6, 0.6],  # mass past 1 is never reached
])


def _categorical_law(row):
    cdf = np.minimum(np.cumsum(row), 1.0)
    probs = np.diff(np.concatenate([[0.0], cdf, [1.0]]))
    return st.rv_discrete(values=(np.arange(len(probs)), probs))


def test_categorical_searches_the_cumulative_sum_of_unnormalized_rows():
    x = _draws("categorical", CATEGORICAL_P)
    assert (x[:, 2] == 1).all()
    for i in (0, 1, 3):
        _check(x[:, i], _categorical_law(CATEGORICAL_P[i]))


def test_categorical_with_categories_known_statically():
    rng = pytensor.shared(np.random.default_rng(0))
    few = np.array([0.25, 0.25, 0.5])
    many = np.linspace(1.0, 2.0, 100)
    many /= many.sum()
    x, y = pytensor.function(
        [], [pt.random.categorical(p, size=N, rng=rng) for p in (few, many)], mode="STABLEHLO"
    )()
    _check(x, _categorical_law(few))
    _check(y, _categorical_law(many))


MULTINOMIAL_N = np.array([20, 10**6, 0, 7])
MULTINOMIAL_P = np.array([
    [0.2, 0.5, 0.0, 0.3],
    [0.1, 0.4, 0.25, 0.25],
    [0.25, 0.25, 0.25, 0.25],
    [0.0, 0.0, 1.0, 0.0],
], dtype=np.float32)


def test_multinomial_by_conditional_binomials():
    x = _draws("multinomial", MULTINOMIAL_N, MULTINOMIAL_P)
    np.testing.assert_array_equal(x.sum(-1), np.broadcast_to(MULTINOMIAL_N, (N, 4)))
    np.testing.assert_array_equal(x[:, 3], np.broadcast_to([0, 0, 7, 0], (N, 4)))
    wide = MULTINOMIAL_P.astype(np.float64)
    for r in (0, 1):
        for i in range(4):
            p = 1.0 - wide[r, :-1].sum() if i == 3 else wide[r, i]
            if p == 0:
                assert (x[:, r, i] == 0).all()
            else:
                _check(x[:, r, i], st.binom(MULTINOMIAL_N[r], p))


@pytest.mark.parametrize("n, row", [
    (-1, None), (5, [0.7, 0.7, 0.0, 0.0]), (5, [0.50001, 0.5, 0.0, 0.0]), (5, [-0.1, 0.5, 0.3, 0.3]), (5, [NAN, 0.5, 0.0, 0.0]),
])
def test_multinomial_errors(n, row):
    counts, p = np.zeros_like(MULTINOMIAL_N), MULTINOMIAL_P.copy()
    counts[1] = n
    if row is not None:
        p[1] = row
    _same_error("multinomial", counts, p)


@pytest.mark.parametrize("dtype", ["float64", "float32", "uint64"])
def test_multinomial_counts_of_other_dtypes_as_the_python_mode_takes_them(dtype):
    """PyTensor's perform hands numpy's multinomial one n at a time, a numpy scalar, which
    numpy converts as int() does: a float n is truncated, and refused where int() refuses
    it (NaN, infinity, past int64); a uint64 one past int64 too. A 0-d n with one p
    vector reaches numpy as a 0-d array, refused for its type. Both were refused here
    for their type (PyTensor's xtensor tests draw with a float n)."""
    n = pt.vector("n", dtype=dtype)
    rng = pytensor.shared(np.random.default_rng(0))
    out = pt.random.multinomial(n, np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]), rng=rng)
    ours = pytensor.function([n], out, mode="STABLEHLO")
    python = pytensor.function([n], out, mode=PY_MODE)
    good = [[5, 7]] if dtype == "uint64" else [[5.5, 10.9], [-0.5, 3.0], [0.0, 2.0**40]]
    for counts in good:  # one-hot rows: the draws are the counts, whatever the stream
        np.testing.assert_array_equal(ours(np.array(counts, dtype=dtype)), python(np.array(counts, dtype=dtype)))
    bad = [[2**63 + 1, 1]] if dtype == "uint64" else [[-1.5, 3.0], [NAN, 1.0], [np.inf, 1.0], [1e19, 1.0]]
    for counts in bad:
        values = np.array(counts, dtype=dtype)
        with pytest.raises((ValueError, OverflowError)) as theirs:
            python(values)
        with pytest.raises(theirs.type) as got:
            ours(values)
        assert _message(got.value) == _message(theirs.value)
    n0 = pt.scalar("n0", dtype=dtype)
    scalar_n = pytensor.function([n0], pt.random.multinomial(n0, np.array([0.5, 0.5]), rng=rng), mode="STABLEHLO")
    with pytest.raises(TypeError, match=rf"Cannot cast scalar from dtype\('{dtype}'\) to dtype\('int64'\)"):
        scalar_n(np.array(5, dtype=dtype))


INTEGERS = [(-3, 7), (0, 1), (-(2**63), 2**63 - 1), (0, 2**63 - 1), (2**62, 2**63 - 1), (-5, 3 * 2**61 - 5)]


def test_integers_are_uniform_without_modulo_bias_over_any_int64_range():
    low, high = (np.array(v, dtype=np.int64) for v in zip(*INTEGERS))
    x = _draws("integers", low, high)
    assert (x >= low).all() and (x < high).all() and (x[:, 1] == 0).all()
    _check(x[:, 0], st.randint(-3, 7))
    for i in range(2, len(INTEGERS)):
        # 12 equal bins of the range; 2**64 mod 3 * 2**61 = 2**61 extra words would make a
        # modulo reduction draw the first third of the last range 3/2 times as often.
        offset = (x[:, i] - low[i]).view(np.uint64).astype(np.float64)
        bins = np.floor(offset / float(np.uint64(high[i] - low[i])) * 12)
        _check(bins, st.randint(0, 12))


def test_the_128_bit_product_behind_the_integers():
    """`_multiply_wide` against Python's integers (words travel as 32-bit halves: jax
    moves 64-bit buffers only with x64 enabled)."""
    from jax.extend.mlir import ir
    from jax.extend.mlir.dialects import func
    from jax.extend.mlir.dialects import stablehlo as hlo

    from dialect_rules.random_discrete import _multiply_wide
    from lowering.builders import convert, full_like
    from lowering._jax_internal import make_ir_context
    from lowering.compile import compile_module
    from lowering.types import tensor_type

    rng = np.random.default_rng(0)
    edges = [(0, 2**64 - 1), (1, 2**64 - 1), (2**64 - 1, 2**64 - 1), (2**63, 3), (2**32 - 1, 2**32 + 1)]
    pairs = edges + [tuple(int(w) for w in rng.integers(0, 2**64, 2, dtype=np.uint64, endpoint=False)) for _ in range(59)]
    halves = [np.array([w >> 32 for w, _ in pairs]), np.array([w & 0xFFFFFFFF for w, _ in pairs]),
              np.array([w >> 32 for _, w in pairs]), np.array([w & 0xFFFFFFFF for _, w in pairs])]
    with make_ir_context(), ir.Location.unknown():
        module = ir.Module.create()
        half = tensor_type((len(pairs),), "uint32")
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("main", ir.FunctionType.get([half] * 4, [half] * 4))
            fn.attributes["sym_visibility"] = ir.StringAttr.get("public")
            with ir.InsertionPoint(fn.add_entry_block()):
                def word(high, low):
                    high, low = convert(high, "uint64"), convert(low, "uint64")
                    return hlo.or_(hlo.shift_left(high, full_like(high, 32)), low)

                def split(w):
                    return [convert(hlo.shift_right_logical(w, full_like(w, 32)), "uint32"), convert(w, "uint32")]

                a = fn.arguments
                high, low = _multiply_wide(word(a[0], a[1]), word(a[2], a[3]))
                func.return_(split(high) + split(low))
        exe = compile_module(module, "cpu")
    args = [device_put(h.astype(np.uint32)) for h in halves]
    out = [np.asarray(r[0]).astype(object) for r in exe.execute_sharded(args).disassemble_into_single_device_arrays()]
    products = [x * y for x, y in pairs]
    assert list((out[0] << 32) | out[1]) == [p >> 64 for p in products]
    assert list((out[2] << 32) | out[3]) == [p & (2**64 - 1) for p in products]


@pytest.mark.parametrize("low, high", [([1, 2, 3, 4, 5, 6], [1, 3, 4, 5, 6, 7]), ([0] * 6, [1, 0, 1, 1, 1, 1])])
def test_integers_errors(low, high):
    _same_error("integers", np.array(low), np.array(high))


@pytest.mark.parametrize("low, high", [([5] * 6, [5] * 6), ([0] * 6, [0] * 6)])
def test_integers_check_nothing_when_nothing_is_drawn(low, high):
    """numpy's `integers` returns an empty array for a `size` with a 0 before any check
    (so `choice(0, size=0)` is empty too); the other samplers check all the same."""
    ours, python = _functions("integers")
    x, expected = ours(0, np.array(low), np.array(high)), python(0, np.array(low), np.array(high))
    assert x.dtype == expected.dtype and x.shape == expected.shape == (0, 6)
    for size in [0, (3, 0)]:
        for x in [pt.random.choice(0, size=size), pt.random.integers(5, 5, size=size)]:
            ours, python = (pytensor.function([], x, mode=mode)() for mode in ("STABLEHLO", PY_MODE))
            assert ours.dtype == python.dtype and ours.shape == python.shape
    _same_error("integers", np.array(low), np.array(high))


# --- shapes, dtypes, scalar parameters -------------------------------------------------


def test_output_dtypes_and_parameters_broadcast_against_each_other():
    low = pt.tensor("low", shape=(None, 1), dtype="int64")
    high = pt.tensor("high", shape=(1, None), dtype="int64")
    p = pt.tensor("p", shape=(None,), dtype="float64")
    rng = pytensor.shared(np.random.default_rng(0))
    outputs = [
        pt.random.integers(low, high, rng=rng),
        pt.random.integers(0, 300, size=(N,), rng=rng, dtype="int8"),  # numpy's astype: wraps
        pt.random.bernoulli(p, size=(4, p.shape[0]), rng=rng, dtype="bool"),
        pt.random.geometric(p, rng=rng, dtype="uint16"),
    ]
    values = [np.array([[0], [3], [-50]]), np.array([[5, 20]]), np.array([0.2, 0.7])]
    ours = pytensor.function([low, high, p], outputs, mode="STABLEHLO")(*values)
    theirs = pytensor.function([low, high, p], outputs, mode=PY_MODE)(*values)
    for a, b in zip(ours, theirs, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
    assert (ours[0] >= values[0]).all() and (ours[0] < values[1]).all()
    wrapped = ours[1].astype(np.int64)
    assert wrapped.min() == -128 and wrapped.max() == 127
    twice = ((wrapped >= 0) & (wrapped < 44)).mean()  # 0..43 and 256..299 both land there
    assert abs(twice - 88 / 300) < 6 * np.sqrt(88 / 300 * 212 / 300 / N)


def test_scalar_parameters_get_numpys_scalar_wording_and_float_counts_its_type_error():
    lam, n, p = pt.dscalar("lam"), pt.lscalar("n"), pt.dscalar("p")
    rng = pytensor.shared(np.random.default_rng(0))
    outputs = [pt.random.poisson(lam, rng=rng), pt.random.binomial(n, p, rng=rng)]
    ours = pytensor.function([lam, n, p], outputs, mode="STABLEHLO")
    python = pytensor.function([lam, n, p], outputs, mode=PY_MODE)
    for values in [(NAN, 5, 0.5), (2.0, 5, NAN), (2.0, -5, 0.5)]:
        with pytest.raises(ValueError) as theirs:
            python(*values)
        with pytest.raises(ValueError) as got:
            ours(*values)
        assert _message(got.value) == _message(theirs.value)
    x, k = ours(2.0, 5, 0.5)
    assert x.shape == k.shape == () and x.dtype == k.dtype == np.int64
    hypergeometric = pytensor.function([p], pt.random.hypergeometric(p, 5, 2, rng=rng), mode="STABLEHLO")
    with pytest.raises(TypeError, match=r"Cannot cast scalar from dtype\('float64'\) to dtype\('int64'\)"):
        hypergeometric(3.0)


# --- sizes known when lowering: rejection loops compact ---------------------------------------


def test_a_small_size_read_at_run_time_draws_as_the_same_size_known_statically(monkeypatch):
    """A posterior predictive's counts are sized by its data at run time. Below 16 *
    COMPACT_MIN elements no loop compacts, and the module specialized to such a size
    drops the compaction's branches (`regions.compacted_if_pending`): the draws are
    those of the same size known when lowering, to the bit, and 100 Poisson means (the
    inversion's loop and PTRS's) compile with XLA's elemental emitter, which a scatter
    left in the module would rule out."""
    emitters = record_emitter_choices(monkeypatch)
    lam = np.where(np.arange(100) % 2 == 0, 3.0, 20.0)
    draws = []
    for means in (pt.dvector("means"), pt.tensor("means", shape=(100,), dtype="float64")):
        rng = pytensor.shared(np.random.default_rng(0))
        draws.append(pytensor.function([means], pt.random.poisson(means, rng=rng), mode="STABLEHLO")(lam))
    np.testing.assert_array_equal(*draws)
    assert emitters == [True, True]
    assert 2 < draws[0][::2].mean() < 4 and 18 < draws[0][1::2].mean() < 22


@pytest.mark.parametrize(
    "make, dists",
    [
        # inversion, PTRS and both far apart, in one loop each
        (lambda r, size: pt.random.poisson([3.0, 20.0, 1e4], size=size, rng=r), [st.poisson(m) for m in (3.0, 20.0, 1e4)]),
        # inversion and BTRS, with p above 1/2 (drawn as n - Binomial(n, 1 - p))
        (lambda r, size: pt.random.binomial([100, 7], [0.3, 0.9], size=size, rng=r), [st.binom(100, 0.3), st.binom(7, 0.9)]),
        # HRUA, and the urn below 10 items drawn
        (lambda r, size: pt.random.hypergeometric([50, 5], [50, 8], [40, 6], size=size, rng=r),
         [st.hypergeom(100, 50, 40), st.hypergeom(13, 5, 6)]),
        (lambda r, size: pt.random.integers([0, -5], [3, 2**40], size=size, rng=r), [st.randint(0, 3), None]),
    ],
    ids=["poisson", "binomial", "hypergeometric", "integers"],
)
def test_rejection_samplers_at_a_static_size(make, dists):
    """The tests above read `size` at run time, where a rejection loop compacts its
    pending elements once; a size known when lowering compacts them while it can
    (`rejection`, from 16,384 elements on)."""
    x = draw(make, n=(N_DRAWS, len(dists)))
    for column, dist in zip(x.T, dists):
        if dist is None:  # a range of 2**40 + 5: its quartiles
            assert -5 <= column.min() and column.max() < 2**40
            assert np.allclose(np.quantile(column, [0.25, 0.5, 0.75]) / 2**40, [0.25, 0.5, 0.75], atol=0.01)
            continue
        assert_distribution(column, dist, discrete=True)
