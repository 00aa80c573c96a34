"""CumOp (cumsum, cumprod): numpy's values in PyTensor's output dtype, static and unknown sizes."""

import itertools

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from tests.helpers import (
    MODE, PY_MODE, RAW_MODE, assert_same, compare_each_with_py, compare_with_py, record_compiled_hlo,
)
from tests.values import ALL_DTYPES, edge_values


@pytest.mark.parametrize("shape", [(None, None), (3, 5)])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_cumsum_cumprod(dtype, shape):
    x = pt.tensor("x", dtype=dtype, shape=shape)
    rng = np.random.default_rng(0)
    v = rng.normal(size=(3, 5)) * 3
    v = v > 0 if dtype == "bool" else v.astype(dtype)
    outputs = [pt.cumsum(x, axis=1), pt.cumprod(x, axis=0), pt.cumsum(x), pt.cumprod(x, axis=-1)]
    before = v.copy()
    # numpy accumulates small ints and bools in int64; PyTensor's type keeps the input
    # dtype, so the expected value is numpy's cast to that dtype (wrapping, or any/all).
    expected = [np.asarray(e).astype(o.dtype)
                for e, o in zip(pytensor.function([x], outputs, mode=PY_MODE)(v), outputs)]
    for mode in ("STABLEHLO", RAW_MODE):
        got = pytensor.function([x], outputs, mode=mode)(v)
        for i, (g, e) in enumerate(zip(got, expected)):
            assert_same(g, e, label=f"output {i}")
    np.testing.assert_array_equal(v, before)


def test_cumsum_of_empty_and_nan():
    x = pt.vector("x")
    fn = pytensor.function([x], [pt.cumsum(x), pt.cumprod(x)], mode=RAW_MODE)
    assert [r.shape for r in fn(np.zeros(0))] == [(0,), (0,)]
    got = fn(np.array([1.0, np.nan, 2.0]))
    np.testing.assert_array_equal(got[0], [1.0, np.nan, np.nan])
    # a static length-0 axis (xtensor's cumsum over an empty dim builds one)
    empty = pt.tensor("empty", shape=(0, 3))
    compare_with_py([empty], [pt.cumsum(empty, axis=0), pt.cumprod(empty, axis=0), pt.cumsum(empty)],
                    [np.zeros((0, 3))])


@pytest.mark.parametrize("mode", ["STABLEHLO", "STABLEHLO_NO_FMA"])
@pytest.mark.parametrize("length", [5, None, 300], ids=["static", "run-time", "static-long"])
def test_cumsum_of_negative_zeros_keeps_their_sign(length, mode):
    """numpy's cumsum starts from the first element, so -0.0s sum to -0.0; a scan from
    0.0 would give 0.0 (0.0 + -0.0 is 0.0). Each path starts from -0.0 instead
    (`regions.scan_identity`): the reduce_window, the blocks' loop and the blocks written
    out. (A complex product has no such start: (1 + 0j) * (-0.0 - 0.0j) is 0.0 - 0.0j.)"""
    for dtype, zero in (("float64", -0.0), ("float32", -0.0), ("complex128", complex(-0.0, -0.0))):
        x = pt.tensor("x", dtype=dtype, shape=(length, 2))
        v = np.full((length or 40, 2), zero, dtype=dtype)
        outputs, expected = [pt.cumsum(x, axis=0)], [np.cumsum(v, axis=0)]
        if dtype != "complex128":
            outputs.append(pt.cumprod(x, axis=0))
            expected.append(np.cumprod(v, axis=0))
        for g, e in zip(pytensor.function([x], outputs, mode=mode)(v), expected):
            assert np.array_equal(g, e) and (np.signbit(g.real) == np.signbit(e.real)).all(), dtype
            assert (np.signbit(g.imag) == np.signbit(e.imag)).all(), dtype


def test_a_scatter_at_the_cumsum_of_no_counts():
    """The cumsum of an empty run-time vector folds to an empty constant once the call's
    shapes are known, and a scatter at it to a scatter of nothing: MHLO's folder crashed
    the process on such a scatter (`passes.guard_empty_scatters`)."""
    i = pt.lvector("i")
    out = pt.inc_subtensor(pt.zeros(i.sum() + 1)[pt.cumsum(i)], 1.0)
    compare_each_with_py([i], [out], [[np.array([0, 1, 2])], [np.zeros(0, dtype="int64")], [np.array([3])]])


