"""Indexing (Subtensor, IncSubtensor and the advanced forms) vs PyTensor's Python mode."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.builders import OpFromGraph
from pytensor.graph.fg import FunctionGraph

from lowering import lower
from tests.helpers import PY_MODE, RAW_MODE, compare_each_with_py, compare_with_py
from tests.values import ALL_DTYPES, finite_values


def _matrix(dtype, rows=4, cols=5, seed=0):
    return finite_values(dtype, rows * cols, seed).reshape(rows, cols)


# --- basic reads ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_static_indices_and_slices(dtype):
    x = pt.matrix("x", dtype=dtype)
    outs = [x[1], x[-1, 2], x[::-1, 2:], x[1:3, ::-2], x[10:], x[:, -100:3], x[::3, ::-1],
            x[2:1], x[-2::-3, 4:-100:-2], x[:, 7:-9:-1], x[100::-2, 1]]
    compare_with_py([x], outs, [_matrix(dtype)])


@pytest.mark.parametrize("dtype", ["float32", "bool", "complex128"])
def test_static_shapes_and_zero_d(dtype):
    x = pt.tensor3("x", dtype=dtype, shape=(3, 4, 5))
    outs = [x[1, 2, 3], x[-1, ::-2, 1], x[:, 2:-1:-1], x[::2, -3:, ::-3], x[5:, 1]]
    compare_with_py([x], outs, [finite_values(dtype, 60).reshape(3, 4, 5)])


@pytest.mark.parametrize("k", [-7, -2, 0, 1, 3, 9])
def test_runtime_slice_bounds(k):
    x = pt.matrix("x")
    n = pt.lscalar("n")
    outs = [x[:n], x[n:], x[::2, n:], x[-n:, 1], x[n::-1], x[:n:-2, ::-1]]
    if k != 0:
        outs += [x[::n], x[n::n], x[1:n:-n]]
    compare_with_py([x, n], outs, [np.arange(20.0).reshape(4, 5), np.array(k)])


def test_runtime_bounds_on_static_shapes_and_negative_steps():
    x = pt.matrix("x", shape=(4, 5))
    n, m = pt.lscalar("n"), pt.lscalar("m")
    value = np.arange(20.0).reshape(4, 5)
    compare_each_with_py([x, n, m], [x[n:m], x[n::m], x[:, m:n:-1], x[n:m:3]],
                         [[value, np.array(a), np.array(b)] for a, b in [(1, -1), (-2, 2), (0, 1), (3, -3), (7, -9)]])


@pytest.mark.parametrize("k", [-7, -2, 0, 1, 3, 9])
def test_slices_of_slices(k):
    """The linker leaves out PyTensor's merge of a Subtensor of a Subtensor into one
    (`linker.EXCLUDED_REWRITES`): each is lowered in turn, whatever the signs of the
    run-time bounds and steps, and an index past the first slice's rows raises."""
    x = pt.matrix("x")
    n = pt.lscalar("n")
    outs = [x[1:][:n], x[n:][::-1], x[::-1][n:], x[:, 1:][:, n:], x[::2][n::-1], x[2:-1][n:n + 2],
            x[-3:][:n, ::-1][::-1], x[1:, 2:][n % 3]]
    compare_with_py([x, n], outs, [np.arange(30.0).reshape(6, 5), np.array(k)])
    read = pytensor.function([x, n], x[2:][n], mode="STABLEHLO")
    with pytest.raises(IndexError):
        read(np.arange(30.0).reshape(6, 5), 4)  # a row of x, not of x[2:]


def test_one_compiled_function_serves_every_runtime_bound():
    x = pt.matrix("x")
    n = pt.lscalar("n")
    a, b, c = pt.lscalars("a", "b", "c")
    f = pytensor.function([x, n, a, b, c], [x[:n], x[a:b:c, n]], mode="STABLEHLO")
    value = np.arange(30.0).reshape(6, 5)
    for k, (i, j, s) in zip([0, 2, 4, -1, 3], [(0, 6, 1), (5, 0, -2), (-1, -7, -1), (1, 5, 2), (2, 2, 1)]):
        first, second = f(value, k, i, j, s)
        np.testing.assert_array_equal(first, value[:k])
        np.testing.assert_array_equal(second, value[i:j:s, k])


@pytest.mark.parametrize("k", [-3, 0, 2, 3])
def test_runtime_integer_index(k):
    x = pt.matrix("x")
    s = pt.tensor3("s", shape=(4, 3, 2))
    n = pt.lscalar("n")
    i8 = pt.scalar("i8", dtype="int8")
    outs = [x[n], x[1, n], x[n, ::-1], x[n, n], s[n], s[:, 1, n % 2], s[i8, i8 % 3]]
    compare_with_py([x, s, n, i8], outs,
                    [np.arange(20.0).reshape(4, 5), np.arange(24.0).reshape(4, 3, 2), np.array(k),
                     np.array(k, dtype="int8")])


