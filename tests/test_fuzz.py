"""Differential fuzzing: random PyTensor graphs, STABLEHLO against the Python mode.

Random DAGs of elementwise, reduction, shape, indexing, dot and IfElse Ops over random dtypes and shapes
(0-d, size-0, broadcast dims) with values full of NaN, ±inf, -0.0, huge and tiny numbers and
int extremes. CI runs a bounded number of graphs; `STABLEHLO_FUZZ_EXAMPLES=10000` runs more.

Each graph is compared twice: as built (our rules against `Op.perform`), and after the
STABLEHLO mode's rewrites against the Python linker running the same rewritten graph —
PyTensor's rewrites (`x - x -> 0` even for NaN) are PyTensor's, shared by every backend.
Subnormal floats are left out: XLA's CPU runtime flushes them to zero (README).
"""

from __future__ import annotations

import os

import numpy as np
import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytensor.compile.mode import Mode
from pytensor.ifelse import ifelse
from pytensor.graph.rewriting.db import RewriteDatabaseQuery

from lowering.linker import EXCLUDED_REWRITES
from tests.helpers import PY_MODE, RAW_MODE, assert_same

# The Python linker on the graph the STABLEHLO mode runs (same rewrites).
PY_REWRITTEN = Mode(linker="py", optimizer=RewriteDatabaseQuery(include=["fast_run"], exclude=list(EXCLUDED_REWRITES)))

SHAPE_ERRORS = (ValueError, IndexError, AssertionError)
EXAMPLES = int(os.environ.get("STABLEHLO_FUZZ_EXAMPLES", "30"))
DTYPES = ["float64", "float32", "int64", "int32", "uint8", "bool"]

UNARY_FLOAT = [pt.exp, pt.log, pt.sqrt, pt.sin, pt.tanh, pt.sigmoid, pt.log1p, pt.expm1, pt.floor,
               pt.abs, pt.neg, pt.sgn, pt.softplus, pt.erf, pt.gammaln]
UNARY_ANY = [pt.abs, pt.sgn, pt.sqr]
BINARY = [pt.add, pt.sub, pt.mul, pt.maximum, pt.minimum, pt.true_div, pt.lt, pt.eq]
INT_BINARY = [pt.floor_div, pt.mod, pt.bitwise_and]


