"""Dot, the BLAS-shaped Ops, BatchedDot and Blockwise matmul against the Python mode."""

import re

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.graph.basic import Apply
from pytensor.graph.fg import FunctionGraph
from pytensor.graph.op import Op
from pytensor.tensor.blas import BatchedDot, Dot22, Dot22Scalar, Gemm, Gemv, Ger
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.math import Dot

from lowering import UnsupportedOpsError, lower, register_lowering, unsupported_ops
from lowering.builders import dot_general, transpose
from tests.helpers import PY_MODE, RAW_MODE, assert_same, compare_with_py
from tests.test_core import NoRuleA
from tests.values import ALL_DTYPES

FLOAT_AND_COMPLEX = ["float32", "float64", "complex64", "complex128"]


def _values(rng, shape, dtype):
    data = rng.normal(size=shape) * 4
    if np.dtype(dtype).kind == "c":
        data = data + 1j * rng.normal(size=shape)
    return data.astype(dtype) if np.dtype(dtype) != np.bool_ else data > 0


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_dot_and_matmul_every_dtype(dtype):
    rng = np.random.default_rng(1)
    x, y = pt.matrix("x", dtype=dtype), pt.matrix("y", dtype=dtype)
    v = pt.vector("v", dtype=dtype)
    b = pt.tensor3("b", dtype=dtype)
    outputs = [pt.dot(x, y), x @ v, v @ y, pt.dot(v, v), b @ y, pt.matmul(b, b.mT)]
    values = [_values(rng, (3, 4), dtype), _values(rng, (4, 2), dtype), _values(rng, (4,), dtype),
              _values(rng, (2, 3, 4), dtype)]
    # float16: numpy accumulates in float32 as XLA does; the sums still round in float16.
    tol = dict(rtol=1e-2, atol=1e-1) if dtype == "float16" else {}
    compare_with_py([x, y, v, b], outputs, values, **tol)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("static", [False, True], ids=["dynamic", "static"])
def test_dots_of_transposed_operands(dtype, static):
    """A transposed operand is read in place by the dot (its dims renamed) where that
    keeps the result's dims in order: X.T @ r, a regression's gradient, no longer copies
    X transposed first. (Matmul's operands have one free dim each, so each folds; a
    transpose that reorders two free dims is the next test's.)"""
    rng = np.random.default_rng(2)

    def tensor(name, shape):
        return pt.tensor(name, shape=shape if static else (None,) * len(shape), dtype=dtype)

    x, m, v = tensor("x", (5, 3)), tensor("m", (5, 2)), tensor("v", (5,))
    b, c = tensor("b", (2, 4, 3)), tensor("c", (4, 2, 3))
    outputs = [
        pt.dot(x.T, v), pt.dot(x.T, v[:, None]), x.T @ m, v @ x, m.T @ x, pt.dot(m.T, x).T @ m.T,
        b.transpose(0, 2, 1) @ b,  # batch dim kept in place
        c.transpose(1, 0, 2) @ b.transpose(0, 2, 1),  # batch dim moved
        pt.tensordot(b.transpose(2, 1, 0), c, axes=[[1, 2], [0, 1]]),
        b.transpose(1, 2, 0) @ b.transpose(1, 0, 2),  # batch dims from b's middle dim
        pt.dot(pt.specify_shape(x, (5, 3)).T, v),  # through the cast to static sizes
        pt.specify_shape(b, (2, 4, 3)).transpose(1, 2, 0) @ b.transpose(1, 0, 2),
    ]
    values = [_values(rng, (5, 3), dtype), _values(rng, (5, 2), dtype), _values(rng, (5,), dtype),
              _values(rng, (2, 4, 3), dtype), _values(rng, (4, 2, 3), dtype)]
    tol = dict(rtol=1e-2, atol=1e-1) if dtype == "float16" else {}
    compare_with_py([x, m, v, b, c], outputs, values, **tol)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "complex128", "int64"])
