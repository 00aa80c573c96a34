"""Alloc, AllocEmpty, DeepCopyOp, TypeCastingOp, TensorFromScalar, ScalarFromTensor, MakeVector,
Join, Split, ExtractDiag, ARange, Eye, Choose, PermuteRowElements, Default, CpuContiguous."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
import pytest
from pytensor.graph.fg import FunctionGraph
from pytensor.tensor.basic import scalar_from_tensor, tensor_from_scalar

from lowering import lower
from lowering.errors import UnsupportedOpsError
from tests.helpers import PY_MODE, RAW_MODE, compare_each_with_py, compare_with_py
from tests.values import ALL_DTYPES, finite_values


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_alloc_and_friends_every_dtype(dtype):
    v = pt.scalar("v", dtype=dtype)
    row = pt.vector("row", dtype=dtype)
    n = pt.lscalar("n")
    value = finite_values(dtype, 3)
    outs = [pt.alloc(v, 2, 3), pt.alloc(row, n, 3), pt.alloc(v, n), pt.stack([v, v]),
            tensor_from_scalar(scalar_from_tensor(v)), pt.zeros((n, 2), dtype=dtype),
            pt.ones_like(row), pt.full((2,), v)]
    compare_each_with_py([v, row, n], outs, [[value[0], value, np.array(k)] for k in (0, 1, 4)])


def test_alloc_empty_has_the_right_shape_and_dtype():
    n = pt.lscalar("n")
    out = pt.empty((n, 3), dtype="int16")
    f = pytensor.function([n], out, mode="STABLEHLO")
    got = f(4)
    assert got.shape == (4, 3) and got.dtype == np.int16


def test_outputs_that_are_inputs_are_copies():
    x = pt.vector("x")
    f = pytensor.function([x], [x, x * 1], mode=RAW_MODE)
    value = np.arange(3.0)
    out = f(value)[0]
    out[0] = 42.0
    assert value[0] == 0.0


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint64", "float16", "float64", "complex64"])
def test_type_casting_ops_pass_values_through(dtype):
    """ViewOp and the gradient markers built on it are identities forward; the raw
    graph keeps them (PyTensor's rewrites remove most)."""
    from pytensor.compile.ops import view_op
    from pytensor.gradient import disconnected_grad, grad_scale, zero_grad

    x = pt.matrix("x", dtype=dtype)
    outs = [view_op(x), zero_grad(x), disconnected_grad(x), grad_scale(x, 2.0)]
    compare_with_py([x], outs, [finite_values(dtype, 6).reshape(2, 3)])


def test_xtensor_graphs():
    """xtensor's named-dim Ops become tensor Ops under PyTensor's rewrites; the casts
    between the two types stay at the graph's edges."""
    import pytensor.xtensor as ptx
    from pytensor.compile.mode import Mode

    x = ptx.xtensor("x", dims=("a", "b"), shape=(None, 3))
    y = ptx.xtensor("y", dims=("b",), shape=(3,))
    outs = [(ptx.math.exp(x) + y).sum("a"), x.transpose("b", "a") * 2, ptx.math.tanh(y)]
    values = [np.arange(6.0).reshape(2, 3) / 4, np.array([0.5, -1.0, 2.0])]
    expected = pytensor.function([x, y], outs, mode=Mode(linker="py", optimizer="fast_compile"))(*values)
    got = pytensor.function([x, y], outs, mode="STABLEHLO")(*values)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-12)
        assert g.shape == e.shape
    with pytest.raises(UnsupportedOpsError, match="XReduce.*\n.*lower_xtensor"):
        lower(FunctionGraph([x, y], outs))  # not rewritten yet


def test_scalar_graph_inputs():
    a = ps.float64("a")
    b = ps.int32("b")
    t = tensor_from_scalar(a * b)
    compare_with_py([a, b], [t, t * 2], [np.float64(1.5), np.int32(3)], modes=(RAW_MODE,))


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint32", "float32", "complex128"])
def test_join(dtype):
    x = pt.matrix("x", dtype=dtype)
    y = pt.matrix("y", dtype=dtype)
    vx, vy = finite_values(dtype, 6).reshape(2, 3), finite_values(dtype, 9, seed=2).reshape(3, 3)
    compare_with_py([x, y], [pt.join(0, x, y), pt.join(-1, x, x), pt.concatenate([y, x, y])], [vx, vy])
    compare_with_py([x, y], [pt.join(0, x, y)], [np.zeros((0, 3), dtype), vy])


