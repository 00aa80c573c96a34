"""Print: the value passed on, and perform's side effect on the host at run time."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.graph.fg import FunctionGraph
from pytensor.printing import Print

from lowering import lower
from lowering.context import LoweringOptions
from lowering.errors import UnsupportedParameterError
from tests.helpers import MODE, PY_MODE, RAW_MODE, assert_same


def _run(mode, inputs, outputs, values, capsys):
    result = pytensor.function(inputs, outputs, mode=mode)(*values)
    return result, capsys.readouterr().out


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_print_says_what_the_python_mode_says(dtype, capsys):
    """Each Print's message and attrs (str, a property, a method), every call, in the
    order the graph computes them; the values go on unchanged."""
    x = pt.vector("x", dtype=dtype)
    y = Print("x is")(x)
    z = Print("then", attrs=("shape", "sum"))(pt.concatenate([y, y]))
    expected, said = _run(PY_MODE, [x], z, [np.arange(3).astype(dtype)], capsys)
    assert said.count("\n") == 3
    for mode in (MODE, RAW_MODE):
        got, ours = _run(mode, [x], z, [np.arange(3).astype(dtype)], capsys)
        assert_same(got, expected)
        assert ours == said


def test_print_in_a_loop_and_its_own_function(capsys):
    """Inside a Scan: once per step, as perform runs; `global_fn` gets the value."""
    x = pt.vector("x")
    steps = pytensor.scan(lambda h: Print("h")(h) * 2, outputs_info=[x], n_steps=3, return_updates=False)
    expected, said = _run(PY_MODE, [x], steps[-1], [np.ones(2)], capsys)
    got, ours = _run(MODE, [x], steps[-1], [np.ones(2)], capsys)
    assert_same(got, expected)
    assert ours == said == "h __str__ = [1. 1.]\nh __str__ = [2. 2.]\nh __str__ = [4. 4.]\n"
    seen = []
    f = pytensor.function([x], Print(global_fn=lambda op, v: seen.append(v.copy()))(x) + 1, mode=MODE)
    assert_same(f(np.arange(2.0)), np.arange(2.0) + 1)
    assert len(seen) == 1 and np.array_equal(seen[0], np.arange(2.0))


def test_print_is_refused_where_the_host_cannot_be_called():
    x = pt.vector("x")
    with pytest.raises(UnsupportedParameterError, match="Print.*platform 'cuda'"):
        lower(FunctionGraph([x], [Print("x")(x)], clone=True), options=LoweringOptions(platform="cuda"))
