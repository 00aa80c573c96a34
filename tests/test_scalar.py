"""Scalar ops inside Elemwise vs PyTensor's Python mode (numpy ufuncs), every dtype."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
import pytest
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.math import MulWithoutZeros

from lowering.errors import UnsupportedParameterError
from tests.helpers import PY_MODE, RAW_MODE, compare_each_with_py, compare_with_py
from tests.values import ALL_DTYPES, COMPLEX_DTYPES, FLOAT_DTYPES, INT_DTYPES, edge_values, finite_values, pairs

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _binary_ops(x_dtype, y_dtype):
    """The binary ops numpy defines for this pair (its result kind decides)."""
    kind = np.result_type(x_dtype, y_dtype).kind
    ops = {
        "add": lambda x, y: x + y,
        "mul": lambda x, y: x * y,
        "eq": pt.eq,
        "neq": pt.neq,
        "lt": pt.lt, "gt": pt.gt, "le": pt.le, "ge": pt.ge,
        "maximum": pt.maximum, "minimum": pt.minimum,
        "second": pt.second,
        "switch": lambda x, y: pt.switch(x, x, y),
        "switch_on_y": lambda x, y: pt.switch(y, x, y),
    }
    if kind in "bfc":  # its impl multiplies Python ints, which overflow on the way back
        ops["mul_without_zeros"] = Elemwise(MulWithoutZeros(ps.upcast_out))
    if kind != "b":
        ops |= {"sub": lambda x, y: x - y, "true_div": lambda x, y: x / y}
    if kind in "iufb":
        ops |= {"int_div": lambda x, y: x // y, "mod": lambda x, y: x % y}
    if kind in "iub" and "b" not in np.dtype(x_dtype).kind + np.dtype(y_dtype).kind or kind == "b":
        ops |= {"and": pt.and_, "or": pt.or_, "xor": pt.xor}  # PyTensor: all ints or all bools
    # A signed integer exponent may be negative, which numpy refuses for integers.
    if kind != "i" or np.dtype(y_dtype).kind != "i":
        ops |= {"pow": lambda x, y: x**y}
    return ops


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_binary_ops_on_every_pair_of_edge_values(dtype):
    x = pt.vector("x", dtype=dtype)
    y = pt.vector("y", dtype=dtype)
    ops = _binary_ops(dtype, dtype)
    compare_with_py([x, y], [op(x, y) for op in ops.values()], list(pairs(dtype)))


MIXED_PAIRS = [
    ("bool", "int8"), ("int8", "uint8"), ("uint16", "int32"), ("int64", "uint64"), ("uint64", "int8"),
    ("uint32", "float16"), ("int16", "float32"), ("float16", "float64"), ("int64", "float32"),
    ("bool", "complex64"), ("float64", "complex64"), ("complex64", "complex128"), ("int8", "complex128"),
]


@pytest.mark.parametrize("dtypes", MIXED_PAIRS, ids="-".join)
def test_binary_ops_on_mixed_dtypes(dtypes):
    """numpy computes in its result_type (comparisons too), PyTensor casts to its own."""
    x_dtype, y_dtype = dtypes
    x, y = pt.vector("x", dtype=x_dtype), pt.vector("y", dtype=y_dtype)
    a, b = np.meshgrid(edge_values(x_dtype), edge_values(y_dtype), indexing="ij")
    outs = [op(x, y) for op in _binary_ops(x_dtype, y_dtype).values()]
    # y op x too: PyTensor's dtype rules are not symmetric (int8 ** uint8 is int16).
    reverse = _binary_ops(y_dtype, x_dtype)
    outs += [reverse[name](y, x) for name in ("sub", "true_div", "int_div", "mod", "pow") if name in reverse]
    compare_with_py([x, y], outs, [a.ravel(), b.ravel()])


def test_integer_power_wraps_like_numpy_for_every_exponent_bit():
    """stablehlo.power only looks at 6 exponent bits; numpy multiplies through all of them."""
    ins, outs, values = [], [], []
    for dtype in INT_DTYPES:
        info = np.iinfo(dtype)
        x, y = pt.vector(f"x_{dtype}", dtype=dtype), pt.vector(f"y_{dtype}", dtype=dtype)
        base = [b for b in (-3, -2, -1, 0, 1, 2, 3, 7, info.min, info.max) if info.min <= b]
        exponent = [min(e, info.max) for e in (0, 1, 2, 7, 8, 31, 63, 64, 65, 127, info.max)]
        base, exponent = (np.array(a, dtype=dtype).ravel() for a in np.meshgrid(base, exponent))
        ins += [x, y]
        outs.append(x**y)
        values += [base, exponent]
    compare_with_py(ins, outs, values)


def test_int_pow_with_negative_exponent_raises_like_numpy():
    x, y = pt.lvector("x"), pt.lvector("y")
    f = pytensor.function([x, y], x**y, mode="STABLEHLO")
    with pytest.raises(ValueError, match="negative integer powers"):
        f(np.array([2, 3]), np.array([1, -1]))
    np.testing.assert_array_equal(f(np.array([2, 3]), np.array([3, 2])), [8, 9])


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_pow_real_and_complex(dtype):
    """Complex powers follow numpy's npy_cpow: 0**b, small integer b by multiplication."""
    x, y = pt.vector("x", dtype=dtype), pt.vector("y", dtype=dtype)
    base = np.array([0, 1, 2, -2, 0.5, 3, -1.5, 4, 0, 2, -0.0], dtype=dtype)
    exponent = np.array([0, 3, 5, 2, -1, 0.5, 2.5, -0.5, -1, 99, 3], dtype=dtype)
    if np.dtype(dtype).kind == "c":
        base = np.r_[base, 1 + 2j, -3 + 0.5j, 1j, 0, 1, 1.5 - 2j, 2 - 1j].astype(dtype)
        exponent = np.r_[exponent, 3, -7, 1 + 1j, 1 + 1j, np.inf, -np.inf, 100].astype(dtype)
    compare_with_py([x, y], [x**y], [base, exponent])


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_pow_keeps_the_signs_of_vanishing_parts(dtype):
    """exp(b log a) through the one C99 cexp (special.py's): pow had its own, which made
    every part that underflows +0.0 where numpy's cexp keeps cos/sin's signs."""
    x, y = pt.vector("x", dtype=dtype), pt.vector("y", dtype=dtype)
    base = np.array([0.5j, complex(np.inf, 1e300), 2j, 0.5 + 2j, 0.5 + 1e300j], dtype=dtype)
    exponent = np.array([1e300j, -1.5, complex(-np.inf, 0.5), complex(-np.inf, 1e300), -710 - 1.5j], dtype=dtype)
    got = compare_with_py([x, y], x**y, [base, exponent])
    with np.errstate(all="ignore"):
        want = base**exponent
    for part in (np.real, np.imag):
        np.testing.assert_array_equal(np.signbit(part(got)), np.signbit(part(want)))

