"""`lower(fgraph)` -> `Lowered` -> `.compile()` -> `Compiled`, like JAX's AOT API."""

from __future__ import annotations

import re
import threading

import numpy as np
from jax.extend.mlir import ir
from pytensor.compile.ops import DeepCopyOp, ViewOp

from lowering._jax_internal import make_ir_context
from lowering.builders import dim_trace_memo
from lowering.compile import module_bytecode
from lowering.context import LoweringContext, LoweringOptions
from lowering.errors import UnsupportedTypeError
from lowering.graph import lower_function
from lowering.passes import DEFAULT_PIPELINE, PipelineReport, _verify, run_pipeline
from lowering.regions import loops_by_rows
from lowering.specialize import Signature, is_fully_static, scalar_arguments, specialize
from lowering.types import KEY_SHAPE, is_rng_type, storage_dtype, to_ir_type


class Lowered:
    """A StableHLO module for one PyTensor graph; unknown dims are `?`."""

    def __init__(self, fgraph, context, module, raw_module, report, hoisted, checks=(), host_callbacks=(),
                 platform: str = "cpu"):
        self.fgraph = fgraph
        # The platform its library calls are for (`LoweringOptions.platform`).
        self.platform = platform
        self.context = context
        self.module = module
        self._raw_module = raw_module  # a copy of the module before any pass
        self.pipeline_report: PipelineReport = report
        self.hoisted_constants = hoisted
        # With checks, @main's last result is an i1 vector: one error flag per check.
        self.runtime_checks = list(checks)
        # Python functions the executable calls (`LoweringContext.host_call`).
        self.host_callbacks = tuple(host_callbacks)
        self.input_types = [v.type for v in fgraph.inputs]
        self.output_types = [v.type for v in fgraph.outputs]
        self.input_names = [v.name or f"<input {i}>" for i, v in enumerate(fgraph.inputs)]
        self.rng = RngPlan(fgraph)
        self.resident_inputs = _resident_inputs(fgraph)
        self._bytecode = None
        # One MLIR context per Lowered: specializations that share it take turns.
        self.lock = threading.RLock()

    def as_text(self, debug_info: bool = False, raw: bool = False) -> str:
        """The module as StableHLO text (`raw=True`: before the pass pipeline)."""
        with self.lock, self.context:
            module = self._raw_module if raw else self.module.operation
            return module.get_asm(enable_debug_info=debug_info)

    def specialize(self, *args) -> ir.Module:
        """The module refined to concrete argument shapes: `?` dims become static.

        Each argument is an array, or anything with `.shape` (dtypes are the graph's).
        Shapes that depend on the values of 0-d inputs need those values:
        pass such inputs as arrays/numbers.
        """
        if len(args) != len(self.input_types):
            raise TypeError(f"expected {len(self.input_types)} arguments, got {len(args)}")
        shapes = tuple(
            KEY_SHAPE if is_rng_type(t) else tuple(getattr(a, "shape", np.shape(a)))
            for a, t in zip(args, self.input_types)
        )
        module = self.specialized_module(shapes)
        if not is_fully_static(module):
            values = tuple(
                (i, np.asarray(args[i]).item())
                for i in scalar_arguments(self.input_types)
                if not hasattr(args[i], "dtype") or isinstance(args[i], (np.ndarray, np.generic))
            )
            if values:
                module = self.specialized_module(shapes, values)
        return module

    def specialized_module(self, shapes, values=()) -> ir.Module:
        """Refine to `shapes` of the graph inputs (and `values` of scalar int inputs)."""
        hoisted = self.hoisted_constants
        signature = Signature(
            tuple(shapes) + tuple(c.value.shape for c in hoisted),
            tuple(map(storage_dtype, self.input_types)) + tuple(c.value.dtype.name for c in hoisted),
            tuple(values),
        )
        with self.lock:
            return specialize(self.bytecode, self.context, signature)

    @property
    def bytecode(self) -> bytes:
        with self.lock:
            if self._bytecode is None:
                self._bytecode = module_bytecode(self.module)
            return self._bytecode

    def compile(self, platform: str | None = None, fp_contraction: bool = True):
        """The executable form, for `platform` (default: the one it was lowered for).
        `fp_contraction=False` keeps XLA from fusing a multiply and an add into one FMA,
        so each rounds as in numpy (CPU only; slower, see the README's "Multiply-adds
        and FMA")."""
        from lowering.runtime import Compiled

        platform = platform or self.platform
        if platform != self.platform:
            library = sorted(set(re.findall(r"custom_call @((?:lapack|cusolver)_\w+)", self.as_text())))
            if library:
                raise ValueError(
                    f"this module was lowered for {self.platform!r} and calls {', '.join(library)}; "
                    f"lower the graph with LoweringOptions(platform={platform!r}) to compile it for {platform!r}"
                )
        if platform != "cpu" and self.host_callbacks:
            raise NotImplementedError(
                f"this module calls Python on the host through XLA's CPU callback "
                f"({', '.join(map(str, self.host_callbacks))}): compile it for 'cpu', not {platform!r}"
            )
        return Compiled(self, platform, fp_contraction)

    def __str__(self) -> str:
        return self.as_text()


