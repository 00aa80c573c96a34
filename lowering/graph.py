"""The graph walker: PyTensor graphs -> func.func bodies and region blocks.

One routine (`lower_graph`) emits a graph at the current insertion point; it
serves @main, private functions and the bodies of region ops alike.
"""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np

from jax.extend.mlir import ir
from jax.extend.mlir.dialects import func
from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.graph.basic import Constant, Variable
from pytensor.sparse.type import SparseTensorType
from pytensor.tensor.basic import get_underlying_scalar_constant_value
from pytensor.tensor.exceptions import NotScalarConstantError

try:  # pytensor >= 2.32 moved them; the old names still work in 2.38 with a warning
    from pytensor.graph.traversal import ancestors, io_toposort
except ImportError:  # pragma: no cover
    from pytensor.graph.basic import ancestors, io_toposort

from lowering.errors import LoweringError, UnsupportedOpsError, UnsupportedTypeError
from lowering.registry import lookup_rule
from lowering.types import to_ir_type

_MAX_LOCATION_CHARS = 160
# A Python object's repr inside a variable's name ("RNG(<Generator(PCG64) at 0x7f...>)",
# an unnamed random generator shared variable): its address differs in each process.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def node_label(node) -> str:
    """How PyTensor prints `node` ("Add(Mul.0, x)"), cut to a location's length.

    Built from the node's own inputs: `str(node)` walks the graph to name shared
    subexpressions, which costs more than lowering the node does. Object addresses
    are dropped: the module, which the disk cache keys executables by, must be the same
    in every process that builds the same graph.
    """
    text = _ADDRESS.sub("", f"{node.op}({', '.join(map(_input_text, node.inputs))})")
    return text if len(text) <= _MAX_LOCATION_CHARS else text[: _MAX_LOCATION_CHARS - 3] + "..."


# PyTensor prints a constant as numpy prints its data, cut to its first and last ten
# characters; numpy formats every element of an array of up to 1,000 (its threshold),
# which cost 2-4 ms a label for a model's 1,000 observed points (and the garbage
# collector's passes the strings start). Past this many elements the label's data is
# numpy's summary of the edges.
_LABEL_ELEMENTS = 20


def _input_text(var) -> str:
    if isinstance(var, Constant) and np.size(var.data) > _LABEL_ELEMENTS:
        with np.printoptions(threshold=_LABEL_ELEMENTS):
            return str(var)
    return str(var)


def constant_scalar(var) -> np.generic | None:
    """The one value a 0-d (or all-broadcastable) input always has, as PyTensor's folding
    sees it through shapes, `ExpandDims` and arithmetic on constants (an inner graph's
    `x.shape[-1] + 0` for a static x), else None."""
    try:
        return get_underlying_scalar_constant_value(var)
    except NotScalarConstantError:
        return None


def constant_int(var) -> int | None:
    """`constant_scalar` where it is an integer."""
    value = constant_scalar(var)
    return int(value) if value is not None and np.asarray(value).dtype.kind in "iu" else None


def find_unsupported(nodes, missing=None) -> dict[str, list]:
    """Every Op (here and in nested graphs) with no rule, with the nodes that use it."""
    missing = defaultdict(list) if missing is None else missing
    for node in nodes:
        _check_op(node.op, node, missing)
    return missing


def _check_op(op, node, missing) -> None:
    rule = lookup_rule(op)
    if rule is None:
        missing[type(op).__name__].append(node)
        return
    name = rule.missing(op, node) if rule.missing else None
    if name is not None:
        missing[name].append(node)
        return
    for inner in rule.inner_ops(op) if rule.inner_ops else ():
        _check_op(inner, node, missing)
    inner_fgraph = getattr(op, "fgraph", None)
    if inner_fgraph is not None and hasattr(inner_fgraph, "apply_nodes"):
        find_unsupported(inner_fgraph.toposort(), missing)