def test_signed_against_uint64_compares_exactly():
    """numpy 2 has exact int64-vs-uint64 comparison loops; float64 would round 2**63 - 1 up."""
    s, u = pt.vector("s", dtype="int64"), pt.vector("u", dtype="uint64")
    b = pt.vector("b", dtype="int8")
    big = np.iinfo(np.int64).max
    sv = np.array([big, big, -1, -1, 0, big - 1, np.iinfo(np.int64).min], dtype=np.int64)
    uv = np.array([2**63, big, 2**64 - 1, 0, 0, big, 2**63], dtype=np.uint64)
    bv = np.array([-1, 127, -128, 0, 1, 5, -7], dtype=np.int8)
    outs = [op(s, u) for op in (pt.lt, pt.le, pt.gt, pt.ge, pt.eq, pt.neq)]
    outs += [op(u, s) for op in (pt.lt, pt.ge, pt.eq)] + [pt.lt(b, u), pt.eq(u, b), pt.maximum(s, u)]
    compare_with_py([s, u, b], outs, [sv, uv, bv])


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
    abs, pt.sign, pt.sqr, pt.isnan, pt.isinf, pt.real, pt.imag, lambda x: ~x, lambda x: -x,
    pt.floor, pt.ceil, pt.trunc, lambda x: pt.round(x, mode="half_to_even"),
    lambda x: pt.round(x, mode="half_away_from_zero"), lambda x: pt.clip(x, 1, 5),
    pt.angle, pt.conj, pt.reciprocal, pt.sqrt,
]


