"""PyTensor graph rewrites of the STABLEHLO mode (tag "stablehlo", one of the linker's
required rewrites): one Op for two that share most of their work (GammaIncPair), the
Subtensor merges ScanSaveMem needs (the linker leaves out PyTensor's general one), and
one node for several small ones of a function whose code is long (BatchSmallElementwise),
and two of PyTensor's linear algebra rewrites made to hold for graphs they broke: log(det)
of a batch of matrices (slogdet_of_batched_det), and solves of integer matrices that
PyTensor factors into an LU typed as an integer (solve_integer_matrices_as_floats).

Where two Ops share most of their work, one Op computes both. A censored Gamma model's
logp and gradient evaluate gammaincc(a, x) (the survival of the censored points) and
gammainc(a, x) (inside gammaincc's gradient) on the same a and x.
Each is a series or a continued fraction, loops that run until the slowest element has
converged; computed apart, every loop runs twice. GammaIncPair computes both from one
run of each loop (dialect_rules/series.py), each element by the same steps as alone
(XLA may compile the shared steps into other kernels, whose roundings can differ in the
last bits: 2 and 27 of 5,000 random points, within 3e-14 of each other).
"""

from __future__ import annotations

from copy import copy

import numpy as np
import pytensor.scalar.basic as ps
import pytensor.scalar.math as psm
import pytensor.tensor as pt
from pytensor.compile.mode import optdb
from pytensor.graph.basic import Constant
from pytensor.graph.features import ReplaceValidate
from pytensor.graph.rewriting.basic import GraphRewriter, in2out, node_rewriter
from pytensor.graph.traversal import apply_depends_on
from pytensor.raise_op import CheckAndRaise
from pytensor.scan.op import Scan
from pytensor.tensor import nlinalg, slinalg
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.rewriting.blockwise import blockwise_of
from pytensor.tensor.rewriting.subtensor import local_subtensor_merge
from pytensor.tensor.subtensor import Subtensor, get_idx_list
from scipy import special

TAG = "stablehlo"


class GammaIncPair(ps.ScalarOp):
    """The regularized lower and upper incomplete gamma functions, P(k, x) and Q(k, x),
    of the same k and x: scipy's gammainc and gammaincc."""

    nin = 2
    nout = 2

    def output_types(self, types):
        (out,) = ps.upgrade_to_float(*types)
        return [out, out]

    def impl(self, k, x):
        return special.gammainc(k, x), special.gammaincc(k, x)

    def __eq__(self, other):
        return type(self) is type(other)

    def __hash__(self):
        return hash(type(self))


gammainc_pair = GammaIncPair(name="gammainc_pair")


def elemwise_of(node, scalar_op_type) -> bool:
    """Whether `node` (an Apply, or a client that is not one) is an Elemwise of a
    `scalar_op_type` (a class or a union of them)."""
    return isinstance(getattr(node, "op", None), Elemwise) and isinstance(node.op.scalar_op, scalar_op_type)


@node_rewriter([Elemwise])
def pair_incomplete_gamma(fgraph, node):
    """gammaincc(k, x) and gammainc(k, x) of the same variables -> one GammaIncPair."""
    if not elemwise_of(node, psm.GammaIncC):
        return None
    for client, _ in fgraph.clients[node.inputs[0]]:
        if elemwise_of(client, psm.GammaInc) and client.inputs == node.inputs:
            p, q = Elemwise(gammainc_pair)(*node.inputs)
            return {client.outputs[0]: p, node.outputs[0]: q}
    return None


# After canonicalize, stabilize and specialize (the pair's inputs merged into the same
# variables), before the destroy handler.
optdb.register("stablehlo_pair_incomplete_gamma", in2out(pair_incomplete_gamma), TAG, position=49.2)


