"""PyTensor Linker and the "STABLEHLO" Mode."""

from __future__ import annotations

from pytensor.compile.mode import Mode, predefined_linkers, predefined_modes, register_linker
from pytensor.graph.rewriting.db import RewriteDatabaseQuery
from pytensor.link.basic import JITLinker
from pytensor.link.utils import raise_with_op

from lowering import rewrites
from lowering._pytensor_internal import read_dimshuffle_c_code_once
from lowering.graph import node_label

# PyTensor rewrites left out: they only help the C and Numba backends, or they
# produce Ops whose meaning is a memory layout XLA decides for itself.
EXCLUDED_REWRITES = (
    "cxx_only",  # C-only Ops
    "BlasOpt",  # Gemm/Gemv/Ger/Dot22 formation: XLA picks its own dot kernels
    "local_careduce_fusion",  # folds Elemwise into CAReduce for the C loop generator
    "fusion",  # Elemwise -> Composite fusion: XLA fuses elementwise ops itself
    "inplace",  # destructive Ops: XLA owns buffer reuse
    "scan_save_mem_prealloc",
    # matmul -> BatchedDot ravels both operands' batch dims without checking they agree
    # at run time: (2, 1, 1, 4) @ (1, 2, 4, 1) gave a wrong (2, 1, 1, 1) for numpy's
    # error; the batched matmul rule takes N-d batches and checks them.
    "specialize_matmul_to_batched_dot",
    # z - a * sparse_dot(x, y) -> Usmm, an Op we do not lower, where PyTensor finds a BLAS
    # (the pattern asks config.blas__ldflags, whose first read probes the system for one:
    # 0.3-0.4 s of the first build in a process, on any graph with a `z - a * b`).
    "local_usmm",
    # Subtensor(Subtensor(x)) -> one Subtensor, in a canonical form of dozens of scalar
    # nodes per pair of slices that XLA folds away again (half of an ARMA model's build,
    # two thirds of a Scan gradient's); we lower a slice of a slice to one slice ourselves. Scan results, whose
    # merged indices ScanSaveMem reads, keep it (rewrites.merge_subtensors_of_scan_outputs).
    "local_subtensor_merge",
    # log(det(x)) -> SLogDet, built unbatched whatever x's batch: its make_node asserts on
    # a batch of matrices (rewrites.slogdet_of_batched_det takes any).
    "slogdet_specialization",
)


# PyTensor rewrites every graph gets, whatever the Mode's optimizer (as NumbaLinker's
# "numba" tag does): scan_save_mem_no_prealloc (the JAX and Numba backends' variant of
# ScanSaveMem) keeps only the steps a Scan's clients read. A while-Scan whose last state
# alone is used (pm.Truncated's rejection loop) then has a static buffer instead of a
# trace whose length, the steps taken, each call measures and compiles for again.
# `rewrites.TAG`: our own (lowering/rewrites.py), where one Op computes what two shared.
REQUIRED_REWRITES = ("minimum_compile", "scan_save_mem_no_prealloc", rewrites.TAG)


class StableHLOLinker(JITLinker):
    """Lowers the whole FunctionGraph to one StableHLO module and runs it with XLA."""

    required_rewrites = REQUIRED_REWRITES
    incompatible_rewrites = EXCLUDED_REWRITES

    def __init__(self, *args, platform: str = "cpu", fp_contraction: bool = True, **kwargs):
        self.platform = platform
        self.fp_contraction = fp_contraction
        super().__init__(*args, **kwargs)

    def fgraph_convert(self, fgraph, input_storage, storage_map, **kwargs):
        from lowering.api import lower
        from lowering.context import LoweringOptions

        options = LoweringOptions(platform=self.platform)
        compiled = lower(fgraph, options=options).compile(self.platform, self.fp_contraction)
        compiled.bind_storage([storage_map[v] for v in fgraph.inputs])
        return compiled

    def jit_compile(self, fn):
        # PyTensor's containers already filtered every input to its type.
        return _Trusted(fn)

    def create_thunk_inputs(self, storage_map):
        return [storage_map[n] for n in self.fgraph.inputs]

    def create_jitable_thunk(self, compute_map, order, input_storage, output_storage, storage_map):
        """JITLinker's one thunk for the whole graph, except for whom an error blames.

        JITLinker reports any error against the first output's node. A failed run-time
        check knows its node (`RuntimeCheck`, as the exception's `__op_instance__`), and
        arguments that do not fit the graph fail at a node whose location the message
        names (`_named_node`), so PyTensor's "Apply node that caused the error" names that
        one here."""
        fgraph = self.fgraph
        compiled = self.fgraph_convert(fgraph, order=order, input_storage=input_storage,
                                       output_storage=output_storage, storage_map=storage_map)
        run = self.jit_compile(compiled)
        call = compiled.call_trusted
        inputs = self.create_thunk_inputs(storage_map)
        outputs = [storage_map[v] for v in fgraph.outputs]
        output_nodes = [v.owner for v in fgraph.outputs if v.owner is not None][:1]

        def thunk():
            """Run, put the results in the output storage, and return them: a Function
            (the thunk is its `vm`) then takes them as they are instead of reading them
            back from that storage."""
            try:
                results = call([x[0] for x in inputs])
            except Exception as exc:
                node = (getattr(exc, "__op_instance__", None) or _named_node(fgraph, str(exc))
                        or next(iter(output_nodes), None))
                if node is None:
                    raise
                raise_with_op(fgraph, node, thunk)
            for storage, value in zip(outputs, results):
                storage[0] = value
            return results

        thunk.inputs, thunk.outputs, thunk.lazy = inputs, outputs, False
        return [thunk], output_nodes, run


def _named_node(fgraph, message: str):
    """The node whose location (`node_label`, quoted as MLIR's diagnostics print it)
    comes first in `message`: arguments that do not fit the graph fail where shape
    refinement meets them, and the error names that node's location. None if none does."""
    found = [(message.find(f'"{node_label(node)}"'), i, node) for i, node in enumerate(fgraph.toposort())]
    found = [f for f in found if f[0] >= 0]
    return min(found, key=lambda f: f[:2])[2] if found else None


class _Trusted:
    """The thunk's `jit_fn` (JITLinker's contract; `f.vm.jit_fn.compiled` is how tools and
    tests reach the Compiled): the compiled function called on inputs PyTensor's containers
    already filtered. The thunk itself calls `call_trusted` directly, without the `*args`."""

    __slots__ = ("compiled", "call")

    def __init__(self, compiled):
        self.compiled = compiled
        self.call = compiled.call_trusted

    def __call__(self, *args):
        return self.call(args)


def _register(name: str, **linker_options) -> Mode:
    if name in predefined_modes:
        return predefined_modes[name]
    linker = StableHLOLinker(**linker_options)
    if name.lower() not in predefined_linkers:
        register_linker(name.lower(), linker)
    mode = Mode(linker, RewriteDatabaseQuery(include=["fast_run"]))
    predefined_modes[name] = mode
    return mode


read_dimshuffle_c_code_once()
STABLEHLO = _register("STABLEHLO")
# Each multiply and add rounded on its own, as numpy does: slower on CPUs with FMA (the
# README's "Multiply-adds and FMA" says when it matters and what it costs).
STABLEHLO_NO_FMA = _register("STABLEHLO_NO_FMA", fp_contraction=False)
# Compiled for the first NVIDIA GPU, linear algebra through cuSOLVER (needs jax's CUDA plugin).
STABLEHLO_CUDA = _register("STABLEHLO_CUDA", platform="cuda")