def test_arange_and_eye_with_runtime_sizes():
    """The JAX backend needs concrete values here; we specialize on them per call."""
    n, m, k = pt.lscalar("n"), pt.lscalar("m"), pt.lscalar("k")
    start, step = pt.scalar("start"), pt.scalar("step")
    outs = [pt.arange(n), pt.arange(k, n, 2), pt.arange(start, n, step), pt.eye(n),
            pt.eye(n, m, k), pt.eye(n, dtype="int8"), pt.arange(n, k, -1)]
    compare_each_with_py([n, m, k, start, step], outs, [
        [np.array(n_val), np.array(m_val), np.array(k_val), np.array(0.5), np.array(step_val)]
        for n_val, m_val, k_val, step_val in [(5, 3, 1, 0.25), (0, 2, -1, 1.5), (4, 4, -6, -0.5), (7, 1, 2, 3.0)]])


@pytest.mark.parametrize("make", [
    lambda n, x: pt.zeros((n, 2)), lambda n, x: pt.alloc(x, n, 3), lambda n, x: pt.empty((n,)),
    lambda n, x: pt.eye(n), lambda n, x: pt.eye(3, n),
], ids=["zeros", "alloc", "empty", "eye", "eye_columns"])
def test_negative_run_time_sizes_raise_numpys_error(make):
    """numpy's "negative dimensions are not allowed", naming the node (specializing to the
    negative size used to fail first: "... do not fit the graph")."""
    n, x = pt.lscalar("n"), pt.dvector("x")
    f = pytensor.function([n, x], make(n, x), mode="STABLEHLO", on_unused_input="ignore")
    py = pytensor.function([n, x], make(n, x), mode=PY_MODE, on_unused_input="ignore")
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        py(-2, np.ones(3))
    with pytest.raises(ValueError, match=r"negative dimensions are not allowed \(node: (Alloc|AllocEmpty|Eye)"):
        f(-2, np.ones(3))
    assert f(0, np.ones(3)).size == 0


@pytest.mark.parametrize("mode", ["STABLEHLO", RAW_MODE], ids=["rewritten", "raw"])
def test_alloc_refuses_run_time_broadcasting(mode):
    """A length-1 value along a dim PyTensor does not know is 1 may not stretch (Alloc's
    perform); it used to repeat silently. A length-1 output dim takes it as it is."""
    x, n = pt.dvector("x"), pt.lscalar("n")
    outs = [pt.alloc(x, 2, n), pt.broadcast_to(x, (2, n))]
    f = pytensor.function([x, n], outs, mode=mode)
    py = pytensor.function([x, n], outs, mode=PY_MODE)
    for value, k in [(np.arange(3.0), 3), (np.array([7.0]), 1)]:
        for got, expected in zip(f(value, k), py(value, k)):
            np.testing.assert_array_equal(got, expected)
    for fn in (py, f):
        with pytest.raises(ValueError, match="Runtime broadcasting not allowed"):
            fn(np.array([7.0]), 3)


@pytest.mark.parametrize("dtypes", [("float64",) * 3, ("float32",) * 3, ("float16",) * 3, ("int32", "int32", "float32"),
                                    ("int8", "float32", "int8")])
@pytest.mark.parametrize("dtype", [None, "float32", "float64"])
def test_arange_fills_as_numpy(dtypes, dtype):
    """numpy's fill: start, start + step (perform's Python floats), then start + i * delta
    with delta the difference of those two in the output type. start + i * step, as
    before, was up to 5,000 ulps off near zero."""
    start, stop, step = (pt.scalar(f"v{i}", dtype=d) for i, d in enumerate(dtypes))
    out = pt.arange(start, stop, step, dtype=dtype) if dtype else pt.arange(start, stop, step)
    rng = np.random.default_rng(0)
    for _ in range(10):
        a, s = rng.normal() * 10.0 ** rng.integers(-1, 4), rng.normal() * 10.0 ** rng.integers(-1, 2)
        values = [np.asarray(v).astype(d) for v, d in zip((a, a + rng.integers(1, 30) * s, s), dtypes)]
        if values[2] != 0:
            compare_with_py([start, stop, step], [out], values, rtol=0, atol=0)


