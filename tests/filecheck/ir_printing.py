"""print_ir: what every FileCheck test prints, one case at a time."""

from __future__ import annotations

from pytensor.graph.fg import FunctionGraph

from lowering import lower


def _types(inputs) -> str:
    return " ".join(
        f"{v.type.dtype}{list(v.type.shape)}".replace("None", "?") if hasattr(v.type, "dtype") else str(v.type)
        for v in inputs
    )


def print_ir(name, inputs, outputs, *, raw=False, options=None):
    """Print `TEST: <name> <types>` and the module: raw (before passes) or optimized;
    `options`: `LoweringOptions` (e.g. the platform)."""
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    lowered = lower(FunctionGraph(inputs, outputs, clone=True), options=options)
    stage = "raw" if raw else "opt"
    print(f"TEST: {name} {stage} {_types(inputs)}")
    print(lowered.as_text(raw=raw))