def test_non_contiguous_and_empty():
    x = pt.matrix("x")
    base = np.arange(48.0).reshape(6, 8)
    compare_with_py([x], [x[1:, ::2], x[-1], x[::-1, 1]], [base[::2, ::-3]])
    compare_with_py([x], [x[1:], x[:, 1:2], x[::-1], x[:, 0]], [np.zeros((0, 3))])
    compare_with_py([x], [x[1:], x[:, ::-2], x[2:1, 0]], [base.T])


# --- out of range: numpy raises IndexError; so do we (at call time) -------------------------


def test_out_of_range_indices_raise_index_error():
    x = pt.matrix("x")
    n = pt.lscalar("n")
    iv = pt.lvector("iv")
    value = np.arange(20.0).reshape(4, 5)
    read = pytensor.function([x, n], x[n], mode="STABLEHLO")
    gather = pytensor.function([x, iv], [x[iv], x[:, iv]], mode="STABLEHLO")
    write = pytensor.function([x, n, iv], [pt.set_subtensor(x[n], 0.0), pt.inc_subtensor(x[iv], 1.0)],
                              mode="STABLEHLO")
    for bad in (4, -5):
        with pytest.raises(IndexError):
            read(value, bad)
        with pytest.raises(IndexError):
            write(value, bad, [0])
    with pytest.raises(IndexError):
        gather(value, [0, 4])  # 4 fits axis 1, not axis 0
    with pytest.raises(IndexError):
        write(value, 0, [-5])
    step = pytensor.function([x, n], x[::n], mode="STABLEHLO")
    with pytest.raises(ValueError, match="step cannot be zero"):
        step(value, 0)
    np.testing.assert_array_equal(read(value, -4), value[0])
    np.testing.assert_array_equal(gather(value, [-4, 3])[1], value[:, [-4, 3]])


def test_index_into_an_empty_run_time_dim_raises_index_error():
    """No slice of 1 fits a dim that is 0 at run time: specializing used to fail first,
    with a ValueError about the slice size."""
    x, n = pt.matrix("x"), pt.lscalar("n")
    outs = [x[n], x[:, n], pt.set_subtensor(x[n], 1.0), pt.inc_subtensor(x[:, n], 1.0)]
    for i, out in enumerate(outs):
        f = pytensor.function([x, n], out, mode="STABLEHLO")
        with pytest.raises(IndexError, match="out of bounds"):
            f(np.zeros((0, 0)), 0)
        with pytest.raises(IndexError, match="out of bounds"):
            f(np.zeros((0, 3)) if i % 2 == 0 else np.zeros((3, 0)), -1)
    compare_with_py([x, n], outs, [np.arange(6.0).reshape(2, 3), np.array(-2)])


def test_uint64_indices_past_int64_are_out_of_range():
    """numpy raises for a uint64 index of 2**64 - 1 (the Python mode an OverflowError);
    converted to int64 it used to read x[-1]."""
    x, u = pt.vector("x"), pt.scalar("u", dtype="uint64")
    for out in [x[u], pt.set_subtensor(x[u], 1.0)]:
        f = pytensor.function([x, u], out, mode="STABLEHLO")
        for bad in (2**64 - 1, 2**64 - 7, 2**63):
            with pytest.raises(IndexError):
                f(np.arange(7.0), np.uint64(bad))
    # As a slice bound (the rewrites cannot take a uint64 bound: PyTensor's ShapeFeature fails)
    outs = [x[u:], x[:u], x[::u], pt.set_subtensor(x[::u], -1.0)]
    compare_each_with_py([x, u], outs, [[np.arange(7.0), np.uint64(bound)] for bound in (2**64 - 1, 2**63, 3)], modes=(RAW_MODE,))


@pytest.mark.parametrize("step", [2**63 - 1, 2**62 + 1, -(2**63), -(2**63) + 1, 2**40])
def test_slice_steps_near_int64_limits(step):
    """The length (stop - start + step - 1) // step overflowed int64 for such steps."""
    x, s, a = pt.vector("x"), pt.lscalar("s"), pt.lscalar("a")
    outs = [x[::s], x[a::s], x[::step], x[a:-1:step], pt.set_subtensor(x[::s], 1.0),
            pt.inc_subtensor(x[a::step], 1.0)]
    compare_with_py([x, s, a], outs, [np.arange(7.0), np.array(step), np.array(2)])


# --- basic writes ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_set_and_inc_subtensor(dtype):
    x = pt.matrix("x", dtype=dtype)
    y = pt.matrix("y", dtype=dtype)
    s = pt.scalar("s", dtype=dtype)
    outs = [
        pt.inc_subtensor(x[-1, 2], s),
        pt.inc_subtensor(x[::-1, 2:], y[:, :3]),
        pt.set_subtensor(x[1:3, ::-2], y[:2, :3]),
        pt.inc_subtensor(x[::2, 1::3], y[:2, :2]),
        pt.set_subtensor(x[:, 1], y[:, 0]),
    ]
    compare_with_py([x, y, s], outs, [_matrix(dtype), _matrix(dtype, seed=1), _matrix(dtype)[0, 0]])