def _special(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        info = np.finfo(dtype)
        return [np.nan, np.inf, -np.inf, -0.0, 0.0, info.tiny, info.max, -1.5, 2.5, 1e-3]
    if dtype.kind == "b":
        return [True, False]
    info = np.iinfo(dtype)
    return [info.min, info.max, 0, 1, -1 if info.min < 0 else 2, 7]


@st.composite
def graphs(draw):
    base = draw(st.lists(st.sampled_from([0, 1, 2, 3]), min_size=0, max_size=2))
    n_inputs = draw(st.integers(1, 3))
    inputs, values = [], []
    for i in range(n_inputs):
        dtype = draw(st.sampled_from(DTYPES))
        # Each dim is the base size or a static 1 (PyTensor broadcasts static 1s only).
        bcast = [draw(st.booleans()) if d != 1 else True for d in base]
        static = tuple(1 if b else None for b in bcast)
        shape = tuple(1 if b else d for b, d in zip(bcast, base))
        var = pt.tensor(f"x{i}", dtype=dtype, shape=static)
        pool = _special(dtype)
        flat = draw(st.lists(st.sampled_from(pool), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
        inputs.append(var)
        values.append(np.array(flat, dtype=dtype).reshape(shape))
    nodes = list(inputs)
    for _ in range(draw(st.integers(1, 4))):
        x = draw(st.sampled_from(nodes))
        kind = draw(st.sampled_from(["unary", "binary", "reduce", "shape", "index", "dot", "ifelse"]))
        try:
            out = _apply(draw, kind, x, nodes)
        except (TypeError, ValueError, NotImplementedError):
            continue  # PyTensor refuses this Op for these dtypes: not a case
        nodes.append(out)
    outputs = nodes[n_inputs:] or [inputs[0]]
    return inputs, outputs, values


def _made_by(var, scalar_op_class) -> bool:
    return var.owner is not None and isinstance(getattr(var.owner.op, "scalar_op", None), scalar_op_class)


# XLA's algebraic simplifier cancels and reassociates these (as under JAX), which differs
# from numpy only where numpy's intermediate overflows: log(exp(1e308)) is 1e308, not inf;
# sqrt(x * x) is |x|; (a/b)/c is a/(b*c). README: where we knowingly differ.
_XLA_CANCELS = {pt.log: ps.Exp, pt.sqrt: (ps.Mul, ps.Sqr)}


def _apply(draw, kind, x, nodes):
    if kind == "unary":
        fns = UNARY_FLOAT if x.dtype.startswith("float") else UNARY_ANY
        fn = draw(st.sampled_from(fns))
        if fn in _XLA_CANCELS and _made_by(x, _XLA_CANCELS[fn]):
            raise TypeError("an expression XLA simplifies is not a case")
        return fn(x)
    if kind == "binary":
        y = draw(st.sampled_from(nodes))
        fns = BINARY + (INT_BINARY if x.dtype.startswith(("int", "uint")) and y.dtype == x.dtype else [])
        fn = draw(st.sampled_from(fns))
        if fn is pt.true_div and any(_made_by(v, ps.TrueDiv) for v in (x, y)):
            raise TypeError("a chained division is not a case (_XLA_CANCELS)")
        return fn(x, y)
    if kind == "reduce":
        axis = draw(st.sampled_from([None] + list(range(x.ndim))))
        return draw(st.sampled_from([pt.sum, pt.prod, pt.any, pt.all, pt.max, pt.argmax]))(x, axis=axis)
    if kind == "dot":
        y = draw(st.sampled_from(nodes))
        if not (1 <= x.ndim <= 2 and 1 <= y.ndim <= 2) or "bool" in (x.dtype, y.dtype):
            raise TypeError("dot of these operands is not a case")
        return pt.dot(x, y)
    if kind == "ifelse":
        # Branches of one shape (a result shape cannot depend on the condition in XLA).
        other = draw(st.sampled_from(UNARY_ANY))(x)
        then, else_ = (x, other) if draw(st.booleans()) else (other, x)
        return ifelse(pt.any(draw(st.sampled_from(nodes))), then, else_)
    if kind == "shape":
        if not x.ndim:
            return x.dimshuffle("x")
        return draw(st.sampled_from([lambda v: v.T, lambda v: v.flatten(), lambda v: v.dimshuffle(("x", *range(v.ndim)))]))(x)
    if not x.ndim:
        return x
    # Integer indices on size-0 dims raise IndexError on both sides.
    return draw(st.sampled_from([lambda v: v[::-1], lambda v: v[1::2], lambda v: v[-1], lambda v: v[[0, -1]]]))(x)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(graphs())
def test_random_graphs_match_python_mode(case):
    inputs, outputs, values = case
    before = [v.copy() for v in values]
    for mode, reference in ((RAW_MODE, PY_MODE), ("STABLEHLO", PY_REWRITTEN)):
        try:
            with np.errstate(all="ignore"):
                expected = pytensor.function(inputs, outputs, mode=reference, on_unused_input="ignore")(*values)
        except SHAPE_ERRORS as exc:
            # Shapes that do not fit at run time: we must refuse them too, never guess.
            # (A SpecifyShape the rewrites add fails with AssertionError in the Python
            # mode; we find the mismatch while specializing: ValueError, see README.)
            with pytest.raises(SHAPE_ERRORS):
                pytensor.function(inputs, outputs, mode=mode, on_unused_input="ignore")(*values)
            del exc
            continue
        except OverflowError:
            # The Python mode computes 0-d integer Elemwise with Python ints, which raise
            # where numpy arrays (and we) wrap: the reference has no answer here.
            continue
        got = pytensor.function(inputs, outputs, mode=mode, on_unused_input="ignore")(*values)
        for i, (g, e, var) in enumerate(zip(got, expected, outputs)):
            # Approximated functions (gammaln, erf, ...) of extreme values: loose for floats.
            tol = dict(rtol=1e-5, atol=1e-6) if var.dtype == "float64" else {}
            assert_same(g, np.asarray(e, dtype=var.dtype), label=f"output {i}: {var}", **tol)
    for v, b in zip(values, before):
        np.testing.assert_array_equal(v, b)
