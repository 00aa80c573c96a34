"""LoweringContext: the module being built, the options, and per-node state.

Rules receive a context; they never build contexts or MLIR contexts themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from jax.extend.mlir import ir
from jax.extend.mlir.dialects import func

from lowering.builders import _is_uniform, ir_constant
from lowering.types import to_ir_type


@dataclass(frozen=True)
class LoweringOptions:
    """Everything that changes how a graph lowers, in one place (no globals)."""

    # Constants with at least this many elements (and not all equal) become extra
    # arguments of @main bound to device buffers, instead of dense attributes.
    # None keeps every constant in the module (self-contained modules, for export).
    hoist_constants_over: int | None = 1024
    # Attach a location naming the PyTensor node to every op.
    debug_info: bool = True


@dataclass
class RuntimeCheck:
    """A condition computed in the module; the runtime raises `error(message)` when it holds."""

    error: type
    message: str


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
        self.checks: list[RuntimeCheck] = []
        self.check_values: list[ir.Value] = []
        self._hoisted_by_id: dict[int, HoistedConstant] = {}
        self._symbols: set[str] = set()
        self._main: func.FuncOp | None = None
        self._func_stack: list[func.FuncOp] = []

    # --- symbols and functions -------------------------------------------------

    def unique_symbol(self, name: str) -> str:
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

    # --- runtime checks -------------------------------------------------------------

    def runtime_check(self, failed: ir.Value, error: type, message: str) -> None:
        """Raise `error(message)` at call time when the 0-d boolean `failed` is true.

        The flag becomes an extra result of @main that the runtime inspects, so
        errors numpy would raise (empty max, bad index) are never silently wrong.
        """
        block = ir.InsertionPoint.current.block
        if self._main is None or block != self._main.regions[0].blocks[0]:
            from lowering.errors import UnsupportedParameterError

            raise UnsupportedParameterError(
                self.node, "a run-time check inside a nested graph", "only @main's body can raise"
            )
        node = f" (node: {self.node})" if self.node is not None else ""
        self.checks.append(RuntimeCheck(error, message + node))
        self.check_values.append(failed)

    # --- constants ----------------------------------------------------------------

    def constant(self, data: np.ndarray, dtype=None) -> ir.Value:
        """A constant from the graph: inline when small or uniform, else a bound argument."""
        arr = np.asarray(data, dtype=dtype)
        if (
            self._main is not None
            and self._func_stack
            and self._func_stack[0] is self._main
            and self.options.hoist_constants_over is not None
            and arr.size >= self.options.hoist_constants_over
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