def test_more_basic_writes():
    x = pt.matrix("x")
    y = pt.matrix("y")
    s = pt.scalar("s")
    outs = [pt.set_subtensor(x[1], y[0]), pt.set_subtensor(x[-2::-3, 4:-100:-2], s), pt.inc_subtensor(x[10:], s),
            pt.inc_subtensor(x[:, 7:-9:-2], y[:, :3]), pt.set_subtensor(x[2:1], s)]
    compare_with_py([x, y, s], outs, [_matrix("float64"), _matrix("float64", seed=1), np.array(2.5)])
    xs = pt.tensor3("xs", shape=(3, 4, 5), dtype="int16")
    outs = [pt.inc_subtensor(xs[1, ::-2, 3], 1), pt.set_subtensor(xs[:, 2:-1:-1], 7), pt.inc_subtensor(xs[-1], xs[0])]
    compare_with_py([xs], outs, [finite_values("int16", 60).reshape(3, 4, 5)])


@pytest.mark.parametrize("k", [-3, 0, 2])
def test_writes_at_runtime_bounds(k):
    x = pt.matrix("x")
    n = pt.lscalar("n")
    outs = [pt.inc_subtensor(x[n], 1.0), pt.set_subtensor(x[1:n:2], -1.0),
            pt.inc_subtensor(x[::-2, n], 3.0), pt.set_subtensor(x[n::-1, ::2], 5.0),
            pt.inc_subtensor(x[:n], x[:n] * 2), pt.set_subtensor(x[n:, n], 9.0)]
    if k:
        outs += [pt.inc_subtensor(x[::n], 1.0), pt.set_subtensor(x[-1::n, 1:], 4.0)]
    compare_with_py([x, n], outs, [np.arange(20.0).reshape(4, 5), np.array(k)])


# --- advanced reads ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_advanced_indexing(dtype):
    x = pt.matrix("x", dtype=dtype)
    t = pt.tensor3("t", dtype=dtype)
    iv = pt.lvector("iv")
    im = pt.lmatrix("im")
    outs = [x[iv], x[:, iv], x[im, iv[:2]], t[1, :, iv]]
    values = [_matrix(dtype), finite_values(dtype, 60).reshape(3, 4, 5),
              np.array([0, -1, 2, 2]), np.array([[0, 1], [-2, 3]])]
    compare_with_py([x, t, iv, im], outs, values)


def test_advanced_dims_placement_with_slices_and_newaxis():
    t = pt.tensor4("t")
    iv = pt.lvector("iv")
    n = pt.lscalar("n")
    i = pt.lscalar("i")
    m = pt.lmatrix("m")
    outs = [t[iv, 1:, iv], t[:, iv, iv, ::-1], t[:, iv, :, iv], t[iv, None, iv], t[None, :, iv, iv],
            t[1:n, iv, ::2, i], t[i, :, None, iv], t[:, None, iv[:, None], iv], t[..., iv], t[m],
            t[iv[:2], m], t[iv, None]]
    values = [np.arange(3 * 4 * 5 * 6.0).reshape(3, 4, 5, 6), np.array([2, 0, -1]), np.array(3),
              np.array(-2), np.array([[0, 1], [-2, 2]])]
    compare_with_py([t, iv, n, i, m], outs, values)


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64"])
def test_index_dtypes(dtype):
    x = pt.matrix("x")
    iv = pt.vector("iv", dtype=dtype)
    outs = [x[iv], x[:, iv], x[iv, iv], pt.inc_subtensor(x[iv], 1.0), pt.set_subtensor(x[iv, iv], -1.0)]
    compare_with_py([x, iv], outs, [np.arange(20.0).reshape(4, 5), np.array([3, 1, 0, 1], dtype=dtype)])


def test_constant_boolean_masks():
    x = pt.matrix("x")
    mask = np.array([[True, False, True, False, True]] * 2 + [[False] * 5] * 2)
    outs = [x[mask], x[mask[:, 0]], x[:, mask[0]], x[mask[:, 0], 1:], pt.set_subtensor(x[mask], 0.0),
            pt.inc_subtensor(x[:, mask[0]], 1.0)]
    compare_with_py([x], outs, [np.arange(20.0).reshape(4, 5)])


