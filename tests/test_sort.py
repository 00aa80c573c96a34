"""SortOp/ArgSortOp: numpy's order (NaN last, complex NaN classes), every dtype and axis."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from tests.helpers import RAW_MODE, compare_with_py
from tests.values import ALL_DTYPES


def _values(dtype, shape=(4, 5)):
    rng = np.random.default_rng(0)
    v = rng.normal(size=shape) * 3
    if dtype.startswith("complex"):
        v = v + 1j * rng.integers(-2, 2, size=shape)  # equal real parts: the imaginary decides
    v = v > 0 if dtype == "bool" else v.astype(dtype)
    if dtype.startswith(("float", "complex")):
        v[0, 1] = v[2, 3] = np.nan
        v[1, 0] = -np.inf
    if dtype.startswith("complex"):
        v[1, 1], v[1, 2], v[3, 3] = complex(np.nan, 1), complex(1, np.nan), complex(2, np.nan)
    return v


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_sort_and_argsort(dtype):
    x = pt.matrix("x", dtype=dtype)
    outputs = [pt.sort(x), pt.sort(x, axis=0), pt.sort(x, axis=None),
               pt.argsort(x, kind="stable"), pt.argsort(x, axis=0, kind="stable")]
    compare_with_py([x], outputs, [_values(dtype)])


def test_ties_keep_input_order_and_empty_inputs():
    x = pt.vector("x")
    compare_with_py([x], [pt.argsort(x, kind="stable"), pt.sort(x)], [np.array([2.0, 1.0, 2.0, 1.0, -0.0, 0.0])])
    compare_with_py([x], [pt.argsort(x), pt.sort(x)], [np.zeros(0)])


def test_bad_axis_is_a_clear_error():
    x = pt.vector("x")
    from pytensor.tensor.sort import SortOp

    with pytest.raises(np.exceptions.AxisError, match="axis 3 is out of bounds"):
        pytensor.function([x], SortOp("quicksort")(x, 3), mode=RAW_MODE)
