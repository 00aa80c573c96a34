"""RandomVariable core: Threefry, generator state, shapes and `size`, uniform and normal."""

from __future__ import annotations

import contextlib

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.special as special
import scipy.stats as st
from jax.extend.mlir import ir
from jax.extend.mlir.dialects import func

from jax.extend.mlir.dialects import stablehlo as hlo

from dialect_rules import random as random_rules
from dialect_rules.random import threefry2x32
from dialect_rules.random_continuous import cauchy_of
from lowering._jax_internal import enable_x64, make_ir_context
from lowering.builders import compare, convert, full_like, ir_constant, polynomial_erf_inv, shape_of
from lowering.regions import while_loop
from lowering.compile import compile_module
from lowering.types import tensor_type
from tests.helpers import PY_MODE, assert_distribution, device_put, draw, run_toy


def _threefry(key, x0, x1, in_loop=False):
    """Our Threefry-2x32 lowering, compiled and run on numpy words; `in_loop`: built
    inside a loop body (one step), where its rounds are a loop of their own."""
    n = len(x0)
    with make_ir_context(), ir.Location.unknown():
        module = ir.Module.create()
        words = tensor_type((n,), "uint32")
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("main", ir.FunctionType.get([tensor_type((2,), "uint32"), words, words], [words, words]))
            fn.attributes["sym_visibility"] = ir.StringAttr.get("public")
            with ir.InsertionPoint(fn.add_entry_block()):
                if not in_loop:
                    func.return_(list(threefry2x32(*fn.arguments)))
                else:
                    once = while_loop(
                        [ir_constant(np.int64(0)), *fn.arguments],
                        lambda v: compare(v[0], ir_constant(np.int64(1)), "LT"),
                        lambda v: [hlo.add(v[0], ir_constant(np.int64(1))), v[1], *threefry2x32(*v[1:])],
                    )
                    func.return_(once[2:])
        exe = compile_module(module, "cpu")
    args = [device_put(np.asarray(a, dtype=np.uint32)) for a in (key, x0, x1)]
    return [np.asarray(r[0]) for r in exe.execute_sharded(args).disassemble_into_single_device_arrays()]