def test_constant_boolean_mask_of_the_wrong_length_raises():
    """A constant mask becomes its nonzero() indices when lowering; a short one used to
    read (and write) as if padded with False."""
    x = pt.matrix("x")
    mask = pt.constant(np.array([True, False, True]))
    for out in [x[mask], pt.set_subtensor(x[mask], 0.0), x[:, mask]]:
        f = pytensor.function([x], out, mode="STABLEHLO")
        with pytest.raises(IndexError, match="boolean index did not match"):
            f(np.arange(8.0).reshape(4, 2))
    compare_with_py([x], [x[mask], pt.set_subtensor(x[:, mask], 1.0)], [np.arange(9.0).reshape(3, 3)])


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64"])
def test_constant_index_arrays(dtype):
    """Indices that are graph constants (a PyMC model's group index) are wrapped and
    checked when lowering: against static sizes the module keeps no check at all."""
    x = pt.matrix("x", shape=(4, 5))
    d = pt.matrix("d")  # sizes known at run time only: one scalar comparison is left
    y = pt.vector("y", shape=(6,))
    signed = dtype != "uint16"
    rows = np.array([3, -1, 0, 1, -4, 2] if signed else [3, 1, 0, 1, 0, 2], dtype=dtype)
    cols = np.array([[4, -5], [0, 2]] if signed else [[4, 0], [0, 2]], dtype=dtype)
    static = [x[rows], x[:, rows[:2]], x[rows[:2], cols], pt.inc_subtensor(x[rows], y[:, None]),
              pt.set_subtensor(x[rows[:2], cols[0]], -1.0), x[rows[:0]], x[np.array([True, False, True, False])]]
    value = np.arange(20.0).reshape(4, 5)
    compare_with_py([x, y], static, [value, np.arange(6.0)])
    lowered = lower(FunctionGraph([x, y], static, clone=True))
    assert not lowered.runtime_checks
    dynamic = [d[rows], pt.inc_subtensor(d[:, rows[:2]], 1.0)]
    compare_with_py([d], dynamic, [value])
    f = pytensor.function([d], dynamic, mode="STABLEHLO")
    for shape in [(3, 5), (4, 3)]:  # index 3 is out of range for 3 rows, and for 3 columns
        with pytest.raises(IndexError):
            f(np.zeros(shape))


def test_constant_index_arrays_out_of_range_raise_at_call_time():
    x = pt.vector("x", shape=(4,))
    d = pt.vector("d")
    bad = [np.array([0, 4]), np.array([-5, 1]), np.array([1, 2**40])]
    for index in bad:
        static = pytensor.function([x], [x[index], pt.inc_subtensor(x[index], 1.0)], mode="STABLEHLO")
        dynamic = pytensor.function([d], [d[index], pt.inc_subtensor(d[index], 1.0)], mode="STABLEHLO")
        for f in (static, dynamic, pytensor.function([x], x[index], mode=PY_MODE)):
            with pytest.raises(IndexError):  # the function builds; its call raises
                f(np.zeros(4))
    negative = np.array([-1, -3])  # in range for d of size >= 3, but wrapped at run time
    f = pytensor.function([d], d[negative], mode="STABLEHLO")
    np.testing.assert_array_equal(f(np.arange(5.0)), [4.0, 2.0])
    with pytest.raises(IndexError):
        f(np.arange(2.0))


@pytest.mark.parametrize("dtype", ["float64", "int8", "bool", "complex64"])
def test_runtime_boolean_mask_reads(dtype):
    """The result's length is the True count: measured at run time, one executable per
    count. Masks over one or several axes, after a slice, with none or all True."""
    x = pt.tensor3("x", dtype=dtype)
    m2, m1 = pt.matrix("m2", dtype="bool"), pt.vector("m1", dtype="bool")
    outs = [x[m2], x[:, m2], x[m1], x[1:, :, m1], x[m1, :, 0], x[m1][:, m1]]
    f = pytensor.function([x, m2, m1], outs, mode="STABLEHLO")
    ref = pytensor.function([x, m2, m1], outs, mode=PY_MODE)
    rng = np.random.default_rng(0)
    for shape, p in [((4, 4, 4), 0.5), ((3, 3, 3), 0.0), ((4, 4, 4), 1.0), ((5, 5, 5), 0.3)]:
        values = [finite_values(dtype, int(np.prod(shape)), seed=1).reshape(shape),
                  rng.random(shape[:2]) < p, rng.random(shape[0]) < p]
        compare_with_py([x, m2, m1], outs, values)
        for got, want in zip(f(*values), ref(*values)):  # the compiled function, reused across counts
            np.testing.assert_array_equal(got, want)


def test_runtime_masks_with_other_advanced_indices():
    """numpy: a mask is its nonzero() arrays, broadcast with the other index arrays
    (reads and writes)."""
    x, m, iv, y = pt.dmatrix("x"), pt.vector("m", dtype="bool"), pt.lvector("iv"), pt.dvector("y")
    outs = [x[m, iv], x[iv, m], x[m, 1:][:, iv], pt.set_subtensor(x[m, iv], y), pt.inc_subtensor(x[m, iv], 1.0)]
    base = np.arange(16.0).reshape(4, 4)
    compare_with_py([x, m, iv, y], outs, [base, np.array([True, False, True, True]), np.array([0, -1, 2]),
                                         np.array([7.0, 8.0, 9.0])])
    compare_with_py([x, m, iv, y], outs, [base, np.array([False, False, True, False]), np.array([0, -1, 2]),
                                         np.array([7.0, 8.0, 9.0])])
    # a True count that does not broadcast with the other index: a ValueError naming the
    # measured size (numpy's is an IndexError), never XLA's clamping
    f = pytensor.function([x, m, iv], x[m, iv], mode="STABLEHLO")
    with pytest.raises(ValueError, match=r"measured at run time \(\(2,\)\)"):
        f(base, np.array([True, True, False, False]), np.array([0, 1, 2]))


