"""Portable export: versioned StableHLO artifacts, and `jax.export.Exported` objects.

A portable artifact is StableHLO serialized at a target version (VHLO bytecode); any
StableHLO consumer within the compatibility window reads it, dynamic dims included.
`jax_exported` wraps a module specialized to concrete shapes in JAX's own export
format, so `jax.export.deserialize(blob).call(*args)` runs a PyTensor graph.
"""

from __future__ import annotations

from jax.extend.mlir import ir

from lowering._jax_internal import (
    compatibility_version,
    deserialize_portable_artifact,
    make_jax_exported,
    make_ir_context,
    serialize_portable_artifact,
)
from lowering.builders import function_type
from lowering.compile import module_bytecode
from lowering.passes import PORTABLE_CHLO, run_pipeline
from lowering.regions import written_for_the_executor
from lowering.specialize import is_fully_static, main_function
from lowering.types import dtype_of


def portable_artifact(module: ir.Module, target_version: str | None = None) -> bytes:
    """`module` as a portable artifact readable by consumers `target_version` or newer
    (default: the version a 12-week-old consumer reads, as jax.export picks)."""
    target = target_version or compatibility_version(12)
    with module.context:
        # Serialization rewrites the module it is given into VHLO: give it a copy.
        copy = ir.Module.parse(module_bytecode(module))
        # VHLO has no CHLO ops, nor the `shape` ops CHLO expands into on `?` shapes.
        run_pipeline(copy, PORTABLE_CHLO)
        # A consumer compiles loops as it will: none runs a loop over each block or row.
        written_for_the_executor(copy.operation)
        try:
            return serialize_portable_artifact(copy, target)
        except Exception as exc:  # jaxlib raises a bare error for unknown versions
            raise ValueError(f"cannot serialize to StableHLO version {target!r}: {exc}") from None


def load_portable_artifact(artifact: bytes, context: ir.Context | None = None) -> ir.Module:
    """Read an artifact back as a StableHLO module (in `context`, or a fresh one)."""
    context = context or make_ir_context()
    return deserialize_portable_artifact(context, artifact)


def _self_contained(lowered) -> None:
    if lowered.host_callbacks:
        raise ValueError(
            "this module calls Python on the host "
            f"({', '.join(map(str, lowered.host_callbacks))}); an exported module "
            "could not call it"
        )
    if lowered.hoisted_constants:
        raise ValueError(
            "this module takes its large constants as extra arguments; lower it with "
            "LoweringOptions(hoist_constants_over=None) to export a self-contained module"
        )


def export_portable(lowered, *args, target_version: str | None = None) -> bytes:
    """The portable artifact of `lowered`, specialized to `args`' shapes when given."""
    _self_contained(lowered)
    module = lowered.specialize(*args) if args else lowered.module
    with lowered.lock:
        return portable_artifact(module, target_version)


def main_signature(module: ir.Module):
    """(shape, dtype) of @main's arguments and results; shapes must be static."""
    with module.context:
        fn = main_function(module)
        ftype = function_type(fn)

        def avals(types):
            out = []
            for t in types:
                rt = ir.RankedTensorType(t)
                out.append((tuple(rt.shape), dtype_of(t)))
            return out

        return avals(ftype.inputs), avals(ftype.results)


def jax_exported(lowered, *args, platform: str = "cpu", target_version: str | None = None):
    """A `jax.export.Exported` of `lowered` specialized to the shapes of `args`.

    Its results are the graph's outputs followed, when the graph has run-time checks,
    by a bool vector with one flag per check (`lowered.runtime_checks`), which the
    caller must test: JAX cannot raise them.
    """
    _self_contained(lowered)
    module = lowered.specialize(*args)
    if not is_fully_static(module):
        raise ValueError("jax.export needs static shapes; some dims stayed unknown for these arguments")
    with lowered.lock:
        in_avals, out_avals = main_signature(module)
        artifact = portable_artifact(module, target_version)
    return make_jax_exported(artifact, in_avals, out_avals, platform)