def test_searchsorted_both_sides_nan_and_sorter():
    from tests.helpers import compare_with_py

    a, v, s = pt.vector("a"), pt.matrix("v"), pt.lvector("s")
    av = np.array([-1.0, 0.0, 0.0, 2.5, 3.0, np.nan])
    vv = np.array([[0.0, 2.5, np.nan], [-5.0, 7.0, 1.0]])
    compare_with_py([a, v], [pt.searchsorted(a, v), pt.searchsorted(a, v, side="right")], [av, vv])
    compare_with_py([a, v, s], [pt.searchsorted(a, v, sorter=s)],
                    [av[::-1].copy(), vv, np.arange(6)[::-1].copy()])
    fn = pytensor.function([a, v, s], pt.searchsorted(a, v, sorter=s), mode=RAW_MODE)
    with pytest.raises(ValueError, match="sorter index out of range"):
        fn(av, vv, np.array([0, 1, 2, 3, 4, 9]))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_fill_diagonal_and_offset(dtype):
    from tests.helpers import compare_with_py

    m, val, off = pt.matrix("m", dtype=dtype), pt.scalar("val", dtype=dtype), pt.lscalar("off")
    outputs = [pt.fill_diagonal(m, val), pt.fill_diagonal(m.T, val),
               pt.fill_diagonal_offset(m, val, off), pt.fill_diagonal_offset(m.T, val, off)]
    compare_each_with_py([m, val, off], outputs, [[np.zeros((3, 5), dtype), np.asarray(1, dtype), np.int64(offset)]
                                                  for offset in (2, -2, 0, 9)])
    t = pt.tensor3("t")
    compare_with_py([t], [pt.fill_diagonal(t, 5.0)], [np.zeros((3, 3, 3))])


@pytest.mark.parametrize("m", [0, 1, 2, 5, -3])
def test_bartlett(m):
    from tests.helpers import compare_with_py

    M = pt.lscalar("M")
    compare_with_py([M], [pt.bartlett(M)], [np.int64(m)])


def test_repeat():
    from pytensor.tensor.extra_ops import Repeat

    from tests.helpers import compare_with_py

    x = pt.matrix("x")
    xv = np.arange(6.0).reshape(3, 2)
    compare_with_py([x], [pt.repeat(x, [1, 0, 2], axis=0), pt.repeat(x, 2, axis=1), pt.repeat(x, 3),
                          Repeat(axis=1)(x, [2, 1]), Repeat(axis=0)(x, [2])], [xv])


# Every data dtype and every counts dtype, in pairs rather than all 12 combinations: the
# counts only place rows and the data only moves (CI time); float64, whose gradient scatters
# back, with a signed and an unsigned counts dtype.
@pytest.mark.parametrize("dtype, counts_dtype", [
    ("float64", "int64"), ("float64", "uint32"), ("int8", "int8"), ("bool", "uint32"), ("complex64", "int64"),
])
def test_repeat_with_run_time_repeats(dtype, counts_dtype):
    """The output length is the repeats' sum: measured at run time, one executable per
    length; one count broadcasts to the whole axis, as numpy does."""
    from pytensor.tensor.extra_ops import Repeat

    from tests.helpers import compare_with_py

    x = pt.tensor3("x", dtype=dtype)
    r = pt.vector("r", dtype=counts_dtype)
    xv = (np.arange(24) % 5).astype(dtype).reshape(2, 3, 4)
    outs = [Repeat(axis=1)(x, r), pt.repeat(x, r, axis=-2)[:, ::2], pytensor.grad(Repeat(axis=1)(x, r).sum(), x)
            if dtype.startswith("float") else Repeat(axis=1)(x, r)[:, ::-1]]
    compare_each_with_py([x, r], outs, [[xv, np.array(counts, dtype=counts_dtype)]
                                        for counts in ([1, 0, 2], [2], [0, 0, 0], [0], [3, 1, 1])])
    compare_with_py([x, r], [Repeat(axis=0)(x, r)], [xv[:0], np.array([], dtype=counts_dtype)])
    one = pt.tensor("one", shape=(1,), dtype=counts_dtype)  # one count, known to be one
    compare_with_py([x, one], [Repeat(axis=2)(x, one)], [xv, np.array([3], dtype=counts_dtype)])