def lower_function(ctx, inputs, outputs, name: str, public: bool = False) -> func.FuncOp:
    """Emit `func.func @name` computing `outputs` from `inputs`."""
    symbol = ctx.unique_symbol(name)
    arg_types = [to_ir_type(v.type) for v in inputs]
    with ir.InsertionPoint(ctx.module.body):
        fn = func.FuncOp(symbol, ir.FunctionType.get(arg_types, []))
    fn.attributes["sym_visibility"] = ir.StringAttr.get("public" if public else "private")
    block = fn.add_entry_block()
    if public and ctx._main is None:
        ctx._main = fn
    frame = ctx.push_function(fn)
    try:
        with ir.InsertionPoint(block):
            results = lower_graph(ctx, inputs, outputs, list(block.arguments))
            _refuse_sparse(outputs)
            # a constant Generator as an output: the module returns its key, as it does
            # for a Generator computed in it (`api.RngPlan` says what the call returns)
            results = [_generator_key(ctx, r) if isinstance(r, np.random.Generator) else r for r in results]
            # Error flags: a private function returns each (its caller re-raises them);
            # @main returns one i1 vector, read back once per call by the runtime.
            if not public:
                results = results + frame.flags
            elif frame.flags:
                results = results + [_pack_flags(frame.flags)]
            func.return_(results)
    finally:
        ctx.pop_function()
    # Arguments may have been added while lowering (hoisted constants).
    fn.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get([a.type for a in block.arguments], [r.type for r in results])
    )
    return fn


def _generator_key(ctx, generator: np.random.Generator) -> ir.Value:
    from lowering.runtime import peek_key  # (the runtime imports the graph walker)

    return ctx.constant(peek_key(generator))


def _refuse_sparse(outputs) -> None:
    """A sparse result is a scipy matrix to the rules (constants only), no MLIR value."""
    for i, var in enumerate(outputs):
        if isinstance(var.type, SparseTensorType):
            what = var.name or (node_label(var.owner) if var.owner else var)
            raise UnsupportedTypeError(
                f"output {i} ({what}): sparse results are not supported ({var.type}): "
                "return it dense (pytensor.sparse.dense_from_sparse)"
            )


def _pack_flags(flags: list[ir.Value]) -> ir.Value:
    one = ir.RankedTensorType.get([1], ir.IntegerType.get_signless(1))
    return hlo.concatenate([hlo.reshape(one, f) for f in flags], 0)


def lower_graph(ctx, inputs, outputs, operands, env=None) -> list[ir.Value]:
    env = dict(env or {})
    env.update(zip(inputs, operands, strict=True))
    nodes = io_toposort(inputs, outputs) if outputs else []
    missing = find_unsupported(nodes)
    if missing:
        raise UnsupportedOpsError(dict(missing))
    deferred = _region_owned(nodes, outputs)
    ctx.envs.append(env)
    frame = ctx.frame
    own = frame is not None and frame.node is None  # the function's graph, not a graph inside a node
    try:
        for node in nodes:
            if node in deferred:
                continue  # lowered inside a region of the node that needs it
            rule = lookup_rule(node.op)
            lazy = rule.lazy_inputs(node) if rule.lazy_inputs else {}
            operands_ = [env.get(v) if i in lazy else _value_of(ctx, v, env) for i, v in enumerate(node.inputs)]
            if own:
                frame.node = node
            env.update(zip(node.outputs, lower_node(ctx, node, operands_), strict=True))
    finally:
        ctx.envs.pop()
        if own:
            frame.node = None
    return [_value_of(ctx, v, env) for v in outputs]


def free_variables(outputs, env) -> list:
    """The variables of `env` that computing `outputs` reads (graph order)."""
    return [v for v in ancestors(outputs, blockers=env) if v in env]


