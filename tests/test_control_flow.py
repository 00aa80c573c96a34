"""IfElse: one stablehlo.if, only the taken branch runs, against the Python mode."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.graph.fg import FunctionGraph
from pytensor.ifelse import ifelse

from lowering import lower
from tests.helpers import RAW_MODE, assert_same, compare_each_with_py, compare_with_py


def test_several_outputs_and_values_shared_with_the_rest_of_the_graph():
    x, n = pt.dvector("x"), pt.lscalar("n")
    shared = pt.exp(x)
    outs = ifelse(n > 0, [x[n - 1] * shared.sum(), shared], [pt.constant(np.float64(-1.0)), pt.log(shared)])
    # (the Python linker is not lazy: both branches must be valid)
    compare_each_with_py([x, n], [*outs, shared * 2], [[np.arange(3.0), np.array(value)] for value in (2, 0)])


@pytest.mark.parametrize("dtype, values", [
    ("float64", [0.0, -0.0, 2.5, np.nan]),  # NaN is true, as `if nan:` is
    ("int8", [0, -1, 7]),
    ("uint64", [0, 2**63]),
    ("bool", [False, True]),
])
def test_condition_of_every_dtype_is_its_truth_value(dtype, values):
    c = pt.scalar("c", dtype=dtype)
    a, b = pt.dvector("a"), pt.dvector("b")
    compare_each_with_py([c, a, b], ifelse(c, a + 1, b * 2),
                         [[np.array(value, dtype), np.ones(3), np.full(3, 4.0)] for value in values])


def test_only_the_taken_branch_runs_its_checks():
    """x[n] out of range in the branch not taken is no error (the Python mode is lazy)."""
    x, n = pt.dvector("x"), pt.lscalar("n")
    out = ifelse(n < x.shape[0], x[n], pt.constant(np.float64(-1.0)))
    for mode in ("STABLEHLO", RAW_MODE):
        f = pytensor.function([x, n], out, mode=mode)
        assert_same(f(np.arange(3.0), 5), np.array(-1.0))
        assert_same(f(np.arange(3.0), 1), np.array(1.0))
    g = pytensor.function([x, n], ifelse(n > 0, x[n], x[0]), mode=RAW_MODE)
    with pytest.raises(IndexError, match="index out of bounds"):
        g(np.arange(3.0), 7)
    assert_same(g(np.arange(3.0), 2), np.array(2.0))


def test_branches_of_different_shapes_are_refused_by_name():
    """PyTensor allows them, but the result's shape would depend on the condition."""
    c = pt.bscalar("c")
    a, b = pt.tensor("a", shape=(2, 3)), pt.tensor("b", shape=(4, 3))
    with pytest.raises(NotImplementedError, match=r"IfElse with branches of different shapes for output 0 \(\(2, 3\) and \(4, 3\)\)"):
        lower(FunctionGraph([c, a, b], [ifelse(c, a, b)], clone=True))
    x, y = pt.dvector("x"), pt.dvector("y")
    f = pytensor.function([c, x, y], ifelse(c, x, y) * 2, mode="STABLEHLO")
    assert_same(f(np.int8(1), np.ones(2), np.zeros(2)), np.full(2, 2.0))
    with pytest.raises(
        ValueError,
        match=r"arguments of shapes \(\), \(2,\), \(3,\) do not fit the graph: \"if\{\}\(c, x, y\)\": "
        r"its branches give output 0 the shapes \(2,\) and \(3,\)",
    ):
        f(np.int8(1), np.ones(2), np.zeros(3))


def test_nested_ifelse_and_a_node_used_by_both_branches():
    x, n = pt.dvector("x"), pt.lscalar("n")
    both = pt.sin(x) * 3
    inner = ifelse(n > 5, both.sum(), pt.cos(x).prod())
    out = ifelse(n > 0, inner + x[0], both.max())
    compare_each_with_py([x, n], out, [[np.linspace(0.1, 1.0, 4), np.array(value)] for value in (7, 3, -1)])


def test_gradient_through_ifelse():
    x, c = pt.dvector("x"), pt.bscalar("c")
    cost = ifelse(c, (x**2).sum(), pt.exp(x).sum())
    grad = pytensor.grad(cost, x)
    compare_each_with_py([x, c], [cost, grad], [[np.array([0.5, -1.0, 2.0]), np.array(value, "int8")] for value in (0, 1)])


def test_symbolic_shapes_inside_branches():
    x, n = pt.dvector("x"), pt.lscalar("n")
    out = ifelse(n > 2, pt.arange(n, dtype="float64").sum() + x.sum(), pt.zeros((n + 1,)).sum())
    compare_each_with_py([x, n], out, [[np.ones(2), np.array(value)] for value in (4, 1)])


def test_one_if_with_private_branch_functions():
    x, n = pt.dvector("x"), pt.lscalar("n")
    lowered = lower(FunctionGraph([x, n], [ifelse(n > 0, pt.exp(x), pt.log(x))], clone=True))
    raw = lowered.as_text(raw=True)
    assert raw.count('"stablehlo.if"') == 1 and "func.func private @ifelse_then" in raw
    assert "call @" not in lowered.as_text()  # inlined by the default pipeline


def test_shapes_of_an_ifelse_result():
    """PyTensor's shape inference builds an IfElse of the branches' shapes (`y - y` becomes
    `alloc(0, ifelse(c, shape(a), shape(b)))`); when the branches agree, specialization
    folds it to a static shape whatever the condition (found by fuzzing)."""
    x = pt.dvector("x")
    y = ifelse(pt.any(x), abs(x), x)
    # finite values: the rewrites make x - x zero
    compare_each_with_py([x], [y - y, pt.zeros_like(y), y.shape[0]], [[np.array([-1.0, 2.0])], [np.zeros(3)]])