def _unary_values(dtype):
    values = edge_values(dtype)
    if np.dtype(dtype).kind == "c":  # C99's special values for csqrt, hypot, reciprocal
        special = [-0.0, complex(0, -0.0), complex(-4, -0.0), complex(-4, 0.0), complex(np.inf, np.nan),
                   complex(np.nan, np.inf), complex(-np.inf, 1), complex(1, -np.inf), 3 - 4j, complex(np.nan, 0)]
        values = np.r_[values, np.array(special, dtype)]
    if np.dtype(dtype).kind == "f":
        # round-half-away's 0.0 is left out: Op.perform's floor(x + 0.5) gives -0.0 there
        values = values[values != 0]
    return values


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_unary_ops(dtype):
    x = pt.vector("x", dtype=dtype)
    compare_with_py([x], buildable(x, *UNARY), [_unary_values(dtype)])


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_signs_of_zero(dtype):
    """assert_allclose ignores the sign of zero; 1 / result does not."""
    x = pt.vector("x", dtype=dtype)
    y = pt.vector("y", dtype=dtype)
    values = [np.array([-0.0, 0.0, -0.0, 3.0, -3.0, -0.0], dtype), np.array([2.0, -2.0, -5.0, -3.0, 3.0, 0], dtype)]
    outs = [pt.sqrt(x), -x, x * y, x / y]
    if dtype == "float64":
        outs += [pt.sign(x), pt.trunc(x), pt.ceil(x / 4), x // y, x % y, pt.round(x, mode="half_to_even")]
    got = pytensor.function([x, y], outs, mode="STABLEHLO")(*values)
    expected = pytensor.function([x, y], outs, mode=PY_MODE)(*values)
    for i, (g, e) in enumerate(zip(got, expected)):
        for part in (np.real, np.imag):
            np.testing.assert_array_equal(np.signbit(part(g)), np.signbit(part(e)), err_msg=f"output {i}")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_rounding_halves_and_clip_nan(dtype):
    x = pt.vector("x", dtype=dtype)
    lo, hi = pt.scalar("lo", dtype=dtype), pt.scalar("hi", dtype=dtype)
    values = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, np.nan, -0.0, 0.49, 1e4 + 0.5], dtype=dtype)
    outs = [pt.round(x, mode="half_to_even"), pt.round(x, mode="half_away_from_zero"),
            pt.trunc(x), pt.clip(x, lo, hi)]
    compare_with_py([x, lo, hi], outs, [values, np.array(-1, dtype), np.array(1.0, dtype)])
    compare_with_py([x, lo, hi], [pt.clip(x, lo, hi)], [values, np.array(np.nan, dtype), np.array(1.0, dtype)])


@pytest.mark.parametrize("dtype", COMPLEX_DTYPES)
def test_complex_construction(dtype):
    part = "float32" if dtype == "complex64" else "float64"
    re, im = pt.vector("re", dtype=part), pt.vector("im", dtype=part)
    values = [np.array([1.0, 2.0, 0.0, 3.5, 0.0], part), np.array([0.5, -2.0, -1.0, np.pi, np.inf], part)]
    # angle(complex64) is float64 computed in float32: numpy 2.4's float32 arctan2 is
    # 1 ulp from the correctly rounded value at atan2(0.5, 1).
    tol = dict(rtol=2e-7) if dtype == "complex64" else {}
    compare_with_py([re, im], [pt.complex(re, im), pt.complex_from_polar(re, im),
                               abs(pt.complex(re, im)), pt.angle(pt.complex(re, im))], values, **tol)
    f = pytensor.function([re, im], pt.complex_from_polar(re, im), mode="STABLEHLO")
    with pytest.raises(ValueError, match="polar radius must be non-negative"):
        f(-values[0], values[1])


