"""CumOp (cumsum, cumprod): numpy's values in PyTensor's output dtype, static and unknown sizes."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from tests.helpers import PY_MODE, RAW_MODE, assert_same
from tests.values import ALL_DTYPES


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
