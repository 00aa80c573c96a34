"""Scalar ops inside Elemwise vs PyTensor's Python mode (numpy ufuncs), every dtype."""

from __future__ import annotations

import warnings

import numpy as np
import pytensor.tensor as pt
import pytest

from tests.helpers import compare_with_py
from tests.values import ALL_DTYPES, COMPLEX_DTYPES, FLOAT_DTYPES, INT_DTYPES, edge_values, pairs

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _binary_ops(dtype):
    kind = np.dtype(dtype).kind
    ops = {
        "add": lambda x, y: x + y,
        "mul": lambda x, y: x * y,
        "eq": pt.eq,
        "neq": pt.neq,
        "second": pt.second,
        "switch": lambda x, y: pt.switch(x, x, y),
    }
    if kind != "b":
        ops |= {"sub": lambda x, y: x - y, "true_div": lambda x, y: x / y}
    if kind != "c":
        ops |= {"lt": pt.lt, "gt": pt.gt, "le": pt.le, "ge": pt.ge,
                "maximum": pt.maximum, "minimum": pt.minimum}
    if kind in "iuf":
        ops |= {"int_div": lambda x, y: x // y, "mod": lambda x, y: x % y}
    if kind in "iub":
        ops |= {"and": pt.and_, "or": pt.or_, "xor": pt.xor}
    return ops


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_binary_ops_on_every_pair_of_edge_values(dtype):
    x = pt.vector("x", dtype=dtype)
    y = pt.vector("y", dtype=dtype)
    ops = _binary_ops(dtype)
    compare_with_py([x, y], [op(x, y) for op in ops.values()], list(pairs(dtype)))


@pytest.mark.parametrize("dtype", ["int8", "int64", "uint8", "uint32", "float32", "float64", "complex128"])
def test_pow(dtype):
    x = pt.vector("x", dtype=dtype)
    y = pt.vector("y", dtype=dtype)
    base = np.array([0, 1, 2, 3, 5, 2, 7], dtype=dtype)
    exponent = np.array([0, 3, 5, 2, 1, 0, 3], dtype=dtype)
    if np.dtype(dtype).kind in "fc":
        base, exponent = np.r_[base, -2, 0.5, 4].astype(dtype), np.r_[exponent, 0.5, -1, -0.5].astype(dtype)
    compare_with_py([x, y], [x**y], [base, exponent])


def test_int_pow_with_negative_exponent_raises_like_numpy():
    import pytensor

    x, y = pt.lvector("x"), pt.lvector("y")
    f = pytensor.function([x, y], x**y, mode="STABLEHLO")
    with pytest.raises(ValueError, match="negative integer powers"):
        f(np.array([2, 3]), np.array([1, -1]))
    np.testing.assert_array_equal(f(np.array([2, 3]), np.array([3, 2])), [8, 9])


def buildable(x, *fns):
    """The outputs PyTensor lets us build for x's dtype (it refuses e.g. sign of bool)."""
    outs = []
    for fn in fns:
        try:
            outs.append(fn(x))
        except (TypeError, NotImplementedError):
            pass
    return outs


UNARY = [
    abs, pt.sgn, pt.sqr, pt.isnan, pt.isinf, pt.real, pt.imag, lambda x: ~x, lambda x: -x,
    pt.floor, pt.ceil, pt.trunc, lambda x: pt.round(x, mode="half_to_even"),
    lambda x: pt.round(x, mode="half_away_from_zero"), lambda x: pt.clip(x, 1, 5),
    pt.angle, pt.conj, pt.reciprocal, pt.sqrt,
]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_unary_ops(dtype):
    x = pt.vector("x", dtype=dtype)
    ops = UNARY
    compare_with_py([x], buildable(x, *ops), [edge_values(dtype)])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_rounding_halves_and_clip_nan(dtype):
    x = pt.vector("x", dtype=dtype)
    lo, hi = pt.scalar("lo", dtype=dtype), pt.scalar("hi", dtype=dtype)
    values = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, np.nan, -0.0], dtype=dtype)
    outs = [pt.round(x, mode="half_to_even"), pt.round(x, mode="half_away_from_zero"),
            pt.trunc(x), pt.clip(x, lo, hi)]
    compare_with_py([x, lo, hi], outs, [values, np.array(-1, dtype), np.array(1.0, dtype)])
    compare_with_py([x, lo, hi], [pt.clip(x, lo, hi)], [values, np.array(np.nan, dtype), np.array(1.0, dtype)])


