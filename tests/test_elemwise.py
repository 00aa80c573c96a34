"""The Elemwise rule itself: broadcasting, several outputs, Composite."""

from __future__ import annotations

import numpy as np
import pytest
import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.compile.mode import Mode
from pytensor.tensor.elemwise import Elemwise

from lowering.linker import EXCLUDED_REWRITES, StableHLOLinker
from tests.helpers import compare_with_py


def test_composite_with_constants_and_several_outputs():
    a, b = ps.float64("a"), ps.float64("b")
    inner_outs = [ps.exp(a * 2.0) + b, ps.switch(a > b, a, b - 1.5)]
    composite = Elemwise(ps.Composite([a, b], inner_outs))
    x, y = pt.matrix("x"), pt.matrix("y", shape=(1, None))
    out1, out2 = composite(x, y)
    compare_with_py([x, y], [out1, out2], [np.arange(6.0).reshape(2, 3), np.array([[0.5, 3.0, -1.0]])])


def test_fusion_rewrites_produce_composites_we_lower():
    x, y = pt.vector("x"), pt.vector("y")
    out = pt.exp(x * 2 + y) / (1 + pt.log1p(pt.abs(y))) - x**2
    class FusingLinker(StableHLOLinker):
        incompatible_rewrites = tuple(r for r in EXCLUDED_REWRITES if r != "fusion")

    fusing = Mode(linker=FusingLinker(), optimizer="fast_run")
    f = pytensor.function([x, y], out, mode=fusing)
    assert any(isinstance(getattr(n.op, "scalar_op", None), ps.Composite) for n in f.maker.fgraph.apply_nodes)
    compare_with_py([x, y], [out], [np.linspace(-1, 1, 7), np.linspace(2, 3, 7)], modes=(fusing,))


def test_broadcast_static_one_against_dynamic_dims():
    x = pt.tensor3("x", shape=(1, None, 1))
    y = pt.tensor3("y", shape=(None, 1, None))
    compare_with_py([x, y], [x + y, x * y - 1], [np.ones((1, 3, 1)), np.arange(8.0).reshape(2, 1, 4)])


def test_composite_of_integer_division_powers_and_comparisons():
    """numpy's integer semantics inside one Composite: floor division and modulo signs,
    integer power, mixed-dtype comparisons, a switch on an integer condition."""
    a, b, f = ps.int8("a"), ps.uint8("b"), ps.float32("f")
    c = ps.int16("c")
    inner_outs = [
        a // b, a % b, c // a, c % a,
        ps.switch(a, ps.cast(b, "int16") ** 3, c),
        ps.lt(a, b), ps.eq(f, c),
        ps.maximum(f, ps.cast(a, "float32")),
        ps.clip(c, a, b),
    ]
    composite = Elemwise(ps.Composite([a, b, f, c], inner_outs))
    x = pt.vector("x", dtype="int8")
    y = pt.vector("y", dtype="uint8")
    z = pt.vector("z", dtype="float32")
    w = pt.vector("w", dtype="int16")
    values = [
        np.array([-7, 7, -128, 127, -1, 3], "int8"),
        np.array([3, 2, 5, 255, 1, 3], "uint8"),
        np.array([np.nan, 7.0, -np.inf, 0.5, -1.0, 2.0], "float32"),
        np.array([-32768, 7, -9, 9, 300, -2], "int16"),
    ]
    compare_with_py([x, y, z, w], composite(x, y, z, w), values)


def test_composite_with_bool_and_float_ops():
    """Bool arithmetic stays logical, False * inf is nan, NaN propagates through max/min.
    (Complex ops have no C code, which a Composite needs for its hash.)"""
    re, im = ps.float64("re"), ps.float64("im")
    flag = ps.bool("flag")
    inner_outs = [
        flag * re, flag + flag, ps.switch(flag, re, im), ps.sign(re), ps.trunc(im),
        ps.isinf(re) | ps.isnan(im), ps.minimum(re, im), im // -1.5, im % 2.5,
    ]
    composite = Elemwise(ps.Composite([re, im, flag], inner_outs))
    x, y = pt.vector("x"), pt.vector("y")
    b = pt.vector("b", dtype="bool")
    values = [np.array([1.0, -2.0, np.inf, -np.inf, 3.0, -7.5]), np.array([0.5, np.nan, -1.0, 2.0, -0.0, 2.0]),
              np.array([True, False, False, True, True, False])]
    compare_with_py([x, y, b], composite(x, y, b), values)


