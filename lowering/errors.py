"""The exceptions users see. Each message names what was wrong."""

from __future__ import annotations


class LoweringError(Exception):
    """A graph could not be lowered to StableHLO."""


class UnsupportedTypeError(LoweringError, TypeError):
    """A PyTensor type or dtype with no StableHLO equivalent."""


class UnsupportedOpsError(LoweringError, NotImplementedError):
    """Ops in the graph with no lowering rule; lists every one of them."""

    def __init__(self, missing: dict):
        self.missing = missing
        lines = []
        for op_name, nodes in missing.items():
            shown = "; ".join(str(n) for n in nodes[:3])
            more = f" (+{len(nodes) - 3} more)" if len(nodes) > 3 else ""
            lines.append(f"  {op_name}: used by {shown}{more}")
        if any(type(n.op).__module__.startswith("pytensor.xtensor.") for nodes in missing.values() for n in nodes):
            lines.append("  (xtensor Ops are rewritten into tensor Ops by PyTensor's `lower_xtensor` rewrites, which "
                         "mode=\"STABLEHLO\" runs: lower the rewritten graph, e.g. f.maker.fgraph)")
        super().__init__("no StableHLO lowering for these Ops:\n" + "\n".join(lines))


class UnsupportedParameterError(LoweringError, NotImplementedError):
    """A rule exists for the Op but not for this parameter value."""

    def __init__(self, node, parameter: str, reason: str = ""):
        self.node = node
        msg = f"{type(node.op).__name__} with {parameter} is not supported"
        if reason:
            msg += f": {reason}"
        super().__init__(f"{msg} (node: {node})")


class VerificationError(LoweringError):
    """The emitted module failed the MLIR verifier; carries the IR."""

    def __init__(self, message: str, ir_text: str):
        self.ir_text = ir_text
        super().__init__(f"{message}\n--- module ---\n{ir_text}")


class PassPipelineError(LoweringError, ValueError):
    """A pass pipeline string that MLIR could not parse or that failed to run."""
