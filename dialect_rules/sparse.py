"""Sparse products (`pytensor.sparse`): a sparse constant (observed data, a design
matrix) times a dense tensor, as a gather of the dense rows the nonzeros read and a
scatter-add of their products: O(nnz) work and memory, the matrix never densified.
The gather would clamp the rows of a dense operand of the wrong size, so its size is
checked at call time (a ValueError, as scipy's); unchecked only in a region body, which
cannot raise and holds no sparse product (Scan and IfElse bodies are functions).

Sparse values computed in the graph, or passed as inputs, have no dense layout here:
those nodes are refused by name.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse
from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.sparse.basic import Transpose as SparseTranspose
from pytensor.sparse.math import Dot as SparseDot
from pytensor.sparse.math import StructuredDot
from pytensor.sparse.type import SparseTensorType

from lowering.builders import (
    broadcast_in_dim,
    compare,
    convert,
    dim_size,
    dim_value,
    full,
    gather_indexed,
    ir_constant,
    reshape,
    shape_of,
    transpose,
)
from lowering.errors import UnsupportedParameterError
from lowering.regions import scatter
from lowering.registry import register_lowering


def _sparse_times_dense(ctx, node, matrix, y, dtype, transposed=False):
    """matrix @ y for a scipy sparse constant (m, n) and y (n,) or (n, k).

    `transposed`: the node computes x @ S as (S.T @ x.T).T, so matrix is S.T and y is x.T
    (its error message names S and x).
    """
    coo = scipy.sparse.coo_matrix(matrix)
    m, n = coo.shape
    _check_size(ctx, node, y, coo.shape, transposed)
    vector = len(y.type.shape) == 1
    if vector:
        y = reshape(y, [shape_of(y)[0], 1])
    y = convert(y, dtype)
    k = shape_of(y)[1]
    if coo.nnz == 0:
        out = full(0, [m, k], dtype)
    else:
        rows = ctx.constant(coo.row.astype(np.int64).reshape(-1, 1))
        cols = ctx.constant(coo.col.astype(np.int64).reshape(-1, 1))
        values = ctx.constant(coo.data.astype(dtype))
        read = gather_indexed(y, [0], cols, front=False)  # (nnz, k): y[col] per nonzero
        products = hlo.multiply(read, broadcast_in_dim(values, shape_of(read), [0]))
        numbers = hlo.ScatterDimensionNumbers.get(
            update_window_dims=[1], inserted_window_dims=[0], input_batching_dims=[],
            scatter_indices_batching_dims=[], scattered_dims_to_operand_dims=[0], index_vector_dim=1,
        )
        out = scatter(full(0, [m, k], dtype), rows, products, numbers, hlo.add)
    return reshape(out, [m]) if vector else out


def _check_size(ctx, node, y, shape, transposed) -> None:
    """ValueError unless y's dim 0 (the dense operand's matching dim) is the matrix's n."""
    n = shape[1]
    size = dim_size(y, 0)
    if size == n or not ctx.can_raise():
        return
    if isinstance(node.op, StructuredDot):
        message = "shape mismatch in StructuredDot.perform"
    else:
        needed = (f"a vector of length {n}" if len(y.type.shape) == 1
                  else f"a matrix with {n} {'columns' if transposed else 'rows'}")
        shown = shape[::-1] if transposed else shape
        message = f"matmul: dimension mismatch: the sparse {shown} matrix needs {needed}"
    ctx.runtime_check(compare(dim_value(size), ir_constant(np.int64(n)), "NE"), ValueError, message)


def _sparse(node, var, value):
    """The scipy matrix of a sparse operand (a constant, or a rule's result on constants)."""
    if not isinstance(var.type, SparseTensorType):
        return None
    if not scipy.sparse.issparse(value):
        raise UnsupportedParameterError(
            node, f"sparse input {var}",
            "only sparse constants (a sparse value computed or passed at run time has no dense form here)",
        )
    return value


@register_lowering(SparseTranspose)
def lower_sparse_transpose(ctx, node, x):
    # Of a constant (PyTensor's gradients transpose the matrix): a constant again.
    return _sparse(node, node.inputs[0], x).T


@register_lowering(SparseDot, StructuredDot)
def lower_sparse_dot(ctx, node, x, y):
    dtype = node.outputs[0].type.dtype
    left, right = _sparse(node, node.inputs[0], x), _sparse(node, node.inputs[1], y)
    if left is not None and right is not None:
        return ctx.constant(np.asarray((left @ right).todense(), dtype=dtype))
    if left is not None:
        return _sparse_times_dense(ctx, node, left, y, dtype)
    # x @ S = (S.T @ x.T).T
    if len(node.inputs[0].type.shape) == 1:
        return _sparse_times_dense(ctx, node, right.T, x, dtype, transposed=True)
    product = _sparse_times_dense(ctx, node, right.T, transpose(x, [1, 0]), dtype, transposed=True)
    return transpose(product, [1, 0])
