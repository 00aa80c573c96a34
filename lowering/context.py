"""LoweringContext: the module being built, the options, and per-node state.

Rules receive a context; they never build contexts or MLIR contexts themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from jax.extend.mlir import ir
from jax.extend.mlir.dialects import func
from pytensor.graph.basic import Apply

from lowering.builders import (
    _is_uniform, cast_shape, custom_call, function_type, ir_constant, row_major, shape_of, symbol_name,
)
from lowering.errors import UnsupportedParameterError
from lowering.types import static_shape, to_ir_type


# XLA's CPU handler for Python callbacks; its `index` attribute picks the function.
HOST_CALLBACK_TARGET = "xla_ffi_python_cpu_callback"
# The platforms a module can be lowered for (`LoweringOptions.platform`).
PLATFORMS = ("cpu", "cuda")


@dataclass(frozen=True)
class LoweringOptions:
    """Everything that changes how a graph lowers, in one place (no globals)."""

    # Constants with at least this many elements (and not all equal) become extra
    # arguments of @main bound to device buffers, instead of dense attributes.
    # None keeps every constant in the module (self-contained modules, for export).
    hoist_constants_over: int | None = 1024
    # Attach a location naming the PyTensor node to every op.
    debug_info: bool = True
    # The XLA platform the module is for: "cpu", or "cuda" (NVIDIA GPUs). Library calls
    # depend on it: LAPACK on the CPU, cuSOLVER on CUDA (the rest of a module is the same).
    platform: str = "cpu"

    def __post_init__(self):
        if self.platform not in PLATFORMS:
            raise ValueError(
                f"LoweringOptions(platform={self.platform!r}): expected one of {', '.join(PLATFORMS)}"
            )


@dataclass
class RuntimeCheck:
    """A condition computed in the module; the runtime raises `error(message)` when it
    holds, with the PyTensor node that checks it as the exception's `__op_instance__`
    (the attribute PyTensor's `raise_with_op` sets)."""

    error: type
    message: str
    node: Apply | None = None


@dataclass
class FunctionFrame:
    """A func.func being lowered, with the run-time checks raised in its body."""

    fn: func.FuncOp
    checks: list[RuntimeCheck] = field(default_factory=list)
    flags: list[ir.Value] = field(default_factory=list)
    # The node of this function's own graph being lowered (`lower_graph`): the one a
    # check raised by a node inside it (a Composite's scalar, a region's body) blames.
    node: Apply | None = None

    @property
    def entry_block(self):
        return self.fn.regions[0].blocks[0]


@dataclass
class HoistedConstant:
    value: np.ndarray
    argument: ir.Value


class LoweringContext:
    def __init__(self, mlir_context: ir.Context, module: ir.Module, options: LoweringOptions):
        self.context = mlir_context
        self.module = module
        self.options = options
        self.node = None  # the Apply being lowered, for helpers that name it
        self.hoisted: list[HoistedConstant] = []
        # @main's checks (its last results are their flags), and each private function's:
        # a call site re-raises a callee's checks in its own function, up to @main.
        self.checks: list[RuntimeCheck] = []
        self.function_checks: dict[str, list[RuntimeCheck]] = {}
        self._hoisted_by_id: dict[int, HoistedConstant] = {}
        self._symbols: set[str] = set()
        self._main: func.FuncOp | None = None
        self._frames: list[FunctionFrame] = []
        # Rules' per-module memo (e.g. one private function per OpFromGraph).
        self.memo: dict = {}
        # The variable -> Value maps of the graphs being lowered, innermost last.
        self.envs: list[dict] = []
        self._ir_types: dict = {}
        # Python functions the module calls on the host (`host_call`), by index.
        self.host_callbacks: list = []

    def ir_type(self, ptype) -> ir.RankedTensorType:
        """`to_ir_type(ptype)`, made once per PyTensor type in this module."""
        found = self._ir_types.get(ptype)
        if found is None:
            found = self._ir_types[ptype] = to_ir_type(ptype)
        return found

    # --- symbols and functions -------------------------------------------------

    def unique_symbol(self, name: str) -> str:
        """`name` as a symbol not used yet in the module: characters other than letters,
        digits and `_` become `_` (Op names such as `Blockwise{...}` stay readable in the
        IR), then `_1`, `_2`, ... until it is new."""
        name = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
        base, n = name, 0
        while name in self._symbols:
            n += 1
            name = f"{base}_{n}"
        self._symbols.add(name)
        return name

    def lower_fgraph(self, fgraph, name: str, public: bool = False) -> func.FuncOp:
        """Lower a FunctionGraph (or any object with .inputs/.outputs) into a new func.func."""
        from lowering.graph import lower_function

        return lower_function(self, fgraph.inputs, fgraph.outputs, name, public=public)

    def lower_graph(self, inputs, outputs, operands, env=None) -> list[ir.Value]:
        """Lower the graph between `inputs` and `outputs` at the current insertion point.

        `operands` are the Values of `inputs`; `env` may pre-bind other variables
        (e.g. an inner graph's constants broadcast to an elementwise shape).
        Used for func bodies and for the blocks of region ops alike.
        """
        from lowering.graph import lower_graph

        return lower_graph(self, inputs, outputs, operands, env)

    def lower_region_function(self, outputs, name: str) -> tuple[func.FuncOp, list[ir.Value]]:
        """A private function computing `outputs` from the values lowered so far.

        For a rule with lazy inputs: the nodes only its region needs were skipped by
        the graph walker; they become the body of this function, whose parameters are
        the values they read from the enclosing graph (returned as the call operands).
        Its run-time checks are `function_checks[symbol]`, flags after the outputs.
        """
        from lowering.graph import free_variables, lower_function

        env = self.envs[-1]
        free = free_variables(outputs, env)
        fn = lower_function(self, free, outputs, name)
        return fn, [env[v] for v in free]

    # --- runtime checks -------------------------------------------------------------

    def runtime_check(self, failed: ir.Value, error: type, message: str) -> None:
        """Raise `error(message)` at call time when the 0-d boolean `failed` is true.

        The flag becomes an extra result of the function being lowered; @main's flags
        are inspected by the runtime, a private function's are re-checked by its caller
        (`call_function`), so errors numpy would raise are never silently wrong.
        Inside a region body (a loop, a reduction) nothing can be returned early: such
        rules raise UnsupportedParameterError.
        """
        frame = self._frames[-1] if self._frames else None
        if frame is None or ir.InsertionPoint.current.block != frame.entry_block:
            from lowering.errors import UnsupportedParameterError

            raise UnsupportedParameterError(
                self.node, "a run-time check inside a region body", "only function bodies can raise"
            )
        node = f" (node: {self.node})" if self.node is not None else ""
        frame.checks.append(RuntimeCheck(error, message + node, frame.node or self.node))
        frame.flags.append(failed)

    @property
    def on_gpu(self) -> bool:
        """Whether the module is lowered for an NVIDIA GPU (`LoweringOptions.platform`)."""
        return self.options.platform == "cuda"

    @property
    def frame(self) -> FunctionFrame | None:
        """The function being lowered."""
        return self._frames[-1] if self._frames else None

    def can_raise(self) -> bool:
        """Whether `runtime_check` works here (a function body, not a region body)."""
        return bool(self._frames) and ir.InsertionPoint.current.block == self._frames[-1].entry_block

    def call_function(self, fn: func.FuncOp, operands, n_results: int) -> list[ir.Value]:
        """Call a private function from `lower_fgraph`; its run-time checks become ours."""
        results = self.emit_call(fn, operands)
        for check, flag in zip(self.checks_of(fn), results[n_results:]):
            self.runtime_check(flag, check.error, check.message)
        return results[:n_results]

    def emit_call(self, fn: func.FuncOp, operands) -> list[ir.Value]:
        """`func.call @fn`: all its results, check flags included. Operands whose
        static dims differ from the parameters' are cast to them."""
        fn_type = function_type(fn)
        operands = [cast_shape(x, t) for x, t in zip(operands, fn_type.inputs, strict=True)]
        symbol = ir.FlatSymbolRefAttr.get(symbol_name(fn))
        return list(func.CallOp(list(fn_type.results), symbol, operands).results)

    def result_dims(self, fn: func.FuncOp, results: range, zero_operands) -> list[list]:
        """The dims of `fn`'s `results`: from its result types where they are static, else
        from one call on `zero_operands()` (operands shaped as a real call's), which is dead
        once shapes are refined (only its result shapes are read)."""
        types = [ir.RankedTensorType(function_type(fn).results[k]) for k in results]
        if all(t.has_static_shape for t in types):
            return [list(t.shape) for t in types]
        probe = self.emit_call(fn, zero_operands())
        return [
            list(t.shape) if t.has_static_shape else list(shape_of(probe[k]))
            for t, k in zip(types, results)
        ]

    def checks_of(self, fn: func.FuncOp) -> list[RuntimeCheck]:
        """A lowered private function's run-time checks (its flags follow its outputs)."""
        return self.function_checks.get(symbol_name(fn), [])

    def push_function(self, fn: func.FuncOp) -> FunctionFrame:
        frame = FunctionFrame(fn)
        self._frames.append(frame)
        return frame

    def pop_function(self) -> None:
        frame = self._frames.pop()
        if frame.fn is self._main:
            self.checks = frame.checks
        else:
            self.function_checks[symbol_name(frame.fn)] = frame.checks

    # --- host callbacks -------------------------------------------------------------

    def host_call(self, fn, operands, results) -> list[ir.Value]:
        """Call the Python function `fn` on the host, from inside the executable.

        For the few Ops that have neither a StableHLO form nor a jaxlib target (QZ:
        LAPACK's gges; Schur with `sort`: gees' selection): XLA's CPU client runs
        `fn(*arrays)` (read-only numpy arrays) in the middle of the computation; it
        returns one array per (dims, dtype) of `results`. The executable holds `fn`; the
        module can be compiled for the CPU only, and neither exported nor cached on disk.
        """
        if self.options.platform != "cpu":
            raise UnsupportedParameterError(
                self.node, f"platform {self.options.platform!r}",
                "it runs on the host through XLA's CPU callback: lower it for platform 'cpu'",
            )
        for index, known in enumerate(self.host_callbacks):
            if known is fn:
                break
        else:
            index = len(self.host_callbacks)
            self.host_callbacks.append(fn)
        u64 = ir.IntegerType.get_unsigned(64)
        # Without layouts XLA may hand the host a transposed buffer as it is.
        return custom_call(
            HOST_CALLBACK_TARGET, operands, results,
            config={"index": ir.IntegerAttr.get(u64, index)},
            operand_layouts=[row_major(len(static_shape(x.type))) for x in operands],
            result_layouts=[row_major(len(dims)) for dims, _ in results],
        )

    # --- constants ----------------------------------------------------------------

    def constant(self, data: np.ndarray, dtype=None) -> ir.Value:
        """A constant from the graph: inline when small or uniform, else a bound argument."""
        arr = np.asarray(data, dtype=dtype)
        if (
            self.options.hoist_constants_over is not None
            and arr.size >= self.options.hoist_constants_over
            and self._main is not None
            and self._frames
            and self._frames[-1].fn is self._main
            and ir.InsertionPoint.current.block == self._frames[-1].entry_block
            and not _is_uniform(arr)
        ):
            return self._hoist(arr)
        return ir_constant(arr)

    def _hoist(self, arr: np.ndarray) -> ir.Value:
        key = id(arr)
        hit = self._hoisted_by_id.get(key)
        if hit is not None and hit.value is arr:
            return hit.argument
        block = self._main.regions[0].blocks[0]
        argument = block.add_argument(
            to_ir_type(_ArrayType(arr)), ir.Location.name("hoisted constant")
        )
        hoisted = HoistedConstant(arr, argument)
        self.hoisted.append(hoisted)
        self._hoisted_by_id[key] = hoisted
        return argument


class _ArrayType:
    """Just enough of a PyTensor type for `to_ir_type` (static shape and dtype)."""

    def __init__(self, arr: np.ndarray):
        self.shape = arr.shape
        self.dtype = arr.dtype.name
