"""Convolve1d (np.convolve "full"/"valid") and its Blockwise batches against the Python mode."""

import contextlib

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.signal
from pytensor.tensor.signal import convolve1d, convolve2d
from pytensor.graph.fg import FunctionGraph
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.signal.conv import Convolve1d

from lowering import LoweringOptions, UnsupportedParameterError, lower
from tests.helpers import PLATFORM, PY_MODE, RAW_MODE, compare_each_with_py, compare_with_py
from tests.values import ALL_DTYPES


def _refused_on_this_platform(dtype):
    """XLA's GPU backend has no integer convolution: lowered for CUDA, an integer or
    bool convolution is refused by name (STABLEHLO_TEST_PLATFORM=cuda); elsewhere the
    comparison runs."""
    if PLATFORM == "cuda" and np.dtype(dtype).kind in "biu":
        return pytest.raises(UnsupportedParameterError, match="has no integer convolution")
    return contextlib.nullcontext()


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
    with _refused_on_this_platform(dtype):
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
    with _refused_on_this_platform(dtype):
        compare_with_py([m, w], outputs, [_values(dtype, (4, 6), 4), _values(dtype, (4, 3), 5)])
    fn = pytensor.function([m, w], outputs, mode="STABLEHLO")
    # PyTensor never broadcasts at run time: refused when the call is specialized
    with pytest.raises(ValueError, match="do not fit the graph"):
        fn(_values(dtype, (1, 2), 6), _values(dtype, (3, 5), 7))


def test_a_mode_per_entry_must_agree():
    """A run-time mode per entry (as the gradient builds it) is one grouped convolution
    when the entries agree; otherwise their lengths would differ: refused by name (it was
    refused when lowering)."""
    a, v, full = pt.matrix("a", shape=(2, 5)), pt.matrix("v", shape=(2, 3)), pt.vector("full", dtype="bool", shape=(2,))
    out = Blockwise(Convolve1d())(a, v, full)
    values = [_values("float64", (2, 5), 12), _values("float64", (2, 3), 13)]
    compare_each_with_py([a, v, full], [out], [[*values, np.array([flag, flag])] for flag in (True, False)], modes=(RAW_MODE,))
    fn = pytensor.function([a, v, full], out, mode=RAW_MODE)
    with pytest.raises(ValueError, match="batch entries with different modes"):
        fn(*values, np.array([True, False]))


@pytest.mark.parametrize("mode", ["full", "valid"])
@pytest.mark.parametrize("batch", [(), (2,)], ids=["vectors", "rows"])
def test_empty_inputs_raise_numpys_errors(mode, batch):
    """np.convolve's "a cannot be empty" / "v cannot be empty", checked in that order;
    "full" used to return [0., 0.] for an empty a, other cases failed to specialize."""
    a, v = pt.tensor("a", shape=(None,) * (1 + len(batch))), pt.dvector("v")
    out = convolve1d(a, v, mode=mode)
    functions = [pytensor.function([a, v], out, mode=m) for m in (PY_MODE, "STABLEHLO", RAW_MODE)]
    for n, k, message in [(0, 3, "a cannot be empty"), (3, 0, "v cannot be empty"), (0, 0, "a cannot be empty")]:
        for fn in functions:
            with pytest.raises(ValueError, match=message):
                fn(np.ones((*batch, n)), np.ones(k))
    compare_with_py([a, v], out, [np.ones((*batch, 1)), np.arange(3.0)])


# Static shapes take another lowering path (convolution, not dynamic_conv) whose dtype
# handling is the same: they run for one real and one complex dtype (CI time).
@pytest.mark.parametrize("dtype, static", [
    *((dtype, False) for dtype in ["float64", "float32", "int8", "int64", "uint16", "complex128"]),
    ("float64", True), ("complex128", True),
])
def test_convolve2d_every_mode(dtype, static):
    """scipy.signal.convolve in two dims ("same" and the boundaries are PyTensor's own
    padding around "valid"), either input the larger one, as one convolution."""
    shapes = [((5, 6), (2, 3)), ((2, 3), (5, 6)), ((1, 1), (3, 2)), ((4, 4), (4, 4))]
    if dtype not in ("float64", "complex128"):  # the shape cases are dtype-blind; each one compiles (CI time)
        shapes = shapes[:2]

    def graph(n, k):
        a, v = pt.tensor("a", dtype=dtype, shape=n), pt.tensor("v", dtype=dtype, shape=k)
        outputs = [convolve2d(a, v, mode=mode) for mode in ("full", "valid", "same")]
        return [a, v], [*outputs, convolve2d(a, v, mode="full", boundary="wrap")]

    values = [[_values(dtype, n, 8), _values(dtype, k, 9)] for n, k in shapes]
    with _refused_on_this_platform(dtype):
        if static:
            for (n, k), test_values in zip(shapes, values):
                compare_with_py(*graph(n, k), test_values)
        else:  # one graph called with every pair of shapes
            compare_each_with_py(*graph((None, None), (None, None)), values)


