"""CheckAndRaise (Assert, PyMC's CheckParameterValue): real run-time checks.

The failed condition becomes an error flag of @main; the runtime raises the Op's own
exception type and message, as `Op.perform` does. Users who want the checks gone opt in
the PyTensor way: `mode.including("local_remove_all_assert")`.
"""

from __future__ import annotations

from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.raise_op import CheckAndRaise

from lowering.builders import convert
from lowering.regions import any_true
from lowering.registry import register_lowering


@register_lowering(CheckAndRaise)
def lower_check_and_raise(ctx, node, value, *conditions):
    if conditions:
        failed = None
        for cond in conditions:
            # numpy truthiness of each condition, then "some element is false".
            bad = any_true(hlo.not_(convert(cond, "bool")))
            failed = bad if failed is None else hlo.or_(failed, bad)
        ctx.runtime_check(failed, node.op.exc_type, str(node.op.msg))
    return value
