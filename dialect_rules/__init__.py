"""Lowering rules, one module per Op family. Importing this package registers them all."""

from dialect_rules import (  # noqa: F401
    blas,
    blockwise,
    checks,
    control_flow,
    elemwise,
    extra_ops,
    functions,
    jax_op,
    linalg,
    scan,
    series,
    signal,
    reduction,
    scalar,
    shape,
    sort,
    sparse,
    special,
    subtensor,
    tensor_basic,
)
