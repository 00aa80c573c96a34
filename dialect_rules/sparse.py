"""Sparse products (`pytensor.sparse`): a sparse constant (observed data, a design
matrix) times a dense tensor, as a gather of the dense rows the nonzeros read and a
scatter-add of their products: O(nnz) work and memory, the matrix never densified.

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

from lowering.builders import broadcast_in_dim, convert, full, gather_indexed, reshape, shape_of, transpose
from lowering.errors import UnsupportedParameterError
from lowering.regions import scatter
from lowering.registry import register_lowering


def _sparse_times_dense(ctx, matrix, y, dtype):
    """matrix @ y for a scipy sparse constant (m, n) and y (n,) or (n, k)."""
    coo = scipy.sparse.coo_matrix(matrix)
    m = coo.shape[0]
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
        return _sparse_times_dense(ctx, left, y, dtype)
    # x @ S = (S.T @ x.T).T
    if len(node.inputs[0].type.shape) == 1:
        return _sparse_times_dense(ctx, right.T, x, dtype)
    return transpose(_sparse_times_dense(ctx, right.T, transpose(x, [1, 0]), dtype), [1, 0])