def test_arange_lengths_at_the_edges():
    """numpy: one element where (stop - start) / step underflows to +0 (a step past the
    span, also an infinite one); ValueError where that quotient is NaN or too long."""
    start, stop, step = pt.dscalar("start"), pt.dscalar("stop"), pt.dscalar("step")
    f = pytensor.function([start, stop, step], pt.arange(start, stop, step), mode="STABLEHLO")
    py = pytensor.function([start, stop, step], pt.arange(start, stop, step), mode=PY_MODE)
    for values in [(0.0, 10.0, np.inf), (0.0, 1e-300, 1e300), (0.0, -1e-300, 1e300), (0.0, 10.0, -np.inf),
                   (-0.0, 1e-300, -1e300), (5.0, 0.0, -2.0)]:
        np.testing.assert_array_equal(f(*values), py(*values))
    for values, message in [((0.0, np.inf, 1.0), "Maximum allowed size exceeded"),
                            ((0.0, -np.inf, 1.0), "Maximum allowed size exceeded"),
                            ((0.0, 1e300, 1.0), "Maximum allowed size exceeded"),
                            ((0.0, np.nan, 1.0), "cannot compute length"), ((np.inf, np.inf, 1.0), "cannot compute length")]:
        with pytest.raises(ValueError, match=message):
            py(*values)
        with pytest.raises(ValueError, match=message):
            f(*values)


def test_arange_with_zero_step_raises():
    n, step = pt.lscalar("n"), pt.lscalar("step")
    f = pytensor.function([n, step], pt.arange(0, n, step), mode="STABLEHLO")
    with pytest.raises(ZeroDivisionError):
        f(5, 0)
    np.testing.assert_array_equal(f(5, 2), [0, 2, 4])


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_split_constant_sizes(dtype):
    x = pt.matrix("x", dtype=dtype)
    v = np.arange(20).reshape(4, 5).astype(dtype)
    outputs = [*pt.split(x, [1, 3], n_splits=2, axis=0), *pt.split(x, [2, 0, 3], n_splits=3, axis=-1)]
    compare_with_py([x], outputs, [v])


def test_split_sizes_from_scalar_inputs_and_errors():
    x, a, b = pt.matrix("x"), pt.lscalar("a"), pt.lscalar("b")
    outputs = pt.split(x, pt.stack([a, b]), n_splits=2, axis=1)
    compare_with_py([x, a, b], outputs, [np.arange(10.0).reshape(2, 5), np.int64(2), np.int64(3)])
    fn = pytensor.function([x, a, b], outputs, mode=RAW_MODE)
    with pytest.raises(ValueError, match="do not sum to the length of axis 1"):
        fn(np.ones((2, 5)), 2, 2)
    with pytest.raises(ValueError, match="do not sum"):  # sizes past the end: still our check
        fn(np.ones((2, 5)), 4, 4)
    with pytest.raises(ValueError, match="cannot be negative"):
        fn(np.ones((2, 5)), 6, -1)


def test_negative_constant_split_sizes_are_refused_by_name():
    """PyTensor types the output of a negative constant size with that length (-1), which
    no tensor type holds: the build raises Split's own message, naming the node (it
    raised MLIR's "invalid tensor dimension size")."""
    x = pt.matrix("x")
    outputs = pt.split(x, [5, -1], n_splits=2, axis=0)
    assert outputs[1].type.shape[0] == -1
    with pytest.raises(ValueError, match=r"Split sizes cannot be negative \(node: Split\{2\}\(x, 0, \[ 5 -1\]\)\)"):
        pytensor.function([x], outputs, mode="STABLEHLO")
    with pytest.raises(ValueError, match="Split sizes cannot be negative"):
        pytensor.function([x], outputs, mode=PY_MODE)(np.ones((4, 6)))


def test_split_sizes_from_a_vector_of_unknown_length():
    """Split.perform's checks, in its order: the vector's length, the sum, the signs."""
    x, s = pt.vector("x"), pt.lvector("s")
    outputs = pt.split(x, s, n_splits=2)
    compare_each_with_py([x, s], outputs, [[np.arange(5.0), np.array(sizes)] for sizes in ([2, 3], [0, 5], [5, 0])])
    fn = pytensor.function([x, s], outputs, mode="STABLEHLO")
    for sizes, message in [([2, 3, 0], "length of splits"), ([5], "length of splits"), ([], "length of splits"),
                           ([3, 3], "do not sum"), ([2, -1], "do not sum"), ([6, -1], "negative")]:
        with pytest.raises(ValueError, match=message):
            fn(np.arange(5.0), np.array(sizes, dtype="int64"))


