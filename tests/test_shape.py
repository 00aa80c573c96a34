"""DimShuffle, Reshape, Shape, Shape_i, SpecifyShape vs PyTensor's Python mode."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.tensor.shape import Shape_i, specify_shape

from tests.helpers import compare_each_with_py, compare_with_py
from tests.values import ALL_DTYPES, finite_values


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_shape_ops_every_dtype(dtype):
    x = pt.tensor3("x", dtype=dtype)
    value = finite_values(dtype, 24).reshape(2, 3, 4)
    outs = [x.dimshuffle(2, 0, 1), x.dimshuffle("x", 1, "x", 0, 2), x.reshape((4, -1)),
            x.reshape((-1,)), x.reshape((2, 12)), x.shape, Shape_i(1)(x), x.T]
    compare_with_py([x], outs, [value])


def test_dimshuffle_drops_broadcastable_dims():
    x = pt.tensor3("x", shape=(None, 1, None))
    compare_with_py([x], [x.dimshuffle(2, 0), x.dimshuffle(0, "x", 2), x.squeeze(1)], [np.ones((3, 1, 2))])
    compare_with_py([x], [x.dimshuffle(2, 0)], [np.zeros((0, 1, 5))])


def test_reshape_to_runtime_shapes():
    x = pt.matrix("x")
    n = pt.lscalar("n")
    m = pt.iscalar("m")
    value = np.arange(24.0).reshape(4, 6)
    f_outs = [x.reshape((n, -1)), x.reshape((n, m, -1)), x.reshape(pt.stack([m, n]))]
    for n_val, m_val in [(2, 3), (3, 4), (6, 2), (24, 1)]:
        if 24 % (n_val * m_val) == 0:
            compare_with_py([x, n, m], f_outs[:2] + ([f_outs[2]] if n_val * m_val == 24 else []),
                            [value, np.array(n_val), np.array(m_val, "int32")])


def test_one_compiled_function_many_runtime_shapes():
    x = pt.vector("x")
    n = pt.lscalar("n")
    f = pytensor.function([x, n], x.reshape((n, -1)), mode="STABLEHLO")
    value = np.arange(12.0)
    for k in (1, 2, 3, 4, 6, 12):
        np.testing.assert_array_equal(f(value, k), value.reshape(k, -1))


def test_reshape_with_run_time_entries_follows_numpy():
    """Any negative entry is the one numpy infers; numpy's errors, raised at call time,
    also where an entry is 0 beside the inferred one (which once divided by zero while
    the runtime folded the shapes, killing the process with SIGFPE)."""
    x, n, m = pt.vector("x"), pt.lscalar("n"), pt.lscalar("m")
    value = np.arange(6.0)
    compare_each_with_py([x, n, m], [x.reshape((n, m))],
                         [[value, *map(np.int64, sizes)] for sizes in [(2, 3), (-2, 3), (3, -7), (-1, 6), (6, 1)]])
    compare_with_py([x, n, m], [x.reshape((n, m))], [value[:0], np.int64(-1), np.int64(3)])
    f = pytensor.function([x, n, m], x.reshape((n, m)), mode="STABLEHLO")
    for sizes, message in [((0, -1), "cannot reshape"), ((-1, 0), "cannot reshape"), ((4, -1), "cannot reshape"),
                           ((4, 2), "cannot reshape"), ((-1, -1), "one unknown dimension"), ((-2, -3), "one unknown")]:
        with pytest.raises(ValueError, match=message):
            f(value, *sizes)


def test_reshape_empty_and_zero_d():
    x = pt.matrix("x")
    compare_with_py([x], [x.reshape((0, 5)), x.reshape((-1, 5)), x.shape], [np.zeros((0, 5))])
    s = pt.scalar("s")
    compare_with_py([s], [s.reshape((1, 1)), s.dimshuffle("x"), s.shape], [np.array(2.0)])


def test_specify_shape_is_checked():
    x = pt.matrix("x")
    y = specify_shape(x, (None, 3))
    compare_with_py([x], [y * 2, y.shape], [np.ones((2, 3))])
    f = pytensor.function([x], specify_shape(x, (2, None)).sum(), mode=pytensor.compile.mode.Mode(
        linker=pytensor.compile.mode.get_mode("STABLEHLO").linker, optimizer=None))
    assert f(np.ones((2, 5))) == 10
    with pytest.raises(AssertionError, match="SpecifyShape"):
        f(np.ones((3, 5)))


@pytest.mark.parametrize("rows", [2, 4])
def test_specify_shape_mismatch_raises_its_check_whatever_reads_it(rows):
    """Readers of a SpecifyShape'd array take its static sizes: an argument of other
    sizes reaches SpecifyShape's own call-time check, where a cast to those sizes made
    the specialized module fail to verify ("'stablehlo.convert' op requires the same
    shape") before anything ran."""
    x = pt.matrix("x")
    y = specify_shape(x, (3, None))
    outs = [y * 2, y.T @ y, pt.exp(y).sum(0), y[::-1, :1]]
    compare_with_py([x], outs, [np.arange(6.0).reshape(3, 2)])
    for out in outs:
        f = pytensor.function([x], out, mode="STABLEHLO")
        value = np.arange(2.0 * rows).reshape(rows, 2)
        with pytest.raises(AssertionError, match=r"SpecifyShape: dim 0 .*\(node: SpecifyShape\(x, 3"):
            f(value)
        np.testing.assert_array_equal(value, np.arange(2.0 * rows).reshape(rows, 2))


def test_join_and_split_dims():
    from pytensor.tensor.reshape import join_dims, split_dims

    x, n = pt.tensor3("x"), pt.lscalar("n")
    v = np.arange(24.0).reshape(2, 3, 4)
    outputs = [
        join_dims(x, start_axis=1, n_axes=2), join_dims(x, start_axis=0, n_axes=3),
        join_dims(x, start_axis=0, n_axes=1), split_dims(x, shape=(n, 2), axis=2),
        split_dims(x, shape=(3, 1), axis=1),
    ]
    compare_with_py([x, n], outputs, [v, np.int64(2)])
