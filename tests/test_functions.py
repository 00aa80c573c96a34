"""OpFromGraph and the Ops built on it (Pad, Einsum, KroneckerProduct, AllocDiag)."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.builders import OpFromGraph
from pytensor.graph.fg import FunctionGraph
from pytensor.raise_op import Assert

from lowering import lower
from tests.helpers import MODE, RAW_MODE, compare_with_py
from tests.values import ALL_DTYPES


def _ofg():
    a, b = pt.matrix("a"), pt.vector("b")
    return OpFromGraph([a, b], [pt.exp(a) + b, (a * b).sum(axis=0)])


def test_op_from_graph_outputs_and_reuse():
    op = _ofg()
    x, y = pt.matrix("x"), pt.vector("y")
    first, second = op(x, y)
    again, _ = op(x * 2, y)
    rng = np.random.default_rng(0)
    compare_with_py([x, y], [first, second, again], [rng.normal(size=(3, 2)), rng.normal(size=2)])
    # One private function for the Op, called twice (raw module: before inlining).
    text = lower(FunctionGraph([x, y], [first, again])).as_text(raw=True)
    assert text.count("func.func private") == 1 and text.count("call @") == 2


def test_static_operands_are_cast_to_the_function_types():
    op = _ofg()
    x, y = pt.matrix("x", shape=(3, 2)), pt.vector("y", shape=(2,))
    compare_with_py([x, y], list(op(x, y)), [np.ones((3, 2)), np.arange(2.0)])


def test_nested_op_from_graph():
    a = pt.vector("a")
    inner = OpFromGraph([a], [a * 3])
    b = pt.vector("b")
    outer = OpFromGraph([b], [inner(b) + 1])
    x = pt.vector("x")
    compare_with_py([x], [outer(x)], [np.arange(4.0)], modes=(RAW_MODE,))


@pytest.mark.parametrize("inline", [False, True])
def test_op_from_graph_with_a_custom_gradient(inline):
    """lop_overrides: PyTensor builds the gradient as another OpFromGraph (or inlines it)."""
    a, b = pt.vector("a"), pt.vector("b")

    def lop(inputs, outputs, output_grads):
        return [output_grads[0] * 10 * inputs[1], pt.zeros_like(inputs[1])]

    op = OpFromGraph([a, b], [a * b], lop_overrides=lop, inline=inline)
    x, y = pt.dvector("x"), pt.dvector("y")
    out = op(x, y)
    grads = pytensor.grad((out**2).sum(), [x, y])
    compare_with_py([x, y], [out, *grads], [np.arange(3.0), np.array([1.0, -2.0, 0.5])])


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_op_from_graph_dtypes(dtype):
    a = pt.vector("a", dtype=dtype)
    op = OpFromGraph([a], [a[::-1]])
    x = pt.vector("x", dtype=dtype)
    compare_with_py([x], [op(x)], [np.arange(5).astype(dtype)], modes=(RAW_MODE,))


def test_checks_inside_op_from_graph_are_raised():
    a = pt.vector("a")
    op = OpFromGraph([a], [Assert("a must be positive")(a, pt.all(a > 0))])
    x = pt.vector("x")
    fn = pytensor.function([x], op(x), mode=RAW_MODE)
    np.testing.assert_array_equal(fn(np.ones(2)), np.ones(2))
    with pytest.raises(AssertionError, match="a must be positive"):
        fn(-np.ones(2))


@pytest.mark.parametrize("mode", ["constant", "edge", "wrap", "linear_ramp", "mean", "minimum", "maximum"])
def test_pad(mode):
    x = pt.matrix("x")
    kwargs = {"constant_values": 7.0} if mode == "constant" else {}
    out = pt.pad(x, ((1, 2), (2, 1)), mode=mode, **kwargs)
    compare_with_py([x], [out], [np.arange(12.0).reshape(3, 4)])


@pytest.mark.parametrize("mode", ["reflect", "symmetric"])
@pytest.mark.parametrize("width", [2, 7])  # wider than the array: PyTensor's Scan repeats the reflection
def test_pad_reflect_and_symmetric_through_scan(mode, width):
    x = pt.matrix("x")
    out = pt.pad(x, ((width, 1), (0, width)), mode=mode)
    compare_with_py([x], [out], [np.arange(12.0).reshape(3, 4)])



@pytest.mark.parametrize("mode", ["reflect", "symmetric", "wrap"])
def test_pad_of_degenerate_axes_raises_or_gives_numpys_result(mode):
    """PyTensor's periodic pads divide by an axis' length (less one for reflect): the
    Python mode raises ZeroDivisionError even where the axis is not padded; here an
    axis numpy cannot pad raises numpy's ValueError, reflect of a padded length-1 axis a
    ValueError naming the axis, and the rest is numpy's result, never a wrong shape."""
    x = pt.matrix("x")
    padded = pytensor.function([x], pt.pad(x, ((0, 0), (2, 1)), mode=mode), mode=MODE)
    for value in (np.arange(3.0)[None], np.arange(6.0).reshape(2, 3)):
        np.testing.assert_array_equal(padded(value), np.pad(value, ((0, 0), (2, 1)), mode=mode))
    with pytest.raises(ValueError):  # (where its shapes do not fit the graph, before running)
        padded(np.ones((2, 0)))
    v, w = pt.vector("v"), pt.lscalar("w")
    empty = "can't extend empty axis 0 using modes other than 'constant'"
    with pytest.raises(ValueError, match=empty):
        pytensor.function([v], pt.pad(v, 2, mode=mode), mode=MODE)(np.ones(0))
    # widths known at the call only: the module is specialized to them before it runs,
    # so the shapes computed from a division by 0 must still fold
    by_width = pytensor.function([v, w], pt.pad(v, w, mode=mode), mode=MODE)
    with pytest.raises(ValueError, match=empty):
        by_width(np.ones(0), 1)
    np.testing.assert_array_equal(by_width(np.full(1, 3.0), 0), [3.0])
    np.testing.assert_array_equal(by_width(np.arange(3.0), 5), np.pad(np.arange(3.0), 5, mode=mode))
    if mode == "reflect":
        with pytest.raises(ValueError, match="cannot pad axis 1, of length 1"):
            padded(np.ones((2, 1)))
        with pytest.raises(ValueError, match="cannot pad axis 0, of length 1"):
            by_width(np.ones(1), 2)
    else:
        np.testing.assert_array_equal(padded(np.full((2, 1), 3.0)), np.full((2, 4), 3.0))
        np.testing.assert_array_equal(by_width(np.full(1, 3.0), 2), np.full(5, 3.0))


def test_einsum_kron_and_diag():
    a, b, v = pt.matrix("a"), pt.tensor3("b"), pt.vector("v")
    rng = np.random.default_rng(1)
    outputs = [pt.einsum("ij,kjl->kil", a, b), pt.einsum("ii->i", a[:, :3]), pt.linalg.kron(a, v[None]),
               pt.diag(v), pt.diag(v, k=-1)]
    compare_with_py([a, b, v], outputs, [rng.normal(size=(3, 4)), rng.normal(size=(2, 4, 5)),
                                         rng.normal(size=3)])
