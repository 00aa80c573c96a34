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


class ForkedProcessError(RuntimeError):
    """XLA was started in this process's parent before `os.fork()` copied it: XLA's
    threads do not survive a fork, so a compile or a multi-threaded kernel in the child
    would wait for them forever. (The message is an argument so that the error pickles:
    multiprocessing and PyMC send a worker's error to the parent.)"""

    def __init__(self, message: str | None = None):
        super().__init__(message or (
            "the STABLEHLO backend cannot run XLA in a process forked (os.fork) after its parent "
            "had started XLA: XLA's threads do not survive a fork, and the call would wait for "
            "them forever. Start worker processes with 'forkserver' or 'spawn' instead: "
            "multiprocessing.get_context('forkserver'), or with PyMC pm.sample(..., mp_ctx='forkserver')"
        ))
