"""extra_ops: CumOp (cumsum, cumprod).

numpy accumulates small integers and bools in int64 and PyTensor's output type keeps
the input dtype, so the result is numpy's modulo the dtype: a wrapping scan in the
dtype itself (for bools: a running `or` / `and`).
"""

from __future__ import annotations

import numpy as np
from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.tensor.extra_ops import CumOp

from lowering.builders import broadcast_in_dim, compare, full_like, iota, ir_constant, select, shape_of, value_dtype
from lowering.regions import reduce, reduce_window
from lowering.registry import register_lowering
from lowering.types import static_shape

_COMBINE = {
    ("add", False): (hlo.add, 0),
    ("mul", False): (hlo.multiply, 1),
    ("add", True): (hlo.or_, False),
    ("mul", True): (hlo.and_, True),
}


@register_lowering(CumOp)
def lower_cumop(ctx, node, x):
    dtype = np.dtype(value_dtype(x))
    combine, identity = _COMBINE[(node.op.mode, dtype == np.bool_)]
    axis = node.op.axis % node.inputs[0].type.ndim
    init = ir_constant(np.asarray(identity, dtype=dtype))
    n = static_shape(x.type)[axis]
    if n is not None:
        rank = len(static_shape(x.type))
        window = [n if i == axis else 1 for i in range(rank)]
        padding = [(n - 1, 0) if i == axis else (0, 0) for i in range(rank)]
        return reduce_window(x, init, window, padding, combine)
    return _masked_scan(x, axis, combine, identity)


def _masked_scan(x, axis, combine, identity):
    """Scan along a dim of unknown size: out[..., i, ...] = reduce over j <= i of x[..., j, ...],
    as one reduce of an (n, n) masked broadcast (window sizes must be static; this is not)."""
    dims = list(shape_of(x))
    # Broadcast x to dims with a new axis `axis` (i) in front of the scanned one (j).
    wide = dims[:axis] + [dims[axis]] + dims[axis:]
    keep = list(range(axis)) + list(range(axis + 1, len(wide)))
    values = broadcast_in_dim(x, wide, keep)
    i = iota(wide, axis, "int64")
    j = iota(wide, axis + 1, "int64")
    masked = select(compare(j, i, "LE"), values, full_like(values, identity))
    init = ir_constant(np.asarray(identity, dtype=value_dtype(x)))
    (out,) = reduce([masked], [init], [axis + 1], lambda acc, el: [combine(acc[0], el[0])])
    return out