@pytest.mark.parametrize("in_loop", [False, True])
def test_threefry_matches_random123_known_answers(in_loop):
    # Random123's kat_vectors for threefry2x32 with 20 rounds: (counter, key) -> result.
    cases = [
        ((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
        ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
        ((0x243F6A88, 0x85A308D3), (0x13198A2E, 0x03707344), (0xC4923A9C, 0x483DF7A0)),
    ]
    for counter, key, expected in cases:
        y0, y1 = _threefry(key, [counter[0]], [counter[1]], in_loop)
        assert (int(y0[0]), int(y1[0])) == expected


# --- generator state -------------------------------------------------------------------


def _updating_function(rng, make_rv, inputs=()):
    nxt, x = make_rv(rng).owner.outputs
    return pytensor.function(list(inputs), x, updates={rng: nxt}, mode="STABLEHLO")


def test_consecutive_calls_draw_new_numbers_and_reseeding_reproduces_them():
    rng = pytensor.shared(np.random.default_rng(7))
    f = _updating_function(rng, lambda r: pt.random.normal(size=5, rng=r))
    first, second = f(), f()
    assert not np.array_equal(first, second)
    rng.set_value(np.random.default_rng(7))
    np.testing.assert_array_equal(f(), first)
    np.testing.assert_array_equal(f(), second)


def test_two_functions_sharing_a_generator_advance_it_in_turn():
    rng = pytensor.shared(np.random.default_rng(3))
    f = _updating_function(rng, lambda r: pt.random.normal(size=4, rng=r))
    g = _updating_function(rng, lambda r: pt.random.uniform(size=4, rng=r))
    f_first, g_second = f(), g()
    rng.set_value(np.random.default_rng(3))
    g_first = g()
    assert not np.array_equal(g_first, g_second)  # g drew from where f had left the state
    rng.set_value(np.random.default_rng(3))
    np.testing.assert_array_equal(f(), f_first)
    np.testing.assert_array_equal(g(), g_second)


def test_without_an_update_the_shared_generator_is_left_alone():
    gen = np.random.default_rng(11)
    state = gen.bit_generator.state
    rng = pytensor.shared(gen, borrow=True)
    f = pytensor.function([], pt.random.normal(size=3, rng=rng), mode="STABLEHLO")
    np.testing.assert_array_equal(f(), f())  # PyTensor's semantics: same state, same draws
    assert gen.bit_generator.state == state


def test_a_generator_passed_as_input_is_not_mutated_and_the_next_one_is_returned():
    r = pt.random.type.random_generator_type("r")
    nxt, x = pt.random.normal(0, 1, size=3, rng=r).owner.outputs
    f = pytensor.function([r], [nxt, x], mode="STABLEHLO")
    gen = np.random.default_rng(5)
    state = gen.bit_generator.state
    next_gen, a = f(gen)
    assert gen.bit_generator.state == state and next_gen is not gen
    _, b = f(next_gen)
    _, again = f(gen)
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(a, again)


def test_a_non_generator_input_is_refused_by_name():
    r = pt.random.type.random_generator_type("r")
    f = pytensor.function([r], pt.random.normal(size=2, rng=r), mode="STABLEHLO")
    with pytest.raises(TypeError):
        f(np.random.RandomState(0))
    from lowering import lower
    from pytensor.graph.fg import FunctionGraph

    compiled = lower(FunctionGraph([r], [pt.random.normal(size=2, rng=r)], clone=True)).compile()
    with pytest.raises(TypeError, match="input 0 .*numpy Generator, got int"):
        compiled(3)


def test_chained_draws_in_one_graph_are_independent():
    rng = pytensor.shared(np.random.default_rng(0))
    nxt, a = pt.random.normal(size=50_000, rng=rng).owner.outputs
    _, b = pt.random.normal(size=50_000, rng=nxt).owner.outputs
    x, y = pytensor.function([], [a, b], mode="STABLEHLO")()
    assert abs(np.corrcoef(x, y)[0, 1]) < 0.02


def test_draws_inside_scan_update_the_generator_every_step():
    rng = pytensor.shared(np.random.default_rng(1))

    def step(x, rng):
        nxt, y = pt.random.normal(x, 1.0, rng=rng).owner.outputs
        return y, {rng: nxt}

    ys, updates = pytensor.scan(
        step, outputs_info=[pt.constant(0.0, dtype="float64")], non_sequences=[rng], n_steps=2000,
        return_updates=True,
    )
    f = pytensor.function([], ys, updates=updates, mode="STABLEHLO")
    walk, again = f(), f()
    assert not np.array_equal(walk, again)
    assert_distribution(np.diff(walk), st.norm(), sigmas=5, min_p=1e-3)


# --- shapes, size and dtypes -------------------------------------------------------------


def _same_type(make_rv, inputs=(), values=()):
    """Our draws have the shape and dtype of the Python mode's."""
    rng = pytensor.shared(np.random.default_rng(0))
    out = make_rv(rng)
    got = pytensor.function(list(inputs), out, mode="STABLEHLO")(*values)
    expected = pytensor.function(list(inputs), out, mode=PY_MODE)(*values)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    return got


def test_size_may_be_symbolic():
    n = pt.iscalar("n")
    f = pytensor.function([n], pt.random.normal(size=(n, 2)), mode="STABLEHLO")
    assert f(3).shape == (3, 2) and f(5).shape == (5, 2)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_every_float_dtype(dtype):
    x = _same_type(lambda r: pt.random.normal(1.0, 2.0, size=(1000,), rng=r, dtype=dtype))
    assert abs(x.astype("float64").mean() - 1.0) < 0.3


def test_parameters_broadcast_to_size_and_to_each_other():
    mu = pt.dvector("mu")
    sigma = pt.dmatrix("sigma")
    x = _same_type(
        lambda r: pt.random.normal(mu, sigma, rng=r), [mu, sigma], [np.arange(3.0), np.full((4, 1), 1e-9)]
    )
    np.testing.assert_allclose(x, np.broadcast_to(np.arange(3.0), (4, 3)), atol=1e-7)
    _same_type(lambda r: pt.random.uniform(mu, 4.0, size=(2, 3), rng=r), [mu], [np.arange(3.0)])


def test_invalid_parameters_raise_numpy_error():
    sigma = pt.dscalar("sigma")
    f = pytensor.function([sigma], pt.random.normal(0.0, sigma, size=3), mode="STABLEHLO")
    with pytest.raises(ValueError, match="scale < 0"):
        f(-1.0)


# --- distributions --------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_normal(dtype):
    x = draw(lambda r, size: pt.random.normal(-1.5, 3.0, size=size, rng=r, dtype=dtype))
    assert x.dtype == dtype
    assert_distribution(x, st.norm(-1.5, 3.0))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_uniform(dtype):
    x = draw(lambda r, size: pt.random.uniform(-2.0, 5.0, size=size, rng=r, dtype=dtype))
    assert x.dtype == dtype and x.min() >= -2.0 and x.max() < 5.0
    assert_distribution(x, st.uniform(-2.0, 7.0))


def test_the_statistical_check_fails_on_a_wrong_parameterization():
    x = draw(lambda r, size: pt.random.normal(0.0, 1.0, size=size, rng=r))
    with pytest.raises(AssertionError):
        assert_distribution(x, st.norm(0.0, 1.03))
    with pytest.raises(AssertionError):
        assert_distribution(x, st.norm(0.02, 1.0))


@pytest.mark.parametrize("shape", [0.05, 0.7, 1.0, 3.5, 250.0])
def test_gamma(shape):
    x = draw(lambda r, size: pt.random.gamma(shape, scale=2.0, size=size, rng=r))
    assert_distribution(x, st.gamma(shape, scale=2.0))


def test_draws_past_chunks_from_come_from_their_own_parameters():
    """Past _CHUNKS_FROM a sampler that loops runs chunk by chunk (`_sampled_by_chunks`):
    300,000 gammas whose shape changes inside a chunk (5 of 60,000), each half its own
    gamma; 300,000 Poissons of mean 20 (PTRS); 270,001 Poissons of mean 3 (a search), the
    last chunk of 54,016 starting at n - 54,016 and sharing 63 elements with the one
    before. No gamma comes twice: each chunk draws under its own key."""
    n = 300_000
    assert n > random_rules._CHUNKS_FROM
    shape = pt.dvector("shape")
    x = draw(lambda r, size: pt.random.gamma(shape, scale=2.0, size=size, rng=r), n=n,
             inputs=[shape], values=[np.repeat([0.7, 3.5], n // 2)])
    assert len(np.unique(x)) == n
    assert_distribution(x[: n // 2], st.gamma(0.7, scale=2.0))
    assert_distribution(x[n // 2:], st.gamma(3.5, scale=2.0))
    x = draw(lambda r, size: pt.random.poisson(20.0, size=size, rng=r), n=n)
    assert_distribution(x, st.poisson(20.0), discrete=True)
    x = draw(lambda r, size: pt.random.poisson(3.0, size=size, rng=r), n=270_001)
    assert_distribution(x, st.poisson(3.0), discrete=True)


def test_draws_by_chunks_land_where_their_parameters_are():
    """Each element of a chunked sampler's draws comes from its own parameters, at its
    own place: binomials of (1,000, 271) draws (271,000 elements, 5 chunks of 54,208,
    the last sharing 40 elements with the one before) whose n varies along the columns
    and p along the rows; where p = 1 the draw is n itself, so a draw written to another
    place, or drawn from another element's parameters, differs. The other rows are
    binomials of their own n, and the last chunk's elements are drawn (not left 0)."""
    rows, columns = 1000, 271
    counts = pt.lvector("n")
    p = pt.dvector("p")
    n_values = np.arange(columns) % 40 + 1
    p_values = np.where(np.arange(rows) % 3 == 0, 1.0, 0.3)
    x = draw(lambda r, size: pt.random.binomial(counts[None, :], p[:, None], size=size, rng=r),
             n=(rows, columns), inputs=[counts, p], values=[n_values, p_values])
    assert x.shape == (rows, columns) and rows * columns > random_rules._CHUNKS_FROM
    certain = p_values == 1.0
    np.testing.assert_array_equal(x[certain], np.broadcast_to(n_values, (certain.sum(), columns)))
    others = x[~certain]
    assert (others >= 0).all() and (others <= n_values).all()
    for k in (1, 17, 40):
        assert_distribution(others[:, n_values == k].ravel(), st.binom(k, 0.3), discrete=True)
    assert (x[-40:][~certain[-40:]].sum(axis=1) > 0).all()


def test_gamma_edge_parameters():
    shape = pt.dvector("shape")
    f = pytensor.function([shape], pt.random.gamma(shape, scale=1.0), mode="STABLEHLO")
    x = f(np.array([0.0, np.inf, np.nan, 1e-300, 1e300]))
    assert x[0] == 0.0 and x[1] == np.inf and np.isnan(x[2]) and np.isfinite(x[3:]).all()
    with pytest.raises(ValueError, match="shape < 0"):
        f(np.array([-1.0]))


# --- rejection loops --------------------------------------------------------------------


@contextlib.contextmanager
def _cpu_loops(on: bool):
    """Lower as the samplers are for the CPU (by rows and chunks) where `on`."""
    token = random_rules._CPU_LOOPS.set(on)
    try:
        yield
    finally:
        random_rules._CPU_LOOPS.reset(token)


def _toy_rejection(n, dynamic=False, key=(7, 11), rows=False):
    """`rejection` over n elements of a toy proposal: element i has the parameters
    offset i and p_i in [0.05, 0.95]; a uniform u is accepted below p_i and gives
    i + u / p_i, so i + U(0, 1). Every third element is not pending and gives -1.
    `rows`: lowered as a sampler for the CPU is, its last level by rows. Returns
    (draws, the module's text)."""
    def build(index):
        with _cpu_loops(rows):
            return toy(index)

    def toy(index):
        offset = convert(index, "float64")
        p = hlo.add(full_like(offset, 0.05), hlo.multiply(convert(hlo.remainder(index, full_like(index, 7)), "float64"), full_like(offset, 0.15)))
        pending = compare(hlo.remainder(index, full_like(index, 3)), full_like(index, 0), "NE")

        def propose(params, u):
            offset, p = params
            return hlo.add(offset, hlo.divide(u, p)), compare(u, p, "LT")

        return [random_rules.rejection(
            ir_constant(np.array(key, dtype=np.uint32)), shape_of(offset), "float64",
            random_rules.uniform_draws("float64", 1), propose, [offset, p], pending, full_like(offset, -1.0),
        )]

    (x,), text = run_toy(n, dynamic, build)
    return x, text


@pytest.mark.parametrize("n, dynamic", [(1000, False), (40_000, False), (300_000, False), (1000, True), (40_000, True), (0, True)])
def test_rejection_gives_each_pending_element_a_draw_from_its_own_parameters(n, dynamic):
    """Of a static size below 16 * COMPACT_MIN every round runs over the whole tensor;
    40,000 compact once, 300,000 twice, after whole rounds (an element of p = 0.05 leaves
    more than 1/16 pending after the first). A size known only at run time compacts
    once, if it is 16 * COMPACT_MIN or more then; specialized to a smaller size, the
    module keeps no compaction. A draw scattered back to another element, or made with
    another element's parameters, falls outside [i, i + 1)."""
    x, text = _toy_rejection(n, dynamic)
    levels = text.count("\"stablehlo.scatter\"(") // 2  # a scatter builds the slots, one writes back
    assert levels == {0: 0, 1000: 0, 40_000: 1, 300_000: 2}[n]
    _assert_toy_draws(x, n)


def _assert_toy_draws(x, n):
    """`_toy_rejection`'s draws: -1 where not pending, else in [i, i + 1), uniform there
    for each acceptance rate (from 1,000 elements), and no uniform number twice (past
    50,000 elements, no more coincidences than the draws' rounding makes)."""
    assert x.shape == (n,)
    i = np.arange(n)
    skipped = i % 3 == 0
    assert (x[skipped] == -1.0).all()
    fraction = x[~skipped] - i[~skipped]
    assert ((fraction >= 0) & (fraction < 1)).all()
    p = 0.05 + (i[~skipped] % 7) * 0.15
    # x = i + u / p keeps u to about ulp(i): 2^-35 near i = 3e5, where two of 2e5 such
    # numbers coincide by chance about half the time. Numbers drawn twice would come a
    # row (16) or a chunk at a time.
    assert len(fraction) - len(np.unique(fraction * p)) <= (0 if n <= 50_000 else 3)
    for k in range(7 if n >= 1000 else 0):  # each acceptance rate on its own
        assert_distribution(fraction[(i[~skipped] % 7) == k], st.uniform())


@pytest.mark.parametrize("n, dynamic", [(17, False), (1000, False), (40_000, False), (1000, True), (40_000, True), (0, True)])
def test_rejection_by_rows_gives_each_pending_element_a_draw_from_its_own_parameters(n, dynamic):
    """The last level runs row by row: of a static size, 17 elements (a row and one, so
    padded), 1,000, and 40,000 after compacting once to 2,500; a run-time size below
    16 * COMPACT_MIN from the first round, 40,000 after its one level (the module holds
    both ways, and specialized to a size keeps one). Each row's rounds draw from their
    own counters: no uniform number comes twice."""
    x, text = _toy_rejection(n, dynamic, rows=True)
    levels = text.count("\"stablehlo.scatter\"(") // 2
    assert levels == {0: 0, 17: 0, 1000: 0, 40_000: 1}[n]
    assert "stablehlo.dynamic_update_slice" in text  # a row written back
    _assert_toy_draws(x, n)


@pytest.mark.parametrize("n, dynamic", [(270_001, False), (300_000, True)])
def test_rejection_by_chunks_gives_each_pending_element_a_draw_from_its_own_parameters(n, dynamic):
    """Past _CHUNKS_FROM elements of a static size, on the CPU, a loop over chunks, each
    compacting on its own under its own key: 270,001 in 5 chunks of 54,016 (a multiple
    of ROW_LANES, the last padded). A draw written to another chunk or slot, or two
    chunks drawing the same numbers, fail `_assert_toy_draws`. A run-time size does
    not chunk."""
    x, text = _toy_rejection(n, dynamic, rows=True)
    assert ("tensor<5x54016xf64>" in text) is not dynamic
    _assert_toy_draws(x, n)


def _toy_targets(i):
    """Steps element i takes in the toy search: every 29th element 0 to 96 steps, the
    others 0 to 2, so after the first iteration at most 1/16 of them are searching."""
    return np.where(i % 29 == 0, i % 97, i % 3)


@pytest.mark.parametrize("n, dynamic, chunks", [
    (1000, False, False), (40_000, False, False), (300_000, False, False), (1000, True, False),
    (40_000, True, False), (0, True, False), (300_000, False, True), (270_001, False, True),
])
def test_evolve_takes_each_element_to_its_own_stop(n, dynamic, chunks):
    """A toy search: element i counts x up to its target t_i, adding its own parameter
    i to y at each step, so it ends at (t_i, t_i * i). Static sizes compact as
    `rejection` does (none for 1,000, once for 40,000, twice for 300,000), run-time
    sizes once from 16 * COMPACT_MIN (specialized to 1,000, the module keeps no
    compaction); a state scattered back to another element, or stepped with another's
    parameters, ends elsewhere. Lowered for the CPU (`chunks`), past _CHUNKS_FROM the
    search runs chunk by chunk, each chunk compacting once (5 of 60,000, or of 54,016
    with the last one's padding never stepping)."""
    def build(index):
        with _cpu_loops(chunks):
            return search(index)

    def search(index):
        target = convert(hlo.select(
            compare(hlo.remainder(index, full_like(index, 29)), full_like(index, 0), "EQ"),
            hlo.remainder(index, full_like(index, 97)), hlo.remainder(index, full_like(index, 3))), "float64")
        offset = convert(index, "float64")

        def active(params, state):
            return compare(state[0], params[0], "LT")

        def step(params, state):
            x, y = state
            return [hlo.add(x, full_like(x, 1.0)), hlo.add(y, params[1])]

        zero = full_like(offset, 0.0)
        return random_rules.evolve([zero, zero], [target, offset], active, step)

    (x, y), text = run_toy(n, dynamic, build, outputs=2)
    levels = text.count("\"stablehlo.scatter\"(") // 3  # one builds the slots, two write back
    assert levels == (1 if chunks else {0: 0, 1000: 0, 40_000: 1, 300_000: 2}[n])
    if chunks:
        assert f"tensor<5x{ {300_000: 60_000, 270_001: 54_016}[n] }xf64>" in text
    i = np.arange(n)
    t = _toy_targets(i)
    np.testing.assert_array_equal(x, t)
    np.testing.assert_array_equal(y, t * i.astype(np.float64))



def test_cauchy_quantile_is_within_a_few_ulps():
    """`cauchy_of(u)` = cot(pi w / 2), w = 2u - 1, from the polynomial sine and cosine of
    pi w / 2: within a few ulps of numpy's cot where |w| < 1/2, and, nearer +-1, of
    tan(pi (1 - |w|) / 2) (1 - |w| exact there); u and 1 - u give exact negatives."""
    def build(index):
        key = ir_constant(np.array([3, 5], dtype=np.uint32))
        u = random_rules.uniform(key, shape_of(index), "float64", open_zero=True)
        return [u, cauchy_of(u), cauchy_of(hlo.subtract(full_like(u, 1.0), u))]

    (u, z, mirrored), _ = run_toy(200_000, False, build, outputs=3)
    w = 2 * u - 1
    near = np.abs(w) < 0.5
    reference = np.where(near, 1 / np.tan(np.pi * w / 2), np.sign(w) * np.tan(np.pi * (1 - np.abs(w)) / 2))
    np.testing.assert_allclose(z, reference, rtol=8 * np.finfo(np.float64).eps, atol=0)
    np.testing.assert_array_equal(mirrored, -z)


def test_polynomial_erf_inv_is_within_a_few_ulps_of_scipy():
    """`polynomial_erf_inv` (Giles's float64 polynomials, `normal_of`'s erfinv) on (-1, 1),
    its tails to within 2^-53 of +-1 included: within 4 ulps of scipy's."""
    rng = np.random.default_rng(0)
    tails = 1 - 10.0 ** rng.uniform(-16, 0, 50_000)
    x = np.clip(np.concatenate([rng.uniform(-1, 1, 100_000), tails, -tails, [0.0, 1e-300]]), -1 + 2**-53, 1 - 2**-53)
    with make_ir_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            t = tensor_type(x.shape, "float64")
            fn = func.FuncOp("main", ir.FunctionType.get([t], [t]))
            fn.attributes["sym_visibility"] = ir.StringAttr.get("public")
            with ir.InsertionPoint(fn.add_entry_block()):
                func.return_([polynomial_erf_inv(fn.arguments[0])])
        exe = compile_module(module, "cpu")
    with enable_x64():
        (y,) = [np.asarray(r[0]) for r in exe.execute_sharded([device_put(x)]).disassemble_into_single_device_arrays()]
    reference = special.erfinv(x)
    np.testing.assert_allclose(y, reference, rtol=4 * np.finfo(np.float64).eps, atol=0)


@pytest.mark.parametrize("n, dynamic", [(100_000, False), (100_001, False), (100_000, True), (100_001, True), (1, True)])
def test_box_muller_gives_each_pair_its_radius_and_angle(n, dynamic):
    """`box_muller` of n uniforms u: with h = n // 2, z_i and z_(h+i) are sqrt(-2 log
    u_i) times the cosine and sine of pi (2 u_(h+i) - 1); an odd n's last normal is
    `normal_of`'s (sqrt(2) erfinv(2u - 1)). The normals are standard, and a pair's two
    are uncorrelated."""
    def build(index):
        key = ir_constant(np.array([3, 5], dtype=np.uint32))
        u = random_rules.uniform(key, shape_of(index), "float64", open_zero=True)
        return [u, random_rules.box_muller(u)]

    (u, z), _ = run_toy(n, dynamic, build, outputs=2)
    h = n // 2
    first, second = z[:h], z[h: 2 * h]
    np.testing.assert_allclose(first**2 + second**2, -2 * np.log(u[:h]), rtol=1e-13)
    angle = np.pi * (2 * u[h: 2 * h] - 1)
    np.testing.assert_allclose(np.arctan2(second, first), angle, rtol=0, atol=1e-12)
    if n % 2:
        np.testing.assert_allclose(z[-1], np.sqrt(2) * special.erfinv(2 * u[-1] - 1), rtol=1e-14)
    if n > 1:
        assert_distribution(z, st.norm())
        assert abs(np.corrcoef(first, second)[0, 1]) < 5 / np.sqrt(h)


@pytest.mark.parametrize("n, dynamic", [(1000, False), (1001, True)])
def test_uniforms_are_consecutive_ranges_of_counters_in_and_out_of_loops(n, dynamic):
    """`uniforms(key, dims, k)` is the k slices of one cipher over (k, *dims), whether
    built as k ciphers (outside loops) or as those slices (in a loop's body, here
    `written_uniforms`'s), and an offset of the size skips the first tensor."""
    def build(index):
        key = ir_constant(np.array([3, 5], dtype=np.uint32))
        dims = shape_of(index)
        whole = random_rules.uniform(key, [3, *dims], "float64")
        sliced = [random_rules.reshape(random_rules.slice_axis(whole, 0, i, i + 1), dims) for i in range(3)]
        size = random_rules.convert(random_rules.dim_value(dims[0]), "uint64")
        return [
            *sliced,
            *random_rules.uniforms(key, dims, "float64", 3),
            *random_rules.written_uniforms(key, dims, "float64", 3),
            *random_rules.uniforms(key, dims, "float64", 2, offset=size),
        ]

    (*results,), _ = run_toy(n, dynamic, build, outputs=11)
    reference, ciphers, in_loop, skipped = results[:3], results[3:6], results[6:9], results[9:]
    assert len({r.tobytes() for r in reference}) == 3
    for got in (ciphers, in_loop, [reference[0], *skipped]):
        for a, b in zip(got, reference, strict=True):
            np.testing.assert_array_equal(a, b)


# --- PyMC -------------------------------------------------------------------------------


def _sd_variance(x):
    """The sampling variance of each column's standard deviation (delta method on the
    variance, whose own variance is (m4 - s^4) / n)."""
    centered = x - x.mean(0)
    s2 = (centered**2).mean(0)
    m4 = (centered**4).mean(0)
    return (m4 - s2**2) / len(x) / (4 * s2)


def test_pymc_prior_predictive_matches_numba_moments():
    import pymc as pm

    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfNormal("tau", 2.5)
        theta = pm.Normal("theta", mu, tau, shape=8)
        pm.Normal("y", theta, np.linspace(9.0, 18.0, 8), observed=np.arange(8.0))
    n = 4000
    samples = {}
    for mode in ("STABLEHLO", "NUMBA"):
        idata = pm.sample_prior_predictive(
            model=model, draws=n, random_seed=1, compile_kwargs={"mode": mode}
        )
        samples[mode] = {
            name: group[name].values.reshape(n, -1)
            for group in (idata.prior, idata.prior_predictive) for name in group.data_vars
        }
    for name, ours in samples["STABLEHLO"].items():
        theirs = samples["NUMBA"][name]
        assert ours.shape == theirs.shape
        se_mean = np.sqrt((ours.var(0) + theirs.var(0)) / n)
        assert (abs(ours.mean(0) - theirs.mean(0)) < 5 * se_mean).all(), name
        se_sd = np.sqrt(_sd_variance(ours) + _sd_variance(theirs))
        assert (abs(ours.std(0) - theirs.std(0)) < 5 * se_sd).all(), name
    draws = samples["STABLEHLO"]
    assert not np.array_equal(draws["mu"][: n // 2], draws["mu"][n // 2:])


def _same_outcome(inputs, out, *values):
    """The Python mode's draws' shape and dtype, or its error's type and words."""
    results = []
    for mode in (PY_MODE, "STABLEHLO"):
        try:
            results.append(pytensor.function(inputs, out, mode=mode)(*values))
        except Exception as error:  # noqa: BLE001  (the error is what is compared)
            results.append(error)
    theirs, ours = results
    if isinstance(theirs, Exception):
        assert type(ours) is type(theirs), ours
        assert str(ours).split(" (node: ")[0] == str(theirs).split("\n")[0]
        return ours
    assert not isinstance(ours, Exception), ours
    assert (ours.shape, ours.dtype) == (theirs.shape, theirs.dtype)
    return ours


@pytest.mark.parametrize("size", [(), (2,)], ids=["0-d bounds", "bounds with a dim"])
def test_uniform_range_checks_as_in_numpy(size):
    """numpy refuses a range that is not finite, in words that depend on whether the
    bounds it gets are 0-d (no `size`) or arrays (`size` expands them), then high < low
    (on the sign bit: -0.0 - 0.0 is refused)."""
    low, high = pt.dscalar("low"), pt.dscalar("high")
    x = pt.random.uniform(low, high, size=size or None)
    for bad in [(0.0, np.inf), (0.0, np.nan), (-1e308, 1e308), (np.inf, -np.inf), (1.0, -1.0), (0.0, -0.0)]:
        _same_outcome([low, high], x, *bad)
    assert (_same_outcome([low, high], x, -0.0, 0.0) == 0.0).all()


@pytest.mark.parametrize("make", [
    lambda s: pt.random.poisson(3.0, size=s),  # a rejection loop, whose body reads the dims
    lambda s: pt.random.poisson(30.0, size=(s[0], s[1])),
    lambda s: pt.random.binomial(50, 0.4, size=s),
    lambda s: pt.random.integers(0, 9, size=s),
    lambda s: pt.random.categorical(np.full(3, 1 / 3), size=s),
    lambda s: pt.random.multinomial(10, np.full(3, 1 / 3), size=s),
    lambda s: pt.random.uniform(np.zeros(3), 1.0, size=(s[0], 3)),
    lambda s: pt.random.normal(0.0, 1.0, size=s),  # CHLO (erf_inv) expanded before the dims are measured
    lambda s: pt.random.gamma(2.0, 1.0, size=s),
], ids=["poisson", "poisson ptrs", "binomial", "integers", "categorical", "multinomial", "uniform", "normal", "gamma"])
def test_size_from_a_vector_input(make):
    s = pt.tensor("s", dtype="int64", shape=(2,))
    x = make(s)
    for value in ([2, 3], [4, 0]):
        _same_outcome([s], x, np.array(value))


@pytest.mark.parametrize("make", [
    lambda: pt.random.normal(np.zeros(3), 1.0, size=(2, 4)),
    lambda: pt.random.poisson(np.ones(3), size=(2,)),
    lambda: pt.random.categorical(np.full((2, 3), 1 / 3), size=(4,)),
    lambda: pt.random.multivariate_normal(np.zeros((3, 2)), np.eye(2), size=(4,)),
], ids=["normal", "poisson", "categorical", "multivariate_normal"])
def test_constant_parameters_that_do_not_fit_size_raise_numpys_value_error(make):
    """Ours when the function is built, naming both shapes (and in a note, the node)."""
    x = make()
    with pytest.raises(ValueError, match="could not be broadcast|cannot be broadcast"):
        pytensor.function([], x, mode=PY_MODE)()
    with pytest.raises(ValueError, match="shape mismatch: objects cannot be broadcast to a single shape") as got:
        pytensor.function([], x, mode="STABLEHLO")
    assert type(got.value) is ValueError and "with shape (" in str(got.value)
    assert any("while lowering" in note for note in got.value.__notes__)


def test_parameters_of_size_1_at_run_time_broadcast_as_in_numpy():
    v, w = pt.dvectors("v", "w")
    m = pt.dmatrix("m")
    for a, b in [(np.zeros(3), np.full(1, 1e-9)), (np.zeros(1), np.full(3, 1e-9)), (np.zeros(0), np.ones(1))]:
        x = _same_outcome([v, w], pt.random.normal(v, w), a, b)
        np.testing.assert_allclose(x, np.broadcast_to(a, x.shape), atol=1e-7)
    x = _same_outcome([m, v], pt.random.normal(m, v), np.arange(2.0).reshape(2, 1), np.full(3, 1e-9))
    np.testing.assert_allclose(x, np.broadcast_to(np.arange(2.0).reshape(2, 1), (2, 3)), atol=1e-7)


def test_a_generator_output_from_either_of_two_inputs_is_seeded_from_the_key():
    from pytensor.ifelse import ifelse

    r1, r2 = (pt.random.type.random_generator_type(n) for n in ("r1", "r2"))
    cond = pt.bscalar("cond")
    n1, x1 = pt.random.normal(size=2, rng=r1).owner.outputs
    n2, x2 = pt.random.normal(size=2, rng=r2).owner.outputs
    f = pytensor.function([cond, r1, r2], [ifelse(cond, n1, n2), x1 + x2], mode="STABLEHLO")
    g1, g2 = np.random.default_rng(1), np.random.default_rng(2)
    chosen, x = f(1, g1, g2)
    again, _ = f(1, g1, g2)
    assert isinstance(chosen, np.random.Generator) and chosen.random() == again.random()
    assert not np.array_equal(f(1, chosen, g2)[1], x)


def test_a_constant_generator_output_is_a_copy_of_it():
    """`function([], default_rng(3))`: constant folding leaves DeepCopyOp(<Generator>) as
    the output, which reached MLIR as a Python object ("Operand 0 of operation
    func.return must be a Value"). It returns a copy in the constant's state, as the
    Python mode does, each call a new one; draws from the constant are unchanged."""
    from pytensor.tensor.random.op import default_rng
    from pytensor.tensor.random.type import random_generator_type

    rng = default_rng(3)
    f = pytensor.function([], [rng, pt.random.normal(size=3, rng=rng)], mode="STABLEHLO")
    assert isinstance(f.maker.fgraph.outputs[0].owner.inputs[0], pytensor.graph.basic.Constant)
    first, x = f()
    python, _ = pytensor.function([], [rng, pt.random.normal(size=3, rng=rng)], mode=PY_MODE)()
    for got in (first, python):
        assert random_generator_type.values_eq(got, np.random.default_rng(3))
    first.random()
    second, y = f()
    assert second is not first and random_generator_type.values_eq(second, np.random.default_rng(3))
    np.testing.assert_array_equal(x, y)
