"""Convolve1d (np.convolve "full"/"valid") and its Blockwise batches against the Python mode."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.tensor.signal import convolve1d
from pytensor.graph.fg import FunctionGraph
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.signal.conv import Convolve1d

from lowering import UnsupportedParameterError, lower
from tests.helpers import RAW_MODE, compare_with_py
from tests.values import ALL_DTYPES


def _values(dtype, size, seed):
    v = np.random.default_rng(seed).normal(size=size) * 3
    return v > 0 if dtype == "bool" else v.astype(dtype)


@pytest.mark.parametrize("static", [False, True])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_convolve1d_full_and_valid(dtype, static):
    a = pt.tensor("a", dtype=dtype, shape=(6,) if static else (None,))
    v = pt.tensor("v", dtype=dtype, shape=(3,) if static else (None,))
    outputs = [convolve1d(a, v, mode="full"), convolve1d(a, v, mode="valid"), convolve1d(v, a, mode="valid")]
    tol = dict(rtol=1e-2, atol=1e-1) if dtype == "float16" else {}
    compare_with_py([a, v], outputs, [_values(dtype, 6, 0), _values(dtype, 3, 1)], **tol)


def test_unbatched_op_with_run_time_mode():
    a, v, full = pt.vector("a"), pt.vector("v"), pt.scalar("full", dtype="bool")
    out = Convolve1d()(a, v, full)
    fn = pytensor.function([a, v, full], out, mode=RAW_MODE)
    av, vv = np.arange(5.0), np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(fn(av, vv, True), np.convolve(av, vv, "full"))
    np.testing.assert_allclose(fn(av, vv, False), np.convolve(av, vv, "valid"))


def test_batched_convolutions_are_feature_groups():
    a = pt.tensor("a", shape=(2, 3, None))
    v = pt.tensor("v", shape=(1, 3, 4))
    compare_with_py([a, v], [convolve1d(a, v, mode="full"), convolve1d(a, v, mode="valid")],
                    [_values("float64", (2, 3, 7), 2), _values("float64", (1, 3, 4), 3)])
    assert "stablehlo.while" not in _raw_ir([a, v], convolve1d(a, v))


def _raw_ir(inputs, output):
    return lower(FunctionGraph(inputs, [output], clone=True)).as_text(raw=True)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int16", "bool", "complex128"])
def test_a_batch_of_unknown_size_is_convolved_entry_by_entry(dtype):
    # A feature group count is an attribute: with the batch size known only at the call,
    # each entry is one convolution, in a loop (PyTensor's convolve1d of two matrices).
    m, w = pt.matrix("m", dtype=dtype), pt.matrix("w", dtype=dtype)
    outputs = [convolve1d(m, w, mode=mode) for mode in ("full", "valid", "same")]
    assert "stablehlo.while" in _raw_ir([m, w], outputs[0])
    compare_with_py([m, w], outputs, [_values(dtype, (4, 6), 4), _values(dtype, (4, 3), 5)])
    fn = pytensor.function([m, w], outputs, mode="STABLEHLO")
    # PyTensor never broadcasts at run time: refused when the call is specialized
    with pytest.raises(ValueError, match="do not fit the graph"):
        fn(_values(dtype, (1, 2), 6), _values(dtype, (3, 5), 7))


def test_a_batch_with_a_mode_per_entry_is_refused_by_name():
    # Each entry's length would depend on its mode: no loop can size the output.
    a, v, full = pt.matrix("a", shape=(2, 5)), pt.matrix("v", shape=(2, 3)), pt.vector("full", dtype="bool", shape=(2,))
    out = Blockwise(Convolve1d())(a, v, full)
    with pytest.raises(UnsupportedParameterError, match=r"values of input 2 \(full\)"):
        pytensor.function([a, v, full], out, mode=RAW_MODE)