def test_mask_of_a_computed_condition_in_a_pymc_style_graph():
    x, y = pt.dvector("x"), pt.dvector("y")
    observed = ~(pt.isnan(y) | pt.isinf(y))
    loss = ((x - y)[observed] ** 2).sum()
    values = [np.arange(6.0), np.array([1.0, np.nan, 2.0, np.inf, 4.0, 5.0])]
    compare_with_py([x, y], [loss, pytensor.grad(loss, x)], values)


@pytest.mark.parametrize("dtype", ["float64", "int32", "bool", "complex128"])
def test_nonzero(dtype):
    x = pt.tensor3("x", dtype=dtype)
    v = pt.vector("v", dtype=dtype)
    values = finite_values(dtype, 24, seed=3).reshape(2, 3, 4)
    values.flat[::3] = 0
    compare_with_py([x, v], [*pt.nonzero(x), pt.flatnonzero(x), pt.nonzero_values(v), *pt.nonzero(v)],
                    [values, values.ravel()[:0]])
    y = pt.dvector("y")
    compare_with_py([y], pt.nonzero(y), [np.array([0.0, np.nan, -0.0, 1e-300, 2.0])])


def test_nonzero_of_a_condition_sized_by_a_scalar_input():
    """`tril_indices_from(m, k)`: nonzero of a comparison with `arange(-k, n - k)`, whose
    length the module measures from k, and whose count's prefix sum is a loop over that
    length. The loop read the measured length as a value of @main that the measuring
    left alone, and the call raised "some output shapes could not be determined"."""
    m, k = pt.matrix("m", dtype="int32"), pt.iscalar("k")
    outputs = [*pt.tril_indices_from(m, k), *pt.triu_indices_from(m, k),
               *pt.nonzero(pt.arange(m.shape[0])[:, None] >= pt.arange(-k, m.shape[1] - k)[None, :])]
    compare_each_with_py([m, k], outputs, [[np.ones(shape, dtype="int32"), np.int32(offset)]
                                           for shape in ((10, 10), (10, 7), (3, 5), (0, 4)) for offset in (0, 1, -2)])

def test_advanced_non_contiguous_and_empty():
    x = pt.matrix("x")
    iv = pt.lvector("iv")
    base = np.arange(48.0).reshape(6, 8)
    compare_with_py([x, iv], [x[iv], x[:, iv], pt.inc_subtensor(x[iv], 1.0)], [base[::2, ::-3], np.array([1, 1, -1])])
    empty = np.array([], dtype="int64")
    compare_with_py([x, iv], [x[iv], x[1:, iv], pt.inc_subtensor(x[iv], 1.0)], [base, empty])
    # a `?` indexed dim that is 0 at run time
    compare_with_py([x, iv], [x[iv], x[iv, iv], pt.set_subtensor(x[:, iv], 1.0)], [np.zeros((0, 3)), empty])


def test_index_arrays_of_run_time_length_one_broadcast_to_zero():
    """numpy broadcasts a length-1 index array against an empty one (the broadcast shape
    used to be the larger run-time length, 1)."""
    x, i, j = pt.matrix("x"), pt.lvector("i"), pt.lvector("j")
    outs = [x[i, j], x[j, i], pt.set_subtensor(x[i, j], 1.0), pt.inc_subtensor(x[j, i], 1.0)]
    base = np.arange(12.0).reshape(3, 4)
    one, empty = np.array([1]), np.array([], dtype=np.int64)
    compare_each_with_py([x, i, j], outs, [[base, vi, vj] for vi, vj in [
        (one, empty), (empty, one), (one, np.array([0, 2])), (np.array([2, 0]), np.array([1, 2]))]])


# --- advanced writes -----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_advanced_inc_accumulates_repeated_indices(dtype):
    x = pt.matrix("x", dtype=dtype)
    y = pt.matrix("y", dtype=dtype)
    iv = pt.lvector("iv")
    outs = [pt.inc_subtensor(x[iv], y), pt.inc_subtensor(x[iv, iv], y[0, :4]),
            pt.set_subtensor(x[:, iv[:2]], y.T[:5, :2])]
    values = [_matrix(dtype, 5, 5), _matrix(dtype, 4, 5, seed=1), np.array([1, -4, 1, 1])]
    compare_with_py([x, y, iv], outs, values)


def test_advanced_set_with_repeated_indices_keeps_the_last_update():
    # numpy keeps the last; StableHLO leaves it unspecified. XLA's CPU backend is in order.
    x = pt.vector("x")
    y = pt.vector("y")
    iv = pt.lvector("iv")
    outs = [pt.set_subtensor(x[iv], y), pt.set_subtensor(x[iv[:, None], ], y[:, None])]
    compare_with_py([x, y, iv], outs, [np.zeros(4), np.arange(1.0, 7.0), np.array([2, 0, 2, -2, 1, 2])])



