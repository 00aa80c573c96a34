"""Print (pytensor.printing): the value as it is, and Print's side effect on the host.

perform hands the value to the Op's `global_fn` (by default `print(message, attr, "=",
...)` for each of its `attrs`) and passes it on. Here a host callback does the same at
run time, from inside the executable, each time the value is computed (every call, every
step of a loop around it), and returns the value, which the graph reads on: that keeps
the callback in the module and ordered before its readers. Like every host callback, it
runs on the CPU only and keeps the module out of the disk cache and exports.
"""

from __future__ import annotations

import functools

import numpy as np
from pytensor.printing import Print

from lowering.builders import shape_of, value_dtype
from lowering.registry import register_lowering


@register_lowering(Print)
def lower_print(ctx, node, x):
    (value,) = ctx.host_call(_Printing.of(node.op), [x], [(list(shape_of(x)), value_dtype(x))])
    return value


class _Printing:
    """The host side: Print's `global_fn` on the value (a read-only numpy array, as the
    Python mode's), then a copy of it for the module."""

    @classmethod
    @functools.cache
    def of(cls, op: Print) -> "_Printing":
        # One instance per Op: equal modules then share an executable.
        return cls(op)

    def __init__(self, op: Print):
        self.op = op

    def __repr__(self) -> str:
        return f"{self.op} on the host"

    def __call__(self, value: np.ndarray):
        self.op.global_fn(self.op, value)
        return (np.array(value, copy=True),)
