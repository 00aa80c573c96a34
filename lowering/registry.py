"""Rule registry: one lowering rule per Op class, looked up along the Op's MRO.

The same table serves tensor Ops and the scalar Ops inside `Elemwise`/`Composite`:
a scalar rule receives whole tensors of one common shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

_RULES: dict[type, "Rule"] = {}
# "module.QualName" -> rule, for Ops of packages the rules do not import (PyMC's own Ops):
# a class matches by name along its MRO, so registering never imports the package.
_RULES_BY_NAME: dict[str, "Rule"] = {}
# Core Op class -> rule for the Op applied over leading batch dims (for Blockwise).
_BATCHED: dict[type, Callable] = {}


@dataclass(frozen=True)
class Rule:
    fn: Callable
    # Ops a node of this Op also needs rules for (e.g. an Elemwise's scalar_op),
    # so the unsupported-Op report can list them before any IR is emitted.
    inner_ops: Callable | None = None
    # `missing(op, node)`: None when this rule handles the node, else the name to report
    # it under (a generic rule such as Blockwise's depends on the Op and its operands).
    missing: Callable | None = None
    # `lazy_inputs(node)`: {input index: region key} for inputs computed only inside
    # one of the node's regions (IfElse branches). Nodes that only those inputs need
    # are not lowered before the node: its rule lowers them in the region
    # (`ctx.lower_region_function`), and receives None for such operands.
    lazy_inputs: Callable | None = None


def register_lowering(*op_classes: type | str, inner_ops: Callable | None = None,
                      missing: Callable | None = None, lazy_inputs: Callable | None = None):
    """Decorator: `fn(ctx, node, *operands) -> Value | tuple[Value, ...]` lowers these Ops.

    An Op class may be given by its full name ("pymc.distributions.multivariate.PosDefMatrix")
    when its package is optional: the rule applies once that class exists, unimported here."""

    def decorate(fn):
        for cls in op_classes:
            table = _RULES_BY_NAME if isinstance(cls, str) else _RULES
            table[cls] = Rule(fn, inner_ops, missing, lazy_inputs)
        return fn

    return decorate


def register_batched(*core_op_classes: type, broadcast: bool = True):
    """Decorator: `fn(ctx, node, batch_ndim, *operands)` lowers `Blockwise(core_op)` nodes.

    `node` is the Blockwise node; every operand has the same `batch_ndim` leading
    batch dims (already broadcast), followed by its core dims. With `broadcast=False`
    the operands come as the node's inputs have them (a batch dim of 1 stays 1), for a
    rule that reads an unbatched operand's one entry.
    """

    def decorate(fn):
        fn.broadcasts_batch = broadcast
        for cls in core_op_classes:
            _BATCHED[cls] = fn
        return fn

    return decorate


def lookup_batched_rule(core_op) -> Callable | None:
    for cls in type(core_op).__mro__:
        rule = _BATCHED.get(cls)
        if rule is not None:
            return rule
    return None


def lookup_rule(op) -> Rule | None:
    return lookup_rule_for_class(type(op))


def lookup_rule_for_class(op_class: type) -> Rule | None:
    for cls in op_class.__mro__:
        rule = _RULES.get(cls)
        if rule is None and _RULES_BY_NAME:
            rule = _RULES_BY_NAME.get(class_name(cls))
        if rule is not None:
            return rule
    return None


def class_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def registered_op_classes() -> list[type | str]:
    return [*_RULES, *_RULES_BY_NAME]