def test_products_of_a_transposed_left_operand_match_numpy(dtype):
    """A.T @ B with B of 64 columns or more: on the CPU the executable copies A transposed
    behind a barrier first (XLA multiplies a transposed left operand at half speed), for
    floats and complex numbers; batched, with two contracted dims, and at run-time sizes."""
    rng = np.random.default_rng(4)
    a, m = pt.tensor("a", shape=(100, 80), dtype=dtype), pt.tensor("m", shape=(100, 64), dtype=dtype)
    b = pt.tensor("b", shape=(2, 100, 80), dtype=dtype)
    d = pt.tensor("d", shape=(None, None), dtype=dtype)
    outputs = [a.T @ m, a.T @ m[:, :3], b.mT @ b, pt.tensordot(b, b, axes=[[0, 1], [0, 1]]), d.T @ m]
    values = [_values(rng, (100, 80), dtype), _values(rng, (100, 64), dtype), _values(rng, (2, 100, 80), dtype),
              _values(rng, (100, 70), dtype)]
    # sums of 100 to 200 products: float32's rounding (and float16's) as in numpy's order, not its sums
    tol = {"float16": dict(rtol=1e-2, atol=2.0), "float32": dict(rtol=1e-3, atol=1e-3),
           "complex64": dict(rtol=1e-3, atol=1e-3)}.get(dtype, {})
    compare_with_py([a, m, b, d], outputs, values, **tol)
    fn = pytensor.function([a, m, b, d], outputs, mode="STABLEHLO")
    fn(*values)
    (executable,) = fn.vm.jit_fn.compiled._by_shapes.values()
    transposed = _dots_of_a_transposed_left_operand(executable.xla.hlo_modules()[0].to_string())
    assert transposed == (4 if dtype == "int64" else 1)  # a.T @ m[:, :3] reads a's rows 3 times


def _dots_of_a_transposed_left_operand(hlo: str) -> int:
    """How many dots of an optimized HLO module contract their left operand over dims
    other than its last ones."""
    ranks = {name: len(dims.split(",")) if dims else 0
             for name, dims in re.findall(r"(%[\w.\-]+) = \w+\[([\d,]*)\]", hlo)}
    count = 0
    for lhs, contracting in re.findall(r" dot\((%[\w.\-]+), .*?lhs_contracting_dims=\{([\d,]+)\}", hlo):
        dims = sorted(int(d) for d in contracting.split(","))
        count += dims != list(range(ranks[lhs] - len(dims), ranks[lhs]))
    return count


class _SwappedContraction(Op):
    """einsum("pqk,kn->qpn"): in its rule a transpose whose two free dims a dot_general
    reading it in place would put in the other order."""

    def make_node(self, a, w):
        out = pt.tensor(dtype=a.dtype, shape=(None, None, None))
        return Apply(self, [a, w], [out])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = np.einsum("pqk,kn->qpn", *inputs)


@register_lowering(_SwappedContraction)
def _lower_swapped_contraction(ctx, node, a, w):
    return dot_general(transpose(a, (1, 0, 2)), w, ((2,), (0,)))


@pytest.mark.parametrize("shape", [(3, 3, 4), (2, 3, 4)])
def test_a_transpose_that_orders_free_dims_stays(shape):
    rng = np.random.default_rng(3)
    a, w = pt.tensor3("a"), pt.matrix("w")
    compare_with_py([a, w], [_SwappedContraction()(a, w)], [rng.normal(size=shape), rng.normal(size=(4, 2))])


def test_mixed_dtypes_upcast_like_numpy():
    x, y = pt.matrix("x", dtype="int32"), pt.matrix("y", dtype="float32")
    out = pt.dot(x, y)
    assert out.dtype == "float64"
    compare_with_py([x, y], [out], [np.arange(6, dtype="int32").reshape(2, 3),
                                    np.ones((3, 2), "float32")])


def test_empty_and_dynamic_shapes():
    x, y = pt.matrix("x"), pt.matrix("y")
    fn = pytensor.function([x, y], pt.dot(x, y), mode="STABLEHLO")
    np.testing.assert_array_equal(fn(np.ones((3, 0)), np.ones((0, 2))), np.zeros((3, 2)))
    assert fn(np.ones((0, 4)), np.ones((4, 5))).shape == (0, 5)
    a = np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(fn(a, a.T), a @ a.T)
    with pytest.raises(ValueError):
        fn(np.ones((3, 4)), np.ones((5, 2)))  # numpy raises ValueError too


def test_non_contiguous_inputs_are_not_mutated():
    x = pt.matrix("x")
    base = np.arange(24.0).reshape(4, 6)
    compare_with_py([x], [pt.dot(x, x.T), x.T @ x], [base[::2, ::3]])