def test_repeat_with_run_time_repeats_refuses_bad_counts():
    from pytensor.tensor.extra_ops import Repeat

    x = pt.matrix("x")
    r = pt.lvector("r")
    f = pytensor.function([x, r], Repeat(axis=0)(x, r), mode="STABLEHLO")
    xv = np.ones((3, 2))
    with pytest.raises(ValueError, match="do not broadcast"):
        f(xv, np.array([1, 2]))
    with pytest.raises(ValueError, match="do not broadcast"):
        f(xv, np.array([], dtype="int64"))
    with pytest.raises(ValueError, match="negative"):
        f(xv, np.array([1, -1, 2]))
    np.testing.assert_array_equal(f(xv, np.array([1, 1, 2])), np.ones((4, 2)))


@pytest.mark.parametrize("order", ["C", "F"])
def test_unravel_and_ravel_multi_index(order):
    from pytensor.tensor.extra_ops import ravel_multi_index, unravel_index

    from tests.helpers import compare_with_py

    i, d = pt.lvector("i"), pt.lvector("d", shape=(3,))
    dims = np.array([2, 3, 4])
    compare_with_py([i, d], list(unravel_index(i, d, order=order)), [np.array([0, 5, 23, 7]), dims])
    a, b, c = pt.lvector("a"), pt.lvector("b"), pt.lvector("c")
    inside = [np.array([0, 1, 1]), np.array([2, 0, 1]), np.array([3, 3, 0])]
    outside = [np.array([0, -1, 5]), np.array([2, -7, 1]), np.array([9, 3, -4])]
    for mode, coords in [("raise", inside), ("wrap", outside), ("clip", outside)]:
        compare_with_py([a, b, c, d], [ravel_multi_index((a, b, c), d, mode=mode, order=order)], [*coords, dims])
    unravel = pytensor.function([i, d], list(unravel_index(i, d, order=order)), mode=RAW_MODE)
    with pytest.raises(ValueError, match="out of bounds"):
        unravel(np.array([24]), dims)
    ravel = pytensor.function([a, b, c, d], ravel_multi_index((a, b, c), d, order=order), mode=RAW_MODE)
    with pytest.raises(ValueError, match="invalid entry in coordinates array"):
        ravel(*outside, dims)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "uint8", "bool", "complex128"])
def test_unique_with_index_inverse_and_counts(dtype):
    """The number of unique values is known only at run time: measured by a probe."""
    x = pt.matrix("x", dtype=dtype)
    values = np.array([[3, 1, 0], [1, 3, 2], [7, 0, 0]]).astype(dtype)
    if dtype.startswith("float"):
        values[0, 2] = values[2, 0] = np.nan  # numpy's equal_nan: one NaN in the result
        values[2, 1] = -0.0
    outputs = [pt.unique(x), *pt.unique(x, return_index=True, return_inverse=True, return_counts=True)]
    compare_with_py([x], outputs, [values])


def test_unique_of_empty_and_repeated_calls_with_other_counts():
    x = pt.lvector("x")
    u = pt.unique(x)
    compare_with_py([x], [u, u.sum()], [np.array([], dtype="int64")])
    f = pytensor.function([x], [u, u.shape[0] * 2], mode="STABLEHLO")
    for values in ([5, 5, 1], [1, 2, 3, 4], [9] * 6, [5, 5, 1]):
        got, count = f(np.array(values))
        np.testing.assert_array_equal(got, np.unique(values))
        assert count == 2 * len(np.unique(values))


def _unique_outputs(x, axis, flags=(True, True, True)):
    """pt.unique(x, axis) and pt.unique with the `flags` (return_index, _inverse, _counts)."""
    with_flags = pt.unique(x, *flags, axis=axis)
    return [pt.unique(x, axis=axis), *(with_flags if any(flags) else [with_flags])]


def _rows_with_repeats(dtype, shape, seed=0):
    """Values of `shape` whose slices along every axis repeat: up to 3 slices per axis
    (of numpy's edge values for `dtype`), each at least once, in a random order."""
    rng = np.random.default_rng(seed)
    values = rng.choice(edge_values(dtype), size=[min(n, 3) for n in shape])
    for axis, n in enumerate(shape):
        picks = np.arange(n) % values.shape[axis] if n else np.zeros(0, dtype=int)
        values = np.take(values, rng.permutation(picks), axis=axis)
    return values


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_unique_along_an_axis(dtype):
    """Rows along each axis of 2-d and 3-d inputs, with repeats; negative axes too. The
    graph as written (RAW_MODE) once per kind of dtype: the rewrites leave Unique as it is,
    and each case compiles for 2-4 s."""
    modes = (MODE, RAW_MODE) if dtype in ("bool", "int64", "uint8", "float64", "complex128") else (MODE,)
    for shape in [(6, 4), (4, 3, 5)]:
        x = pt.tensor("x", dtype=dtype, shape=(None,) * len(shape))
        values = _rows_with_repeats(dtype, shape)
        outputs = [o for axis in (0, 1, -1) for o in _unique_outputs(x, axis)]
        compare_with_py([x], outputs, [values], modes=modes)