def test_complex_from_integer_and_bool_parts():
    """ComplexFromPolar.impl takes cos of a bool in numpy's float16."""
    r, theta = pt.vector("r", dtype="uint8"), pt.vector("theta", dtype="bool")
    i, j = pt.vector("i", dtype="int64"), pt.vector("j", dtype="int16")
    compare_with_py(
        [r, theta, i, j],
        [pt.complex_from_polar(r, theta), pt.complex(i, j), pt.complex_from_polar(j, i), pt.complex(theta, r)],
        [np.array([0, 1, 2, 7], "uint8"), np.array([True, False, True, True]),
         np.array([2**40 + 1, -3, 0, 5]), np.array([1, 2, 0, 300], "int16")],
    )


@pytest.mark.parametrize("dtype", COMPLEX_DTYPES)
def test_complex_order_division_and_nan_parts(dtype):
    """numpy orders complex numbers lexicographically, NaN parts propagate through
    maximum/minimum, and division by a zero divides by |0| (Smith's algorithm)."""
    x, y = pt.vector("x", dtype=dtype), pt.vector("y", dtype=dtype)
    xv = np.array([1 + 2j, 1 + 2j, complex(1, np.nan), 2, complex(np.nan, 0), 1.5 - 2j, -3 + 0.5j, 1e30 + 1e30j,
                   complex(np.inf, 1), 1 - 1j], dtype)
    yv = np.array([1 + 3j, 0.5 + 9j, 2, complex(1, np.nan), 1, -0.0, complex(0, -0.0), 1e-30 + 1e30j, 0, 1e-20 + 1j],
                  dtype)
    outs = [pt.lt(x, y), pt.le(x, y), pt.gt(x, y), pt.ge(x, y), pt.maximum(x, y), pt.minimum(x, y),
            x / y, y / x, pt.reciprocal(y)]
    compare_with_py([x, y], outs, [xv, yv])



@pytest.mark.parametrize("dtype", COMPLEX_DTYPES)
def test_complex_reciprocal_at_extreme_magnitudes(dtype):
    """numpy's reciprocal loop divides twice, (zi / zr) / d; XLA would rewrite that to
    zi / (zr * d), whose product overflows (or vanishes) long before the result does."""
    big = 1e300 if dtype == "complex128" else 1e36
    small = 1e-300 if dtype == "complex128" else 1e-36
    rng = np.random.default_rng(0)
    parts = rng.uniform(0.5, 2.0, size=(2, 16)) * rng.choice([-1, 1], size=(2, 16))
    values = np.concatenate([(parts[0] + 1j * parts[1]) * scale for scale in (big, small, 1e20, 1e-20)])
    z = pt.vector("z", dtype=dtype)
    compare_with_py([z], [pt.reciprocal(z), 1 / z], [values.astype(dtype)])

@pytest.mark.parametrize("source", ALL_DTYPES)
def test_casts_within_range(source):
    """Every target dtype from one source, with values the targets can hold (negative
    ones only into signed targets, NaN/inf only into floats and bool): floats truncate
    toward zero, anything nonzero (NaN too) is True, complex to complex keeps both parts."""
    x = pt.vector("x", dtype=source)
    kind = np.dtype(source).kind
    casts = buildable(x, *[(lambda t: lambda v: pt.cast(v, t))(t) for t in ALL_DTYPES])
    held = {
        "b": [False, True, True],
        "i": [0, 1, 7, 100, 127],
        "u": [0, 1, 7, 100, 127],
        "f": [-0.5, -0.0, 0.5, 0.99, 3.0, 126.9],
        "c": [0, 1 + 1j, -0.0, 0.5j, 2.5 - 1j, complex(np.nan, np.inf)],
    }[kind]
    compare_with_py([x], casts, [np.array(held, dtype=source)])
    negative = {"i": [-7, -100, -128], "f": [-7.9, -126.9, np.nan, -np.inf, np.inf]}.get(kind)
    if negative is not None:
        outs = [c for c in casts if c.dtype[0] in "fcb" or (c.dtype[0] == "i" and kind == "i")]
        compare_with_py([x], outs, [np.array(negative, dtype=source)])