@pytest.mark.parametrize("dtype", ["float64", "float32", "int8", "uint16", "bool", "complex64"])
def test_diagonal_writes_are_selects_of_numpys_values(dtype):
    """Index runs (`arange(k) + c`, or constants that are one) on two or more adjacent
    axes write a diagonal: a select over the view, with no scatter (so no zeros built
    for `alloc_diag`, whose inner arange folds to a static length). Runs that leave the
    array, on axes of run-time size, or alone (a slice) take the scatter and its
    IndexError."""
    m = pt.matrix("m", dtype=dtype, shape=(5, 6))
    x = pt.tensor3("x", dtype=dtype, shape=(None, 5, 6))  # a batch of run-time size
    y = pt.vector("y", dtype=dtype, shape=(4,))
    r = pt.arange(4)
    diagonal = [
        pt.set_subtensor(m[r, r + 2], y), pt.inc_subtensor(m[r + 1, r], y),
        pt.set_subtensor(m[np.arange(1, 5), np.arange(4)], y), pt.inc_subtensor(x[:, r, r + 1], y),
        pt.set_subtensor(x[1:, r + 1, r], y), pt.set_subtensor(m[1:, 2:][r, r], y[::-1]),
        pt.basic.alloc_diag(y), pt.basic.alloc_diag(y, offset=2), pt.basic.alloc_diag(y, offset=-1),
    ]
    values = [_matrix(dtype, 5, 6), finite_values(dtype, 60, 1).reshape(2, 5, 6), finite_values(dtype, 4, 2)]
    compare_with_py([m, x, y], diagonal, values)
    assert "scatter" not in lower(FunctionGraph([m, x, y], diagonal, clone=True)).as_text()
    d = pt.matrix("d", dtype=dtype)  # sizes known at run time only
    scattered = [pt.set_subtensor(d[r, r + 1], y), pt.inc_subtensor(x[pt.arange(2), pt.arange(2) + 3], m[0]),
                 pt.inc_subtensor(m[r + 1, r + (-1)], y), pt.set_subtensor(m[r, r[::-1]], y),
                 pt.inc_subtensor(m[r + 1], y[:, None])]
    compare_with_py([m, x, d, y], scattered, [values[0], values[1], values[0], values[2]])
    outside = pytensor.function([m, y], pt.inc_subtensor(m[r + 2, r], y), mode="STABLEHLO")
    with pytest.raises(IndexError):
        outside(values[0], values[2])


@pytest.mark.parametrize("dtype", ["float64", "int16", "bool", "complex64"])
def test_diagonals_of_run_time_size_are_selects(dtype):
    """x[i, i] = v (or +=) with i = arange(c, n) for a run-time n, one index array on both
    axes (as `alloc_diag` and PyMC's covariances of pm.Data-sized matrices write it): a
    select, no scatter, the Python mode's values; a run past an axis raises IndexError
    when called, as the scatter's check does."""
    d, t = pt.matrix("d", dtype=dtype), pt.tensor3("t", dtype=dtype)
    v, s = pt.vector("v", dtype=dtype), pt.scalar("s", dtype=dtype)
    i, j = pt.arange(d.shape[0]), pt.arange(1, d.shape[0])
    k = pt.arange(t.shape[1])
    writes = [pt.set_subtensor(d[i, i], s), pt.inc_subtensor(d[i, i], v), pt.set_subtensor(d[j, j], v[1:]),
              pt.inc_subtensor(t[:, k, k], v), pt.basic.alloc_diag(v)]
    inputs = [d, t, v, s]
    square = [_matrix(dtype, 5, 5), finite_values(dtype, 50, 1).reshape(2, 5, 5), finite_values(dtype, 5, 2),
              finite_values(dtype, 1, 3).reshape(())]
    wide = [_matrix(dtype, 5, 7), finite_values(dtype, 70, 1).reshape(2, 5, 7), *square[2:]]
    compare_each_with_py(inputs, writes, [square, wide])
    assert "scatter" not in lower(FunctionGraph(inputs, writes, clone=True)).as_text()
    tall = pytensor.function([d, v, s], writes[:2], mode="STABLEHLO")
    with pytest.raises(IndexError, match="out of bounds"):
        tall(_matrix(dtype, 5, 3), square[2], square[3])


@pytest.mark.parametrize("dtype", ["float64", "int8", "bool", "complex64"])
def test_repeated_positions_lowered_for_cuda_keep_the_last_update(dtype):
    # A GPU's scatter updates race, so lowered for CUDA each update to a repeated position
    # is first replaced by the last one aimed at it. Such a module has no library call:
    # the CPU runs it here to check the arithmetic (XLA's CPU scatter alone keeps the last).
    from lowering import LoweringOptions

    x, y = pt.matrix("x", dtype=dtype), pt.matrix("y", dtype=dtype)
    iv, jv = pt.lvector("iv"), pt.lvector("jv")
    outs = [pt.set_subtensor(x[iv], y),  # rows: the update's batch dim in front
            pt.set_subtensor(x[:, jv], y[:5, :4]),  # columns: the batch dim after a slice
            pt.set_subtensor(x[iv[:4], jv], y[0, :4]),  # two index arrays
            pt.set_subtensor(x[iv.reshape((2, 3))], y.reshape((2, 3, 4))),  # a 2-d batch
            pt.inc_subtensor(x[iv], y, ignore_duplicates=True),
            pt.set_subtensor(x[iv[:0]], y[:0])]  # no updates
    inputs = [x, y, iv, jv]
    values = [_matrix(dtype, 5, 4), _matrix(dtype, 6, 4, seed=1), np.array([1, -4, 3, 1, 2, 3]), np.array([0, 2, 0, -4])]
    fgraph = FunctionGraph(inputs, outs, clone=True)
    cuda = lower(fgraph, options=LoweringOptions(platform="cuda"))
    assert cuda.as_text().count("stablehlo.scatter") > lower(fgraph).as_text().count("stablehlo.scatter")
    expected = pytensor.function(inputs, outs, mode=PY_MODE)(*values)
    for got, want in zip(cuda.compile("cpu")(*values), expected, strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)