def test_nested_composite_broadcast_and_shapes():
    """A Composite inside a Composite; a row against a column; 0-d and empty inputs."""
    a, b = ps.float64("a"), ps.float64("b")
    inner = ps.Composite([a, b], [a * b - 1.0])
    p, q = ps.float64("p"), ps.float64("q")
    outer = ps.Composite([p, q], [ps.maximum(inner(p, q), q) // 2.0, ps.sqr(p) % q])
    op = Elemwise(outer)
    col = pt.matrix("col", shape=(None, 1))
    row = pt.matrix("row", shape=(1, None))
    compare_with_py([col, row], op(col, row), [np.array([[-2.0], [0.5], [3.0]]), np.array([[1.5, -4.0]])])
    compare_with_py([col, row], op(col, row), [np.zeros((0, 1)), np.array([[1.5, -4.0]])])
    s, t = pt.scalar("s"), pt.scalar("t")
    compare_with_py([s, t], op(s, t), [np.array(-3.5), np.array(2.0)])


def test_composite_runtime_check_and_constant_operands():
    """An integer power inside a Composite keeps numpy's error for negative exponents."""
    a, b = ps.int32("a"), ps.int32("b")
    composite = Elemwise(ps.Composite([a, b], [a ** b + 3, ps.switch(b > 2, a, 7)]))
    x, y = pt.vector("x", dtype="int32"), pt.vector("y", dtype="int32")
    compare_with_py([x, y], composite(x, y), [np.array([2, -3, 5], "int32"), np.array([30, 3, 0], "int32")])
    f = pytensor.function([x, y], composite(x, y), mode="STABLEHLO")
    # blamed on the Elemwise node of the function's graph, not the scalar node inside it
    with pytest.raises(ValueError, match=r"negative integer powers(.|\n)*Apply node that caused the error: Composite"):
        f(np.array([2, 3], "int32"), np.array([1, -1], "int32"))


def test_fusion_of_integer_and_comparison_graph():
    """PyTensor's own fusion turns these into Composites with int, bool and float ops."""
    i, j = pt.vector("i", dtype="int32"), pt.vector("j", dtype="int32")
    f = pt.vector("f", dtype="float32")
    out = pt.switch((i // j + i % j) > 0, f * 2, -f) + pt.cast(i**2, "float32")
    flags = pt.and_(pt.lt(i, j), pt.isnan(f)) | pt.eq(i, 3)

    class FusingLinker(StableHLOLinker):
        incompatible_rewrites = tuple(r for r in EXCLUDED_REWRITES if r != "fusion")

    fusing = Mode(linker=FusingLinker(), optimizer="fast_run")
    fn = pytensor.function([i, j, f], [out, flags], mode=fusing)
    assert any(isinstance(getattr(n.op, "scalar_op", None), ps.Composite) for n in fn.maker.fgraph.apply_nodes)
    values = [np.array([-7, 7, 3, 0, 12], "int32"), np.array([2, -3, 5, 4, 5], "int32"),
              np.array([1.0, np.nan, -2.5, 0.0, 4.0], "float32")]
    compare_with_py([i, j, f], [out, flags], values, modes=(fusing,))


def test_operand_whose_pytensor_type_knows_a_static_one():
    """dot(x, x[1::2]) with x (?, 1) becomes x * SpecifyShape(x[1::2], (1, 1)): the IR of
    the slice says (?, 1), PyTensor's type (1, 1) decides the broadcast (found by fuzzing)."""
    x = pt.tensor("x", dtype="float64", shape=(None, 1))
    compare_with_py([x], [pt.dot(x, x[1::2])], [np.array([[2.0], [3.0]])])
