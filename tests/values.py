"""Test values per dtype: edge cases numpy semantics are about."""

from __future__ import annotations

import numpy as np

ALL_DTYPES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
]
INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_DTYPES = ["float16", "float32", "float64"]
COMPLEX_DTYPES = ["complex64", "complex128"]


def edge_values(dtype) -> np.ndarray:
    """A 1-d array of the values that separate right from almost right for `dtype`."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return np.array([False, True])
    if dt.kind == "i":
        info = np.iinfo(dt)
        return np.array([info.min, -7, -3, -1, 0, 1, 2, 3, 7, info.max], dtype=dt)
    if dt.kind == "u":
        info = np.iinfo(dt)
        return np.array([0, 1, 2, 3, 7, info.max - 1, info.max], dtype=dt)
    if dt.kind == "f":
        return np.array([-np.inf, -7.5, -2.5, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.5, 3.0, np.inf, np.nan], dtype=dt)
    return np.array([0, 1, -1j, 1.5 - 2j, -3 + 0.5j, complex(np.inf, 0), complex(np.nan, 1)], dtype=dt)


def pairs(dtype):
    """Every pair of edge values, as two equal-length vectors."""
    v = edge_values(dtype)
    x, y = np.meshgrid(v, v, indexing="ij")
    return x.ravel(), y.ravel()


def finite_values(dtype, n=12, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(n) > 0.5
    if dt.kind in "iu":
        return rng.integers(0 if dt.kind == "u" else -20, 20, size=n).astype(dt)
    if dt.kind == "f":
        return (rng.normal(size=n) * 3).astype(dt)
    return (rng.normal(size=n) + 1j * rng.normal(size=n)).astype(dt)