def test_writes_broadcast_y():
    x = pt.matrix("x")
    row = pt.matrix("row", shape=(1, None))
    iv = pt.lvector("iv")
    outs = [pt.inc_subtensor(x[iv], row), pt.set_subtensor(x[iv, 1:], row[:, 1:]), pt.inc_subtensor(x[1:, 2], row[0, 0]),
            pt.inc_subtensor(x[::2], row)]
    compare_with_py([x, row, iv], outs, [np.zeros((4, 3)), np.arange(1.0, 4.0)[None], np.array([0, 0, 3])])


@pytest.mark.parametrize("set_instead_of_inc", [False, True])
def test_advanced_inc_subtensor1_refuses_run_time_broadcasting(set_instead_of_inc):
    """AdvancedIncSubtensor1 (what `x[iv] += y` becomes after the rewrites) raises
    PyTensor's ValueError where a dim of y its type leaves unknown has length 1 at run
    time and would be broadcast; it broadcast silently before."""
    from pytensor.tensor.subtensor import advanced_inc_subtensor1, advanced_set_subtensor1

    write = advanced_set_subtensor1 if set_instead_of_inc else advanced_inc_subtensor1
    x, y, iv = pt.matrix("x"), pt.matrix("y"), pt.lvector("iv")
    out = write(x, y, iv)
    assert type(out.owner.op).__name__ == "AdvancedIncSubtensor1"

    def values(x_shape, y_shape, indices):
        return [np.zeros(x_shape), np.arange(1.0, 1.0 + np.prod(y_shape)).reshape(y_shape), np.array(indices, dtype=np.int64)]

    compare_each_with_py([x, y, iv], out, [
        values((4, 3), (2, 3), [0, 0]), values((4, 3), (3, 3), [1, 3, 1]), values((1, 3), (1, 3), [0]),
        values((4, 1), (2, 1), [2, -1]), values((4, 3), (0, 3), []),
    ])
    f = pytensor.function([x, y, iv], out, mode="STABLEHLO")
    reference = pytensor.function([x, y, iv], out, mode=PY_MODE)
    for case in (values((4, 3), (1, 3), [0, 2]), values((4, 3), (2, 1), [0, 2]), values((4, 3), (1, 1), [1]),
                 values((1, 3), (1, 1), [0])):
        for fn in (f, reference):
            with pytest.raises(ValueError, match="Runtime broadcasting not allowed"):
                fn(*case)
    # PyTensor's perform also compares y's first dim with x's first, and refuses one row
    # written at one index; numpy writes it.
    case = values((4, 3), (1, 3), [2])
    with pytest.raises(ValueError, match="Runtime broadcasting not allowed"):
        reference(*case)
    want = case[0].copy()
    want[[2]] = case[1] if set_instead_of_inc else want[[2]] + case[1]
    np.testing.assert_array_equal(f(*case), want)


def test_inc_with_ignore_duplicates():
    x = pt.vector("x")
    iv = pt.lvector("iv")
    out = pt.inc_subtensor(x[iv], 1.0, ignore_duplicates=True)
    compare_with_py([x, iv], [out], [np.zeros(4), np.array([2, 0, 2, 2])])


def test_advanced_writes_with_slices_and_newaxis():
    t = pt.tensor3("t")
    y = pt.tensor3("y")
    iv = pt.lvector("iv")
    n = pt.lscalar("n")
    outs = [pt.inc_subtensor(t[iv, :, iv], y[0, :2, :4]), pt.set_subtensor(t[1:, iv], 2.0),
            pt.inc_subtensor(t[iv, None], 1.5), pt.inc_subtensor(t[::-1, iv, n:], y[:, :2, n:]),
            pt.set_subtensor(t[n, :, iv], y[0, :2, :4]), pt.inc_subtensor(t[iv, ::2, iv], y[0, :2, :2].T)]
    values = [np.arange(60.0).reshape(3, 4, 5), np.ones((3, 4, 5)), np.array([0, -1]), np.array(1)]
    compare_with_py([t, y, iv, n], outs, values)