def test_narrowing_int_casts_wrap_like_astype():
    """Op.perform raises OverflowError (it casts Python ints); numpy's astype wraps, as we do."""
    x = pt.vector("x", dtype="int64")
    targets = ["int8", "uint8", "int16", "uint32", "uint64", "bool"]
    values = np.array([-1, 300, -129, 2**40 + 5, np.iinfo(np.int64).min, 2**31], dtype=np.int64)
    got = pytensor.function([x], [pt.cast(x, t) for t in targets], mode="STABLEHLO")(values)
    for t, g in zip(targets, got):
        np.testing.assert_array_equal(g, values.astype(t), err_msg=t)


def test_switch_on_every_condition_dtype():
    """np.where: anything nonzero is true, NaN included; the branches share one dtype."""
    conds = {dt: pt.vector(f"c_{dt}", dtype=dt) for dt in ALL_DTYPES}
    a, b = pt.vector("a", dtype="int16"), pt.vector("b", dtype="float32")
    outs = [pt.switch(c, a, b) for c in conds.values()] + [pt.switch(conds["float64"], b, conds["uint8"])]
    values = [edge_values(dt)[np.arange(6) % len(edge_values(dt))] for dt in ALL_DTYPES]
    values[ALL_DTYPES.index("float64")] = np.array([np.nan, -0.0, 0.0, 1e-300, -np.inf, 2.0])
    values += [np.arange(6, dtype="int16") - 3, np.linspace(-1, 1, 6, dtype="float32")]
    compare_with_py([*conds.values(), a, b], outs, values)


def test_mixed_dtype_three_input_add_and_mul():
    """Add and Mul take any number of inputs; all are cast to the output dtype first."""
    b, i, f = pt.vector("b", dtype="bool"), pt.vector("i", dtype="int8"), pt.vector("f", dtype="float32")
    u, h = pt.vector("u", dtype="uint16"), pt.vector("h", dtype="float16")
    outs = [pt.add(b, i, f), pt.mul(b, i, f), pt.add(i, u, b), pt.mul(i, u, i), pt.add(b, b, b),
            pt.mul(b, b, b), pt.add(h, i, h, u), pt.mul(b, f, f, h)]
    values = [finite_values(dt, 8, seed=k) for k, dt in enumerate(["bool", "int8", "float32", "uint16", "float16"])]
    values[0][3], values[2][3] = False, np.inf  # False * inf is nan
    compare_with_py([b, i, f, u, h], outs, values)


def test_bitwise_ops_reject_int64_with_uint64():
    """numpy has no bitwise loop for that pair (PyTensor's result would be float64)."""
    x, y = pt.vector("x", dtype="int64"), pt.vector("y", dtype="uint64")
    with pytest.raises(UnsupportedParameterError, match="bitwise"):
        pytensor.function([x, y], pt.and_(x, y), mode=RAW_MODE)


