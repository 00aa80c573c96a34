"""CAReduce (sum, prod, max, min, all, any, ...), Argmax, Softmax family."""

from __future__ import annotations
