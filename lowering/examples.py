"""Graphs as the tools see them, and the built-in examples.

A `Graph` is what the IR dump tool and `python -m lowering` lower: inputs, outputs and,
when the source knows them, sensible input values (a PyMC model's initial point).
`as_graph` accepts everything the tool's entry convention allows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.graph.fg import FunctionGraph


@dataclass
class Graph:
    """Inputs and outputs of one PyTensor graph, with optional input values."""

    name: str
    inputs: list
    outputs: list
    values: list | None = None  # one per input (an array, a Generator), or None: tools pick them
    rewritten: bool = False  # already rewritten by a PyTensor mode (a compiled function's graph)

    def fgraph(self) -> FunctionGraph:
        return FunctionGraph(self.inputs, self.outputs, clone=True)


def as_graph(obj, name: str) -> Graph:
    """A `Graph` from an `(inputs, outputs)` pair, a FunctionGraph, a compiled PyTensor
    function, a PyMC model (its logp and dlogp) or a `Graph`."""
    from pytensor.compile.function.types import Function

    if isinstance(obj, Graph):
        return with_shared_inputs(obj)
    if isinstance(obj, FunctionGraph):
        return Graph(name, list(obj.inputs), list(obj.outputs))
    if isinstance(obj, Function):
        fgraph = obj.maker.fgraph
        return Graph(name, list(fgraph.inputs), list(fgraph.outputs), rewritten=True)
    if _is_pymc_model(obj):
        return model_graph(obj, name)
    if isinstance(obj, tuple) and len(obj) == 2:
        inputs, outputs = obj
        inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        return with_shared_inputs(Graph(name, inputs, outputs))
    raise TypeError(
        f"{name} gave a {type(obj).__name__}; expected (inputs, outputs), a FunctionGraph, "
        "a compiled PyTensor function or a PyMC model"
    )


def with_shared_inputs(graph: Graph) -> Graph:
    """`graph` with the shared variables its outputs read but its inputs leave out
    appended to its inputs, as `pytensor.function` passes them to its linker; where the
    graph has values, theirs are their current ones (a Generator for an rng)."""
    shared = shared_inputs(graph.outputs, graph.inputs)
    if not shared:
        return graph
    values = graph.values
    if values is not None:
        values = [*values, *(v.get_value() for v in shared)]
    return replace(graph, inputs=[*graph.inputs, *shared], values=values)


def shared_inputs(outputs, given=()) -> list:
    """The shared variables `outputs` read, not through `given`, in the order
    `pytensor.function` collects them: depth first, node inputs left to right."""
    from pytensor.compile.sharedvalue import SharedVariable

    found, seen, stack = [], set(given), list(reversed(outputs))
    while stack:
        var = stack.pop()
        if var in seen:
            continue
        seen.add(var)
        if var.owner is not None:
            stack.extend(reversed(var.owner.inputs))
        elif isinstance(var, SharedVariable):
            found.append(var)
    return found


def _is_pymc_model(obj) -> bool:
    return any(c.__module__.startswith("pymc") and c.__name__ == "Model" for c in type(obj).__mro__)


def model_graph(model, name: str = "model") -> Graph:
    """A PyMC model's joint log-density and its gradient, in the model's value variables.

    Data containers (shared variables) become constants, as in a compiled logp function
    whose data does not change; the values are the model's initial point.
    """
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.replace import graph_replace
    from pytensor.graph.traversal import ancestors

    logp = model.logp()
    dlogp = model.dlogp()
    logp.name, dlogp.name = "logp", "dlogp"
    shared = [v for v in ancestors([logp, dlogp]) if isinstance(v, SharedVariable)]
    if shared:
        replacements = {v: pt.constant(v.get_value(borrow=True), name=v.name) for v in shared}
        logp, dlogp = graph_replace([logp, dlogp], replacements, strict=False)
    point = model.initial_point()
    values = [np.asarray(point[v.name], dtype=v.type.dtype) for v in model.value_vars]
    return Graph(name, list(model.value_vars), [logp, dlogp], values)


# --- built-in examples ------------------------------------------------------------


@dataclass
class Example:
    description: str
    build: Callable[[], Graph]


def _elemwise() -> Graph:
    x = pt.matrix("x")
    y = pt.vector("y")
    out = pt.exp(x * 2 + y).sum(axis=1)
    rng = np.random.default_rng(0)
    return Graph("elemwise", [x, y], [out], [rng.normal(size=(3, 4)), np.arange(4.0) / 4])


def _softmax() -> Graph:
    x = pt.matrix("x")
    return Graph("softmax", [x], [pt.special.log_softmax(x, axis=-1), pt.argmax(x, axis=-1)])


def _dynamic_shapes() -> Graph:
    x = pt.vector("x")
    n = pt.lscalar("n")
    out = pt.arange(n, dtype="float64") * x[:n] + pt.alloc(1.0, n)
    return Graph("dynamic-shapes", [x, n], [out], [np.linspace(0, 1, 6), np.int64(4)])


def _indexing() -> Graph:
    x = pt.matrix("x")
    idx = pt.lvector("idx")
    out = pt.inc_subtensor(x[idx, ::-1], 1.0)
    return Graph("indexing", [x, idx], [out], [np.zeros((4, 3)), np.array([0, 2, 2])])


def eight_schools_model():
    """PyMC's eight schools model, non-centered."""
    import pymc as pm

    y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
    sigma = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfCauchy("tau", 5.0)
        theta_raw = pm.Normal("theta_raw", 0.0, 1.0, shape=8)
        theta = mu + tau * theta_raw
        pm.Normal("obs", theta, sigma, observed=y)
    return model


def _eight_schools() -> Graph:
    return model_graph(eight_schools_model(), "eight-schools")


def _garch(n: int = 500) -> Graph:
    """PyMC GARCH(1,1): the volatilities are a Scan over the returns."""
    import pymc as pm

    returns = np.random.default_rng(3).normal(scale=0.1, size=n)
    with pm.Model() as model:
        omega = pm.HalfNormal("omega", 0.1)
        alpha = pm.Beta("alpha", 2, 5)
        beta = pm.Beta("beta", 5, 2)

        def volatility(r_prev, s_prev, omega, alpha, beta):
            return pt.sqrt(omega + alpha * r_prev**2 + beta * s_prev**2)

        sigmas = pytensor.scan(
            volatility, sequences=[pt.as_tensor(returns[:-1])],
            outputs_info=[pt.constant(np.float64(0.1))], non_sequences=[omega, alpha, beta],
            return_updates=False,
        )
        pm.Normal("r", 0, sigmas, observed=returns[1:])
    return model_graph(model, "garch")


EXAMPLES: dict[str, Example] = {
    "elemwise": Example("exp(x * 2 + y).sum(axis=1): broadcasting and a reduction", _elemwise),
    "softmax": Example("log_softmax and argmax of a matrix along its last axis", _softmax),
    "dynamic-shapes": Example(
        "arange(n) * x[:n] + alloc(1, n): shapes that depend on a scalar input", _dynamic_shapes
    ),
    "indexing": Example("inc_subtensor(x[idx, ::-1], 1): advanced indexing, repeated indices",
                        _indexing),
    "eight-schools": Example("PyMC's eight schools model: logp and dlogp (non-centered)",
                             _eight_schools),
    "garch": Example("PyMC GARCH(1,1) over 500 returns: logp and dlogp through a Scan", _garch),
}


def example(name: str) -> Graph:
    try:
        entry = EXAMPLES[name]
    except KeyError:
        raise KeyError(f"no example named {name!r}; choose from {', '.join(EXAMPLES)}") from None
    return entry.build()