@pytest.mark.parametrize("dtype", ["float64", "bool", "complex64"])
def test_writes_with_runtime_boolean_masks(dtype):
    x = pt.matrix("x", dtype=dtype)
    m = pt.matrix("m", dtype="bool")
    mv = pt.vector("mv", dtype="bool")
    y = pt.vector("y", dtype=dtype)
    outs = [pt.set_subtensor(x[m], y[0]), pt.inc_subtensor(x[m], y[1]),
            pt.set_subtensor(x[m], y[:7]), pt.inc_subtensor(x[m], y[:7]),
            pt.inc_subtensor(x[:, mv], y[:3]), pt.set_subtensor(x[mv[:4]], y[:3, None]),
            pt.inc_subtensor(x[1:, mv], y[:3])]
    mask = np.arange(20).reshape(4, 5) % 3 == 0
    values = [_matrix(dtype), mask, np.array([True, False, True, True, False]), finite_values(dtype, 8, seed=2)]
    compare_with_py([x, m, mv, y], outs, values)


def test_mask_writes_broadcast_a_run_time_count_of_one():
    """numpy broadcasts a value of length 1 over the True elements, also where that
    length is known only at run time (it used to raise the True count mismatch)."""
    x, m = pt.vector("x"), pt.vector("m", dtype="bool")
    X, Y, Z, y = pt.matrix("X"), pt.matrix("Y"), pt.matrix("Z"), pt.vector("y")
    outs = [pt.set_subtensor(x[m], y), pt.inc_subtensor(x[m], y), pt.set_subtensor(X[:, m], Y),
            pt.inc_subtensor(X[m[:3]], Z)]
    mask = np.array([True, False, True, True])  # 3 True; m[:3] has 2
    for y_len, y_shape, z_shape in [(1, (1, 1), (1, 1)), (3, (3, 3), (2, 4)), (1, (1, 3), (2, 1)), (3, (3, 1), (1, 4))]:
        values = [np.arange(4.0), mask, np.arange(12.0).reshape(3, 4), np.full(y_shape, 7.0),
                  np.full(z_shape, -1.0), np.arange(1.0, y_len + 1)]
        compare_with_py([x, m, X, Y, Z, y], outs, values)


def test_mask_write_with_wrong_count_raises():
    x = pt.vector("x")
    m = pt.vector("m", dtype="bool")
    y = pt.vector("y")
    f = pytensor.function([x, m, y], pt.set_subtensor(x[m], y), mode="STABLEHLO")
    with pytest.raises(ValueError):
        f(np.zeros(4), np.array([True, False, True, False]), np.ones(3))


def test_out_of_range_inside_op_from_graph_raises():
    # The inner graph is a private function; its index checks travel up to @main.
    x, n, iv = pt.vector("x"), pt.lscalar("n"), pt.lvector("iv")
    xi, ni, ivi = x.type(), n.type(), iv.type()
    op = OpFromGraph([xi, ni, ivi], [xi[ni], xi[ivi], pt.inc_subtensor(xi[ivi], 1.0)])
    f = pytensor.function([x, n, iv], op(x, n, iv), mode=RAW_MODE)
    read, gathered, written = f(np.arange(4.0), 3, [1, 2, -1])
    assert read == 3.0
    np.testing.assert_array_equal(gathered, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(written, [0.0, 2.0, 3.0, 4.0])
    with pytest.raises(IndexError):
        f(np.arange(4.0), 7, [1, 2, 3])
    with pytest.raises(IndexError):
        f(np.arange(4.0), 0, [1, 9, -9])


def test_blockwise_advanced_subtensor_is_one_batched_gather():
    # vectorize_graph makes Blockwise(AdvancedSubtensor) when the indices are batched too
    # (a batched lu_solve's b[perm]); core index arrays broadcast right-aligned.
    from pytensor.graph.replace import vectorize_graph

    x, i, j = pt.matrix("x"), pt.lvector("i"), pt.lmatrix("j")
    bx, bi, bj = pt.tensor3("bx"), pt.lmatrix("bi"), pt.ltensor3("bj")
    outputs = vectorize_graph([x[i], x[i, i], x[j], x[j, i]], replace={x: bx, i: bi, j: bj})
    assert all(type(o.owner.op).__name__ == "Blockwise" for o in outputs)
    rng = np.random.default_rng(0)
    values = [rng.normal(size=(3, 4, 5)), rng.integers(-4, 4, size=(3, 4)), rng.integers(0, 4, size=(3, 2, 4))]
    compare_with_py([bx, bi, bj], outputs, values)


def test_slices_of_constants_with_bounds_computed_from_sizes():
    """Bounds computed with ops shape refinement does not fold (negate, abs, float math)
    make the slice of a constant static before MHLO's folder sees it, which would fold
    a still `?`-typed slice into an invalid constant (pt.roll's gradient splits one)."""
    x = pt.vector("x")
    n = pt.lscalar("n")
    c = pt.constant(np.arange(10.0))
    compare_with_py([x], [c[-x.shape[0]:], c[:abs(x.shape[0] - 7)]], [np.zeros(5)])
    compare_with_py([n], [c[:-(2 - n)], c[:-n], pt.split(c, [7 - n, n + 3], n_splits=2)[1],
                          c[:pt.cast(pt.ceil(n / 2), "int64")], pt.arange(0.5, n * 1.5)[-n:]],
                    [np.int64(3)])
    compare_with_py([x], [pytensor.grad((pt.roll(x, 2) * np.arange(5.0)).sum(), x)], [np.arange(5.0)])
