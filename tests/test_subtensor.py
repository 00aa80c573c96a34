"""Basic indexing (Subtensor) vs numpy: static and run-time indices and slices."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from tests.helpers import compare_with_py
from tests.values import ALL_DTYPES, finite_values


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_static_indices_and_slices(dtype):
    x = pt.matrix("x", dtype=dtype)
    value = finite_values(dtype, 20).reshape(4, 5)
    outs = [x[1], x[-1, 2], x[::-1, 2:], x[1:3, ::-2], x[10:], x[:, -100:3], x[::3, ::-1], x[2:1]]
    compare_with_py([x], outs, [value])


@pytest.mark.parametrize("k", [-7, -2, 0, 1, 3, 9])
def test_runtime_slice_bounds(k):
    x = pt.matrix("x")
    n = pt.lscalar("n")
    outs = [x[:n], x[n:], x[::2, n:], x[-n:, 1]]
    if k != 0:
        outs.append(x[::n])
    compare_with_py([x, n], outs, [np.arange(20.0).reshape(4, 5), np.array(k)])


def test_runtime_bounds_on_static_shapes_and_negative_steps():
    x = pt.matrix("x", shape=(4, 5))
    n, m = pt.lscalar("n"), pt.lscalar("m")
    value = np.arange(20.0).reshape(4, 5)
    for a, b in [(1, -1), (-2, 2), (0, 1), (3, -3)]:
        compare_with_py([x, n, m], [x[n:m], x[n::m], x[:, m:n:-1]], [value, np.array(a), np.array(b)])


@pytest.mark.parametrize("k", [-3, 0, 2, 3])
def test_runtime_integer_index(k):
    x = pt.matrix("x")
    n = pt.lscalar("n")
    compare_with_py([x, n], [x[n], x[1, n], x[n, ::-1]], [np.arange(20.0).reshape(4, 5), np.array(k)])


def test_out_of_range_index_raises_index_error():
    x = pt.matrix("x")
    n = pt.lscalar("n")
    f = pytensor.function([x, n], x[n], mode="STABLEHLO")
    value = np.arange(20.0).reshape(4, 5)
    with pytest.raises(IndexError):
        f(value, 4)
    with pytest.raises(IndexError):
        f(value, -5)
    np.testing.assert_array_equal(f(value, -4), value[0])


def test_non_contiguous_and_empty():
    x = pt.matrix("x")
    base = np.arange(48.0).reshape(6, 8)
    compare_with_py([x], [x[1:, ::2], x[-1]], [base[::2, ::-3]])
    compare_with_py([x], [x[1:], x[:, 1:2]], [np.zeros((0, 3))])