@pytest.mark.parametrize("dtype", FLOAT_AND_COMPLEX)
def test_blas_ops(dtype):
    rng = np.random.default_rng(2)
    z, x, y = (pt.matrix(n, dtype=dtype) for n in "zxy")
    a, b = pt.scalar("a", dtype=dtype), pt.scalar("b", dtype=dtype)
    u, w = pt.vector("u", dtype=dtype), pt.vector("w", dtype=dtype)
    outputs = [
        Dot22()(x, y),
        Dot22Scalar()(x, y, a),
        Gemm(inplace=False)(z, a, x, y, b),
        Gemv(inplace=False)(u, a, x, w, b),
        Ger(destructive=False)(z, a, u, w),
    ]
    values = [_values(rng, (3, 2), dtype), _values(rng, (3, 4), dtype), _values(rng, (4, 2), dtype),
              np.asarray(1.5, dtype), np.asarray(-0.5, dtype), _values(rng, (3,), dtype),
              _values(rng, (4,), dtype)]
    # Ger's A is (3, 4) like outer(u, w). For complex dtypes PyTensor's perform calls scipy's
    # gerc (conjugating one vector, which one depending on A's memory layout); we compute
    # the graph Ger replaces, A + alpha * outer(x, y), tested separately below.
    if dtype.startswith("complex"):
        outputs.pop()
    else:
        outputs[-1] = Ger(destructive=False)(pt.outer(u, w) * 0 + 1, a, u, w)
    compare_with_py([z, x, y, a, b, u, w], outputs, values, modes=(RAW_MODE,))


def test_complex_ger_is_the_unconjugated_outer_update():
    a = pt.matrix("a", dtype="complex128")
    alpha = pt.scalar("alpha", dtype="complex128")
    x, y = pt.vector("x", dtype="complex128"), pt.vector("y", dtype="complex128")
    fn = pytensor.function([a, alpha, x, y], Ger(destructive=False)(a, alpha, x, y), mode=RAW_MODE)
    av, xv, yv = np.ones((2, 3)) * 1j, np.array([1 + 1j, 2]), np.array([1 + 2j, -1j, 3])
    np.testing.assert_allclose(fn(av, 2 - 1j, xv, yv), av + (2 - 1j) * np.outer(xv, yv), rtol=1e-14)


def test_gemm_and_gemv_ignore_the_accumulator_when_beta_is_zero():
    z, x, y = pt.matrix("z"), pt.matrix("x"), pt.matrix("y")
    a, b = pt.scalar("a"), pt.scalar("b")
    u, w = pt.vector("u"), pt.vector("w")
    outputs = [Gemm(inplace=False)(z, a, x, y, b), Gemv(inplace=False)(u, a, x, w, b)]
    values = [np.full((2, 2), np.nan), np.ones((2, 3)), np.ones((3, 2)), np.asarray(2.0),
              np.asarray(0.0), np.full(2, np.inf), np.ones(3)]
    got = compare_with_py([z, x, y, a, b, u, w], outputs, values, modes=(RAW_MODE,))
    assert np.isfinite(got[0]).all() and np.isfinite(got[1]).all()


def _compare_calls(inputs, output, calls):
    """One function per mode (the raw graph), called on each tuple of values in `calls`."""
    py = pytensor.function(inputs, output, mode=PY_MODE)
    ours = pytensor.function(inputs, output, mode=RAW_MODE)
    for values in calls:
        expected = py(*[np.copy(v) for v in values])
        assert_same(ours(*values), expected, label=", ".join(map(str, values)))


@pytest.mark.parametrize("dtype", FLOAT_AND_COMPLEX)
def test_gemm_and_gemv_special_cases_of_alpha_and_beta(dtype):
    """Gemm.perform branches on beta in {0, 1} and alpha in {1, -1}; scipy's gemv (Gemv)
    on beta in {0, 1} and alpha == 1. With an infinite accumulator or product they give
    other values than the plain formula: (1 + 0j) * (inf + 0j) is inf + nan j."""
    complex_ = dtype.startswith("complex")
    z, x, y = (pt.matrix(n, dtype=dtype) for n in "zxy")
    a, b = pt.scalar("a", dtype=dtype), pt.scalar("b", dtype=dtype)
    u, w = pt.vector("u", dtype=dtype), pt.vector("w", dtype=dtype)
    specials = [np.inf, -np.inf, np.nan, 1.5] + ([complex(0, np.inf), complex(np.inf, np.inf)] if complex_ else [])
    zv = np.array(specials, dtype).reshape(-1, 1)
    # A product of one column, k = 1 and a real y: numpy's complex dot and XLA's agree on
    # its infinities there (on wider products numpy's BLAS gives nan + nan j).
    xv = np.array(specials[:-1] + [-2.0], dtype).reshape(-1, 1)[::-1]
    yv = np.array([[-2]], dtype)
    scalars = [0, 1, -1, 2] + ([1j, -1j] if complex_ else [])
    pairs = [(np.asarray(al, dtype), np.asarray(be, dtype)) for al in scalars for be in scalars]
    _compare_calls([z, a, x, y, b], Gemm(inplace=False)(z, a, x, y, b),
                   [(zv, al, xv, yv, be) for al, be in pairs])
    _compare_calls([u, a, x, w, b], Gemv(inplace=False)(u, a, x, w, b),
                   [(zv[:, 0], al, xv, yv[0, :1], be) for al, be in pairs])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ger_with_alpha_zero_is_a(dtype):
    """scipy's ger returns A untouched when alpha == 0: an inf or NaN in x or y is not read."""
    a_, x, y = pt.matrix("A", dtype=dtype), pt.vector("x", dtype=dtype), pt.vector("y", dtype=dtype)
    alpha = pt.scalar("alpha", dtype=dtype)
    av = np.arange(6, dtype=dtype).reshape(2, 3)
    vectors = [(np.array([np.inf, 1], dtype), np.array([1, np.nan, 0], dtype)),
               (np.array([2, -1], dtype), np.array([1, 0.5, -np.inf], dtype))]
    _compare_calls([a_, alpha, x, y], Ger(destructive=False)(a_, alpha, x, y),
                   [(av, np.asarray(al, dtype), xv, yv) for al in (0, -0.0, 2) for xv, yv in vectors])


