"""StableHLO lowering backend for PyTensor.

    lowered = lower(fgraph)          # StableHLO module, `?` for unknown dims
    compiled = lowered.compile()     # XLA executable per call signature
    compiled(*numpy_arrays)          # numpy in, numpy out

Importing this package also registers the PyTensor modes "STABLEHLO",
"STABLEHLO_NO_FMA" (no multiply-add contracted into an FMA: numpy's rounding, slower)
and "STABLEHLO_CUDA" (the first NVIDIA GPU, through jax's CUDA plugin).
"""

from lowering.api import Lowered, lower
from lowering.builders import (
    broadcast_in_dim,
    broadcast_to,
    compare,
    convert,
    full,
    full_like,
    ir_constant,
    reshape,
    shape_of,
)
from lowering.context import LoweringContext, LoweringOptions
from lowering.errors import (
    LoweringError,
    PassPipelineError,
    UnsupportedOpsError,
    UnsupportedParameterError,
    UnsupportedTypeError,
    VerificationError,
)
from lowering.coverage import unsupported_ops
from lowering.passes import DEFAULT_PIPELINE, register_python_pass, run_pipeline
from lowering.registry import register_lowering
from lowering.runtime import Compiled
from lowering.types import to_ir_type

MODE_NAME = "STABLEHLO"

from lowering import linker as _linker  # noqa: E402  (registers the mode)

__all__ = [
    "Compiled", "DEFAULT_PIPELINE", "Lowered", "LoweringContext", "LoweringError",
    "LoweringOptions", "MODE_NAME", "PassPipelineError", "UnsupportedOpsError",
    "UnsupportedParameterError", "UnsupportedTypeError", "VerificationError",
    "broadcast_in_dim", "broadcast_to", "compare", "convert", "full", "full_like",
    "ir_constant", "lower", "register_lowering", "register_python_pass", "reshape",
    "run_pipeline", "shape_of", "to_ir_type", "unsupported_ops",
]
