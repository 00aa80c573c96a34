"""Rule registry: one lowering rule per Op class, looked up along the Op's MRO.

The same table serves tensor Ops and the scalar Ops inside `Elemwise`/`Composite`:
a scalar rule receives whole tensors of one common shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

_RULES: dict[type, "Rule"] = {}


@dataclass(frozen=True)
class Rule:
    fn: Callable
    # Ops a node of this Op also needs rules for (e.g. an Elemwise's scalar_op),
    # so the unsupported-Op report can list them before any IR is emitted.
    inner_ops: Callable | None = None


def register_lowering(*op_classes: type, inner_ops: Callable | None = None):
    """Decorator: `fn(ctx, node, *operands) -> Value | tuple[Value, ...]` lowers these Ops."""

    def decorate(fn):
        for cls in op_classes:
            _RULES[cls] = Rule(fn, inner_ops)
        return fn

    return decorate


def lookup_rule(op) -> Rule | None:
    return lookup_rule_for_class(type(op))


def lookup_rule_for_class(op_class: type) -> Rule | None:
    for cls in op_class.__mro__:
        rule = _RULES.get(cls)
        if rule is not None:
            return rule
    return None


def registered_op_classes() -> list[type]:
    return list(_RULES)
