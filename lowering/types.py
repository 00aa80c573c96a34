"""PyTensor dtypes and types <-> MLIR types.

One explicit table; anything outside it is an error that names the dtype.
"""

from __future__ import annotations

import numpy as np

from jax.extend.mlir import ir
from pytensor.sparse.type import SparseTensorType
from pytensor.tensor.random.type import RandomGeneratorType

from lowering.errors import UnsupportedTypeError

# numpy dtype name -> builder of the MLIR element type (needs an active context).
_ELEMENT_TYPES = {
    "bool": lambda: ir.IntegerType.get_signless(1),
    "int8": lambda: ir.IntegerType.get_signless(8),
    "int16": lambda: ir.IntegerType.get_signless(16),
    "int32": lambda: ir.IntegerType.get_signless(32),
    "int64": lambda: ir.IntegerType.get_signless(64),
    "uint8": lambda: ir.IntegerType.get_unsigned(8),
    "uint16": lambda: ir.IntegerType.get_unsigned(16),
    "uint32": lambda: ir.IntegerType.get_unsigned(32),
    "uint64": lambda: ir.IntegerType.get_unsigned(64),
    "float16": lambda: ir.F16Type.get(),
    "float32": lambda: ir.F32Type.get(),
    "float64": lambda: ir.F64Type.get(),
    "complex64": lambda: ir.ComplexType.get(ir.F32Type.get()),
    "complex128": lambda: ir.ComplexType.get(ir.F64Type.get()),
}

SUPPORTED_DTYPES = tuple(_ELEMENT_TYPES)

DYNAMIC = ir.ShapedType.get_dynamic_size()


def element_type(dtype) -> ir.Type:
    """The MLIR element type of a numpy/PyTensor dtype."""
    name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    try:
        return _ELEMENT_TYPES[name]()
    except KeyError:
        raise UnsupportedTypeError(
            f"dtype {name!r} has no StableHLO type; supported: {', '.join(SUPPORTED_DTYPES)}"
        ) from None


def tensor_type(shape, dtype) -> ir.RankedTensorType:
    """A ranked tensor type; `None` dims become `?`."""
    dims = [DYNAMIC if d is None else int(d) for d in shape]
    return ir.RankedTensorType.get(dims, element_type(dtype))


# A numpy Generator is passed to the module as a Threefry key: two uint32 words
# drawn from it at each call (the runtime's `rng_keys`).
KEY_SHAPE = (2,)
KEY_DTYPE = "uint32"


def is_rng_type(ptype) -> bool:
    return isinstance(ptype, RandomGeneratorType)


def storage_dtype(ptype) -> str:
    """The dtype of the buffer that carries a value of `ptype` into the module."""
    return KEY_DTYPE if is_rng_type(ptype) else ptype.dtype


def to_ir_type(ptype) -> ir.RankedTensorType:
    """The MLIR type of a PyTensor `TensorType` or `ScalarType` (a 0-d tensor), or
    of a `RandomGeneratorType` (its key)."""
    if is_rng_type(ptype):
        return tensor_type(KEY_SHAPE, KEY_DTYPE)
    dtype = getattr(ptype, "dtype", None)
    if not isinstance(dtype, str):  # None; a typed list's element type
        raise UnsupportedTypeError(f"PyTensor type {ptype} has no StableHLO equivalent")
    if isinstance(ptype, SparseTensorType):  # (sparse constants never get here)
        raise UnsupportedTypeError(
            f"sparse values passed or computed at run time are not supported ({ptype}): "
            "pass the matrix dense, or make it a constant"
        )
    shape = getattr(ptype, "shape", ())
    return tensor_type(shape, dtype)


def static_shape(t: ir.Type) -> tuple[int | None, ...]:
    """Shape of a ranked tensor type with `None` for dynamic dims."""
    return tuple(None if d == DYNAMIC else d for d in ir.RankedTensorType(t).shape)


_DTYPE_OF_ELEMENT = {
    "i1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "ui8": "uint8", "ui16": "uint16", "ui32": "uint32", "ui64": "uint64",
    "f16": "float16", "f32": "float32", "f64": "float64",
    "complex<f32>": "complex64", "complex<f64>": "complex128",
}


def dtype_of(t: ir.Type) -> str:
    """The numpy dtype name of a tensor type's element type."""
    return _DTYPE_OF_ELEMENT[str(ir.RankedTensorType(t).element_type)]