def test_gemm_broadcasts_z():
    z, x, y = pt.matrix("z", shape=(1, None)), pt.matrix("x"), pt.matrix("y")
    a, b = pt.scalar("a"), pt.scalar("b")
    compare_with_py([z, x, y, a, b], [Gemm(inplace=False)(z, a, x, y, b)],
                    [np.arange(2.0).reshape(1, 2), np.ones((3, 4)), np.ones((4, 2)), np.asarray(1.0),
                     np.asarray(2.0)], modes=(RAW_MODE,))


def test_batched_dot():
    x, y = pt.tensor3("x"), pt.tensor3("y")
    rng = np.random.default_rng(3)
    compare_with_py([x, y], [BatchedDot()(x, y)], [rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 4, 5))],
                    modes=(RAW_MODE,))
    fn = pytensor.function([x, y], BatchedDot()(x, y), mode=RAW_MODE)
    with pytest.raises(ValueError, match=r"BatchedDot\(x, y\)"):  # Python mode: TypeError
        fn(np.ones((2, 3, 4)), np.ones((3, 4, 5)))


def test_blockwise_matmul_broadcasts_static_batch_dims():
    a = pt.tensor("a", shape=(1, None, 3, 4))
    b = pt.tensor("b", shape=(5, 1, 4, 2))
    c = pt.tensor("c", shape=(None, 4, 2))
    rng = np.random.default_rng(4)
    compare_with_py([a, b, c], [a @ b, a @ c], [rng.normal(size=(1, 2, 3, 4)),
                                                rng.normal(size=(5, 1, 4, 2)), rng.normal(size=(2, 4, 2))])


class _NoBatchedRule(NoRuleA):
    gufunc_signature = "(m,m)->(m,m)"


def test_blockwise_without_batched_rule_is_reported():
    x = pt.tensor3("x")
    fgraph = FunctionGraph([x], [Blockwise(_NoBatchedRule())(x)])
    assert list(unsupported_ops(fgraph)) == ["Blockwise(_NoBatchedRule)"]
    with pytest.raises(UnsupportedOpsError, match=r"Blockwise\(_NoBatchedRule\)"):
        lower(fgraph)


def test_dot_is_one_dot_general():
    x, y = pt.matrix("x"), pt.matrix("y")
    text = lower(FunctionGraph([x, y], [Dot()(x, y)])).as_text()
    assert text.count("stablehlo.dot_general") == 1 and "HIGHEST" in text


def test_matmul_batch_dims_of_one_at_run_time_are_refused():
    """PyTensor's matmul -> BatchedDot rewrite ravels the batch dims unchecked (FAST_RUN
    returns a wrong (2, 1, 1, 1)); the STABLEHLO mode leaves it out (README)."""
    a, b = pt.tensor4("a"), pt.tensor4("b")
    f = pytensor.function([a, b], a @ b, mode="STABLEHLO")
    with pytest.raises(ValueError, match="Runtime broadcasting not allowed"):
        pytensor.function([a, b], a @ b, mode=PY_MODE)(np.ones((2, 1, 1, 4)), np.ones((1, 2, 4, 1)))
    with pytest.raises(ValueError, match=r"do not fit the graph: \"Matmul\(a, b\)\""):
        f(np.ones((2, 1, 1, 4)), np.ones((1, 2, 4, 1)))
    values = [np.arange(24.0).reshape(2, 3, 1, 4), np.arange(24.0).reshape(2, 3, 4, 1)]
    compare_with_py([a, b], [a @ b], values)