@node_rewriter([Subtensor])
def merge_subtensors_of_scan_outputs(fgraph, node):
    """`ys[idx]` of a Scan's result `ys = out[k:]` (what `pytensor.scan` returns: its
    buffer `out` less the k initial taps) -> one Subtensor of `out`, by PyTensor's own
    merge, where `idx` reads some steps (an index, or a slice forward).

    ScanSaveMem keeps only the steps a buffer's clients read; it reads each client's
    first index, so `out[k:][-1]` would keep the whole trace and `out[-1]` keeps one
    step. A merged index is checked against the steps the Scan took (the ring alone
    gives the initial state for `hs[-1]` of no steps). The linker leaves out PyTensor's
    general merge of Subtensors (`linker.EXCLUDED_REWRITES`): its canonical form of two
    slices is dozens of scalar nodes (switches on each length's sign), two thirds of a
    Scan gradient's build, which XLA then folds away again. Slices of slices lower to
    one slice either way."""
    taps = node.inputs[0].owner
    if taps is None or not isinstance(taps.op, Subtensor):
        return None
    out = taps.inputs[0]
    if out.owner is None or not isinstance(out.owner.op, Scan):
        return None
    skip = get_idx_list(taps.inputs, taps.op.idx_list)
    if not (len(skip) == 1 and isinstance(skip[0], slice) and isinstance(skip[0].start, Constant)
            and skip[0].stop is None and skip[0].step is None):
        return None
    idx = get_idx_list(node.inputs, node.op.idx_list)
    if not idx or (isinstance(idx[0], slice) and idx[0].step is not None):
        return None  # a reversal or a stride reads every step
    shape_feature = getattr(fgraph, "shape_feature", None)
    if shape_feature is None:
        return None  # (the index check below needs it: unmerged, every step is kept)
    merged = local_subtensor_merge.transform(fgraph, node)
    if not merged or isinstance(idx[0], slice):
        return merged
    # ScanSaveMem's ring answers `out[-1]` with the initial state where the Scan ran no
    # step (as in PyTensor's FAST_RUN): `ys[i]` must raise there, as numpy does. The
    # length of `ys` comes from the Scan's inputs (a Shape of `out` would be a client
    # that makes ScanSaveMem keep every step).
    length = shape_feature.shape_of[node.inputs[0]][0]
    i = idx[0]
    in_range = pt.and_(pt.ge(i, -length), pt.lt(i, length))
    return [_INDEX_IN_RANGE(merged[0], in_range)]


_INDEX_IN_RANGE = CheckAndRaise(IndexError, "index out of bounds of a Scan's result: it took fewer steps")


# Before ScanSaveMem (position 1.61 of optdb), which reads the merged indices.
optdb["canonicalize"].register("stablehlo_merge_subtensors_of_scan_outputs",
                               merge_subtensors_of_scan_outputs, TAG)


@node_rewriter([nlinalg.det])
def slogdet_of_batched_det(fgraph, node):
    """sign(det(x)), log(abs(det(x))) and log(det(x)) -> SLogDet's outputs, for any
    batch of matrices x.

    PyTensor's own rewrite (`slogdet_specialization`, which the linker leaves out)
    builds an unbatched SLogDet, whose make_node asserts a 2-d input: `pt.log(det(x))`
    of a (2, 3, 3) x failed with a bare AssertionError in every compiled mode.
    Like it, this one does nothing where det(x) has another reader, which would then
    need the determinant itself as well, and for complex matrices, whose determinant's
    log keeps a phase that log|det| has not."""
    if node.inputs[0].type.numpy_dtype.kind == "c":
        return None
    replaced = {}
    for client, _ in fgraph.clients[node.outputs[0]]:
        if elemwise_of(client, ps.Sign):
            replaced[client.outputs[0]] = "sign"
        elif elemwise_of(client, ps.Log):
            replaced[client.outputs[0]] = "log"
        elif elemwise_of(client, ps.Abs):
            logs = [reader for reader, _ in fgraph.clients[client.outputs[0]] if elemwise_of(reader, ps.Log)]
            if not logs:
                return None
            replaced[logs[-1].outputs[0]] = "log_abs"
        else:
            return None
    if not replaced:
        return None
    sign, log_abs = Blockwise(nlinalg.SLogDet())(node.inputs[0])
    nan = pt.as_tensor(np.array(np.nan, dtype=log_abs.dtype))
    found = {"sign": sign, "log_abs": log_abs, "log": pt.where(pt.eq(sign, -1), nan, log_abs)}
    return {old: pt.cast(found[which], old.dtype) for old, which in replaced.items()}


optdb["specialize"].register("stablehlo_slogdet_of_batched_det", slogdet_of_batched_det, TAG)


def _integer_solve(node) -> bool:
    return (isinstance(node.op, Blockwise) and isinstance(node.op.core_op, slinalg.Solve)
            and node.inputs[0].type.numpy_dtype.kind in "biu")


@node_rewriter([blockwise_of(slinalg.Solve)])
def solve_integer_matrices_as_floats(fgraph, node):
    """solve(a, b) of an integer (or bool) a -> solve(cast(a), b), cast to the solve's
    output dtype, which is also the one scipy's LAPACK runs in for these inputs.

    PyTensor's `reuse_decomposition_multiple_solves` (specialize) turns solves that
    share an a into `lu_factor(a)` and `lu_solve`s, and LUFactor types its factor with
    a's dtype: for an int64 a, an int64 factor whose values are floats, which this
    backend refuses (README, "results PyTensor types narrower than their values").
    The gradient of `solve(a, b)` is such a pair of solves, so `pytensor.grad` of a
    solve with an integer matrix failed here where the Python, C and JAX modes ran it.
    Where a is a transpose of an integer matrix, the cast goes under the transpose, so
    that solves with a and a.T still share one factorization."""
    if not _integer_solve(node):
        return None
    a = node.inputs[0]
    dtype = node.outputs[0].dtype
    if a.owner is not None and isinstance(a.owner.op, DimShuffle):
        cast = a.owner.op(pt.cast(a.owner.inputs[0], dtype))
    else:
        cast = pt.cast(a, dtype)
    return node.op.make_node(cast, *node.inputs[1:]).outputs


