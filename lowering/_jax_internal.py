"""Every use of a jax/jaxlib internal name lives here, so an upgrade touches one file."""

from __future__ import annotations

import threading

from jax._src.interpreters.mlir import make_ir_context as _make_ir_context
from jax._src.lib import xla_client as _xc
from jaxlib.mlir._mlir_libs import _mlirHlo, _stablehlo

_passes_registered = False
_lock = threading.Lock()


def register_passes() -> None:
    """Register the StableHLO and MHLO passes with MLIR's global pass registry (once)."""
    global _passes_registered
    with _lock:
        if not _passes_registered:
            _stablehlo.register_stablehlo_passes()
            _mlirHlo.register_mhlo_passes()
            _passes_registered = True


def make_ir_context():
    """An MLIR context with func, stablehlo, chlo, mhlo and sdy loaded."""
    register_passes()
    return _make_ir_context()


DeviceList = _xc.DeviceList
HostBufferSemantics = _xc.HostBufferSemantics
batched_device_put = _xc.batched_device_put
serialize_portable_artifact = _stablehlo.serialize_portable_artifact
deserialize_portable_artifact = _stablehlo.deserialize_portable_artifact
get_current_version = _stablehlo.get_current_version


def to_numpy(array):
    """A single-device jax Array as numpy, without a copy where the platform allows."""
    out, _ = array._single_device_array_to_np_array_did_copy()
    return out
