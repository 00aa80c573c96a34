"""Scan: one stablehlo.while over PyTensor's buffers, against the Python mode.

`compare_with_py` runs each graph with PyTensor's rewrites (which push code out of the
loop, merge Scans, ...) and raw, against `Scan.perform`. Both shrink the buffers of
partly read outputs to rings: the linker requires ScanSaveMem.
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.mode import Mode
from pytensor.graph.fg import FunctionGraph
from pytensor.scan.utils import until

from lowering import LoweringOptions, lower
from lowering.linker import StableHLOLinker
from tests.helpers import PLATFORM, PY_MODE, RAW_MODE, assert_same, compare_each_with_py, compare_with_py


def scan(*args, **kwargs):
    return pytensor.scan(*args, return_updates=False, **kwargs)


def f64(value):
    return pt.constant(np.float64(value))


RNG = np.random.default_rng(7)


# --- the classic scans of the issue, and their gradients -----------------------------


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8", "complex128"])
def test_cumulative_sum(dtype):
    x = pt.vector("x", dtype=dtype)
    out = scan(lambda xi, acc: acc + xi, sequences=[x], outputs_info=[pt.zeros((), dtype)])
    values = (np.arange(1, 8) * (1 + 1j if dtype.startswith("complex") else 1)).astype(dtype)
    compare_with_py([x], [out, out[-1], out[::2]], [values])


def test_cumulative_sum_gradient_to_second_order():
    x = pt.dvector("x")
    out = scan(lambda xi, acc: acc * pt.sin(xi) + xi**2, sequences=[x], outputs_info=[f64(1.0)])
    cost = (out**2).sum()
    g = pytensor.grad(cost, x)
    hv = pytensor.grad((g * pt.arange(5.0)).sum(), x)  # Hessian-vector product
    compare_with_py([x], [g, hv], [RNG.normal(size=5)], rtol=1e-9)


def test_fibonacci_mit_sot_with_runtime_n_steps():
    init, n = pt.lvector("init"), pt.lscalar("n")
    fib = scan(lambda a, b: a + b, outputs_info=[dict(initial=init, taps=[-2, -1])], n_steps=n)
    compare_each_with_py([init, n], [fib, fib.sum()], [[np.array([1, 1]), np.array(steps)] for steps in (10, 1, 0)])
    compare_with_py([init, n], [fib[-1]], [np.array([0, 1]), np.array(40)])


def test_mit_sot_taps_that_skip_and_its_gradient():
    init, w = pt.dvector("init"), pt.dscalar("w")
    out = scan(lambda a, c: w * a - 0.5 * c, outputs_info=[dict(initial=init, taps=[-3, -1])], n_steps=6)
    compare_with_py([init, w], [out, pytensor.grad(out.sum(), [init, w])[0]], [np.array([1.0, 2.0, 3.0]), np.array(0.9)])


def _kalman_filter():
    """Local-level model: the filtered means and the log-likelihood."""
    y, q, r = pt.dvector("y"), pt.dscalar("q"), pt.dscalar("r")

    def step(y_t, m, p, ll):
        p_pred = p + q
        s = p_pred + r
        k = p_pred / s
        m_new = m + k * (y_t - m)
        ll_new = ll - 0.5 * (pt.log(2 * np.pi * s) + (y_t - m) ** 2 / s)
        return m_new, (1 - k) * p_pred, ll_new

    (m, p, ll) = scan(step, sequences=[y], outputs_info=[f64(0.0), f64(1.0), f64(0.0)])
    return [y, q, r], m, ll[-1]


def test_state_space_filter_and_its_gradient():
    inputs, m, ll = _kalman_filter()
    values = [np.cumsum(RNG.normal(size=30)), np.array(0.3), np.array(0.8)]
    compare_with_py(inputs, [m, ll, *pytensor.grad(ll, inputs[1:])], values, rtol=1e-9)


def _rk4(y0, theta, dt, n):
    def f(y):
        return pt.stack([y[1], -theta * pt.sin(y[0])])

    def step(y):
        k1 = f(y)
        k2 = f(y + dt / 2 * k1)
        k3 = f(y + dt / 2 * k2)
        k4 = f(y + dt * k3)
        return y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)

    return scan(step, outputs_info=[y0], n_steps=n)


def test_rk4_pendulum_and_its_gradient():
    y0, theta = pt.dvector("y0"), pt.dscalar("theta")
    ys = _rk4(y0, theta, 0.05, 200)
    cost = ys[:, 0].sum()
    compare_with_py([y0, theta], [ys, *pytensor.grad(cost, [y0, theta])], [np.array([1.0, 0.0]), np.array(2.0)], rtol=1e-9)


def _power_iteration():
    a, v0, tol = pt.dmatrix("a"), pt.dvector("v0"), pt.dscalar("tol")

    def step(v):
        w = pt.dot(a, v)
        w = w / pt.sqrt((w**2).sum())
        return w, until(pt.abs(w - v).max() < tol)

    return [a, v0, tol], scan(step, outputs_info=[v0], n_steps=500)


@pytest.mark.parametrize("tol", [1e-12, 1e-3, 10.0])
def test_power_iteration_until_trims_outputs_to_the_steps_taken(tol):
    inputs, vs = _power_iteration()
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    values = [a, np.array([1.0, 0.0]), np.array(tol)]
    compare_with_py(inputs, [vs, vs[-1], vs.shape[0]], values)
    f = pytensor.function(inputs, vs, mode="STABLEHLO")
    steps = len(f(*values))
    assert (steps == 1) if tol == 10.0 else (1 < steps < 500)


@pytest.mark.parametrize("tol", [1e-3, 10.0])
def test_power_iteration_gradient(tol):
    inputs, vs = _power_iteration()
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    grads = pytensor.grad((vs[-1] * np.array([1.0, 2.0])).sum() + vs.sum(), inputs[:2])
    compare_with_py(inputs, grads, [a, np.array([1.0, 0.0]), np.array(tol)])


def test_while_scan_nit_sot_and_mit_sot_trimmed():
    x0, limit = pt.dscalar("x0"), pt.dscalar("limit")

    def step(a, b):
        c = a + b
        return [c, c * 2], until(c > limit)

    outs = scan(step, outputs_info=[dict(initial=pt.stack([x0, x0]), taps=[-2, -1]), None], n_steps=50)
    compare_each_with_py([x0, limit], outs, [[np.array(1.0), np.array(lim)] for lim in (100.0, 1e30, -1.0)])


def test_while_scan_repeated_calls_measure_each_length():
    inputs, vs = _power_iteration()
    f = pytensor.function(inputs, vs, mode="STABLEHLO")
    ref = pytensor.function(inputs, vs, mode=RAW_MODE)
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    for tol in (1e-2, 1e-6, 1e-2, 1e-9):
        values = [a, np.array([1.0, 0.0]), np.array(tol)]
        np.testing.assert_allclose(f(*values), ref(*values))


@pytest.mark.parametrize("mode", ["STABLEHLO", "fast_run on the linker"])
def test_while_scan_read_only_at_its_last_step_compiles_once(mode):
    """The linker's required scan_save_mem_no_prealloc leaves a while-Scan read only at
    [-1] (as in pm.Truncated's rejection loop) a ring of static length, whatever Mode
    holds the linker: calls that take different numbers of steps share one executable,
    where a trace of the steps taken needed a measurement and a compile for each new
    length."""
    if mode == "fast_run on the linker":
        mode = Mode(linker=StableHLOLinker(platform=PLATFORM), optimizer="fast_run")
    inputs, vs = _power_iteration()
    f = pytensor.function(inputs, vs[-1], mode=mode)
    ref = pytensor.function(inputs, vs[-1], mode=PY_MODE)
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    for tol in (1e-2, 1e-6, 10.0, 1e-9):
        values = [a, np.array([1.0, 0.0]), np.array(tol)]
        assert_same(f(*values), ref(*values), rtol=1e-12)
    compiled = f.vm.jit_fn.compiled
    assert len(compiled._by_shapes) == 1 and not compiled._by_values


def test_while_scan_trace_is_measured_with_one_probe_whatever_the_tolerance():
    """A while-Scan's full trace is as long as the steps taken, measured at run time by a
    probe. A scalar input (the tolerance) leaves that length to measure whatever its
    value, so the probe serves every value: keyed on the values, each new tolerance
    compiled a probe and an executable of its own."""
    inputs, vs = _power_iteration()
    f = pytensor.function(inputs, [vs, vs.shape[0]], mode="STABLEHLO")
    ref = pytensor.function(inputs, [vs, vs.shape[0]], mode=PY_MODE)
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    steps = set()
    for tol in (1e-2, 1e-6, 10.0, 1e-3, 1e-2, 1e-9):
        values = [a, np.array([1.0, 0.0]), np.array(tol)]
        got, want = f(*values), ref(*values)
        for g, w in zip(got, want):
            assert_same(g, w, rtol=1e-12)
        steps.add(int(want[1]))
    compiled = f.vm.jit_fn.compiled
    (measured,) = compiled._by_shapes.values()
    assert not compiled._by_values and len(measured.executables) == len(steps) > 3


@pytest.mark.parametrize("read", ["last", "last three", "fourth", "first four"])
def test_results_read_at_a_few_steps_keep_only_those(read):
    """`pytensor.scan` returns its buffer less the initial state (`out[1:]`); a read of
    a few of those steps (`hs[-1]`) is merged into one Subtensor of the buffer, which
    ScanSaveMem reads (rewrites.merge_subtensors_of_scan_outputs; the linker leaves out
    PyTensor's general merge). 500 steps of a 3-vector then keep a few states, never the
    501 x 3 trace."""
    h0, xs = pt.dvector("h0"), pt.dvector("xs")
    hs = scan(lambda x, h: pt.tanh(h[::-1] + x), sequences=[xs], outputs_info=[h0])
    out = {"last": hs[-1], "last three": hs[-3:], "fourth": hs[3], "first four": hs[:4]}[read]
    compare_each_with_py([h0, xs], [out], [[np.array([0.1, -0.2, 0.3]), RNG.normal(size=steps)] for steps in (500, 4)])
    fn = pytensor.function([h0, xs], out, mode="STABLEHLO")
    fn(np.zeros(3), np.zeros(500))
    (executable,) = fn.vm.jit_fn.compiled._by_shapes.values()
    assert "f64[501,3]" not in executable.xla.hlo_modules()[0].to_string()


def test_an_index_past_the_steps_taken_raises():
    """`hs[-1]` of a Scan that ran no step raises IndexError, as in the Python mode:
    ScanSaveMem's ring alone answered with the initial state (as in PyTensor's
    FAST_RUN), so the merged read checks its index against the steps taken."""
    h0, n = pt.dvector("h0"), pt.lscalar("n")
    hs = scan(lambda h: pt.tanh(h[::-1] + 0.5), outputs_info=[h0], n_steps=n)
    start = np.array([0.1, -0.2, 0.3])
    for out, too_few in [(hs[-1], 0), (hs[-2], 1), (hs[3], 3), (hs[-2, 1], 1)]:
        compare_with_py([h0, n], [out], [start, np.array(5)])
        for mode in (PY_MODE, "STABLEHLO"):
            with pytest.raises(IndexError):
                pytensor.function([h0, n], out, mode=mode)(start, too_few)


# --- every kind of input and output ---------------------------------------------------


def test_nit_sot_with_sequences_and_non_sequences_of_runtime_shape():
    a, b = pt.dmatrix("a"), pt.dvector("b")
    rows = scan(lambda row, w: pt.outer(row, w).sum(0) + row[:2].sum(), sequences=[a], non_sequences=[b])
    compare_with_py([a, b], [rows], [RNG.normal(size=(4, 3)), RNG.normal(size=3)])
    compare_with_py([a, b], [rows], [np.zeros((0, 3)), RNG.normal(size=3)])


def test_a_sequence_of_run_time_length_is_read_where_it_is():
    """The loop's reads need a sequence at least one row long, which one of run-time
    length may not be: it gets a zero row appended and max(n, 1) rows kept. For a call
    with n > 0 that folds away, and the executable reads the argument in place instead
    of a padded copy made on every call (a 37 x 3 sequence, never a 38 x 3 one)."""
    a, h0 = pt.dmatrix("a"), pt.dscalar("h0")
    hs = scan(lambda row, h: pt.tanh(h + row.sum()), sequences=[a], outputs_info=[h0])
    long = [RNG.normal(size=(37, 3)), np.array(0.5)]
    value_sets = [long, [RNG.normal(size=(1, 3)), np.array(-0.5)], [np.zeros((0, 3)), np.array(0.5)]]
    compare_each_with_py([a, h0], [hs, hs[-1]], value_sets[:2])
    compare_with_py([a, h0], [hs], value_sets[2])
    fn = pytensor.function([a, h0], hs, mode="STABLEHLO")
    fn(*long)
    (executable,) = fn.vm.jit_fn.compiled._by_shapes.values()
    assert "f64[38,3]" not in executable.xla.hlo_modules()[0].to_string()


def test_several_sequences_with_taps_and_several_outputs():
    x, y = pt.dvector("x"), pt.dvector("y")

    def step(x_prev, x_next, y_t, acc):
        return acc + x_prev * y_t, x_next - x_prev

    acc, diff = scan(
        step, sequences=[dict(input=x, taps=[-1, 1]), y], outputs_info=[f64(0.0), None],
    )
    compare_with_py([x, y], [acc, diff], [RNG.normal(size=8), RNG.normal(size=6)])


def test_go_backwards_and_its_gradient():
    x = pt.dvector("x")
    out = scan(lambda xi, acc: acc * 0.5 + xi, sequences=[x], outputs_info=[f64(0.0)], go_backwards=True)
    compare_with_py([x], [out, pytensor.grad(out.sum(), x)], [RNG.normal(size=6)])


def test_truncate_gradient():
    x, h0 = pt.dvector("x"), pt.dscalar("h0")
    hs = scan(lambda xi, h: pt.tanh(h + xi), sequences=[x], outputs_info=[h0], truncate_gradient=3)
    compare_with_py([x, h0], pytensor.grad(hs.sum(), [x, h0]), [RNG.normal(size=7), np.array(0.2)])


def test_shared_variable_updated_inside_the_scan_is_an_untraced_sit_sot():
    counter = pytensor.shared(np.float64(0.0), name="counter")
    x = pt.dvector("x")

    def step(xi):
        return xi * counter, {counter: counter + 1}

    out, updates = pytensor.scan(step, sequences=[x], return_updates=True)
    f = pytensor.function([x], out, updates=updates, mode="STABLEHLO")
    np.testing.assert_allclose(f(np.ones(3)), [0.0, 1.0, 2.0])
    np.testing.assert_allclose(f(np.ones(3)), [3.0, 4.0, 5.0])
    assert counter.get_value() == 6.0


def test_scan_inside_scan_and_its_gradient():
    a = pt.dmatrix("a")

    def outer_step(row, acc):
        inner = scan(lambda v, s: s * 0.9 + v, sequences=[row], outputs_info=[f64(0.0)])
        return acc + inner[-1]

    out = scan(outer_step, sequences=[a], outputs_info=[f64(0.0)])
    compare_with_py([a], [out, pytensor.grad(out[-1], a)], [RNG.normal(size=(3, 4))])


def test_gradient_of_a_nested_scan_over_a_constant_sequence():
    """The gradient's inner step slices the reversed constant sequence: the pipeline
    folded that slice in the inlined (dead) copy of the step function, unrefined, into
    an invalid `tensor<?xf32>` constant, and the build failed."""
    a, s0 = pt.dscalar("a"), pt.dscalar("s0")

    def outer_step(s):
        return scan(lambda t, u: u * a + t, sequences=[pt.arange(3.0)], outputs_info=[s])[-1]

    out = scan(outer_step, outputs_info=[s0], n_steps=2)
    compare_with_py([s0, a], [out, pytensor.grad(out[-1], a)], [np.array(0.3), np.array(0.7)])


def test_inner_graph_with_indexing_reductions_and_ifelse():
    from pytensor.ifelse import ifelse

    x, idx = pt.dmatrix("x"), pt.lvector("idx")

    def step(i, acc):
        row = x[i]
        return ifelse(row.sum() > 0, acc + row.max(), acc - pt.sort(row)[0])

    out = scan(step, sequences=[idx], outputs_info=[f64(0.0)])
    compare_with_py([x, idx], [out], [RNG.normal(size=(4, 3)), np.array([0, 3, 1, 1, -1])])


def test_mit_sot_hessian():
    init, w = pt.dvector("init"), pt.dvector("w")

    def step(a, b, w0, w1):
        return w0 * pt.sin(a) + w1 * b

    out = scan(step, outputs_info=[dict(initial=init, taps=[-2, -1])], non_sequences=[w[0], w[1]], n_steps=5)
    cost = (out**2).sum()
    hessian = pytensor.gradient.hessian(cost, w)
    compare_with_py([init, w], [hessian], [np.array([0.3, -0.2]), np.array([0.8, 0.5])], rtol=1e-9)


def test_inner_graph_with_blas_cumsum_advanced_indexing_softmax_and_join():
    a, idx, v0 = pt.dmatrix("a"), pt.lvector("idx"), pt.dvector("v0")

    def step(i, v):
        w = pt.dot(a, v)
        w = pt.special.softmax(pt.cumsum(w)[idx], axis=0)
        return pt.concatenate([w, v[: a.shape[0] - idx.shape[0]]]) + pt.argmax(v)

    vs = scan(step, sequences=[pt.arange(4)], outputs_info=[v0])
    grad = pytensor.grad(vs[-1].sum(), a)
    compare_with_py([a, idx, v0], [vs, grad], [RNG.normal(size=(3, 3)), np.array([2, 0]), RNG.normal(size=3)])


def test_shared_non_sequence_and_op_from_graph_inside_the_step():
    from pytensor.compile.builders import OpFromGraph

    scale = pytensor.shared(np.array([1.0, -2.0, 0.5]), name="scale")
    u = pt.dvector("u")
    squash = OpFromGraph([u], [pt.tanh(u) * 2])
    x0 = pt.dvector("x0")
    xs = scan(lambda x: squash(x * scale), outputs_info=[x0], n_steps=4)
    compare_with_py([x0], [xs, pytensor.grad(xs.sum(), x0)], [np.array([0.1, 0.2, 0.3])])


def test_garch_model_logp_and_gradient_in_pymc():
    """A PyMC model whose likelihood is a Scan (GARCH(1,1) volatilities)."""
    from lowering.examples import _garch

    graph = _garch(n=60)
    compare_with_py(graph.inputs, graph.outputs, graph.values, rtol=1e-10)


# --- errors are the Python mode's, raised at call time -----------------------------------


def test_index_out_of_range_inside_the_loop_raises():
    x, idx = pt.dvector("x"), pt.lvector("idx")
    out = scan(lambda i, acc: acc + x[i], sequences=[idx], outputs_info=[f64(0.0)])
    f = pytensor.function([x, idx], out, mode="STABLEHLO")
    np.testing.assert_allclose(f(np.arange(3.0), np.array([0, 2])), [0.0, 2.0])
    with pytest.raises(IndexError):
        f(np.arange(3.0), np.array([0, 3]))


def test_negative_n_steps_and_short_sequences_raise():
    x, n = pt.dvector("x"), pt.lscalar("n")
    out = scan(lambda xi, acc: acc + xi, sequences=[x], outputs_info=[f64(0.0)], n_steps=n)
    fg = FunctionGraph([x, n], [out], clone=True)
    compiled = lower(fg).compile()
    np.testing.assert_allclose(compiled(np.arange(4.0), np.array(2))[0], [0.0, 1.0])
    with pytest.raises(IndexError, match="negative number of steps"):
        compiled(np.arange(4.0), np.array(-1))
    with pytest.raises(ValueError, match="shorter than the Scan's required number of steps"):
        compiled(np.arange(4.0), np.array(5))


# --- ScalarLoop: the loops inside PyTensor's special-function gradients -----------------


def _scalar_loop(is_while: bool):
    import pytensor.scalar as ps
    from pytensor.scalar.loop import ScalarLoop

    x0, c = ps.float64("x0"), ps.float64("c")
    x = x0 * 0.5 + c
    until = ps.abs(x - x0) < 1e-6 if is_while else None
    return pt.elemwise.Elemwise(ScalarLoop(init=[x0], update=[x], constant=[c], until=until))


def test_scalar_loop_with_per_element_step_counts():
    n, x0, c = pt.lvector("n"), pt.dvector("x0"), pt.dscalar("c")
    out = _scalar_loop(False)(n, x0, c)
    compare_with_py([n, x0, c], [out], [np.array([0, 1, 5, 40]), np.array([1.0, 2.0, -3.0, 8.0]), np.array(0.25)])


def test_scalar_loop_until_stops_each_element_on_its_own():
    n, x0, c = pt.lvector("n"), pt.dvector("x0"), pt.dvector("c")
    x, done = _scalar_loop(True)(n, x0, c)
    values = [np.array([100, 3, 0, 100]), np.array([1.0, 2.0, -3.0, 1e3]), np.array([0.0, 1.0, 2.0, -1.0])]
    compare_with_py([n, x0, c], [x, done], values)


def test_scalar_loop_negative_steps_raise_as_perform_does():
    n, x0, c = pt.lvector("n"), pt.dvector("x0"), pt.dscalar("c")
    f = pytensor.function([n, x0, c], _scalar_loop(False)(n, x0, c), mode="STABLEHLO")
    with pytest.raises(ValueError, match="termination condition"):
        f(np.array([2, -1]), np.ones(2), np.array(0.0))


def _long_tail_values(size: int, rng) -> list[np.ndarray]:
    """(n, x0, c) of `size` elements for `_scalar_loop`: most take 3 steps, every 7th
    none; every 200th takes 900 and every 1,000th 1,000 from x0 = 1e300 halving (c = 0),
    their values telling their step counts; every 400th may take 5,000 (its `until` stops
    it within ~30). At 16,384 elements 57 are going after 900 steps: a second level."""
    n = np.full(size, 3)
    n[::7] = 0
    x0, c = rng.normal(size=size), rng.normal(size=size)
    n[5::200], x0[5::200], c[5::200] = 900, 1e300, 0.0
    n[7::1000], x0[7::1000], c[7::1000] = 1000, 1e300, 0.0
    n[9::400] = 5000
    return [n, x0, c]


@pytest.mark.parametrize("is_while", [False, True])
def test_a_scalar_loop_of_many_elements_steps_each_as_perform_does(is_while):
    """From 1,024 elements a ScalarLoop compacts its going elements
    (`regions.converge_compacting`); each element's state, its `until` flag and its
    constants must follow it into the compacted slots and back, and its step count go on.
    Sizes known only when called: 16,384 (compacted to 1,024 slots, then 64), 1,500 (to
    93) and 700 (the whole loop)."""
    n, x0, c = pt.lvector("n"), pt.dvector("x0"), pt.dvector("c")
    outputs = _scalar_loop(is_while)(n, x0, c)
    rng = np.random.default_rng(7)
    compare_each_with_py([n, x0, c], outputs, [_long_tail_values(size, rng) for size in (16_384, 1500, 700)])


def test_a_scalar_loop_compacts_only_from_1024_elements():
    """The compacted copies of the loop are module code XLA compiles; a loop too small to
    compact keeps one `stablehlo.while`, whose step has no going mask to carry. Lowered
    for the CPU, a compacting loop steps by rows of 128 first (a loop over the rows, each
    row's own loop); for a GPU, where each step of a row's loop would be a kernel launch,
    it does not."""
    def whiles(size, platform="cpu"):
        n, x0, c = (pt.tensor(name, dtype=dtype, shape=(size,)) for name, dtype in zip("nxc", "idd"))
        out = _scalar_loop(True)(pt.cast(n, "int64"), x0, c)
        options = LoweringOptions(platform=platform)
        text = lower(FunctionGraph([n, x0, c], out, clone=True), options=options).as_text()
        loops = [line for line in text.splitlines() if "stablehlo.while" in line and "f64>" in line]
        return [line.split(":")[-1].strip() for line in loops]  # the types each carries

    def carried(dims):
        return f"tensor<i64>, tensor<{dims}xi1>, tensor<{dims}xf64>, tensor<{dims}xi1>"

    assert whiles(1000) == ["tensor<i64>, tensor<1000xf64>, tensor<1000xi1>"]
    # all 4,096 elements, then 256 (16 slots would be below the next level's minimum)
    levels = [carried(m) for m in (4096, 256)]
    assert whiles(4096) == [carried("32x128"), carried("128"), *levels]
    assert whiles(4096, "cuda") == levels


def test_a_while_scan_length_inside_another_scan_is_a_clear_error():
    """The trimmed length of a while-Scan nested in another loop is known only inside
    that loop: no probe of @main can measure it, and XLA has no dynamic shapes."""
    x0 = pt.dvector("x0")

    def outer(v):
        inner = scan(lambda u: (u * 0.5, until(u.sum() < 0.1)), outputs_info=[v], n_steps=20)
        return inner[-1] + 1

    out = scan(outer, outputs_info=[x0], n_steps=3)
    f = pytensor.function([x0], out, mode="STABLEHLO")
    with pytest.raises(ValueError, match="nor measured at run time"):
        f(np.ones(2))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "int8"])
@pytest.mark.parametrize("inc", [False, True], ids=["set", "inc"])
def test_masked_copy_in_a_step(dtype, inc):
    """`x[m] = s[m]` (PyMC's rejection loops): s[m] has a size no loop body can know;
    written as a select it needs none. Also at the top level, and with the mask's shape
    only known at run time."""
    x0 = pt.vector("x0", dtype=dtype)
    write = pt.inc_subtensor if inc else pt.set_subtensor

    def step(x):
        bad = x > 1
        return write(x[bad], (x // 2)[bad])

    out = pytensor.scan(step, outputs_info=[x0], n_steps=3, return_updates=False)
    values = np.array([0, 3, 9, 1, 40], dtype=dtype)
    compare_with_py([x0], [out, step(x0)], [values])


@pytest.mark.parametrize("reduce", [pt.sum, pt.prod, pt.max], ids=["sum", "prod", "max"])
def test_reduction_of_a_masked_selection_in_a_step(reduce):
    """reduce(x[m]) over all of it, as reduce(where(m, x, identity)): x[m] alone has a
    size no loop body can know. max of an empty selection raises numpy's error. (A
    reduction of an expression of x[m], as min's max(-x[m]), still needs the size.)"""
    x0 = pt.dvector("x0")
    out = pytensor.scan(lambda x: x / 2 + reduce(x[x > 1.0]), outputs_info=[x0], n_steps=2, return_updates=False)
    compare_with_py([x0], [out, reduce(x0[x0 > 1.0])], [np.array([0.5, 3.0, 9.0])])
    if reduce is pt.max:
        fn = pytensor.function([x0], reduce(x0[x0 > 1.0]), mode="STABLEHLO")
        with pytest.raises(ValueError, match="zero-size array to reduction operation"):
            fn(np.array([0.5, 0.25]))
