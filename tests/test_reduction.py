"""CAReduce, Argmax and the softmax family vs PyTensor's Python mode."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.tensor.special import log_softmax, softmax

from tests.helpers import compare_with_py
from tests.values import ALL_DTYPES, finite_values

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

# Static shapes take another path: reductions of up to 7 elements are written out.
STATIC = pytest.mark.parametrize("static", [False, True], ids=["run-time", "static"])


def reductions(x):
    kind = np.dtype(x.dtype).kind
    outs = [x.sum(), x.sum(axis=0), x.sum(axis=(0, 2)), x.prod(axis=-1), x.any(axis=1), x.all()]
    outs += [x.max(), x.max(axis=(1, 2)), pt.argmax(x, axis=1), pt.argmax(x), pt.argmax(x, axis=(0, 2))]
    if kind != "c":  # (PyTensor builds no min/argmin of complex)
        outs += [x.min(axis=1), pt.argmin(x, axis=-1)]
    if kind in "fc":
        outs += [x.mean(axis=0)]
    return outs


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_reductions_every_dtype(dtype):
    x = pt.tensor3("x", dtype=dtype)
    value = finite_values(dtype, 24, seed=1).reshape(2, 3, 4)
    compare_with_py([x], reductions(x), [value])


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_reductions_over_a_few_static_elements_every_dtype(dtype):
    """Reduced axes of at most 7 static elements in all are combined slice by slice
    (`_unrolled`): here every reduction but the whole-tensor ones."""
    x = pt.tensor("x", dtype=dtype, shape=(2, 3, 2))
    value = finite_values(dtype, 12, seed=2).reshape(2, 3, 2)
    compare_with_py([x], reductions(x), [value])
    y = pt.tensor("y", dtype=dtype, shape=(None, 3))  # (the kept dim known at run time only)
    compare_with_py([y], [y.sum(axis=1), y.max(axis=1), pt.argmax(y, axis=1), y.prod(axis=1)],
                    [finite_values(dtype, 15, seed=3).reshape(5, 3)])


@pytest.mark.parametrize("dtype", ["int8", "uint8", "float16", "float32"])
def test_accumulation_dtype(dtype):
    """int8 sums accumulate in int64 as numpy does; float32 stays float32."""
    x = pt.vector("x", dtype=dtype)
    value = np.full(300, 100, dtype=dtype)
    compare_with_py([x], [x.sum(), x.prod(), x.sum(dtype="float64"), x.sum(acc_dtype="float64")], [value],
                    rtol=1e-3 if dtype == "float16" else None)


@STATIC
def test_nan_propagation_and_ties(static):
    x = pt.tensor("x", dtype="float64", shape=(3, 4) if static else (None, None))
    value = np.array([[1.0, np.nan, 3.0, np.nan], [2.0, 2.0, -np.inf, 1.0], [np.inf, 0.0, np.inf, -0.0]])
    compare_with_py([x], [x.max(axis=1), x.min(axis=0), pt.argmax(x, axis=1), pt.argmin(x, axis=1),
                          pt.argmax(x, axis=0), x.sum(axis=1)], [value])
    b = pt.tensor("b", dtype="bool", shape=(4,) if static else (None,))
    compare_with_py([b], [pt.argmax(b), b.max(), b.sum(), b.prod()], [np.array([False, True, True, False])])
    # the sum of -0.0s is numpy's +0.0: it starts from the identity
    z = pt.tensor("z", dtype="float64", shape=(2, 3) if static else (None, None))
    got = compare_with_py([z], [z.sum(axis=1), z.prod(axis=1)], [np.full((2, 3), -0.0)])
    assert not np.signbit(got[0]).any() and np.signbit(got[1]).all()


@STATIC
def test_short_sums_add_in_numpys_order(static):
    """numpy adds fewer than 8 elements one by one, in order: 1 + 1e16 rounds to 1e16, so
    this row sums to 0 (1 the other way round)."""
    x = pt.tensor("x", dtype="float64", shape=(2, 3) if static else (None, None))
    got = compare_with_py([x], [x.sum(axis=1)], [np.array([[1.0, 1e16, -1e16], [2.0, 3.0, 4.0]])])
    assert got[0][0] == 0.0


@STATIC
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_sums_of_broadcast_products(dtype, static, monkeypatch):
    """Sums of outer products (MvNormal's gradient sums one per observation), batched or
    not, which executables that may contract multiply-adds compute as dots; products
    whose summed dim one factor broadcasts, or with no dim of one factor alone, stay
    reduces. The dot form is counted, so this fails if it is never taken."""
    from lowering import passes

    taken = []
    real = passes.dot_general
    monkeypatch.setattr(passes, "dot_general", lambda *a, **k: taken.append(1) or real(*a, **k))

    def tensor(name, shape):
        return pt.tensor(name, dtype=dtype, shape=shape if static else (None,) * len(shape))

    shapes = {"a": (40, 3), "b": (40, 4), "c": (2, 40, 3), "d": (40, 3, 4)}
    a, b, c, d = (tensor(name, shape) for name, shape in shapes.items())
    outputs = [
        (a[:, :, None] * b[:, None, :]).sum(0),  # 3 x 4
        (a[:, None, :] * b[:, :, None]).sum(0),  # 4 x 3: the dot's result transposed
        (c[:, :, :, None] * c[:, :, None, :]).sum(1),  # batched over c's first dim
        (c[:, :, :, None] * d[None]).sum((1, 2)),  # two summed dims
        (a[:, :, None] * b[:, None, :]).sum((0, 2)),  # a summed dim b alone has: a reduce
        (a * a).sum(0),  # no dim of one factor alone: a reduce
        (a[:, :, None] * b[:, None, :]).sum(0, keepdims=True),
    ]
    values = [finite_values(dtype, int(np.prod(shape)), seed).reshape(shape)
              for seed, shape in enumerate(shapes.values())]
    tol = {"float16": dict(rtol=1e-2, atol=1e-1), "float32": dict(rtol=1e-5, atol=1e-5)}.get(dtype, {})
    compare_with_py([a, b, c, d], outputs, values, **tol)
    if dtype == "float64":  # (run-time shapes too: the pass runs on specialized modules)
        assert taken


@STATIC
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_max_and_argmax_in_numpys_order(dtype, static):
    """numpy's lexicographic order, a NaN in either part winning (the first one, for
    argmax), ties to the lower index; max of complex used to fail with "Invalid integer
    data type 'c'" (its reduce init), argmax was refused. norm(ord=2) takes the max of
    singular values PyTensor types complex."""
    x = pt.tensor("x", dtype=dtype, shape=(4, 4) if static else (None, None))
    re = np.array([[1, 1, 3, 3], [np.nan, 2, 2, -np.inf], [0, -0.0, np.inf, np.inf], [-np.inf] * 4])
    im = np.array([[2, 5, -1, -2], [0, np.nan, 7, 1], [np.nan, 0, -1, 1], [-np.inf, -np.inf, 0, -np.inf]])
    value = (re + 1j * im).astype(dtype)
    compare_with_py([x], [x.max(axis=1), x.max(axis=0), x.max(), pt.argmax(x, axis=1), pt.argmax(x, axis=0),
                          pt.argmax(x[:1])], [value])
    spread = (np.arange(9).reshape(3, 3) + 1j * np.eye(3)).astype(dtype)
    y = pt.tensor("y", dtype=dtype, shape=(3, 3) if static else (None, None))
    compare_with_py([y], [pt.linalg.norm(y, ord=2)], [spread])


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_max_keeps_the_first_nan_whatever_order_xla_reduces_in(dtype):
    """numpy's max keeps the first NaN it meets, and its parts show which one. XLA may
    reduce a large array in any order (its CPU client splits this one, a GPU splits
    most), so the index of each value rides along."""
    x = pt.matrix("x", dtype=dtype)
    rng = np.random.default_rng(0)
    value = (rng.normal(size=(40, 50)) + 1j * rng.normal(size=(40, 50))).astype(dtype)
    flat = value.reshape(-1)
    flat[579], flat[859], flat[924] = complex(1, np.nan), complex(np.nan, np.nan), complex(np.nan, 0)
    # (Not x.T.max(): numpy reduces a transposed view in memory order, which a module
    # cannot see.)
    compare_with_py([x], [x.max(), x.max(axis=0), x.max(axis=1), pt.argmax(x)], [value])


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_max_and_min_of_many_floats_keep_nan(dtype):
    """numpy's max and min of values with a NaN are NaN. XLA's CPU client vectorizes a
    reduce whose body is a plain `maximum` over 4,096 or more elements with instructions
    that drop NaN (jaxlib 0.10.2; jax's jnp.max too): the body keeps it."""
    x = pt.matrix("x", dtype=dtype)
    value = np.random.default_rng(0).normal(size=(3, 5000)).astype(dtype)
    value[0, 17] = value[1, 4999] = np.nan
    compare_with_py([x], [x.max(), x.min(), x.max(axis=1), x.min(axis=1), x.max(axis=0)], [value])


def test_empty_reductions():
    x = pt.matrix("x")
    empty = np.zeros((0, 3))
    compare_with_py([x], [x.sum(axis=0), x.prod(axis=0), x.sum(), x.any(), x.all(axis=0),
                          x.max(axis=1)], [empty])
    f = pytensor.function([x], [x.max(axis=0)], mode="STABLEHLO")
    with pytest.raises(ValueError, match="zero-size array"):
        f(empty)
    g = pytensor.function([x], [pt.argmax(x, axis=0)], mode="STABLEHLO")
    with pytest.raises(ValueError, match="zero-size array"):
        g(empty)
    np.testing.assert_array_equal(g(np.ones((2, 3)))[0], [0, 0, 0])


def test_zero_d_and_non_contiguous():
    s = pt.scalar("s")
    compare_with_py([s], [s.sum(), s.max(), pt.argmax(s)], [np.array(3.5)])
    x = pt.matrix("x")
    base = np.arange(48.0).reshape(6, 8) % 7
    compare_with_py([x], [x.sum(axis=0), x.max(axis=1), pt.argmax(x, axis=0)], [base[::2, ::-3]])


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"] if pytensor.__version__ < "3" else ["float32", "float64"])
def test_softmax_family(dtype):
    # (pytensor 3's Python-mode softmax has no float16: the reference cannot run there)
    x = pt.matrix("x", dtype=dtype)
    dy = pt.matrix("dy", dtype=dtype)
    value = np.array([[1.0, 2.0, 3.0], [-np.inf, 0.0, 1.0], [1000.0, 1000.0, -1000.0],
                      [-np.inf, -np.inf, -np.inf]], dtype=dtype)
    sm = softmax(x, axis=1)
    outs = [sm, softmax(x, axis=0), softmax(x, axis=None), log_softmax(x, axis=1),
            log_softmax(x, axis=None), pytensor.grad((sm * dy).sum(), x)]
    tol = dict(rtol=5e-3, atol=5e-3) if dtype == "float16" else {}
    compare_with_py([x, dy], outs, [value, np.ones_like(value)], **tol)


@pytest.mark.parametrize("fn", [softmax, log_softmax])
def test_softmax_of_integers_is_refused_by_name(fn):
    """PyTensor types softmax of an int64 vector int64, but its perform returns floats:
    refused with both dtypes named, not a verifier failure of stablehlo.exponential."""
    from lowering import UnsupportedParameterError

    x = pt.vector("x", dtype="int64")
    with pytest.raises(UnsupportedParameterError, match="PyTensor types the output int64 but its values are floats"):
        pytensor.function([x], fn(x), mode="STABLEHLO")


def test_generic_careduce_with_an_associative_scalar_op():
    import pytensor.scalar as ps
    from pytensor.tensor.elemwise import CAReduce

    x = pt.matrix("x", dtype="int32")
    outs = [CAReduce(ps.xor, axis=(1,))(x), CAReduce(ps.and_, axis=(0,))(x), CAReduce(ps.or_, axis=None)(x)]
    compare_with_py([x], outs, [np.array([[5, 3, 1], [-1, 7, 12]], dtype="int32")])


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_prod_without_zeros(dtype):
    """The product of the nonzero elements, 0 when all are zero (the gradient of prod)."""
    from pytensor.tensor.math import ProdWithoutZeros

    x = pt.matrix("x", dtype=dtype)
    value = finite_values(dtype, 12, seed=3).reshape(3, 4)
    value[0] = 0
    value[1, ::2] = 0
    outs = [ProdWithoutZeros(axis=a)(x) for a in (None, (0,), (1,))]
    compare_with_py([x], outs, [value])
    compare_with_py([x], outs, [np.zeros((0, 4), dtype=dtype)])


def test_prod_gradient_with_zeros():
    x = pt.vector("x")
    outs = [pytensor.grad(pt.prod(x), x), pytensor.grad(pt.prod(x, no_zeros_in_input=True), x)]
    for value in ([1.0, 2.0, 0.0, 4.0], [0.0, 3.0, 0.0], [2.0, 3.0, 5.0]):
        compare_with_py([x], outs[:1] if 0.0 in value else outs, [np.array(value)])