@pytest.mark.parametrize("flags", list(itertools.product([False, True], repeat=3)))
def test_unique_along_an_axis_every_combination_of_outputs(flags):
    x = pt.tensor3("x")
    values = _rows_with_repeats("float64", (3, 5, 4), seed=1)
    outputs = [o for axis in (0, 2) for o in _unique_outputs(x, axis, flags)]
    compare_with_py([x], outputs, [values])


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "complex128"])
def test_unique_along_an_axis_nan_rows_and_signed_zeros(dtype):
    """Rows holding a NaN equal no row, not even their copies (numpy compares rows as
    structured elements); -0.0 equals 0.0, so the index names the first of the two.
    A 1-d input with an axis is flattened by numpy: there all NaNs are one value. Only a
    few rows: without an index numpy sorts with its quicksort, which keeps ties (copies
    of a NaN row) in input order, as ours does, only while it is an insertion sort."""
    nan, inf = np.nan, np.inf
    values = np.array([[1.0, nan], [-0.0, 2.0], [nan, 0.0], [1.0, nan], [0.0, 2.0],
                       [nan, 0.0], [1.0, -inf], [nan, nan], [nan, nan], [-1.0, 3.0]]).astype(dtype)
    if np.dtype(dtype).kind == "c":
        values[[0, 3], 1] = complex(1.0, nan)
        values[[2, 5], 0] = complex(nan, 0.0)
    x = pt.matrix("x", dtype=dtype)
    outputs = [o for axis in (0, 1) for flags in [(True, True, True), (False, True, False)]
               for o in _unique_outputs(x, axis, flags)]
    index = compare_with_py([x], outputs, [values])[2]
    assert sorted(index) == [0, 1, 2, 3, 5, 6, 7, 8, 9]  # only [0.0, 2] (4) merged, into [-0.0, 2]
    v = pt.vector("v", dtype=dtype)
    got = compare_with_py([v], _unique_outputs(v, 0), [values[:, 0].copy()])
    assert np.isnan(got[0][-1]) and not np.isnan(got[0][-2])


@pytest.mark.parametrize("static", [False, True])
def test_unique_along_an_axis_of_empty_inputs(static):
    """Size 0 along the axis: nothing; size 0 along the others: n equal (empty) rows."""
    for shape in [(0, 3), (3, 0), (2, 0, 3), (0, 0)]:
        x = pt.tensor("x", shape=shape if static else (None,) * len(shape))
        outputs = [o for axis in range(len(shape)) for o in _unique_outputs(x, axis)]
        compare_with_py([x], outputs, [np.zeros(shape)])


def test_unique_along_an_axis_with_shapes_unknown_at_lowering():
    """One compiled function, called with shapes that change the number of rows, their
    length, and the number of unique rows."""
    x = pt.matrix("x", dtype="int32")
    outputs = [o for axis in (0, 1) for o in _unique_outputs(x, axis)]
    fn = pytensor.function([x], outputs, mode="STABLEHLO")
    expected_fn = pytensor.function([x], outputs, mode=PY_MODE)
    for shape in [(5, 3), (7, 1), (1, 6), (0, 2), (4, 0), (9, 2), (5, 3)]:
        values = _rows_with_repeats("int32", shape, seed=sum(shape))
        for i, (g, e) in enumerate(zip(fn(values), expected_fn(values), strict=True)):
            assert_same(g, e, label=f"output {i}, shape {shape}")