def test_batched_convolve2d_and_its_gradient():
    a, v = pt.tensor("a", shape=(3, 4, 5)), pt.tensor("v", shape=(3, 2, 2))
    out = convolve2d(a, v, mode="valid")
    grads = pytensor.grad(out.sum(), [a, v])
    compare_with_py([a, v], [out, *grads], [_values("float64", (3, 4, 5), 10), _values("float64", (3, 2, 2), 11)])


def test_convolve2d_valid_needs_one_input_larger_along_every_axis():
    a, v = pt.dmatrix("a"), pt.dmatrix("v")
    for fn in (pytensor.function([a, v], convolve2d(a, v, mode="valid"), mode=m) for m in (PY_MODE, "STABLEHLO")):
        with pytest.raises(ValueError, match="one must be at least as large as the other in every dimension"):
            fn(np.ones((3, 1)), np.ones((1, 3)))
    # scipy's errors for an empty input vary with the shapes; ours names the input
    f = pytensor.function([a, v], convolve2d(a, v), mode="STABLEHLO")
    with pytest.raises(ValueError, match="in2 is empty"):
        f(np.ones((3, 3)), np.ones((0, 2)))


@pytest.mark.parametrize("dtype", ["bool", "float16"])
def test_convolve2d_of_dtypes_scipy_refuses(dtype):
    """scipy raises "Unsupported type" (README); bool is any of the products, float16 the
    float64 convolution rounded."""
    a, v = pt.matrix("a", dtype=dtype), pt.matrix("v", dtype=dtype)
    av, vv = _values(dtype, (4, 5), 14), _values(dtype, (2, 3), 15)
    got = pytensor.function([a, v], convolve2d(a, v), mode="STABLEHLO")(av, vv)
    expected = scipy.signal.convolve(av.astype("float64"), vv.astype("float64"))
    assert got.dtype == dtype
    if dtype == "bool":
        np.testing.assert_array_equal(got, expected != 0)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_convolutions_are_real_ones_when_lowered_for_cuda(dtype):
    # XLA's GPU backend convolves real numbers only (UNIMPLEMENTED at run time, seen on an
    # H100): four real convolutions instead. Such a module has no library call, so the
    # CPU runs it too and checks the arithmetic here.
    a, v = pt.tensor("a", dtype=dtype, shape=(None,)), pt.tensor("v", dtype=dtype, shape=(None,))
    m, k = pt.tensor("m", dtype=dtype, shape=(5, 6)), pt.tensor("k", dtype=dtype, shape=(2, 3))
    outputs = [convolve1d(a, v, mode="full"), convolve1d(v, a, mode="valid"), convolve2d(m, k, mode="full")]
    lowered = lower(FunctionGraph([a, v, m, k], outputs, clone=True), options=LoweringOptions(platform="cuda"))
    convolutions = [line for line in lowered.as_text().splitlines() if "stablehlo.convolution" in line]
    assert convolutions and not any("complex" in line for line in convolutions)
    rng = np.random.default_rng(3)
    values = [(rng.normal(size=s) + 1j * rng.normal(size=s)).astype(dtype) for s in [(6,), (3,), (5, 6), (2, 3)]]
    got = lowered.compile("cpu")(*values)
    expected = pytensor.function([a, v, m, k], outputs, mode=PY_MODE)(*values)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "complex64" else dict(rtol=1e-12, atol=1e-12)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype
        np.testing.assert_allclose(g, e, **tol)


def test_integer_convolutions_are_refused_when_lowered_for_cuda():
    a = pt.tensor("a", dtype="int32", shape=(None,))
    with pytest.raises(UnsupportedParameterError, match=r"int32 input on platform 'cuda'.*no integer convolution"):
        lower(FunctionGraph([a], [convolve1d(a, a)], clone=True), options=LoweringOptions(platform="cuda"))


def test_convolve2d_with_a_kernel_of_some_static_dims():
    """A kernel whose rows are static and columns not (`expand_dims` of a run-time
    vector, PyTensor's own test_batched_1d_agrees_with_2d_row_filter): the padding of the
    run-time dims was built from the static ones too, which are plain ints there, and
    lowering raised AttributeError."""
    data, kernel = pt.matrix("data"), pt.vector("kernel")
    row = pt.expand_dims(kernel, 0)
    assert row.type.shape == (1, None)
    outputs = [convolve2d(data, row, mode=mode, method=method) for mode in ("full", "valid", "same")
               for method in ("direct", "fft")]
    compare_each_with_py([data, kernel], [*outputs, convolve1d(data[0], kernel)],
                         [[np.arange(24.0).reshape(3, 8), np.array([1.0, -2.0, 0.5])],
                          [np.ones((2, 6)), np.arange(5.0)]])