def _updates(fgraph) -> dict[int, int]:
    """Output index -> the input index PyTensor writes that output back to."""
    return getattr(fgraph, "update_mapping", None) or {}


def _resident_inputs(fgraph) -> tuple[int, ...]:
    """Inputs whose arrays PyTensor keeps between calls and the graph never updates:
    shared variables, such as a model's observed data. The runtime keeps their device
    copy for as long as the same array is passed (`Compiled._prepared`)."""
    from pytensor.compile.sharedvalue import SharedVariable

    updated = set(_updates(fgraph).values())
    return tuple(
        i for i, v in enumerate(fgraph.inputs)
        if isinstance(v, SharedVariable) and i not in updated and not is_rng_type(v.type)
    )


class RngPlan:
    """Where the graph's random generators come from and go to.

    A `RandomGeneratorType` input enters the module as a key drawn from the
    Generator (`runtime.rng_keys`). An output of that type leaves as the Generator of
    the one input it was derived from, advanced by that draw; one derived from no
    single input (a constant Generator, a choice between two) is seeded from the key
    the module returns. Where PyTensor writes such an output back to the very
    shared variable it came from (an update), the Generator is advanced in place.
    """

    def __init__(self, fgraph):
        inputs = {v: i for i, v in enumerate(fgraph.inputs) if is_rng_type(v.type)}
        self.inputs = tuple(inputs.values())
        self.outputs = tuple(
            (j, _rng_source(out, inputs)) for j, out in enumerate(fgraph.outputs) if is_rng_type(out.type)
        )
        # Outputs that are a constant Generator itself (constant folding leaves
        # `default_rng(3)` so): a copy of it, as PyTensor's DeepCopyOp returns.
        self.constants = {
            j: gen for j, out in enumerate(fgraph.outputs)
            if is_rng_type(out.type) and (gen := _constant_generator(out)) is not None
        }
        updates = _updates(fgraph)
        self.in_place = frozenset(i for j, i in self.outputs if i is not None and updates.get(j) == i)
        # Inputs left as they were whose advanced copy some output returns.
        self.copied = frozenset(i for _, i in self.outputs if i is not None) - self.in_place

    def __bool__(self) -> bool:
        return bool(self.inputs or self.outputs)


def _constant_generator(var) -> np.random.Generator | None:
    """The Generator `var` is, through copies and views of a constant; else None."""
    while var.owner is not None and isinstance(var.owner.op, DeepCopyOp | ViewOp):
        (var,) = var.owner.inputs
    data = getattr(var, "data", None) if var.owner is None else None
    return data if isinstance(data, np.random.Generator) else None


def _rng_source(var, inputs: dict) -> int | None:
    """The index of the one generator input `var` derives from, following only the
    generator-typed inputs of the nodes on the way."""
    sources, seen, stack = set(), set(), [var]
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in inputs:
            sources.add(inputs[v])
        elif v.owner is not None:
            stack.extend(u for u in v.owner.inputs if is_rng_type(u.type))
        else:
            return None  # a constant Generator
    return sources.pop() if len(sources) == 1 else None


def lower(
    fgraph,
    *,
    options: LoweringOptions | None = None,
    pipeline: str | None = DEFAULT_PIPELINE,
    print_ir_after_all: bool = False,
    print_ir_after: tuple[str, ...] = (),
    timing: bool = False,
    statistics: bool = False,
    extra_passes=(),
) -> Lowered:
    """Lower a PyTensor FunctionGraph to a StableHLO module and run `pipeline` on it.

    `pipeline=None` keeps the raw module. IR after each pass, per-pass timing and
    op-count statistics are in `Lowered.pipeline_report` when asked for.
    """
    import dialect_rules  # noqa: F401  (registers every rule)

    options = options or LoweringOptions()
    context = make_ir_context()
    with context, ir.Location.unknown():
        for i, var in enumerate(fgraph.inputs):
            try:
                to_ir_type(var.type)
            except UnsupportedTypeError as exc:
                raise UnsupportedTypeError(f"input {i} ({var.name or var}): {exc}") from None
        module = ir.Module.create()
        ctx = LoweringContext(context, module, options)
        with dim_trace_memo(), loops_by_rows(options.platform == "cpu"):
            lower_function(ctx, fgraph.inputs, fgraph.outputs, "main", public=True)
        _verify(module, "after lowering")
        raw_module = module.operation.clone() if pipeline else module.operation
        if pipeline:
            report = run_pipeline(
                module, pipeline, print_ir_after_all=print_ir_after_all,
                print_ir_after=print_ir_after, timing=timing, statistics=statistics,
                extra_passes=tuple(extra_passes),
            )
        else:
            report = PipelineReport("")
    return Lowered(
        fgraph, context, module, raw_module, report, ctx.hoisted, ctx.checks, ctx.host_callbacks,
        options.platform,
    )