@pytest.mark.parametrize("shape", [(None, None, None), (3, 4, 5)])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_extract_diag(dtype, shape):
    x = pt.tensor("x", dtype=dtype, shape=shape)
    v = np.arange(60).reshape(3, 4, 5).astype(dtype)
    outputs = [pt.diagonal(x, offset=o, axis1=a1, axis2=a2)
               for o, a1, a2 in [(0, 0, 1), (1, 1, 2), (-2, 0, 2), (2, 2, 0), (9, 0, 1)]]
    compare_with_py([x], outputs, [v])


def test_diag_of_a_matrix_with_runtime_shape():
    m = pt.matrix("m")
    compare_with_py([m], [pt.diag(m), pt.diag(m, k=-1), pt.diag(m, k=5)], [np.arange(12.0).reshape(3, 4)])
    compare_with_py([m], [pt.diag(m)], [np.zeros((0, 3))])


def _raises_as_py(inputs, output, values, error, message):
    """The Python mode and STABLEHLO (rewritten and raw) raise `error` matching `message`."""
    for mode in (PY_MODE, "STABLEHLO", RAW_MODE):
        with pytest.raises(error, match=message):
            pytensor.function(inputs, output, mode=mode)(*values)


@pytest.mark.parametrize("mode", ["raise", "wrap", "clip"])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_choose(dtype, mode):
    """np.choose over the broadcast of the index and one choice (sizes of 1 at run time
    broadcast, as in numpy), each mode's reading of indices outside [0, n)."""
    index_dtype = {"bool": "bool", "int8": "int8", "uint16": "uint16", "float32": "uint32"}.get(dtype, "int64")
    a = pt.tensor("a", dtype=index_dtype, shape=(None, None))
    c = pt.tensor("c", dtype=dtype, shape=(None, None, None))
    c2 = pt.tensor("c", dtype=dtype, shape=(None, None))
    rng = np.random.default_rng(1)
    sets = []
    cases = [((2, 3), (4, 2, 3)), ((1, 3), (4, 2, 1)), ((2, 1), (2, 1, 5)), ((0, 3), (3, 1, 3)), ((2, 3), (4, 3)),
             ((2, 1), (3, 4))]
    for a_shape, c_shape in cases:
        n = 2 if index_dtype == "bool" else c_shape[0]
        low = 0 if mode == "raise" or np.dtype(index_dtype).kind in "bu" else -2 * n
        high = n if mode == "raise" else 2 * n
        sets.append([rng.integers(low, high, size=a_shape).astype(index_dtype),
                     finite_values(dtype, int(np.prod(c_shape))).reshape(c_shape)])
    compare_each_with_py([a, c], pt.basic.choose(a, c, mode=mode), [s for s in sets if s[1].ndim == 3])
    compare_each_with_py([a, c2], pt.basic.choose(a, c2, mode=mode), [s for s in sets if s[1].ndim == 2])


def test_choose_errors_are_numpys():
    """np.choose's errors, in its order: no choices, an index it cannot cast, more than
    63 choices, shapes that do not broadcast, an index outside [0, n) (mode "raise")."""
    a, c, u = pt.lvector("a"), pt.matrix("c"), pt.vector("u", dtype="uint64")
    out = pt.basic.choose(a, c)
    for values, error, message in [
        ([np.array([0, 1]), np.zeros((0, 2))], ValueError, "0-length sequence"),
        ([np.array([0, 1]), np.zeros((64, 2))], ValueError, "at most 64 array objects"),
        ([np.array([0, 1]), np.zeros((3, 3))], ValueError, "shape mismatch: objects cannot be broadcast"),
        ([np.array([0, 3]), np.zeros((3, 2))], ValueError, "invalid entry in choice array"),
        ([np.array([-1, 0]), np.zeros((3, 2))], ValueError, "invalid entry in choice array"),
    ]:
        _raises_as_py([a, c], out, values, error, message)
    _raises_as_py([u, c], pt.basic.choose(u, c, mode="clip"), [np.array([0, 1], "uint64"), np.zeros((3, 2))],
                  TypeError, r"Cannot cast array data from dtype\('uint64'\)")


