"""Alloc, DeepCopyOp, TensorFromScalar, ScalarFromTensor, Second."""

from __future__ import annotations