@pytest.mark.parametrize("dtype", COMPLEX_DTYPES)
def test_complex_construction(dtype):
    part = "float32" if dtype == "complex64" else "float64"
    re, im = pt.vector("re", dtype=part), pt.vector("im", dtype=part)
    values = [np.array([1.0, 2.0, 0.0, 3.5], part), np.array([0.5, -2.0, -1.0, np.pi], part)]
    compare_with_py([re, im], [pt.complex(re, im), pt.complex_from_polar(re, im),
                               abs(pt.complex(re, im)), pt.angle(pt.complex(re, im))], values)
    import pytensor

    f = pytensor.function([re, im], pt.complex_from_polar(re, im), mode="STABLEHLO")
    with pytest.raises(ValueError, match="polar radius must be non-negative"):
        f(-values[0], values[1])


@pytest.mark.parametrize(
    "dtypes",
    [("int8", "float32"), ("uint8", "int8"), ("int64", "uint64"), ("bool", "int16"),
     ("float16", "float64"), ("int32", "complex64"), ("uint32", "float16")],
)
def test_mixed_dtype_arithmetic_and_comparisons(dtypes):
    x = pt.vector("x", dtype=dtypes[0])
    y = pt.vector("y", dtype=dtypes[1])
    vx = np.array([0, 1, 1, 0, 1, 0], dtype=dtypes[0]) if dtypes[0] == "bool" else np.array([0, 1, 2, 3, 5, 7], dtype=dtypes[0])
    vy = np.array([1, 2, 0, 3, -1, 7], dtype=dtypes[1]) if np.dtype(dtypes[1]).kind != "u" else np.array([1, 2, 0, 3, 1, 7], dtype=dtypes[1])
    outs = [x + y, x * y, x / y, pt.eq(x, y)]
    if np.dtype(dtypes[1]).kind != "c":
        outs += [pt.lt(x, y), pt.maximum(x, y)]
    compare_with_py([x, y], outs, [vx, vy])


def test_int8_true_division_is_float64_digits():
    """The JAX backend gives float32 here and NUMBA computes in float32; numpy does not."""
    x, y = pt.vector("x", dtype="int8"), pt.vector("y", dtype="int8")
    out = compare_with_py([x, y], [x / y], [np.array([1, 2, -7, 100], "int8"), np.array([3, 7, 3, 7], "int8")])
    assert out[0].dtype == np.float64


def test_broadcasting_patterns_and_shapes():
    col = pt.matrix("col", shape=(None, 1))
    row = pt.matrix("row", shape=(1, None))
    s = pt.scalar("s")
    outs = [col + row, col * s, pt.switch(col > 0, row, s), pt.maximum(col, row)]
    rng = np.random.default_rng(0)
    compare_with_py([col, row, s], outs, [rng.normal(size=(3, 1)), rng.normal(size=(1, 4)), np.array(2.0)])
    # empty and 0-d
    compare_with_py([col, row, s], outs, [np.zeros((0, 1)), rng.normal(size=(1, 4)), np.array(2.0)])
    a, b = pt.scalar("a"), pt.scalar("b")
    compare_with_py([a, b], [a // b, a % b, a**b], [np.array(-7.0), np.array(2.0)])


def test_non_contiguous_inputs():
    x, y = pt.matrix("x"), pt.matrix("y")
    base = np.arange(48.0).reshape(6, 8) - 20
    compare_with_py([x, y], [x * y + 1, x // 3, x % -3], [base[::2, ::3], base.T[:3, :3]])


def test_mul_without_zeros():
    from pytensor.tensor.elemwise import Elemwise
    from pytensor.tensor.math import MulWithoutZeros

    import pytensor.scalar as ps

    op = Elemwise(MulWithoutZeros(ps.upcast_out))
    x, y = pt.vector("x"), pt.vector("y")
    compare_with_py([x, y], [op(x, y)], [np.array([0.0, 2.0, 0.0, 3.0]), np.array([5.0, 0.0, 0.0, 4.0])])