def test_bool_arithmetic_stays_logical():
    x, y = pt.vector("x", dtype="bool"), pt.vector("y", dtype="bool")
    f = pt.vector("f")
    xv, yv = np.array([False, False, True, True]), np.array([False, True, False, True])
    outs = [x + y, x * y, x // y, x % y, x**y, pt.sqr(x), abs(x), x * f, x + f, ~x, x / y, pt.maximum(x, f)]
    compare_with_py([x, y, f], outs, [xv, yv, np.array([np.inf, np.nan, -2.0, -0.0])])


def test_broadcasting_patterns_and_shapes():
    col = pt.matrix("col", shape=(None, 1))
    row = pt.matrix("row", shape=(1, None))
    s = pt.scalar("s")
    outs = [col + row, col * s, pt.switch(col > 0, row, s), pt.maximum(col, row), col // row, col % row,
            pt.lt(row, col), col**2 - row]
    rng = np.random.default_rng(0)
    compare_with_py([col, row, s], outs, [rng.normal(size=(3, 1)), rng.normal(size=(1, 4)), np.array(2.0)])
    # empty, and 0-d
    compare_with_py([col, row, s], outs, [np.zeros((0, 1)), rng.normal(size=(1, 4)), np.array(2.0)])
    compare_with_py([col, row, s], outs, [rng.normal(size=(3, 1)), np.zeros((1, 0)), np.array(2.0)])
    a, b = pt.scalar("a"), pt.scalar("b")
    i, j = pt.scalar("i", dtype="int32"), pt.scalar("j", dtype="uint8")
    compare_with_py([a, b, i, j], [a // b, a % b, a**b, i // j, i % j, i**j, pt.lt(i, j), pt.switch(i, a, j)],
                    [np.array(-7.0), np.array(2.0), np.array(-7, "int32"), np.array(3, "uint8")])


def test_integer_ops_broadcast_across_a_row_and_a_column():
    col = pt.matrix("col", shape=(None, 1), dtype="int16")
    row = pt.matrix("row", shape=(1, None), dtype="int16")
    outs = [col // row, col % row, pt.eq(col, row), col & row, pt.maximum(col, row), col * row]
    compare_with_py([col, row], outs, [np.array([[-7], [0], [7], [-32768]], "int16"),
                                        np.array([[-3, -1, 0, 2, 5]], "int16")])


def test_non_contiguous_inputs():
    x, y = pt.matrix("x"), pt.matrix("y")
    base = np.arange(48.0).reshape(6, 8) - 20
    compare_with_py([x, y], [x * y + 1, x // 3, x % -3, pt.maximum(x, y)], [base[::2, ::3], base.T[:3, :3]])
    i = pt.matrix("i", dtype="int8")
    ibase = (np.arange(48).reshape(6, 8) - 20).astype("int8")
    compare_with_py([i], [i // 3, i % -3, i**2, ~i], [ibase[::-2, 1::3]])


def test_static_shapes():
    """Constants built for static shapes (full_like takes the static branch)."""
    i = pt.tensor("i", shape=(2, 3), dtype="int8")
    z = pt.tensor("z", shape=(2, 3), dtype="complex64")
    r = pt.tensor("r", shape=(1, 3), dtype="float64")
    outs = [i // 3, i % -2, i**2, pt.lt(z, z.conj()), z**2, pt.sqrt(z), pt.maximum(r, i), pt.complex_from_polar(r, i)]
    compare_with_py([i, z, r], outs, [np.array([[-7, 0, 7], [127, -128, 3]], "int8"),
                                      np.array([[1 + 1j, -2, 0], [3j, -1 - 1j, 0.5]], "complex64"),
                                      np.array([[0.5, np.nan, 2.0]])])
    f = pytensor.function([r, i], pt.complex_from_polar(r, i), mode="STABLEHLO")
    with pytest.raises(ValueError, match="polar radius"):
        f(np.array([[1.0, -1e-10, 0.0]]), np.zeros((2, 3), "int8"))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int8", "uint16", "bool"])
def test_scalar_type_graph_returns_numpy_scalars(dtype):
    """A graph of ScalarType variables, as `pytensor.scalar` builds it: its ScalarType
    outputs come back as numpy scalars (np.float64, ...), a TensorType one as an array."""
    x, y = ps.get_scalar_type(dtype)("x"), ps.get_scalar_type(dtype)("y")
    outs = [ps.clip(x, y, x), x < y, ps.maximum(x, y), pt.tensor_from_scalar(ps.minimum(x, y))]
    if dtype != "bool":
        outs += [ps.add(x, y, x), ps.mul(x, y)]
    values = [np.array(v, dtype=dtype) for v in (3, 1)]
    compare_with_py([x, y], outs, values)
    compare_with_py([x], [ps.clip(x, 3.0, 7.0)], values[:1])


def test_integer_division_by_zero_in_a_shape():
    """n // 0 and n % 0 are 0 (numpy); where they size an array, the runtime folds them
    with the arguments' values: that fold once divided by zero in hardware (SIGFPE)."""
    n, m = pt.lscalar("n"), pt.lscalar("m")
    outs = [pt.zeros(n // m), pt.ones((2, n % m)), pt.arange(n // m)]
    compare_each_with_py([n, m], outs, [[np.int64(v) for v in values] for values in [(6, 0), (7, 2), (9, 4), (0, 0)]])
    u, v = pt.scalar("u", dtype="uint8"), pt.scalar("v", dtype="uint8")
    compare_with_py([u, v], [pt.zeros(u // v), pt.zeros(u % v)], [np.uint8(5), np.uint8(0)])