@node_rewriter([Scan])
def solve_integer_matrices_as_floats_in_scans(fgraph, node):
    """The same inside a Scan's step, where PyTensor's
    `scan_split_non_sequence_decomposition_and_solve` factors a non-sequence a."""
    inner = node.op.fgraph
    if not any(_integer_solve(inner_node) for inner_node in inner.apply_nodes):
        return None
    inner, _ = inner.clone_get_equiv()
    _INTEGER_SOLVES.rewrite(inner)
    op = copy(node.op)
    op.fgraph = inner
    return op.make_node(*node.inputs).outputs


# Before the Scan rewrites (optdb position 0.05), which factor a Scan's non-sequence a,
# and specialize, which factors the outer graph's; again in stabilize, for the solves of
# `inv_as_solve` (inv(a) @ b -> solve(a, b)).
_INTEGER_SOLVES = in2out(solve_integer_matrices_as_floats, solve_integer_matrices_as_floats_in_scans)
optdb.register("stablehlo_solve_integer_matrices_as_floats", _INTEGER_SOLVES, TAG, position=0.04)
optdb["stabilize"].register("stablehlo_solve_integer_matrices_as_floats", solve_integer_matrices_as_floats, TAG)


# Elementwise functions whose code is long (polynomials, a rare branch under `where_some`,
# which keeps XLA from fusing them into their readers anyway; dialect_rules/special.py):
# XLA compiles each node's copy of it, 40-70 ms on this machine whatever the node's size.
_LONG_CODE = (psm.GammaLn, psm.Psi, psm.TriGamma, psm.Gamma, psm.Erfcx)
# The nodes computed together: each of at most BATCH_NODE_ELEMENTS, a batch of at most
# BATCH_ELEMENTS. Three gammaln and digamma nodes of 2,000 or 4,000 elements each ran as
# fast batched (37 and 60 µs a call) as apart, their first call 0.1 s shorter; of 10,000
# each, batched was 5% slower (the joined copy of the inputs).
BATCH_NODE_ELEMENTS = 4096
BATCH_ELEMENTS = 16384


class BatchSmallElementwise(GraphRewriter):
    """Nodes of the same long elementwise function (`_LONG_CODE`) on small inputs of
    static sizes, none computed from another, -> one node on their inputs joined into a
    vector, each result a slice of it: one copy of the function's code for XLA to
    compile, one kernel to run. A Student-t model with its degrees of freedom a parameter
    evaluates gammaln and digamma at nu/2 and (nu + 1)/2, a beta regression each at
    three vectors of its size."""

    def add_requirements(self, fgraph):
        fgraph.attach_feature(ReplaceValidate())

    def apply(self, fgraph):
        # One batch at a time, each found on the graph as the last one left it: a
        # batched node reads all its members' inputs, so nodes independent before may
        # not be after.
        while (batch := _next_batch(fgraph)) is not None:
            fgraph.replace_all_validate(_batched(batch[0].op, batch), reason="batch_small_elementwise")


def _next_batch(fgraph) -> list | None:
    """Two or more nodes of one function and input dtype, each of at most
    BATCH_NODE_ELEMENTS, together at most BATCH_ELEMENTS, none reading another; None if
    no such nodes are left."""
    groups: dict = {}
    for node in fgraph.toposort():  # (a later node may read an earlier one, not back)
        if not (isinstance(node.op, Elemwise) and isinstance(node.op.scalar_op, _LONG_CODE)
                and len(node.inputs) == 1 and _static_size(node.outputs[0]) <= BATCH_NODE_ELEMENTS):
            continue
        size = _static_size(node.outputs[0])
        group = groups.setdefault((node.op, node.inputs[0].type.dtype), [])
        batch = next((b for b in group if sum(_static_size(n.outputs[0]) for n in b) + size <= BATCH_ELEMENTS
                      and not apply_depends_on(node, b)), None)
        if batch is None:
            group.append([node])
        else:
            batch.append(node)
    return next((batch for group in groups.values() for batch in group if len(batch) > 1), None)


def _batched(op, nodes) -> list:
    """(output, its slice of `op` on every node's input joined) for each of `nodes`."""
    values = op(pt.concatenate([node.inputs[0].ravel() for node in nodes]))
    replacements, start = [], 0
    for node in nodes:
        out = node.outputs[0]
        end = start + _static_size(out)
        replacements.append((out, values[start:end].reshape(out.type.shape)))
        start = end
    return replacements


def _static_size(variable) -> float:
    shape = variable.type.shape
    return float("inf") if None in shape else int(np.prod(shape, dtype=np.int64))


# After the pairs above, before the destroy handler.
optdb.register("stablehlo_batch_small_elementwise", BatchSmallElementwise(), TAG, position=49.25)