@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_permute_row_elements(dtype, inverse):
    """Each row of x reordered by the matching row of y (or its inverse): one permutation
    for every row, one per row, x's one row for every permutation, a batch dim of 1
    broadcast, rows of length 1; negative and unsigned indices."""
    rng = np.random.default_rng(2)
    cases = [((3, 4), (4,)), ((3, 4), (3, 4)), ((4,), (3, 4)), ((1, 2, 4), (3, 1, 4)), ((3, 1), (3, 4)),
             ((2, 5), (2, 1)), ((0, 4), (0, 4))]
    for (x_shape, y_shape), y_dtype in zip(cases, ["int64", "int8", "uint8", "int32", "int64", "uint16", "int64"]):
        if inverse and y_shape[-1] == 1 and x_shape[-1] != 1:
            continue  # numpy's shape mismatch (test below)
        x = pt.tensor("x", dtype=dtype, shape=tuple(1 if s == 1 else None for s in x_shape))
        y = pt.tensor("y", dtype=y_dtype, shape=tuple(1 if s == 1 else None for s in y_shape))
        perms = np.argsort(rng.random(y_shape), axis=-1)
        if x_shape[-1] == 1 and not inverse:  # x[..., y] of rows of one element
            perms = np.zeros(y_shape, "int64")
        if y_dtype.startswith("int"):
            indexed = y_shape[-1] if inverse and x_shape[-1] == 1 else x_shape[-1]
            perms = np.where(rng.random(y_shape) < 0.5, perms - indexed, perms)
        x_value = finite_values(dtype, int(np.prod(x_shape))).reshape(x_shape)
        compare_with_py([x, y], pt.basic.permute_row_elements(x, y, inverse), [x_value, perms.astype(y_dtype)])


def test_permute_row_elements_gradient_and_inverse_permutation():
    x, y, p = pt.matrix("x"), pt.lmatrix("y"), pt.lvector("p")
    cost = (pt.basic.permute_row_elements(x, y) * pt.arange(4.0)).sum()
    y_value = np.argsort(np.random.default_rng(3).random((3, 4)), axis=-1)
    compare_with_py([x, y, p], [pytensor.grad(cost, x), pt.basic.inverse_permutation(p)],
                    [np.ones((3, 4)), y_value, np.array([3, 0, 4, 1, 2])])


def test_permute_row_elements_errors_are_the_python_modes():
    x, y = pt.matrix("x"), pt.lmatrix("y")
    for inverse in (False, True):
        out = pt.basic.permute_row_elements(x, y, inverse)
        _raises_as_py([x, y], out, [np.ones((3, 4)), np.zeros((2, 4), "int64")], ValueError, "Dimension mismatch")
        _raises_as_py([x, y], out, [np.ones((3, 4)), np.zeros((3, 5), "int64")], ValueError, "Dimension mismatch")
        _raises_as_py([x, y], out, [np.ones((3, 4)), np.full((3, 4), 4)], IndexError, "out of bounds")
        _raises_as_py([x, y], out, [np.ones((3, 4)), np.full((3, 4), -5)], IndexError, "out of bounds")
    _raises_as_py([x, y], pt.basic.permute_row_elements(x, y, True), [np.ones((3, 4)), np.zeros((3, 1), "int64")],
                  ValueError, "shape mismatch: value array")


def test_default_and_cpu_contiguous_pass_their_input_on():
    from pytensor.tensor.extra_ops import cpu_contiguous

    x, d = pt.vector("x"), pt.vector("d", shape=(3,))
    compare_with_py([x, d], [pt.basic.default(x, d), cpu_contiguous(x[::2]), cpu_contiguous(x)],
                    [np.arange(3.0), np.ones(3)])
    # a value of another length than the output's type allows: refused, naming the node
    f = pytensor.function([x, d], pt.basic.default(x, d), mode="STABLEHLO")
    with pytest.raises(ValueError, match=r"dim 0 of x is not the default's 3 \(node: Default\(x, d\)\)"):
        f(np.ones(4), np.ones(3))
    with pytest.raises(TypeError, match=r"input 0 \(x\): expected an array, got NoneType"):
        f(None, np.ones(3))  # the one argument Default replaces (README)
    with pytest.raises(ValueError, match=r"static shape \(2,\), its output \(3,\)"):
        pytensor.function([d], pt.basic.default(pt.ones(2), d), mode="STABLEHLO")