def _region_owned(nodes, outputs) -> set:
    """Nodes whose results only the lazy inputs of one region need (an IfElse branch).

    Walking back from the outputs, each node gets the innermost region holding every
    use of its results; a use as a lazy input of node N is a use in that region of N,
    nested in N's own region. Nodes outside the top level are lowered by their region.
    """
    lazy_of = {}
    for node in nodes:
        rule = lookup_rule(node.op)
        if rule.lazy_inputs:
            lazy_of[node] = rule.lazy_inputs(node)
    if not lazy_of:
        return set()
    top = None
    parent = {}  # region -> enclosing region
    owner = {}  # node -> region

    def chain(region):
        path = [region]
        while region is not top:
            region = parent[region]
            path.append(region)
        return path

    def common(a, b):
        on_a = set(chain(a))
        return next(r for r in chain(b) if r in on_a)

    uses = defaultdict(list)
    for node in nodes:
        for i, v in enumerate(node.inputs):
            if v.owner is not None:
                uses[v.owner].append((node, i))
    is_output = {v.owner for v in outputs if v.owner is not None}
    for node in reversed(nodes):
        region = top if node in is_output else "unused"
        for client, i in uses[node]:
            key = lazy_of.get(client, {}).get(i)
            if key is None:
                here = owner[client]
            else:
                here = (client, key)
                parent[here] = owner[client]
            region = here if region == "unused" else common(region, here)
        owner[node] = top if region == "unused" else region
    return {node for node, region in owner.items() if region is not top}


def _value_of(ctx, var: Variable, env) -> ir.Value:
    value = env.get(var)
    if value is not None:
        return value
    if isinstance(var, Constant):
        if getattr(var.type, "dtype", None) is None or isinstance(var.type, SparseTensorType):
            return var.data  # NoneConst, slices, sparse matrices: rules get the Python object
        value = ctx.constant(np.asarray(var.data, dtype=var.type.dtype))
        env[var] = value
        return value
    raise LoweringError(
        f"variable {var} is needed but is neither an input of the graph nor computed in it"
        " (pass it as an input)"
    )


def lower_node(ctx, node, operands, *, own_location: bool = True) -> list[ir.Value]:
    """Apply the node's rule with a location naming it, and check what it returns.

    `own_location=False` keeps the enclosing location: a scalar node applied by an
    Elemwise rule is reported as that Elemwise node.
    """
    rule = lookup_rule(node.op)
    if rule is None:
        raise UnsupportedOpsError({type(node.op).__name__: [node]})
    if not own_location:
        loc = ir.Location.current
    elif ctx.options.debug_info:
        loc = ir.Location.name(node_label(node))
    else:
        loc = ir.Location.unknown()
    outer, ctx.node = ctx.node, node
    try:
        with loc:
            results = rule.fn(ctx, node, *operands)
    except LoweringError:
        raise
    except Exception as exc:
        exc.add_note(f"while lowering {type(node.op).__name__} node: {node_label(node)}")
        raise
    finally:
        ctx.node = outer
    if not isinstance(results, (tuple, list)):
        results = (results,)
    if len(results) != len(node.outputs):
        raise LoweringError(
            f"rule for {type(node.op).__name__} returned {len(results)} values for "
            f"{len(node.outputs)} outputs (node: {node_label(node)})"
        )
    for out, value in zip(node.outputs, results):
        _check_result(ctx, node, out, value)
    return list(results)


def _check_result(ctx, node, out, value) -> None:
    """The rule must produce PyTensor's output dtype, and for tensors its rank and static dims."""
    if getattr(out.type, "dtype", None) is None or isinstance(out.type, SparseTensorType):
        return  # a slice, a sparse constant's transpose: Python objects only rules read
    expected = ctx.ir_type(out.type)
    if value.type == expected:
        return
    got = ir.RankedTensorType(value.type)
    problem = None
    if got.element_type != expected.element_type:
        problem = f"element type {got.element_type}, expected {expected.element_type}"
    elif getattr(out.type, "ndim", None) is not None and hasattr(out.type, "broadcastable"):
        if got.rank != expected.rank:
            problem = f"rank {got.rank}, expected {expected.rank}"
        else:
            for i in range(got.rank):
                if not expected.is_dynamic_dim(i) and not got.is_dynamic_dim(i) and (
                    expected.get_dim_size(i) != got.get_dim_size(i)
                ):
                    problem = f"type {got}, expected {expected}"
    if problem:
        raise LoweringError(
            f"rule for {type(node.op).__name__} produced {problem} (node: {node_label(node)})"
        )