@pytest.mark.parametrize("static", [False, True], ids=["run-time", "static"])
@pytest.mark.parametrize("n", [1, 15, 16, 17, 256, 257, 1000, 40_000])
def test_cumsum_cumprod_across_scan_blocks(n, static):
    """Long axes are scanned in blocks of 16 (`prefix_scan`; static ones from 257): sizes
    around a block, and a NaN, an inf and a sign change carried across blocks, along either
    axis and flattened, against numpy."""
    rng = np.random.default_rng(1)
    x = pt.tensor("x", dtype="float64", shape=(n if static else None, 3))
    i = pt.tensor("i", dtype="int64", shape=(n if static else None, 3))
    v = rng.normal(size=(n, 3))
    v[n // 2, 1] = np.nan
    v[n // 3, 2] = np.inf
    near_one = 1.0 + 1e-3 * v
    iv = rng.integers(-1000, 1000, size=(n, 3))
    outputs = [pt.cumsum(x, axis=0), pt.cumprod(x, axis=0), pt.cumsum(x), pt.cumsum(x.T, axis=1),
               pt.cumsum(i, axis=0), pt.cumprod(pt.sgn(i) + (pt.eq(i, 0)), axis=0)]
    got = pytensor.function([x, i], outputs, mode="STABLEHLO")(v, iv)
    got_near_one = pytensor.function([x], pt.cumprod(x, axis=0), mode="STABLEHLO")(near_one)
    expected = [np.cumsum(v, axis=0), np.cumprod(v, axis=0), np.cumsum(v), np.cumsum(v.T, axis=1),
                np.cumsum(iv, axis=0), np.cumprod(np.sign(iv) + (iv == 0), axis=0)]
    for k, (g, e) in enumerate(zip(got, expected)):
        assert_same(g, e, rtol=1e-12, label=f"output {k}")
    assert_same(got_near_one, np.cumprod(near_one, axis=0), rtol=1e-12)


def test_long_cumsums_add_in_numpys_order_in_one_compiled_loop(monkeypatch):
    """Along an axis of more than 256 (or of a run-time size), each element is combined
    into the total before it, in numpy's order (`regions.in_order_blocks`): numpy's floats
    to the bit, with terms from 1e-8 to 1e8; the loop over the blocks runs as one function
    of XLA:CPU (its small-loop call). A module compiled without that threshold
    (STABLEHLO_NO_FMA, or a module with a loop too long for the elemental emitter) gets
    the blocks written out instead (`expand_in_order_scans`), as does an exported one:
    numpy's values to rounding, and no loop left over the blocks."""
    import lowering.compile as comp
    from lowering import lower
    from lowering.export import export_portable, load_portable_artifact
    from pytensor.graph.fg import FunctionGraph

    hlo_texts = record_compiled_hlo(monkeypatch)
    rng = np.random.default_rng(3)
    for dtype in ("float64", "float32", "complex128"):
        x = pt.tensor("x", dtype=dtype, shape=(None, None))
        v = rng.normal(size=(3001, 5)) * 10.0 ** rng.integers(-8, 9, size=(3001, 5))
        v = (v + 1j * v[::-1] if dtype == "complex128" else v).astype(dtype)
        near_one = (1 + 1e-3 * rng.normal(size=(3001, 5))).astype(dtype)
        outputs = [pt.cumsum(x, axis=0), pt.cumsum(x), pt.cumprod(x, axis=0), pt.cumsum(x.T, axis=1)]
        expected = [np.cumsum(v, axis=0), np.cumsum(v), np.cumprod(near_one, axis=0), np.cumsum(v.T, axis=1)]
        fn = pytensor.function([x], outputs, mode="STABLEHLO")
        got = fn(v)
        got[2] = fn(near_one)[2]
        for k, (g, e) in enumerate(zip(got, expected)):
            assert g.dtype == e.dtype and np.array_equal(g, e), (dtype, k)
        assert "xla_cpu_small_call" in hlo_texts[-1]

    x, w = pt.dvector("x"), pt.dvector("w")
    v = rng.normal(size=40_003) * 10.0 ** rng.integers(-8, 9, size=40_003)
    near_one = 1 + 1e-3 * rng.normal(size=40_003)

    def written_out(mode):
        hlo_texts.clear()
        got = pytensor.function([x, w], [pt.cumsum(x), pt.cumprod(w)], mode=mode)(v, near_one)
        assert_same(got[0], np.cumsum(v), rtol=1e-12, atol=1e-12 * np.abs(v).max())
        assert_same(got[1], np.cumprod(near_one), rtol=1e-12)
        (text,) = hlo_texts
        assert "xla_cpu_small_call" not in text and "dynamic-update-slice" not in text, mode

    written_out("STABLEHLO_NO_FMA")
    with monkeypatch.context() as patch:
        patch.setattr(comp, "ELEMENTAL_MAX_OPS", 10)  # every loop is past it
        written_out("STABLEHLO")
    lowered = lower(FunctionGraph([x], [pt.cumsum(x)], clone=True))
    assert "in_order_scan" in lowered.as_text()
    exported = str(load_portable_artifact(export_portable(lowered)))
    assert "in_order_scan" not in exported and "dynamic_update_slice" not in exported
