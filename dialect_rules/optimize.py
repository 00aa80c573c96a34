"""pytensor.tensor.optimize: MinimizeOp (scipy's BFGS, CG, Newton-CG, trust-ncg, dogleg,
Powell and Nelder-Mead, and L-BFGS-B without bounds), MinimizeScalarOp (Brent's method,
the golden section search, the bounded method), RootScalarOp (secant, Newton and Halley
iterations; bisection, Ridder's, Brent's and TOMS 748 from a bracket) and RootOp (MINPACK's
hybrj and lmder, scipy's hybr and lm; scipy's df-sane), as loops around the inner graph.

PyTensor's perform hands the objective (a function compiled from the Op's inner graph)
to scipy.optimize.minimize. Here the inner graph is a private function returning the
objective and its gradient, called from a `stablehlo.while` that runs BFGS as scipy's
`_minimize_bfgs` does: the same start (H = I, the first step's length from a notional
previous value), the same inverse-Hessian update, stopping tests and success flag, in
float64 whatever x's dtype (the objective in its own dtype, as perform casts x for it).

The line search is scipy's too (`_line_search_wolfe12`): its port of MINPACK-2's dcsrch
(`_dcsrch`, `_dcstep`), and where that fails its bracketing `scalar_search_wolfe2` with
`_zoom`'s interpolants (`_wolfe2`), each a `stablehlo.while` evaluating the objective once
per iteration, their branches computed alike and selected (`_S` gives the scalar
arithmetic Python's operators). So the iterates are scipy's up to the objective's
roundings. The objective's run-time checks (PyMC's parameter checks) are or-ed over every
evaluation and raised after the loop.
"""

from __future__ import annotations

import numpy as np
import pytensor
from jax.extend.mlir import ir
from jax.extend.mlir.dialects import chlo
from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.compile.mode import get_mode
from pytensor.graph.basic import Constant
from pytensor.graph.fg import FunctionGraph
from pytensor.gradient import jacobian
from pytensor.graph.replace import clone_replace
from pytensor.tensor.basic import atleast_2d
from pytensor.tensor.optimize import MinimizeOp, MinimizeScalarOp, RootOp, RootScalarOp

from lowering.builders import (
    at_least_one,
    broadcast_in_dim,
    compare,
    convert,
    diagonal,
    dim_add,
    dim_max,
    dim_product,
    dim_sub,
    dim_value,
    divide,
    dot_general,
    dynamic_index,
    identity_matrix,
    iota,
    is_nan,
    ir_constant,
    pad_end,
    read_entry,
    reshape,
    select,
    shape_of,
    signbit,
    slice_axis,
    splat,
    take_along_axis,
    transpose,
    value_dtype,
    write_entry,
)
from lowering.errors import UnsupportedParameterError
from lowering.graph import lower_function, node_label
from lowering.regions import fold, if_else, while_loop
from lowering.registry import register_lowering

from dialect_rules.linalg import _cho_solve, _potrf, _solve_triangular
from dialect_rules.sort import numpy_less

# scipy's BFGS options (`optimizer_kwargs={"options": {...}}`, `tol` for gtol) we follow;
# the others change nothing here: output (disp, return_all), and the finite differences'
# (eps, finite_diff_rel_step, workers), which the exact gradient replaces.
_BFGS_DEFAULTS = {"gtol": 1e-5, "norm": np.inf, "maxiter": None, "xrtol": 0.0, "c1": 1e-4, "c2": 0.9}
_IGNORED = {"disp", "return_all", "eps", "finite_diff_rel_step", "workers"}


def _f64(value) -> ir.Value:
    return ir_constant(np.float64(value))


def _lt(a, b):
    return compare(a, b, "LT")


def _split_options(node, method: str, tol_name: str | tuple) -> tuple[dict, dict]:
    """The Op's `optimizer_kwargs` as scipy's minimize(_scalar) reads them: its own
    keywords, and its `options` with `tol` set as `tol_name` (or each of several) where
    not given; another method than `method` is refused by name."""
    op = node.op
    if op.method.lower() != method:
        raise UnsupportedParameterError(node, f"method {op.method!r}", f"only scipy's {method!r} (the default) is lowered")
    kwargs = dict(op.optimizer_kwargs)
    options = dict(kwargs.pop("options", None) or {})
    tol = kwargs.pop("tol", None)
    if tol is not None:
        for name in tol_name if isinstance(tol_name, tuple) else (tol_name,):
            options.setdefault(name, tol)
    return kwargs, options


def _method_options(node, method: str, tol_name: str | tuple, defaults: dict, ignored: set, label: str, missing: str,
                    keywords: tuple = ()):
    """`method`'s options (`_split_options`) over their `defaults`; a keyword (other than
    None) not among `keywords` (which the caller reads), or an option neither in
    `defaults` nor `ignored` (those that change nothing here), is refused by name, saying
    what `label` is lowered with and without (`missing`)."""
    kwargs, given = _split_options(node, method, tol_name)
    unknown = sorted(k for k, v in kwargs.items() if v is not None and k not in keywords)
    unknown += sorted(set(given) - set(defaults) - ignored)
    if unknown:
        raise UnsupportedParameterError(
            node, f"optimizer_kwargs {unknown}",
            f"{label} is lowered with {''.join(k + ', ' for k in keywords)}tol and options {sorted(defaults)} "
            f"({missing})",
        )
    return {**defaults, **{k: v for k, v in given.items() if k in defaults and v is not None}}


def _options(node, method: str = "bfgs", defaults: dict = _BFGS_DEFAULTS, label: str = "BFGS",
             missing: str = "no callback, bounds or hess_inv0") -> dict:
    """scipy.minimize's BFGS (or CG) options (`tol` sets gtol); what cannot be honoured
    is refused by name."""
    options = _method_options(node, method, "gtol", defaults, _IGNORED, label, missing)
    if not (options["norm"] in (np.inf, -np.inf) or options["norm"] > 0):
        raise UnsupportedParameterError(node, f"norm {options['norm']!r}", "the gradient's norm must be ±inf or positive")
    return options


def _check_norm_of_nothing(ctx, n, order):
    """scipy's vecnorm of an empty gradient (x empty) in the max or min norm: numpy's
    ValueError, at the call where n may be 0."""
    if order in (np.inf, -np.inf) and not (isinstance(n, int) and n > 0):
        reduction = "maximum" if order > 0 else "minimum"
        ctx.runtime_check(compare(dim_value(n), dim_value(0), "EQ"), ValueError,
                          f"zero-size array to reduction operation {reduction} which has no identity")


def _derivatives(op, count: int) -> list:
    """The inner graph's function and its first `count` derivatives in x: the Op's own
    outputs where it was made with them (jac, hess), else PyTensor's `grad` of the
    previous one (x a scalar, or a vector for the first, the Jacobian of a vector of
    equations: scipy's finite differences become the exact derivative)."""
    x = op.fgraph.inputs[0]
    outputs = list(op.fgraph.outputs)
    result = [outputs[0]]
    for k in range(1, count + 1):
        if len(outputs) > k:
            result.append(outputs[k])
        elif result[-1].ndim == 0:
            result.append(pytensor.grad(result[-1], x))
        else:  # a system of equations: its Jacobian, as RootOp builds its own (jac=True)
            result.append(atleast_2d(jacobian(result[-1], x, vectorize=getattr(op, "use_vectorized_jac", False))))
    return result


def _inner_function(ctx, node, count: int, name: str):
    """The inner graph (`_derivatives`) as a private function of x and the arguments
    that are not constants where the Op is applied (those are put into the graph, as
    OpFromGraph's are, so that `x ** 2` stays a product); its check flags follow its
    results. Returns it and the positions of its arguments among the node's inputs."""
    op = node.op
    variable = [i for i, v in enumerate(node.inputs) if i == 0 or not isinstance(v, Constant)]
    key = (type(op).__name__, op, count, tuple((i, v.signature()) for i, v in enumerate(node.inputs) if i not in variable))
    if key not in ctx.memo:
        inner = op.fgraph.inputs
        outputs = _derivatives(op, count)
        bound = {inner[i]: node.inputs[i] for i in range(len(inner)) if i not in variable}
        if bound:
            outputs = clone_replace(outputs, replace=bound)
        # rewritten as the function perform compiles from it is (stabilized, simplified)
        graph = FunctionGraph([inner[i] for i in variable], outputs, clone=True)
        get_mode("STABLEHLO").optimizer.rewrite(graph)
        ctx.memo[key] = lower_function(ctx, graph.inputs, graph.outputs, name)
    return ctx.memo[key], variable


def _norm(v, order):
    """scipy's vecnorm: max |v| (inf), min |v| (-inf), else sum(|v|^ord)^(1/ord)."""
    if order == 2:
        return hlo.sqrt(_dot(v, v))
    magnitude = hlo.abs(v)
    if order == np.inf:
        return fold(magnitude, [0], hlo.maximum, -np.inf)
    if order == -np.inf:
        return fold(magnitude, [0], hlo.minimum, np.inf)
    powered = hlo.power(magnitude, splat(_f64(order), v))
    return hlo.power(fold(powered, [0], hlo.add, 0.0), _f64(1.0 / order))


def _dot(a, b):
    return dot_general(a, b, ([0], [0]))


def _objective(ctx, node, x0, args, count: int, name: str):
    """The objective and its first `count` derivatives as a function of the float64
    vector x (x's own dtype inside, as perform casts scipy's x), each evaluation's check
    flags or-ed into those given: evaluate(x, flags) -> (f, g[, H], flags). Returns it
    and the function's checks."""
    x_type = node.inputs[0].type
    if np.dtype(x_type.dtype).kind != "f":
        raise UnsupportedParameterError(node, f"x of dtype {x_type.dtype}", "x must be real floats")
    fn, variable = _inner_function(ctx, node, count, name)
    args = [operand for i, operand in enumerate((x0, *args)) if i in variable[1:]]
    n = dim_product(shape_of(x0))

    def evaluate(x, flags):
        point = reshape(convert(x, x_type.dtype), shape_of(x0))
        results = ctx.emit_call(fn, [point, *args])
        shapes = [(), [n], [n, n]][:count + 1]
        values = [convert(reshape(r, shape), "float64") for r, shape in zip(results, shapes)]
        return (*values, [hlo.or_(a, b) for a, b in zip(flags, results[count + 1:], strict=True)])

    return evaluate, ctx.checks_of(fn)


_MINIMIZE_METHODS = ("bfgs", "cg", "newton-cg", "l-bfgs-b", "trust-ncg", "dogleg", "powell", "nelder-mead")


@register_lowering(MinimizeOp)
def lower_minimize(ctx, node, x0, *args):
    method = node.op.method.lower()
    if method not in _MINIMIZE_METHODS:
        raise UnsupportedParameterError(node, f"method {node.op.method!r}",
                                        "minimize is lowered with scipy's 'BFGS' (the default), 'CG', "
                                        "'Newton-CG', 'L-BFGS-B', 'trust-ncg', 'dogleg', 'Powell' and "
                                        "'Nelder-Mead'")
    if method == "cg":
        return _lower_cg(ctx, node, x0, args)
    if method == "newton-cg":
        return _lower_newton_cg(ctx, node, x0, args)
    if method == "l-bfgs-b":
        return _lower_lbfgsb(ctx, node, x0, args)
    if method in ("trust-ncg", "dogleg"):
        return _lower_trust_region(ctx, node, x0, args, method)
    if method == "powell":
        return _lower_powell(ctx, node, x0, args)
    if method == "nelder-mead":
        return _lower_nelder_mead(ctx, node, x0, args)
    options = _options(node)
    evaluate, checks = _objective(ctx, node, x0, args, 1, "minimize_objective")
    x_type = node.inputs[0].type
    n = dim_product(shape_of(x0))
    maxiter = (hlo.multiply(dim_value(n), dim_value(200)) if options["maxiter"] is None
               else dim_value(int(options["maxiter"])))  # scipy's default: 200 per variable
    gtol, c1, c2 = _f64(options["gtol"]), _f64(options["c1"]), _f64(options["c2"])
    false = ir_constant(False)
    _check_norm_of_nothing(ctx, n, options["norm"])

    x = convert(reshape(x0, [n]), "float64")
    f, g, flags = evaluate(x, [false] * len(checks))
    eye = identity_matrix([n, n], "float64")
    # the first step's length as if the previous value were f + |g| / 2 (dx ~ 1)
    f_before = hlo.add(f, hlo.multiply(_norm(g, 2), _f64(0.5)))
    init = [dim_value(0), ir_constant(np.int64(_GOING)), x, f, g, eye, f_before, _norm(g, options["norm"]), *flags]

    def cond(values):
        k, status, *_, gnorm = values[:8]
        return hlo.and_(hlo.and_(compare(status, ir_constant(np.int64(_GOING)), "EQ"), compare(gnorm, gtol, "GT")),
                        _lt(k, maxiter))

    def body(values):
        k, status, x, f, g, h, f_before, gnorm, *flags = values
        p = hlo.negate(dot_general(h, g, ([1], [0])))
        found, alpha, f1, g1, flags = _line_search(evaluate, x, p, f, g, f_before, c1, c2, flags)
        s = hlo.multiply(splat(alpha, p), p)
        x1, y = hlo.add(x, s), hlo.subtract(g1, g)
        gnorm1 = _norm(g1, options["norm"])
        converged = hlo.or_(hlo.not_(compare(gnorm1, gtol, "GT")), compare(
            hlo.multiply(alpha, _norm(p, 2)), hlo.multiply(_f64(options["xrtol"]),
                                                           hlo.add(_f64(options["xrtol"]), _norm(x1, 2))), "LE"))
        # scipy's order: the gradient's norm, the step's length, then a value not finite
        status1 = select(found, select(converged, ir_constant(np.int64(_DONE)), select(
            hlo.is_finite(f1), ir_constant(np.int64(_GOING)), ir_constant(np.int64(_STOPPED)))),
            ir_constant(np.int64(_STOPPED)))
        h1 = _bfgs_update(h, s, y)
        keep = lambda new, old: select(found, new, old)  # noqa: E731  (a failed search moves nothing)
        return [keep(hlo.add(k, dim_value(1)), k), status1, keep(x1, x), keep(f1, f), keep(g1, g), keep(h1, h),
                keep(f, f_before), keep(gnorm1, gnorm), *flags]

    k, status, x, f, g, _, _, gnorm, *flags = while_loop(init, cond, body)
    for flag, check in zip(flags, checks, strict=True):
        ctx.runtime_check(flag, check.error, check.message)
    # scipy's status: precision loss, then the iteration limit (even where the last
    # iteration converged), then NaN; success where none of them
    nan = hlo.or_(hlo.or_(compare(gnorm, gnorm, "NE"), compare(f, f, "NE")),
                  fold(compare(x, x, "NE"), [0], hlo.or_, False))
    failed = hlo.or_(hlo.or_(compare(status, ir_constant(np.int64(_STOPPED)), "EQ"), hlo.not_(_lt(k, maxiter))), nan)
    return reshape(convert(x, x_type.dtype), shape_of(x0)), hlo.not_(failed)


# scipy's CG options: BFGS's without xrtol, a looser curvature condition (c2)
_CG_DEFAULTS = {"gtol": 1e-5, "norm": np.inf, "maxiter": None, "c1": 1e-4, "c2": 0.4}
_SIGMA_3 = 0.01  # the sufficient descent a Polak-Ribiere+ step must give


def _lower_cg(ctx, node, x0, args):
    """minimize(method="CG"): scipy's `_minimize_cg`, nonlinear conjugate gradients
    (Polak-Ribiere+: beta = max(0, y'g1 / g'g), the direction -g1 + beta p). BFGS's line
    search, whose steps must also leave the next direction one of sufficient descent
    (p1'g1 <= -0.01 g1'g1) or the gradient within `gtol` (scipy's extra_condition). It
    stops where the gradient's norm is within `gtol`, at `maxiter` (200 per variable), or
    where the line search fails; success where it converged and nothing is NaN."""
    options = _options(node, "cg", _CG_DEFAULTS, "CG", "no callback or bounds")
    evaluate, checks = _objective(ctx, node, x0, args, 1, "minimize_objective")
    x_type = node.inputs[0].type
    n = dim_product(shape_of(x0))
    _check_norm_of_nothing(ctx, n, options["norm"])
    maxiter = (_S(convert(dim_value(n), "float64")) * 200.0 if options["maxiter"] is None
               else int(options["maxiter"]))
    gtol, c1, c2 = float(options["gtol"]), _f64(options["c1"]), _f64(options["c2"])

    def norm(g: _S) -> _S:
        return _S(_norm(g.v, options["norm"]))

    def polak_ribiere(s, alpha, g1):
        """The iterate, the next direction and the gradient's norm after the step alpha."""
        beta = _py_max(0.0, _S(_dot((g1 - s["g"]).v, g1.v)) / _S(_dot(s["g"].v, s["g"].v)))
        return s["x"] + alpha * s["p"], -g1 + beta * s["p"], norm(g1)

    def step(s, flags):
        def descent(alpha, _f, g1):
            _, p1, gnorm1 = polak_ribiere(s, alpha, _S(g1))
            return (gnorm1 <= gtol) | (_S(_dot(p1.v, g1)) <= -_SIGMA_3 * _S(_dot(g1, g1)))

        found, alpha, f1, g1, flags = _line_search(evaluate, s["x"].v, s["p"].v, s["f"].v, s["g"].v,
                                                   s["f_before"].v, c1, c2, flags, descent)
        found, g1 = _S(found), _S(g1)
        x1, p1, gnorm1 = polak_ribiere(s, _S(alpha), g1)
        moved = dict(s, status=_where(gnorm1 > gtol, _GOING, _DONE), x=x1, f=_S(f1), g=g1, p=p1, f_before=s["f"],
                     gnorm=gnorm1)
        return _where_all(found, moved, dict(s, status=_STOPPED)), flags

    x = _S(convert(reshape(x0, [n]), "float64"))
    f, g, flags = evaluate(x.v, [ir_constant(False)] * len(checks))
    f, g = _S(f), _S(g)
    gnorm = norm(g)
    # the first step's length as if the previous value were f + |g| / 2 (dx ~ 1)
    init = dict(status=_where(gnorm > gtol, _GOING, _DONE), x=x, f=f, g=g, p=-g, f_before=f + _S(_norm(g.v, 2)) * 0.5,
                gnorm=gnorm)
    state, flags = _iterate(init, flags, maxiter, step)
    for flag, check in zip(flags, checks, strict=True):
        ctx.runtime_check(flag, check.error, check.message)
    # scipy's status: a failed line search, the iteration limit, then NaN
    nan = _isnan(state["gnorm"]) | _isnan(state["f"]) | _S(fold(_isnan(state["x"]).v, [0], hlo.or_, False))
    success = ~state["status"].eq(_STOPPED) & (state["iterations"] < maxiter) & ~nan
    return reshape(convert(state["x"].v, x_type.dtype), shape_of(x0)), success.v


_NEWTON_CG_DEFAULTS = {"xtol": 1e-5, "maxiter": None, "c1": 1e-4, "c2": 0.9}
_EPSMCH = float(np.finfo(np.float64).eps)


def _lower_newton_cg(ctx, node, x0, args):
    """minimize(method="Newton-CG"): scipy's `_minimize_newtoncg`. Each iteration solves
    H p = -g by conjugate gradients (stopped at a residual of min(0.5, sqrt|g|_1) |g|_1,
    at flat or negative curvature, where the first step falls back to steepest descent),
    then takes scipy's line search along p; it stops once the step's L1 length is within
    n xtol. The Hessian is the Op's own (hess=True) or PyTensor's, where scipy would
    difference the gradient."""
    if not node.op.jac:
        raise ValueError(f"Jacobian is required for Newton-CG method (node: {node_label(node)})")
    options = _method_options(node, "newton-cg", "xtol", _NEWTON_CG_DEFAULTS, _IGNORED, "Newton-CG", "no callback")
    evaluate, checks = _objective(ctx, node, x0, args, 1, "minimize_objective")
    curvature, hess_checks = _objective(ctx, node, x0, args, 2, "minimize_hessian")
    x_type = node.inputs[0].type
    n = dim_product(shape_of(x0))
    size = _S(convert(dim_value(n), "float64"))
    maxiter = size * 200.0 if options["maxiter"] is None else int(options["maxiter"])
    xtol, c1, c2 = size * float(options["xtol"]), _f64(options["c1"]), _f64(options["c2"])
    count = len(checks)
    x = _S(convert(reshape(x0, [n]), "float64"))
    f, _, flags = evaluate(x.v, [ir_constant(False)] * count)
    flags = [*flags, *[ir_constant(False)] * len(hess_checks)]

    def step(s, flags):
        x = s["x"]
        _, g, hess, hess_flags = curvature(x.v, flags[count:])
        p, solved = _conjugate_gradients(_S(hess), -_S(g), size)
        found, alpha, f1, _, own_flags = _line_search(evaluate, x.v, p.v, s["f"].v, g,
                                                      s["f_before"].v, c1, c2, flags[:count])
        found = _S(found)
        update = _S(alpha) * p
        l1 = _l1(update)
        status = _where(~solved | ~found, _STOPPED, _where(l1 > xtol, _GOING, _DONE))
        moved = found & solved
        return dict(status=status, x=_where(moved, x + update, x), f=_where(moved, _S(f1), s["f"]),
                    f_before=_where(moved, s["f"], s["f_before"]), l1=_where(moved, l1, s["l1"])), [
            *own_flags, *hess_flags]

    # f_before NaN: scipy's None (no previous value: the first trial step is 1)
    init = dict(status=_GOING, x=x, f=_S(f), f_before=float("nan"), l1=float(np.finfo(np.float64).max))
    state, flags = _iterate(init, flags, maxiter, step)
    for flag, check in zip(flags, [*checks, *hess_checks], strict=True):
        ctx.runtime_check(flag, check.error, check.message)
    # success: converged (not stopped, not at maxiter), and neither f nor the step NaN
    success = state["status"].eq(_DONE) & ~_isnan(state["f"]) & ~_isnan(state["l1"])
    return reshape(convert(state["x"].v, x_type.dtype), shape_of(x0)), success.v


# scipy's L-BFGS-B options, tol setting ftol and gtol; eps and the others change nothing here
_LBFGSB_DEFAULTS = {"maxcor": 10, "ftol": 2.2204460492503131e-09, "gtol": 1e-5, "maxfun": 15000, "maxiter": 15000,
                    "maxls": 20}
_STPMX = 1e10  # lnsrlb's largest step where no variable is bounded


def _lower_lbfgsb(ctx, node, x0, args):
    """minimize(method="L-BFGS-B"): scipy's `_minimize_lbfgsb` driving the C L-BFGS-B
    (setulb, mainlb); where some variable is bounded, `_lbfgsb_bounded`. Where none is
    (no bounds, or none finite), each iteration steps from
    the Cauchy point x - g (while no correction pairs are stored) or along the limited-
    memory quasi-Newton step -H g (the two-loop recursion on the last `maxcor` pairs,
    H0 = I / theta: the inverse of the compact matrix subsm solves with), then lnsrlb's
    line search (dcsrch, ftol 1e-3, gtol 0.9, xtol 0.1, `maxls` evaluations). A failed
    search drops the pairs and tries again, or ends the run where there were none. It stops
    at a projected gradient within `gtol`, a relative reduction of f within `ftol`, or
    scipy's driver's `maxiter` and `maxfun`; success is "CONVERGENCE"."""
    options = _method_options(node, "l-bfgs-b", ("ftol", "gtol"), _LBFGSB_DEFAULTS, _IGNORED | {"iprint"},
                              "L-BFGS-B", "no callback", keywords=("bounds",))
    bounds = node.op.optimizer_kwargs.get("bounds")
    n = dim_product(shape_of(x0))
    if bounds is not None:
        lower, upper = _bounds(ctx, node, bounds, n)  # scipy's checks, where no entry is finite too
    if not options["maxls"] > 0:
        raise ValueError(f"maxls must be positive. (node: {node_label(node)})")
    evaluate, checks = _objective(ctx, node, x0, args, 1, "minimize_objective")
    if bounds is not None:
        lower_values, upper_values = np.broadcast_arrays(*_bound_values(node, bounds))
        fixed = lower_values == upper_values
        if not node.op.jac and fixed.any() and not fixed.all():
            # scipy takes fixed variables out of the problem (its finite differences could
            # not step there): their gradient is 0 here, which changes nothing else
            evaluate = _gradient_held(evaluate, lower.eq(upper))
        else:
            fixed = np.zeros_like(fixed)
        # scipy's nbd: a bound is any value but ±inf; where no variable left has one,
        # L-BFGS-B runs unconstrained
        if ((~np.isinf(lower_values) | ~np.isinf(upper_values)) & ~fixed).any():
            boxed = bool((~np.isinf(lower_values) & ~np.isinf(upper_values)).all())
            return _lbfgsb_bounded(ctx, node, x0, evaluate, checks, options, lower, upper, boxed)
    x_type = node.inputs[0].type
    m, limits = int(options["maxcor"]), _lbfgsb_limits(options)
    pgtol, maxiter = limits["pgtol"], limits["maxiter"]
    slots = max(m, 1)
    x = _S(convert(reshape(x0, [n]), "float64"))
    if bounds is not None:  # none finite, or only those of variables taken out
        x = _clip(x, lower, upper)
    f, g, flags = evaluate(x.v, [ir_constant(False)] * len(checks))
    f, g = _S(f), _S(g)
    zeros = _S(splat(_f64(0.0), x.v))
    memory = _S(broadcast_in_dim(zeros.v, [slots, n], [1]))

    def step(s, flags):
        x, g, col, theta = s["x"], s["g"], s["col"], s["theta"]
        # the Cauchy point while no pairs are stored (B = I: x - g, cauchy's arithmetic),
        # else the quasi-Newton step from x (subsm, all variables free)
        slope = -_S(fold((g * g).v, [0], hlo.add, 0.0))  # cauchy's f1 and f2 = -theta f1 along -g
        dtm = -slope / (-theta * slope)
        cauchy = _where(s["sbgnrm"] <= 0.0, x, x + _where(dtm <= 0.0, 0.0, dtm) * -g)
        z = _where(col.eq(0.0), cauchy, x + _two_loop(s["S"], s["Y"], s["sy"], col, theta, -g))
        d = z - x
        dnorm = _enorm(d)
        first = _where(s["nit"].eq(0.0), _fmin(1.0 / dnorm, _STPMX), 1.0)  # mainlb's iter is the driver's count
        t, new_flags = _lbfgsb_search(evaluate, s, d, first, _STPMX, lambda stp: _where(stp.eq(1.0), z, stp * d + x),
                                      flags, limits, _largest_entry)
        found, stp, nfev, one, dr, stored = t["found"], t["stp"], t["nfev"], t["one"], t["dr"], t["stored"]
        S, Y, sy, col1 = _push(s["S"], s["Y"], s["sy"], col, _where(one, d, stp * d), t["y"], dr, m)
        rr = t["rr"]
        taken = dict(s, status=t["status"], x=t["x"], f=t["f"], g=t["g"], sbgnrm=t["sbgnrm"],
                     nit=t["nit"], nfev=nfev,
                     S=_where(stored, S, s["S"]), Y=_where(stored, Y, s["Y"]), sy=_where(stored, sy, s["sy"]),
                     col=_where(stored, col1, col), theta=_where(stored, rr / dr, theta))
        # a failed search: back to x; without pairs the run ends (abnormally), else they
        # are dropped and the iteration starts again
        failed = dict(s, status=_where(col.eq(0.0), _STOPPED, _GOING), nfev=nfev, col=0.0, theta=1.0)
        return _where_all(found, taken, failed), new_flags

    improper = (m <= 0) | (float(options["ftol"]) < 0.0)  # errclb's errors (and x empty): x0, unconverged
    sbgnrm = _largest_entry(x, g)
    status = _where(_S(compare(dim_value(n), dim_value(0), "EQ")) | improper, _STOPPED,
                    _where(sbgnrm <= pgtol, _DONE, _GOING))
    init = dict(status=status, x=x, f=f, g=g, sbgnrm=sbgnrm, nit=0.0, nfev=1.0, col=0.0, theta=1.0,
                S=memory, Y=memory, sy=_S(broadcast_in_dim(_f64(0.0), [slots], [])))
    state, flags = _iterate(init, flags, 2 * maxiter + 2, step)
    for flag, check in zip(flags, checks, strict=True):
        ctx.runtime_check(flag, check.error, check.message)
    return reshape(convert(state["x"].v, x_type.dtype), shape_of(x0)), state["status"].eq(_DONE).v


def _lbfgsb_limits(options: dict) -> dict:
    """The options lnsrlb, mainlb's tests and scipy's driver read (mainlb's tol is factr *
    epsmch, factr = ftol / eps)."""
    return dict(maxls=int(options["maxls"]), maxiter=int(options["maxiter"]), maxfun=int(options["maxfun"]),
                pgtol=float(options["gtol"]), tol=float(options["ftol"]) / _EPSMCH * _EPSMCH)


def _lbfgsb_search(evaluate, s: dict, d: _S, stp: _S, stpmax, point, flags, limits: dict, projgr) -> tuple[dict, list]:
    """lnsrlb from the iterate s["x"] along d (dcsrch, ftol 1e-3, gtol 0.9, from the trial
    `stp`, at most `stpmax`, trial points `point(stp)`), then what mainlb and scipy's driver
    do with a new iterate: its count, the limits (`maxiter`, `maxfun`), the tests on the
    projected gradient (`projgr(x, g)`) within `pgtol` and on f's relative reduction within
    `tol`; and the pair's curvature dr = s'y (stored unless not positive enough) and y'y."""
    x, g = s["x"], s["g"]
    gdold = _S(_dot(g.v, d.v))
    lnsrlb = dict(stpmax=stpmax, evaluations=limits["maxls"], point=point)
    search = _dcsrch(evaluate, x.v, d.v, s["f"], gdold, stp, _S(1e-3), _S(0.9), g.v, flags, lnsrlb)
    stp, f1, g1 = search["alpha"], search["f"], _S(search["g"])
    nfev = s["nfev"] + search["iterations"]
    nit = s["nit"] + 1.0
    sbgnrm = projgr(point(stp), g1)
    reduced = (s["f"] - f1) <= limits["tol"] * _fmax(_fmax(abs(s["f"]), abs(f1)), 1.0)
    status = _where((nit >= float(limits["maxiter"])) | (nfev > float(limits["maxfun"])), _STOPPED, _where(
        (sbgnrm <= limits["pgtol"]) | reduced, _DONE, _GOING))
    gd = _S(_dot(g1.v, d.v))
    one = stp.eq(1.0)
    dr = _where(one, gd - gdold, (gd - gdold) * stp)
    y = g1 - g
    ynorm = _enorm(y)
    return dict(found=search["status"].eq(_DONE), stp=stp, x=point(stp), f=f1, g=g1, nfev=nfev, nit=nit, sbgnrm=sbgnrm,
                status=status, one=one, dr=dr, stored=~(dr <= _EPSMCH * _where(one, -gdold, -gdold * stp)), y=y,
                rr=ynorm * ynorm), search["flags"]


def _largest_entry(_x: _S, g: _S) -> _S:
    """projgr where no variable is bounded: the gradient's largest entry, NaN where one is."""
    return _S(fold(abs(g).v, [0], hlo.maximum, 0.0))


def _two_loop(s_mem: _S, y_mem: _S, sy: _S, count: _S, theta: _S, r: _S) -> _S:
    """H r for the limited-memory inverse Hessian of the first `count` pairs (rows of
    `s_mem`, `y_mem`, oldest first; `sy` their curvatures s'y), H0 = I / theta."""
    count = convert(count.v, "int64")

    def newest_first(j, values):
        q, alphas = map(_S, values)
        alpha = _S(_dot(_entry(s_mem, j).v, q.v)) / _entry(sy, j)
        return [(q - alpha * _entry(y_mem, j)).v, _put(alphas, j, alpha).v]

    q, alphas = map(_S, _for(count, [r.v, splat(_f64(0.0), sy.v)], newest_first, reverse=True))

    def oldest_first(j, values):
        (z,) = map(_S, values)
        beta = _S(_dot(_entry(y_mem, j).v, z.v)) / _entry(sy, j)
        return [(z + (_entry(alphas, j) - beta) * _entry(s_mem, j)).v]

    return _S(_for(count, [(q / theta).v], oldest_first)[0])


def _push(s_mem: _S, y_mem: _S, sy: _S, count: _S, s: _S, y: _S, curvature: _S, m: int):
    """The memory with the pair (s, y) added as the newest (the oldest dropped where all
    m slots are used) and its count."""
    (s_mem, _), (y_mem, _), (sy, count) = (_push_window(memory, count, value, m) for memory, value in (
        (s_mem, s), (y_mem, y), (sy, curvature)))
    return s_mem, y_mem, sy, count


def _push_window(values: _S, count: _S, value: _S, size: int):
    """A deque of at most `size` entries (rows), oldest first, `count` of them used: with
    `value` appended (the oldest dropped where all are used), and its new count."""
    slots = shape_of(values.v)[0]
    full = count.eq(float(size))
    rolled = _S(hlo.concatenate([slice_axis(values.v, 0, 1, slots), slice_axis(values.v, 0, 0, 1)], 0))
    slot = convert(_where(full, float(size - 1), count).v, "int64")
    return _put(_where(full, rolled, values), slot, value), _where(full, count, count + 1.0)


def _gradient_held(evaluate, held: _S):
    """`evaluate` with the gradient 0 at the variables `held`."""
    def evaluate_held(x, flags):
        f, g, flags = evaluate(x, flags)
        return f, _where(held, 0.0, _S(g)).v, flags

    return evaluate_held


def _lbfgsb_bounded(ctx, node, x0, evaluate, checks, options, lower: _S, upper: _S, boxed: bool):
    """minimize(method="L-BFGS-B") with bounds: the C L-BFGS-B's mainlb where some variable
    is bounded. x0 is clipped into the bounds; each iteration finds the generalized Cauchy
    point along the projected gradient path (`_cauchy`: the breakpoints in order, the
    quadratic model in the compact form of the limited-memory matrix), minimizes the model
    over the variables still free there (`_subspace_step`: formk's LEL' factorization of
    the middle matrix, subsm's step, projected onto the bounds or cut back where that is not
    a descent direction), then searches along the step (lnsrlb: the largest step within the
    bounds, dcsrch, trial points clipped into them). A factorization that fails, or a
    search that fails with pairs stored, drops the pairs; a search that fails without them
    ends the run. The tests and limits are the unbounded method's, the projected gradient
    in place of the gradient. Where every variable is fixed (lower = upper), scipy does not
    run it: x is the bounds, success True."""
    x_type = node.inputs[0].type
    n = dim_product(shape_of(x0))
    m, limits = int(options["maxcor"]), _lbfgsb_limits(options)
    pgtol, maxiter = limits["pgtol"], limits["maxiter"]
    slots = max(m, 1)
    has_lower, has_upper = ~_isinf(lower), ~_isinf(upper)
    fixed = has_lower & has_upper & (upper - lower <= 0.0)  # active's iwhere 3
    box = _Box(lower, upper, has_lower, has_upper, fixed)
    x = _clip(_S(convert(reshape(x0, [n]), "float64")), lower, upper)
    f, g, flags = evaluate(x.v, [ir_constant(False)] * len(checks))
    f, g = _S(f), _S(g)
    zeros = _S(splat(_f64(0.0), x.v))
    memory = _S(broadcast_in_dim(zeros.v, [slots, n], [1]))
    square = _S(broadcast_in_dim(_f64(0.0), [slots, slots], []))
    eye = _S(identity_matrix([slots, slots], "float64"))

    def step(s, flags):
        x, g = s["x"], s["g"]
        compact = _Compact(ctx, s["S"], s["Y"], s["SY"], s["wt"], s["col"], s["theta"])
        xcp, c, free = _cauchy(compact, box, x, g, s["sbgnrm"])
        subspace = _S(fold(free.v, [0], hlo.or_, False)) & (s["col"] > 0.0)

        def minimized():
            z, factored = _subspace_step(compact, box, x, g, xcp, c, free)
            # formk's factorization failed: the pairs dropped, the Cauchy point without them
            plain = lambda: [_cauchy(compact.dropped(), box, x, g, s["sbgnrm"])[0].v]  # noqa: E731
            z = _S(if_else(factored.v, [z.v.type], lambda: [z.v], plain)[0])
            return [z.v, (~factored).v]

        z, dropped = map(_S, if_else(subspace.v, [x.v.type, subspace.v.type], minimized,
                                     lambda: [xcp.v, _S(False).v]))
        col, theta = _where(dropped, 0.0, s["col"]), _where(dropped, 1.0, s["theta"])
        d = z - x
        dnorm = _enorm(d)
        first = s["nit"].eq(0.0)  # mainlb's iter is the driver's count
        stpmx = _where(first, 1.0, _largest_step(box, x, d))
        stp = _S(1.0) if boxed else _where(first, _fmin(1.0 / dnorm, stpmx), 1.0)
        t, new_flags = _lbfgsb_search(evaluate, s, d, stp, stpmx,
                                      lambda a: _where(a.eq(1.0), z, box.clip(a * d + x)), flags, limits,
                                      box.projected_gradient_norm)
        stp, one = t["stp"], t["one"]
        # matupd and formt, where the pair was stored (into an empty memory where formk's
        # factorization failed)
        memory = _Compact(ctx, s["S"], s["Y"], s["SY"], s["wt"], col, theta)
        updated = memory.with_pair(_where(one, d, stp * d), t["y"], t["dr"], t["rr"],
                                   _where(one, dnorm * dnorm, stp * stp * (dnorm * dnorm)), s["SS"], m)
        kept_pairs = dict(S=s["S"], Y=s["Y"], SY=s["SY"], SS=s["SS"], wt=s["wt"], col=col, theta=theta)
        taken = dict(s, status=t["status"], x=t["x"], f=t["f"], g=t["g"], sbgnrm=t["sbgnrm"],
                     nit=t["nit"], nfev=t["nfev"], **_where_all(t["stored"], updated, kept_pairs))
        failed = dict(s, status=_where(col.eq(0.0), _STOPPED, _GOING), nfev=t["nfev"], col=0.0, theta=1.0)
        return _where_all(t["found"], taken, failed), new_flags

    improper = (m <= 0) | (float(options["ftol"]) < 0.0)  # errclb's errors: x0, unconverged
    sbgnrm = box.projected_gradient_norm(x, g)
    status = _where(_S(compare(dim_value(n), dim_value(0), "EQ")) | improper, _STOPPED,
                    _where(sbgnrm <= pgtol, _DONE, _GOING))
    init = dict(status=status, x=x, f=f, g=g, sbgnrm=sbgnrm, nit=0.0, nfev=1.0, col=0.0, theta=1.0,
                S=memory, Y=memory, SY=square, SS=square, wt=eye)
    state, flags = _iterate(init, flags, 2 * maxiter + 2, step)
    for flag, check in zip(flags, checks, strict=True):
        ctx.runtime_check(flag, check.error, check.message)
    all_fixed = _S(fold(lower.eq(upper).v, [0], hlo.and_, True))
    x = _where(all_fixed, lower, state["x"])
    return reshape(convert(x.v, x_type.dtype), shape_of(x0)), (all_fixed | state["status"].eq(_DONE)).v


class _Box:
    """L-BFGS-B's bounds: lower and upper (±inf unbounded), which of them bound each
    variable (scipy's nbd) and the variables they fix."""

    def __init__(self, lower: _S, upper: _S, has_lower: _S, has_upper: _S, fixed: _S):
        self.lower, self.upper, self.has_lower, self.has_upper, self.fixed = lower, upper, has_lower, has_upper, fixed

    def clip(self, x: _S) -> _S:
        """lnsrlb's and subsm's projection: C's fmax and fmin with the bounds a variable has
        (NaN becomes the bound)."""
        x = _where(self.has_lower, _fmax(x, self.lower), x)
        return _where(self.has_upper, _fmin(x, self.upper), x)

    def projected_gradient_norm(self, x: _S, g: _S) -> _S:
        """projgr: the largest entry of the projected gradient, NaN where g has one."""
        projected = _where(g < 0.0, _where(self.has_upper, _fmax(x - self.upper, g), g),
                           _where(self.has_lower, _fmin(x - self.lower, g), g))
        largest = _S(fold(abs(projected).v, [0], hlo.maximum, 0.0))
        return _where(_S(fold(_isnan(g).v, [0], hlo.or_, False)), float("nan"), largest)

    def ratios(self, x: _S, d: _S, where: _S | None = None) -> _S:
        """The step along d from x at which each variable (those `where` says) meets the
        bound it is heading to (0 where it is at or past it already; inf where it meets
        none)."""
        down = self.has_lower & (d < 0.0)
        up = ~down & self.has_upper & (d > 0.0)
        if where is not None:
            down, up = down & where, up & where
        below, above = self.lower - x, self.upper - x
        return _where(down, _where(below >= 0.0, 0.0, below / d), _where(up, _where(above <= 0.0, 0.0, above / d),
                                                                               float("inf")))


def _largest_step(box: _Box, x: _S, d: _S) -> _S:
    """lnsrlb's stpmx after the first iteration: the longest step along d within the bounds,
    at most 1e10."""
    return _fmin(_S(fold(box.ratios(x, d).v, [0], hlo.minimum, np.inf)), _STPMX)


class _Compact:
    """L-BFGS-B's limited-memory matrix in compact form, B = theta I - W M W' with
    W = [Y, theta S] (the last `col` pairs, rows of S and Y oldest first) and M the inverse
    of [[-D, L'], [L, theta S'S]] (D and L the diagonal and strict lower triangle of S'Y,
    `SY`), through `wt`, formt's Cholesky factor of theta S'S + L D^-1 L' (upper). Slots
    past `col` are masked out: zero rows, unit diagonals."""

    def __init__(self, ctx, S: _S, Y: _S, SY: _S, wt: _S, col: _S, theta: _S):
        self.ctx, self.col, self.theta = ctx, col, theta
        self.m = shape_of(S.v)[0]
        index = _S(iota([self.m], 0, "float64"))
        self.used = index < col
        rows, cols = (_S(iota([self.m, self.m], k, "float64")) for k in (0, 1))
        self.used2 = (rows < col) & (cols < col)
        self.below = rows > cols  # the strict lower triangle
        self.S, self.Y, self.SY, self.wt = S, Y, SY, wt
        self.Su, self.Yu = (_where(_S(broadcast_in_dim(self.used.v, shape_of(S.v), [0])), v, 0.0) for v in (S, Y))
        self.D = _where(self.used, _S(diagonal(SY.v)), 1.0)
        self.L = _where(self.used2 & self.below, SY, 0.0)

    def dropped(self) -> "_Compact":
        return _Compact(self.ctx, self.S, self.Y, self.SY, self.wt, _S(0.0), _S(1.0))

    def _solve(self, a: _S, v: _S, transpose: bool = False) -> _S:
        """a x = v (a' x = v) for an upper triangular m x m a."""
        b = reshape(v.v, [self.m, 1])
        x = _solve_triangular(self.ctx, a.v, b, lower=False, transpose="ADJOINT" if transpose else "NO_TRANSPOSE")
        return _S(reshape(x, [self.m]))

    def split(self, v: _S) -> tuple[_S, _S]:
        return _S(slice_axis(v.v, 0, 0, self.m)), _S(slice_axis(v.v, 0, self.m, 2 * self.m))

    def join(self, a: _S, b: _S) -> _S:
        return _S(hlo.concatenate([a.v, b.v], 0))

    def w_times(self, d: _S) -> _S:
        """W'd: [Y d, theta S d]."""
        return self.join(_matvec(self.Yu, d), self.theta * _matvec(self.Su, d))

    def times_w(self, v: _S) -> _S:
        """W v: Y'v1 + theta S'v2 (cmprlb's sum)."""
        v1, v2 = self.split(v)
        return _matvec(self.Yu, v1, transpose=True) + _matvec(self.Su, self.theta * v2, transpose=True)

    def w_row(self, at: _S) -> _S:
        """Row `at` (a one-hot mask over the variables) of W: [Y, theta S] at that variable."""
        pick = lambda v: _S(fold(_where(_S(broadcast_in_dim(at.v, shape_of(v.v), [1])), v, 0.0).v, [1],  # noqa: E731
                                 hlo.add, 0.0))
        return self.join(pick(self.Yu), self.theta * pick(self.Su))

    def bmv(self, v: _S) -> _S:
        """bmv: M v, by the two triangular solves of M's inverse's factorization
        [[D^1/2, 0], [-L D^-1/2, J]] [[-D^1/2, D^-1/2 L'], [0, J']] (J J' = T)."""
        v1, v2 = self.split(v)
        root = _sqrt(self.D)
        p2 = self._solve(self.wt, v2 + _matvec(self.L, v1 / self.D), transpose=True)
        p2 = self._solve(self.wt, p2)
        p1 = -(v1 / root) / root + _matvec(self.L, p2, transpose=True) / self.D
        return self.join(p1, p2)

    def with_pair(self, s: _S, y: _S, dr: _S, rr: _S, ss: _S, SS: _S, m: int) -> dict:
        """matupd and formt: the pair (s, y) stored as the newest (the oldest dropped where
        all m slots are used), S'Y's new row (its diagonal dr = s'y as mainlb computed it),
        S'S's new column (its diagonal `ss`), theta = y'y / s'y (`rr` / dr), and the
        factor of T = theta S'S + L D^-1 L'; where T is not positive definite, the pairs
        are dropped (col 0, theta 1)."""
        full = self.col.eq(float(m))
        S1, col1 = _push_window(self.S, self.col, s, m)
        Y1, _ = _push_window(self.Y, self.col, y, m)
        SY, SS = (_where(full, _rolled(a), a) for a in (self.SY, SS))
        index = _S(iota([self.m], 0, "float64"))
        rows, cols = (_S(iota([self.m, self.m], k, "float64")) for k in (0, 1))
        newest = col1 - 1.0
        SY = _where(rows.eq(newest) & (cols < newest), _S(broadcast_in_dim(_matvec(Y1, s).v, [self.m] * 2, [1])), SY)
        SS = _where(cols.eq(newest) & (rows < newest), _S(broadcast_in_dim(_matvec(S1, s).v, [self.m] * 2, [0])), SS)
        at = rows.eq(newest) & cols.eq(newest)
        SY, SS = _where(at, dr, SY), _where(at, ss, SS)
        theta = rr / dr
        wt, positive = _formt(self.ctx, SY, SS, theta, index < col1)
        return dict(S=S1, Y=Y1, SY=SY, SS=SS, wt=wt, col=_where(positive, col1, 0.0),
                    theta=_where(positive, theta, 1.0))


def _rolled(a: _S) -> _S:
    """A square matrix with its first row and column moved last (matupd's shift of S'Y and
    S'S where the oldest pair is dropped)."""
    k = shape_of(a.v)[0]
    a = hlo.concatenate([slice_axis(a.v, 0, 1, k), slice_axis(a.v, 0, 0, 1)], 0)
    return _S(hlo.concatenate([slice_axis(a, 1, 1, k), slice_axis(a, 1, 0, 1)], 1))


def _formt(ctx, SY: _S, SS: _S, theta: _S, used: _S) -> tuple[_S, _S]:
    """formt: the upper Cholesky factor of T = theta S'S + L D^-1 L' over the used slots
    (the identity past them), and whether T was positive definite. T's entry (i, j) sums
    SY[i, k] SY[j, k] / SY[k, k] over k < min(i, j), as formt does: L (D^-1 L')
    with L SY's strict lower triangle, a product of two k x k matrices (summed over a
    k x k x k tensor, its 1,000 elements at maxcor 10 kept the module from XLA's
    elemental emitter, which compiles it in half the time)."""
    k = shape_of(SY.v)[0]
    rows, cols = (_S(iota([k, k], a, "float64")) for a in (0, 1))
    strict = _where(cols < rows, SY, 0.0)
    # masked after dividing: an unused slot's D is 0, and a used slot's row reads used slots
    scaled = _where(cols < rows, SY / _S(broadcast_in_dim(diagonal(SY.v), [k, k], [1])), 0.0)
    ldl = _S(dot_general(strict.v, scaled.v, ([1], [1])))
    upper = _where(rows <= cols, SS, _S(transpose(SS.v, [1, 0])))  # S'S from its upper triangle
    used2 = _S(broadcast_in_dim(used.v, [k, k], [0])) & _S(broadcast_in_dim(used.v, [k, k], [1]))
    t = _where(used2, theta * upper + ldl, _S(identity_matrix([k, k], "float64")))
    factor, positive = _potrf(ctx, t.v, lower=False)
    return _S(factor), _S(positive)


def _matvec(a: _S, v: _S, transpose: bool = False) -> _S:
    """a v (a' v) for a matrix a."""
    return _S(dot_general(a.v, v.v, ([0 if transpose else 1], [0])))


def _cauchy(compact: _Compact, box: _Box, x: _S, g: _S, sbgnrm: _S) -> tuple[_S, _S, _S]:
    """cauchy: the generalized Cauchy point, the first local minimum of the quadratic model
    along the projected steepest descent path x(t) = P(x - t g). Each variable leaves the
    path's free set at its breakpoint (where it meets its bound); the segments between them
    are searched in order, the model's slope f1 and curvature f2 along each updated as
    cauchy does (with M through bmv), until the minimum falls inside a segment. Returns the
    point, c = W'(xcp - x), and the variables free there (freev: iwhere <= 0)."""
    theta = compact.theta
    neg = -g
    tl, tu = x - box.lower, box.upper - x
    at_lower, at_upper = box.has_lower & (tl <= 0.0), box.has_upper & (tu <= 0.0)
    unbounded = ~box.has_lower & ~box.has_upper
    # iwhere: 3 fixed, -1 unbounded, 1 or 2 held at a bound, -3 not moving, 0 free
    iwhere = _where(box.fixed, 3.0, _where(unbounded, -1.0, _where(
        at_lower, _where(neg <= 0.0, 1.0, 0.0), _where(at_upper, _where(neg >= 0.0, 2.0, 0.0), _where(
            abs(neg) <= 0.0, -3.0, 0.0)))))
    moving = iwhere.eq(0.0) | iwhere.eq(-1.0)
    d = _where(moving, neg, 0.0)
    f1 = -_S(fold((d * d).v, [0], hlo.add, 0.0))
    p = compact.w_times(d)
    down = box.has_lower & (neg < 0.0)
    up = ~down & box.has_upper & (neg > 0.0)
    breaks = moving & (down | up)
    t = _where(breaks, _where(down, tl / -neg, tu / neg), float("inf"))
    endless = moving & ~breaks  # free along the whole path
    bnded = ~_S(fold((endless & (abs(neg) > 0.0)).v, [0], hlo.or_, False))
    still = ~_S(fold(moving.v, [0], hlo.or_, False)) | (sbgnrm <= 0.0)  # the point is x
    f2 = -theta * f1
    f2_org = f2
    f2 = f2 - _S(_dot(compact.bmv(p).v, p.v))
    with_pairs = compact.col > 0.0
    index = _S(iota(shape_of(x.v), 0, "float64"))
    size = _S(convert(dim_value(shape_of(x.v)[0]), "float64"))

    def segment(s):
        """Past the next breakpoint (the smallest t left, the first of equal ones), unless
        the minimum lies before it."""
        left = s["left"]
        tj = _S(fold(_where(left, t, float("inf")).v, [0], hlo.minimum, np.inf))
        ibp = _S(fold(_where(left & t.eq(tj), index, size).v, [0], hlo.minimum, np.inf))
        at = index.eq(ibp)
        dt = tj - s["tj"]
        dibp = _S(fold(_where(at, s["d"], 0.0).v, [0], hlo.add, 0.0))
        bound = _where(dibp > 0.0, box.upper, box.lower)
        zibp = _S(fold(_where(at, bound - x, 0.0).v, [0], hlo.add, 0.0))
        dibp2 = dibp * dibp
        f1 = s["f1"] + dt * s["f2"] + dibp2 - theta * dibp * zibp
        f2 = s["f2"] - theta * dibp2
        c = _where(with_pairs, s["c"] + dt * s["p"], s["c"])
        wbp = compact.w_row(at)
        v = compact.bmv(wbp)
        wmc, wmp, wmw = (_S(_dot(a.v, v.v)) for a in (c, s["p"], wbp))
        p = _where(with_pairs, s["p"] - dibp * wbp, s["p"])
        f1 = _where(with_pairs, f1 + dibp * wmc, f1)
        f2 = _where(with_pairs, f2 + dibp * 2.0 * wmp - dibp2 * wmw, f2)
        f2 = _fmax(_EPSMCH * f2_org, f2)
        left1 = left & ~at
        more = _S(fold(left1.v, [0], hlo.or_, False))
        passed = dict(left=left1, done=~more, tj=tj, tsum=s["tsum"] + dt, d=_where(at, 0.0, s["d"]),
                      xcp=_where(at, bound, s["xcp"]), iwhere=_where(at, _where(dibp > 0.0, 2.0, 1.0), s["iwhere"]),
                      f1=f1, f2=f2, p=p, c=c, dtm=_where(more | ~bnded, -f1 / f2, 0.0))
        return _where_all(s["dtm"] < dt, dict(s, done=True), passed)

    init = dict(left=breaks, done=~_S(fold(breaks.v, [0], hlo.or_, False)), tj=0.0, tsum=0.0, d=d, xcp=x,
                iwhere=iwhere, f1=f1, f2=f2, p=p, c=_S(splat(_f64(0.0), p.v)), dtm=-f1 / f2)
    names = list(init)
    out = while_loop([_S.of(init[k]).v for k in names], lambda v: (~_S(v[1])).v,
                     lambda v: [segment(dict(zip(names, map(_S, v))))[k].v for k in names])
    s = dict(zip(names, map(_S, out)))
    dtm = _where(s["dtm"] <= 0.0, 0.0, s["dtm"])
    xcp = s["xcp"] + (s["tsum"] + dtm) * s["d"]
    c = _where(with_pairs, s["c"] + dtm * s["p"], s["c"])
    return _where(still, x, xcp), _where(still, 0.0, c), _where(still, iwhere, s["iwhere"]) <= 0.0


def _subspace_step(compact: _Compact, box: _Box, x: _S, g: _S, xcp: _S, c: _S, free: _S) -> tuple[_S, _S]:
    """formk, cmprlb and subsm: the minimum of the quadratic model over the variables free
    at the Cauchy point (the others held there), from the reduced gradient
    r = -Z'(g + B (xcp - x)) and the middle matrix K = [[-D - Y'ZZ'Y / theta, L_a' - R_z'],
    [L_a - R_z, theta S'AA'S]] (Z the free variables, A the others; L_a the strict lower
    triangle of S'AA'Y, R_z the upper one of S'ZZ'Y) in formk's factorization L E L'. The
    step is projected onto the bounds; where that is not a descent direction, it is cut
    back from the Cauchy point to the first bound it meets instead. Returns the point and
    whether K's blocks were positive definite."""
    ctx, theta, m = compact.ctx, compact.theta, compact.m
    eye = _S(identity_matrix([m, m], "float64"))
    active = ~free

    def products(a: _S, b: _S, where: _S) -> _S:  # a' diag(where) b over the variables
        return _S(dot_general(_where(_S(broadcast_in_dim(where.v, shape_of(a.v), [1])), a, 0.0).v, b.v, ([1], [1])))

    used2 = compact.used2
    upper_left = _where(used2, products(compact.Yu, compact.Yu, free) / theta + _S(
        broadcast_in_dim(compact.D.v, [m, m], [0])) * eye, eye)
    rows, cols = (_S(iota([m, m], k, "float64")) for k in (0, 1))
    mixed = _where(used2, _where(rows <= cols, products(compact.Su, compact.Yu, free),
                                 -products(compact.Su, compact.Yu, active)), 0.0)
    u1, first = map(_S, _potrf(ctx, upper_left.v, lower=False))
    x12 = _S(_solve_triangular(ctx, u1.v, transpose(mixed.v, [1, 0]), lower=False, transpose="ADJOINT"))
    lower_right = _where(used2, theta * products(compact.Su, compact.Su, active), eye) + _S(
        dot_general(x12.v, x12.v, ([0], [0])))
    u2, second = map(_S, _potrf(ctx, lower_right.v, lower=False))
    # cmprlb: the reduced gradient
    r = -theta * (xcp - x) - g + compact.times_w(compact.bmv(c))
    r = _where(free, r, 0.0)
    # subsm: K^-1 W'Z r, by L y = W'Z r, y1 = -y1, L' z = y
    wv1, wv2 = compact.split(compact.w_times(r))
    y1 = compact._solve(u1, wv1, transpose=True)
    y2 = compact._solve(u2, wv2 - _matvec(x12, y1, transpose=True), transpose=True)
    z2 = compact._solve(u2, y2)
    z1 = compact._solve(u1, -y1 - _matvec(x12, z2))
    du = (r + _matvec(compact.Yu, z1, transpose=True) / theta + _matvec(compact.Su, z2, transpose=True)) * (1.0 / theta)
    du = _where(free, du, 0.0)
    projected = _where(free, box.clip(xcp + du), xcp)
    at_bound = free & ((box.has_lower & projected.eq(box.lower)) | (box.has_upper & projected.eq(box.upper)))
    hit = _S(fold(at_bound.v, [0], hlo.or_, False))
    ascent = _S(_dot((projected - x).v, g.v)) > 0.0
    # cut back: the longest step along du from the Cauchy point within the bounds, the
    # first variable to meet one set on it
    ratios = box.ratios(xcp, du, free)
    alpha = _fmin(_S(fold(ratios.v, [0], hlo.minimum, np.inf)), 1.0)
    index = _S(iota(shape_of(x.v), 0, "float64"))
    size = _S(convert(dim_value(shape_of(x.v)[0]), "float64"))
    ibd = _S(fold(_where(ratios.eq(alpha), index, size).v, [0], hlo.minimum, np.inf))
    snap = index.eq(ibd) & (alpha < 1.0) & du.ne(0.0)
    start = _where(snap, _where(du > 0.0, box.upper, box.lower), xcp)
    cut = _where(free, start + alpha * _where(snap, 0.0, du), xcp)
    return _where(hit & ascent, cut, projected), first & second


_TRUST_NCG_DEFAULTS = {"initial_trust_radius": 1.0, "max_trust_radius": 1000.0, "eta": 0.15, "gtol": 1e-4,
                       "maxiter": None}
_TRUST_IGNORED = {"disp", "return_all", "inexact", "workers", "subproblem_maxiter"}


def _lower_trust_region(ctx, node, x0, args, method: str):
    """minimize(method="trust-ncg" or "dogleg"): scipy's `_minimize_trust_region` with
    its CG-Steihaug subproblem (`_steihaug`) or its dogleg one (`_dogleg_subproblem`). Each
    iteration solves the quadratic model in the trust region, evaluates the objective at
    that step, and takes it where the actual reduction is more than `eta` of the
    predicted one; the radius shrinks or grows by their ratio. It ends at a gradient norm
    below `gtol`, at `maxiter`, where the model predicts no reduction, or (dogleg) where
    the Hessian is not positive definite (cho_factor's LinAlgError, which scipy catches:
    success False). scipy.linalg.norm's and cho_factor's ValueError on values not finite
    stops it too, and is raised after it."""
    label = node_label(node)
    if method == "dogleg":
        if not node.op.jac:
            raise ValueError(f"Jacobian is required for dogleg minimization (node: {label})")
        if not node.op.hess:
            raise ValueError(f"Hessian is required for dogleg minimization (node: {label})")
    else:
        if not node.op.jac:
            raise ValueError(f"Jacobian is required for Newton-CG trust-region minimization (node: {label})")
        if not node.op.hess:
            raise ValueError("Either the Hessian or the Hessian-vector product is required for Newton-CG "
                             f"trust-region minimization (node: {label})")
    options = _method_options(node, method, "gtol", _TRUST_NCG_DEFAULTS, _TRUST_IGNORED, method, "no callback")
    initial, largest, eta = (float(options[k]) for k in ("initial_trust_radius", "max_trust_radius", "eta"))
    if not 0 <= eta < 0.25:
        raise Exception(f"invalid acceptance stringency (node: {label})")
    if largest <= 0:
        raise Exception(f"the max trust radius must be positive (node: {label})")
    if initial <= 0:
        raise ValueError(f"the initial trust radius must be positive (node: {label})")
    if initial >= largest:
        raise ValueError(f"the initial trust radius must be less than the max trust radius (node: {label})")
    evaluate, checks = _objective(ctx, node, x0, args, 2, "minimize_hessian")
    x_type = node.inputs[0].type
    n = dim_product(shape_of(x0))
    size = _S(convert(dim_value(n), "float64"))
    maxiter = size * 200.0 if options["maxiter"] is None else int(options["maxiter"])
    gtol = float(options["gtol"])
    x = _S(convert(reshape(x0, [n]), "float64"))
    f, g, hess, flags = evaluate(x.v, [ir_constant(False)] * len(checks))
    f, g, hess = _S(f), _S(g), _S(hess)

    def step(s, flags):
        x, f, g, hess, radius = s["x"], s["f"], s["g"], s["hess"], s["radius"]
        if method == "dogleg":
            p, hits, wild, indefinite = _dogleg_subproblem(ctx, g, hess, radius)
        else:
            (p, hits, wild), indefinite = _steihaug(f, g, hess, s["jac_mag"], radius, size), _S(False)
        predicted = f - _model(f, g, hess, p)
        proposed = x + p
        f1, g1, hess1, new_flags = evaluate(proposed.v, flags)
        f1, g1, hess1 = _S(f1), _S(g1), _S(hess1)
        rho = (f - f1) / predicted
        accept = rho > eta
        jac_mag = _where(accept, _sqrt(_S(_dot(g1.v, g1.v))), s["jac_mag"])
        k = s["k"] + 1.0
        status = _where(jac_mag < gtol, _DONE, _where(k >= maxiter, _STOPPED, _GOING))
        wild_gradient = accept & ~_all_finite(g1)
        moved = dict(s, status=_where(wild_gradient, _STOPPED, status), x=_where(accept, proposed, x),
                     f=_where(accept, f1, f), g=_where(accept, g1, g), hess=_where(accept, hess1, hess),
                     radius=_where(rho < 0.25, radius * 0.25, _where((rho > 0.75) & hits,
                                                                   _py_min(2.0 * radius, largest), radius)),
                     jac_mag=jac_mag, k=k, wild=wild_gradient)
        # an error in the subproblem (a ValueError scipy raises before evaluating, or the
        # LinAlgError it catches: warnflag 3), or no predicted reduction (warnflag 2): x
        # stays, the loop ends
        failed = wild | indefinite
        halted = dict(s, status=_S(_STOPPED), wild=wild)
        return _where_all(failed | (predicted <= 0.0), halted, moved), _gate(~failed, new_flags, flags)

    wild = ~_all_finite(g)  # the first gradient norm's ValueError
    jac_mag = _sqrt(_S(_dot(g.v, g.v)))
    init = dict(status=_where(wild, _STOPPED, _where(jac_mag >= gtol, _GOING, _DONE)), x=x, f=f, g=g, hess=hess,
                radius=initial, jac_mag=jac_mag, k=0.0, wild=wild)
    state, flags = _iterate(init, flags, maxiter, step)
    for flag, check in zip(flags, checks, strict=True):
        ctx.runtime_check(flag, check.error, check.message)
    ctx.runtime_check(state["wild"].v, ValueError, "array must not contain infs or NaNs")
    return reshape(convert(state["x"].v, x_type.dtype), shape_of(x0)), state["status"].eq(_DONE).v


def _model(f: _S, g: _S, hess: _S, p: _S) -> _S:
    """The quadratic model's value at the step p: f + g'p + p'Hp / 2."""
    return f + _S(_dot(g.v, p.v)) + 0.5 * _S(_dot(p.v, dot_general(hess.v, p.v, ([1], [0]))))


def _all_finite(v: _S) -> _S:
    return _S(fold(_finite(v).v, [0], hlo.and_, True))


def _steihaug(f: _S, g: _S, hess: _S, jac_mag: _S, radius: _S, size: _S):
    """scipy's CGSteihaugSubproblem.solve: conjugate gradients on the model from 0 until
    a step leaves the trust region (its boundary point taken), the curvature is not
    positive (the better of the boundary points along that direction), or the residual is
    below min(0.5, sqrt|g|) |g|. Returns the step, whether it is on the boundary, and
    whether an iterate was not finite (scipy.linalg.norm's ValueError). scipy's loop has
    no limit; this one stops after 20 n + 20 steps at the last iterate."""
    tolerance = _py_min(0.5, _sqrt(jac_mag)) * jac_mag

    def step(s, _):
        z, r, d = s["z"], s["r"], s["d"]
        bd = _S(dot_general(hess.v, d.v, ([1], [0])))
        dbd = _S(_dot(d.v, bd.v))
        lo, hi = _boundaries(z, d, radius)
        pa, pb = z + lo * d, z + hi * d
        r2 = _S(_dot(r.v, r.v))
        alpha = r2 / dbd
        z1 = z + alpha * d
        r1 = r + alpha * bd
        r1_2 = _S(_dot(r1.v, r1.v))
        curved, wild = dbd <= 0.0, ~_all_finite(z1)
        outside = _sqrt(_S(_dot(z1.v, z1.v))) >= radius
        small = _sqrt(r1_2) < tolerance
        going = dict(s, z=z1, r=r1, d=-r1 + (r1_2 / r2) * d)
        better = _where(_model(f, g, hess, pa) < _model(f, g, hess, pb), pa, pb)
        ended = dict(s, status=_S(_DONE), z=_where(curved, better, _where(outside, pb, z1)), hits=curved | outside,
                     wild=~curved & wild)
        return _where_all(curved | wild | outside | small, ended, going), []

    zeros = _S(splat(_f64(0.0), g.v))
    init = dict(status=_where(jac_mag < tolerance, _DONE, _GOING), z=zeros, r=g, d=-g, hits=False, wild=False)
    state, _ = _iterate(init, [], size * 20.0 + 20.0, step)
    return state["z"], state["hits"], state["wild"]


def _boundaries(z: _S, d: _S, radius: _S):
    """The two t with |z + t d| = radius, smaller first (scipy's
    get_boundaries_intersections)."""
    a, b = _S(_dot(d.v, d.v)), 2.0 * _S(_dot(z.v, d.v))
    c = _S(_dot(z.v, z.v)) - radius * radius
    root = _sqrt(b * b - 4.0 * a * c)
    aux = b + _where(_S(signbit(b.v)), -root, root)
    ta, tb = -aux / (2.0 * a), -2.0 * c / aux
    return _where(tb < ta, tb, ta), _where(tb < ta, ta, tb)


def _dogleg_subproblem(ctx, g: _S, hess: _S, radius: _S):
    """scipy's DoglegSubproblem.solve: the Newton point -B^-1 g (cho_factor and
    cho_solve: LAPACK's potrf of B's upper triangle) where it is inside the trust region;
    else the Cauchy point -(g'g / g'Bg) g cut to the boundary where it is outside, or the
    boundary point on the segment from it to the Newton point. Returns the step, whether
    it is on the boundary, and scipy's errors: a B or g not finite, or a step whose norm
    is not (ValueError), a B not positive definite (LinAlgError)."""
    factor, positive = _potrf(ctx, hess.v, lower=False)
    newton = -_S(_cho_solve(ctx, factor, reshape(g.v, [shape_of(g.v)[0], 1]), lower=False))
    newton = _S(reshape(newton.v, shape_of(g.v)))
    finite_input = _all_finite(_S(reshape(hess.v, [dim_product(shape_of(hess.v))]))) & _all_finite(g)
    newton_norm = _sqrt(_S(_dot(newton.v, newton.v)))
    bg = _S(dot_general(hess.v, g.v, ([1], [0])))
    cauchy = -(_S(_dot(g.v, g.v)) / _S(_dot(g.v, bg.v))) * g
    cauchy_norm = _sqrt(_S(_dot(cauchy.v, cauchy.v)))
    _, tb = _boundaries(cauchy, newton - cauchy, radius)
    inside = newton_norm < radius
    beyond = cauchy_norm >= radius
    p = _where(inside, newton, _where(beyond, cauchy * (radius / cauchy_norm), cauchy + tb * (newton - cauchy)))
    indefinite = finite_input & ~_S(positive)
    wild = ~finite_input | (~indefinite & (~_finite(newton_norm) | (~inside & ~_finite(cauchy_norm))))
    return p, ~inside, wild, indefinite


_POWELL_DEFAULTS = {"xtol": 1e-4, "ftol": 1e-4, "maxiter": None, "maxfev": None, "direc": None}


def _lower_powell(ctx, node, x0, args):
    """minimize(method="Powell"): scipy's `_minimize_powell`. Each iteration minimizes
    along each of N directions in turn (`_linesearch_powell`: Brent's method from scipy's
    bracket, with its recovery), then along the iteration's overall step where the
    extrapolated point passes Powell's test, which replaces the direction of largest
    decrease. It stops where f decreased by less than `ftol` relatively, or at `maxiter`,
    at `maxfev` evaluations (scipy's wrapper raises before one more, which ends the run
    where it is), or where f is NaN at both ends of an iteration; success where none of
    the limits was reached, x is within the bounds and neither f nor x is NaN. With
    `bounds`, each line search keeps to the segment of its line inside them
    (`_line_for_search`): fminbound on it, or on its arctangent where one end is
    infinite, and the extrapolation stops at the bounds. `direc` gives the first
    directions (read once: scipy updates the caller's array in place)."""
    options = _method_options(node, "powell", ("xtol", "ftol"), _POWELL_DEFAULTS, {"disp", "return_all"}, "Powell",
                              "no callback", keywords=("bounds",))
    bounds = node.op.optimizer_kwargs.get("bounds")
    xtol, ftol = float(options["xtol"]), float(options["ftol"])
    if xtol * 100 < 0:
        raise ValueError(f"tolerance should be >= 0, got {xtol * 100!r} (node: {node_label(node)})")
    evaluate, checks = _objective(ctx, node, x0, args, 0, "minimize_objective")
    x_type = node.inputs[0].type
    n = dim_product(shape_of(x0))
    size = _S(convert(dim_value(n), "float64"))
    maxiter, maxfun, limit = _evaluation_limits(node, options, size * 1000.0)
    work, entries = _entries(n)
    budgeted = _budgeted(evaluate, maxfun, entries)
    if bounds is not None:
        lower, upper = _bounds(ctx, node, bounds, n, work)

    def line_search(x: _S, fval: _S, xi: _S, flags, active=True):
        """`_linesearch_powell`: the minimum along xi from x (nothing where xi is 0, or
        where the run has ended): f there, the point, the step, whether `bracket` ran out
        of iterations, the flags. Brent's method from scipy's bracket; with bounds, where
        the line's segment inside them has an end, fminbound on the segment (xatol
        `xtol`), or on its arctangent where one end is infinite (the step tan(u) xi)."""
        types = [fval.v.type, x.v.type, xi.v.type, ir_constant(False).type] + [v.type for v in flags]

        def unbounded():
            alpha, fret, _, runaway, new_flags = _scalar_minimum(
                lambda u, fl: budgeted(x + u * xi, fl), {"xtol": xtol * 100, "maxiter": 500}, _brent, (0.0, 1.0),
                flags)
            return [fret.v, (x + alpha * xi).v, (alpha * xi).v, runaway.v, *new_flags]

        def searched():
            if bounds is None:
                return unbounded()
            lmin, lmax = _line_for_search(x, xi, lower, upper)

            def within_bounds():
                one_sided = lmin.eq(-np.inf) | lmax.eq(np.inf)
                along = lambda u: _where(one_sided, _S(hlo.tan(u.v)), u)  # noqa: E731
                ends = [_where(one_sided, _S(chlo.atan(end.v)), end) for end in (lmin, lmax)]
                u, fret, _, new_flags = _fminbound(lambda u, fl: budgeted(x + along(u) * xi, fl),
                                                   {"xtol": xtol * 100 / 100, "maxiter": 500, "bounds": ends}, flags)
                step = along(u) * xi
                return [fret.v, (x + step).v, step.v, _S(False).v, *new_flags]

            return if_else((lmin.eq(-np.inf) & lmax.eq(np.inf)).v, types, unbounded, within_bounds)

        moving = _S(fold(xi.ne(0.0).v, [0], hlo.or_, False)) & active
        out = if_else(moving.v, types, searched, lambda: [fval.v, x.v, xi.v, _S(False).v, *flags])
        return _S(out[0]), _S(out[1]), _S(out[2]), _S(out[3]), out[4:]

    def ended(flags) -> _S:
        return _S(flags[-1])

    def step(s, flags):
        fx = s["fval"]

        def each(i, values):
            x, fval, delta, bigind, runaway, *flags = values
            x, fval, delta, bigind, runaway = map(_S, (x, fval, delta, bigind, runaway))
            new_fval, new_x, _, new_runaway, new_flags = line_search(x, fval, _entry(s["direc"], i), flags,
                                                                     ~(ended(flags) | runaway))
            # an evaluation refused by the wrapper, or bracket's error: the run ends where it was
            halted = ended(new_flags) | new_runaway | runaway
            better = (fval - new_fval) > delta
            kept = lambda new, old: _where(halted, old, new)  # noqa: E731
            return [kept(new_x, x).v, kept(new_fval, fval).v, kept(_where(better, fval - new_fval, delta), delta).v,
                    kept(_where(better, _S(i), bigind), bigind).v, (runaway | new_runaway).v, *new_flags]

        x, fval, delta, bigind, runaway, *flags = _for(
            n, [s["x"].v, fx.v, _f64(0.0), ir_constant(np.int64(0)), ir_constant(False), *flags], each)
        x, fval, delta, bigind, runaway = map(_S, (x, fval, delta, bigind, runaway))
        iteration = s["iter"] + 1.0
        halted = ended(flags) | runaway
        stop = (halted | (2.0 * (fx - fval) <= ftol * (abs(fx) + abs(fval)) + 1e-20) | (_S(flags[-2]) >= maxfun)
                | (iteration >= maxiter) | (_isnan(fx) & _isnan(fval)))
        state = dict(s, status=_where(stop, _STOPPED, _GOING), x=x, fval=fval, iter=iteration, runaway=runaway)

        def extrapolate():
            direc1 = x - s["x1"]
            # not past the bounds: as far as the segment inside them goes, at most 1
            reach = 1.0 if bounds is None else _py_min(_line_for_search(x, direc1, lower, upper)[1], 1.0)
            fx2, new_flags = budgeted(x + reach * direc1, flags)
            t = 2.0 * (fx + fx2 - 2.0 * fval)
            temp = fx - fval - delta
            t = t * (temp * temp)
            temp = fx - fx2
            t = t - delta * (temp * temp)

            def replace():
                new_fval, new_x, step, new_runaway, search_flags = line_search(x, fval, direc1, new_flags)
                halted = ended(search_flags) | new_runaway
                last = dim_value(dim_sub(n, 1))
                direc = _put(_put(s["direc"], bigind.v, _entry(s["direc"], last)), last, step)
                direc = _where(_S(fold(step.ne(0.0).v, [0], hlo.or_, False)), direc, s["direc"])
                kept = [_where(halted, old, new) for old, new in ((fval, new_fval), (x, new_x), (s["direc"], direc))]
                return [*(v.v for v in kept), new_runaway.v, *search_flags]

            types = [fval.v.type, x.v.type, s["direc"].v.type, ir_constant(False).type] + [v.type for v in new_flags]
            out = if_else(((fx > fx2) & (t < 0.0) & ~ended(new_flags)).v, types, replace,
                          lambda: [fval.v, x.v, s["direc"].v, _S(False).v, *new_flags])
            new_runaway = _S(out[3])
            return [*out[:3], (ended(out[4:]) | new_runaway).v, new_runaway.v, *out[4:]]

        types = [fval.v.type, x.v.type, s["direc"].v.type, ir_constant(False).type, ir_constant(False).type]
        types += [v.type for v in flags]
        out = if_else(stop.v, types, lambda: [fval.v, x.v, s["direc"].v, _S(False).v, _S(False).v, *flags], extrapolate)
        going = ~stop & ~_S(out[3])
        return dict(state, status=_where(going, _GOING, _STOPPED), fval=_S(out[0]), x=_where(stop, x, _S(out[1])),
                    x1=_where(stop, s["x1"], x), direc=_S(out[2]), runaway=runaway | _S(out[4])), out[5:]

    x = _S(at_least_one(convert(reshape(x0, [n]), "float64"), [0]))
    init_flags = [ir_constant(False)] * len(checks) + [_f64(0.0), ir_constant(False)]
    ctx.runtime_check((maxfun <= 0.0).v, RuntimeError, "Too many function calls")  # the first evaluation's
    fval, flags = budgeted(x, init_flags)
    direc = _S(identity_matrix([work, work], "float64")) if options["direc"] is None else _directions(
        ctx, node, options["direc"], n, work)
    init = dict(status=_where(maxfun <= 0.0, _STOPPED, _GOING), x=x, fval=fval, x1=x, direc=direc, iter=0.0,
                runaway=False)
    state, flags = _iterate(init, flags, limit, step)
    for flag, check in zip(flags[:len(checks)], checks, strict=True):
        ctx.runtime_check(flag, check.error, check.message)
    ctx.runtime_check(state["runaway"].v, RuntimeError, _BRACKET_MESSAGE)
    x = state["x"]
    nan = _isnan(state["fval"]) | _S(fold(_isnan(x).v, [0], hlo.or_, False))
    success = ~(_S(flags[-2]) >= maxfun) & ~(state["iter"] >= maxiter) & ~nan
    if bounds is not None:  # scipy's first test: x outside the bounds (from an x0 outside them)
        outside = _S(entries((lower > x) | (x > upper)))
        success = success & ~_S(fold(outside.v, [0], hlo.or_, False))
    return reshape(convert(entries(x), x_type.dtype), shape_of(x0)), success.v


_NELDER_MEAD_DEFAULTS = {"xatol": 1e-4, "fatol": 1e-4, "maxiter": None, "maxfev": None, "adaptive": False,
                         "initial_simplex": None}


def _lower_nelder_mead(ctx, node, x0, args):
    """minimize(method="Nelder-Mead"): scipy's `_minimize_neldermead`. The simplex (x0 and
    x0 with each coordinate in turn 5% larger, or 0.00025 where it is 0; or the
    `initial_simplex`) is kept sorted by f; each iteration reflects the worst vertex
    through the others' centroid, expands, contracts outside or inside, or shrinks toward
    the best. It stops where the vertices are within `xatol` of the best and their values
    within `fatol`, at `maxiter` iterations or `maxfev` evaluations (scipy's wrapper
    refuses the one past it, which ends the iteration where it is); success where neither
    limit was reached. `adaptive` takes Gao and Han's coefficients; `bounds` clip every
    vertex. The simplex is in x's dtype as scipy keeps it (float64 where bounds are
    given); f's values are float64.

    The loop evaluates f once a step (its phase says which point: a first vertex, the
    reflection, the expansion or contraction, a shrunk vertex), so that f has one call
    site: one point's value is the same wherever the simplex meets it again, as scipy's is
    (with bounds, clipped points often coincide, and their ties decide the path)."""
    options = _method_options(node, "nelder-mead", ("xatol", "fatol"), _NELDER_MEAD_DEFAULTS, {"disp", "return_all"},
                              "Nelder-Mead", "no callback", keywords=("bounds",))
    bounds = node.op.optimizer_kwargs.get("bounds")
    evaluate, checks = _objective(ctx, node, x0, args, 0, "minimize_objective")
    x_type = node.inputs[0].type
    n = dim_product(shape_of(x0))
    x = reshape(x0, [n])
    simplex = options["initial_simplex"]
    if simplex is not None:
        simplex = np.atleast_2d(np.array(simplex))
        simplex = simplex.astype(simplex.dtype if np.issubdtype(simplex.dtype, np.inexact) else np.float64)
        if simplex.ndim != 2 or simplex.shape[0] != simplex.shape[1] + 1:
            raise ValueError(f"`initial_simplex` should be an array of shape (N+1,N) (node: {node_label(node)})")
        mismatch = "Size of `initial_simplex` is not consistent with `x0`"
        _check_sizes(ctx, node, n != simplex.shape[1] if _static(n) else compare(
            dim_value(n), dim_value(simplex.shape[1]), "NE"), mismatch, mismatch, ValueError)
    # a vertex as x's vector: the same, but for a given simplex whose size may differ from
    # x's at a call (which raises): cut or padded to x's, so that the module stays valid
    n, vertex_size = (n, n) if simplex is None else (simplex.shape[1], n)
    fit = lambda v: _resized(v.v, [vertex_size])  # noqa: E731
    dtype = np.dtype(x_type.dtype if simplex is None else simplex.dtype)
    if bounds is not None:  # scipy's clip makes x0, and so the simplex, float64
        lower, upper = _bounds(ctx, node, bounds, n)
        dtype = np.result_type(dtype, np.float64)
    size = _S(convert(dim_value(n), "float64"))
    maxiter, maxfun, _ = _evaluation_limits(node, options, size * 200.0)
    xatol, fatol = float(options["xatol"]), float(options["fatol"])
    rows = dim_add(n, 1)

    coefficient = lambda value: _in_dtype(value, dtype)  # noqa: E731

    if options["adaptive"]:  # Gao and Han's, from the dimension
        dim = size if simplex is None else float(simplex.shape[1])
        rho, chi, psi, sigma = 1.0, 1.0 + 2.0 / dim, 0.75 - 1.0 / (2.0 * dim), 1.0 - 1.0 / dim
    else:
        rho, chi, psi, sigma = 1.0, 2.0, 0.5, 0.5
    reflect, expand = coefficient(1.0 + rho), (coefficient(1.0 + rho * chi), coefficient(rho * chi))
    outside, inside = (coefficient(1.0 + psi * rho), coefficient(psi * rho)), (coefficient(1.0 - psi), coefficient(psi))
    shrink = coefficient(sigma)
    clipped = (lambda v: _clip(v, lower, upper)) if bounds is not None else (lambda v: v)
    budgeted = _budgeted(evaluate, maxfun, fit)
    index = _S(iota([rows], 0, "int64"))

    def row(sim: _S, j) -> _S:
        return _entry(sim, dim_value(j))

    def inserted(sim: _S, fsim: _S, vertex: _S, f: _S):
        """The sorted simplex with the worst vertex replaced by `vertex` (value f), sorted
        as numpy's argsort of it: f goes after every value not after it (after its ties,
        as a stable sort keeps the last row last), the rows from there on down a row."""
        others = _S(slice_axis(fsim.v, 0, 0, n))
        after = _S(numpy_less("float64")(splat(f.v, others.v), others.v))
        place = _S(fold(convert((~after).v, "int64"), [0], hlo.add, 0))
        before, at = index < place, index.eq(place)

        def placed(v: _S, new: _S) -> _S:
            dims = shape_of(v.v)
            lifted = lambda c: _S(broadcast_in_dim(c.v, dims, [0]))  # noqa: E731
            down = _S(hlo.concatenate([slice_axis(v.v, 0, 0, 1), slice_axis(v.v, 0, 0, n)], 0))
            spread = _S(broadcast_in_dim(new.v, dims, list(range(1, len(dims)))))
            return _where(lifted(before), v, _where(lifted(at), spread, down))

        return placed(sim, vertex), placed(fsim, f)

    def step(s, flags):
        sim, fsim, phase, k = s["sim"], s["fsim"], s["phase"], convert(s["k"].v, "int64")
        best, worst = row(sim, 0), row(sim, n)
        others = slice_axis(sim.v, 0, 1, rows)
        spread = _S(fold(abs(_S(others) - _S(broadcast_in_dim(best.v, shape_of(others), [1]))).v, [0, 1],
                         hlo.maximum, -np.inf))
        gap = _S(fold(abs(_entry(fsim, dim_value(0)) - _S(slice_axis(fsim.v, 0, 1, rows))).v, [0], hlo.maximum,
                      -np.inf))
        converged = (spread <= xatol) & (gap <= fatol)
        # the centroid of all but the worst: the rows added one after another, as numpy's
        # reduce over axis 0 adds them (XLA's reduce parts from that order from about 32)
        total = _S(_for(dim_sub(n, 1), [best.v], lambda j, v: [(_S(v[0]) + row(sim, dim_add(j, 1))).v])[0])
        xbar = total / _opaque_splat(coefficient(size), best, s["iterations"])
        xr = clipped(reflect * xbar - rho * worst)
        shrunk = clipped(best + shrink * (row(sim, k) - best))
        first, reflecting, second = phase.eq(_FIRST), phase.eq(_REFLECT), phase.eq(_SECOND)
        point = _where(first, row(sim, k), _where(reflecting, xr, _where(second, s["second"], shrunk)))
        f, flags = budgeted(point, flags, ~(reflecting & converged))
        refused = _S(flags[-1])  # the iteration ends where it is
        nit = s["nit"]
        # a first vertex's value
        at_first = dict(s, fsim=_where(refused, fsim, _put(fsim, k, f)), k=s["k"] + 1.0,
                        end=refused | (s["k"] + 1.0 >= _S(convert(dim_value(rows), "float64"))))
        # the reflection: taken where between the best and the second worst, else the
        # expansion or a contraction next
        f_best, f_second, f_worst = (_entry(fsim, dim_value(j)) for j in (0, dim_sub(n, 1), n))
        expanding = f < f_best
        taken = ~expanding & (f < f_second)
        contracting = ~expanding & ~taken & (f < f_worst)
        xe = clipped(expand[0] * xbar - expand[1] * worst)
        xc = clipped(outside[0] * xbar - outside[1] * worst)
        xcc = clipped(inside[0] * xbar + inside[1] * worst)
        sim_r, fsim_r = inserted(sim, fsim, xr, f)
        at_reflection = _where_all(taken & ~refused, dict(s, sim=sim_r, fsim=fsim_r, nit=nit + 1.0, end=True), dict(
            s, phase=_where(refused, _REFLECT, _SECOND), xr=xr, fxr=f, end=refused,
            second=_where(expanding, xe, _where(contracting, xc, xcc))))
        # the expansion or contraction: kept (the reflection where it expanded to no
        # better), or the simplex shrinks toward the best vertex
        fxr, last = s["fxr"], s["second"]
        was_expanding, was_contracting = fxr < f_best, ~(fxr < f_best) & (fxr < f_worst)
        kept = ~refused & (was_expanding | _where(was_contracting, f <= fxr, f < f_worst))
        own = ~was_expanding | (f < fxr)
        sim_s, fsim_s = inserted(sim, fsim, _where(own, last, s["xr"]), _where(own, f, fxr))
        at_second = _where_all(kept, dict(s, sim=sim_s, fsim=fsim_s, nit=nit + 1.0, end=True), dict(
            s, phase=_where(refused, _REFLECT, _SHRINK), k=1.0, end=refused))
        # a shrunk vertex: moved even where its evaluation is refused
        shrunk_all = s["k"] >= size
        at_shrink = dict(s, sim=_put(sim, k, shrunk), fsim=_where(refused, fsim, _put(fsim, k, f)), k=s["k"] + 1.0,
                         nit=_where(shrunk_all & ~refused, nit + 1.0, nit), end=refused | shrunk_all)
        new = _where_all(first, at_first, _where_all(reflecting, at_reflection, _where_all(
            second, at_second, at_shrink)))
        # an iteration's end: scipy's loop test, the simplex sorted where the first
        # vertices' values or a shrink's came in (a reflection or contraction was sorted
        # in, and a refused one left the simplex as it was)
        sort_all = (first | ~(reflecting | second)) & new["end"]
        fsim_o, sim_o = map(_S, if_else(sort_all.v, [fsim.v.type, sim.v.type],
                                        lambda: [v.v for v in _sort_by(new["fsim"], new["sim"])],
                                        lambda: [new["fsim"].v, new["sim"].v]))
        going = (_S(flags[-2]) < maxfun) & (new["nit"] < maxiter)
        ended = dict(new, sim=sim_o, fsim=fsim_o, phase=_REFLECT, status=_where(going, _GOING, _STOPPED))
        new = _where_all(new["end"], ended, new)
        return _where_all(reflecting & converged, dict(s, status=_DONE), new), flags

    # the first simplex: x0 and x0 with each coordinate in turn moved (or the one given)
    if simplex is None:
        x = clipped(_S(convert(x, dtype)))
        moved = _where(x.ne(0.0), 1.05 * x, coefficient(0.00025))
        dims = [rows, n]
        diagonal_below = _S(iota(dims, 0, "int64")).eq(_S(iota(dims, 1, "int64")) + 1)
        sim = _where(diagonal_below, _S(broadcast_in_dim(moved.v, dims, [1])), _S(broadcast_in_dim(x.v, dims, [1])))
    else:
        sim = _S(convert(ir_constant(simplex), dtype))
    if bounds is not None:  # vertices above an upper bound reflected into it, then clipped
        up = _S(broadcast_in_dim(upper.v, [rows, n], [1]))
        sim = _clip(_where(sim > up, 2.0 * up - sim, sim), _S(broadcast_in_dim(lower.v, [rows, n], [1])), up)
    if not (_static(n) and n > 0):  # scipy's np.max of no differences, where x is empty and the loop would start
        ctx.runtime_check((_S(compare(dim_value(n), dim_value(0), "EQ")) & (maxfun > 1.0) & (maxiter > 1.0)).v,
                          ValueError, "zero-size array to reduction operation maximum which has no identity")
    vertex = _S(splat(_f64(0.0), row(sim, 0).v))
    init = dict(status=_GOING, phase=_FIRST, k=0.0, end=False, sim=sim,
                fsim=_S(broadcast_in_dim(_f64(np.inf), [rows], [])), nit=1.0, xr=vertex, fxr=0.0, second=vertex)
    flags = [ir_constant(False)] * len(checks) + [_f64(0.0), ir_constant(False)]
    # each step evaluates f once, but the one that finds convergence or a refused evaluation
    limit = _py_min(maxfun + 2.0, size + 3.0 + maxiter * (size + 2.0))
    state, flags = _iterate(init, flags, limit, step)
    for flag, check in zip(flags[:len(checks)], checks, strict=True):
        ctx.runtime_check(flag, check.error, check.message)
    success = ~(_S(flags[-2]) >= maxfun) & ~(state["nit"] >= maxiter)
    return reshape(convert(fit(row(state["sim"], 0)), x_type.dtype), shape_of(x0)), success.v


# Nelder-Mead's phases: which point a step evaluates
_FIRST, _REFLECT, _SECOND, _SHRINK = 0.0, 1.0, 2.0, 3.0


def _opaque_splat(value: _S, like: _S, finite: _S) -> _S:
    """The 0-d `value` in every entry of a vector shaped as `like`, as value + i * (0 *
    `finite`) (i each entry's index, `finite` a run-time value never inf or NaN): equal
    to it, but neither a constant nor a broadcast to XLA's simplifier, which divides by
    either as a multiplication by its reciprocal (off by an ulp from numpy's quotient)."""
    dims, dtype = shape_of(like.v), value_dtype(value.v)
    index = _S(convert(iota(dims, 0, "int64"), dtype))
    zero = _S(broadcast_in_dim(convert((finite * 0.0).v, dtype), dims, []))
    return _S(broadcast_in_dim(value.v, dims, [])) + index * zero


def _sort_by(keys: _S, values: _S):
    """The float64 vector `keys` sorted as numpy sorts floats (NaN last, ties kept in
    their order) and the rows of `values` in their order, written as comparisons and
    selects: each key's place is the count of keys before it, and each place takes the
    one row placed there (a maximum over -inf elsewhere). O(n^2) comparisons and O(n^2)
    row selections, for the few rows of a simplex: a `stablehlo.sort` or a gather anywhere
    in a loop makes XLA run each of its steps several times slower."""
    count = shape_of(keys.v)[0]
    dims = [count, count]
    mine, theirs = (_S(broadcast_in_dim(keys.v, dims, [d])) for d in (0, 1))
    i, j = _S(iota(dims, 0, "int64")), _S(iota(dims, 1, "int64"))
    less = numpy_less("float64")
    before = _S(less(theirs.v, mine.v)) | (~_S(less(mine.v, theirs.v)) & (j < i))  # keys[j] comes before keys[i]
    place = _S(fold(convert(before.v, "int64"), [1], hlo.add, 0))
    placed = _S(broadcast_in_dim(place.v, dims, [1])).eq(i)  # placed[r, i]: keys[i] goes to place r

    def moved(v: _S) -> _S:
        out_dims = [count, *shape_of(v.v)]
        chosen = _S(broadcast_in_dim(placed.v, out_dims, [0, 1]))
        rows = _S(broadcast_in_dim(v.v, out_dims, list(range(1, len(out_dims)))))
        lowest = _S(splat(ir_constant(np.array(-np.inf, value_dtype(v.v))), rows.v))
        return _S(fold(_where(chosen, rows, lowest).v, [1], hlo.maximum, -np.inf))

    return moved(keys), moved(values)


def _bound_values(node, bounds) -> tuple[np.ndarray, np.ndarray]:
    """scipy's `bounds` (a `Bounds`, or (min, max) pairs with None unbounded) as float64
    arrays of one entry or one per variable, ±inf unbounded: scipy's ValueErrors where an
    upper bound is below its lower one or the arrays are not vectors."""
    if hasattr(bounds, "lb") and hasattr(bounds, "ub"):
        lower, upper = np.asarray(bounds.lb, np.float64), np.asarray(bounds.ub, np.float64)
    else:
        pairs = list(bounds)
        lower = np.array([-np.inf if b[0] is None else float(b[0]) for b in pairs], np.float64)
        upper = np.array([np.inf if b[1] is None else float(b[1]) for b in pairs], np.float64)
    if np.any(upper < lower):
        raise ValueError(f"An upper bound is less than the corresponding lower bound. (node: {node_label(node)})")
    lower, upper = np.atleast_1d(lower), np.atleast_1d(upper)
    if lower.ndim > 1 or upper.ndim > 1:
        raise ValueError(f"The number of bounds is not compatible with the length of `x0`. (node: {node_label(node)})")
    return lower, upper


def _bounds(ctx, node, bounds, n, size=None):
    """scipy's `bounds` (a `Bounds`, or (min, max) pairs with None unbounded) as float64
    vectors of n entries (`size`, where x is padded): scipy's ValueErrors where an upper
    bound is below its lower one, or where they do not broadcast to x's length (when
    lowering where n is static, else at the call)."""
    size = n if size is None else size
    lower, upper = _bound_values(node, bounds)
    incompatible = "The number of bounds is not compatible with the length of `x0`."

    def vector(values):
        if values.size == 1:
            return _S(broadcast_in_dim(_f64(values[0]), [size], []))
        if _static(n):
            if n != values.size:
                raise ValueError(f"{incompatible} (node: {node_label(node)})")
        else:
            ctx.runtime_check(compare(dim_value(n), dim_value(values.size), "NE"), ValueError, incompatible)
        return _S(_resized(ir_constant(values), [size]))

    return vector(lower), vector(upper)


def _directions(ctx, node, direc, n, work) -> _S:
    """Powell's `direc`, its rows the first directions, as a float64 (work, work) matrix;
    it must be N x N for an x of N entries (scipy would index or broadcast it wrongly): a
    ValueError naming its shape when lowering where N is static, else at the call."""
    direc = np.asarray(direc, dtype=float)
    message = f"Powell's direc must be an N x N array for an x of N entries: got shape {direc.shape}"
    if direc.ndim != 2 or direc.shape[0] != direc.shape[1]:
        raise ValueError(f"{message} (node: {node_label(node)})")
    k = direc.shape[0]
    _check_sizes(ctx, node, n != k if _static(n) else compare(dim_value(n), dim_value(k), "NE"), message, message,
                 ValueError)
    return _S(_resized(ir_constant(direc), [work, work]))


def _in_dtype(value, dtype) -> _S:
    """A float64 value (a Python float, or an `_S`) in `dtype`, as numpy casts a Python
    float meeting an array of that dtype (the coefficients of methods that compute in x's
    dtype, as scipy does)."""
    return _S(convert(_S.of(value).v, dtype))


def _resized(v: ir.Value, sizes: list) -> ir.Value:
    """v with its leading axes cut, or padded with zeros, to `sizes`: where a size is
    checked at the call (which raises if it differs), the module stays valid; v itself
    where the sizes already agree."""
    dims = shape_of(v)
    same = lambda d, s: d is s or (isinstance(d, int) and isinstance(s, int) and d == s)  # noqa: E731
    if all(same(d, s) for d, s in zip(dims, sizes)):
        return v
    v = pad_end(v, [dim_max(dim_sub(s, d), 0) for d, s in zip(dims, sizes)] + [0] * (len(dims) - len(sizes)))
    for axis, size in enumerate(sizes):
        v = slice_axis(v, axis, 0, size)
    return v


def _line_for_search(x: _S, xi: _S, lower: _S, upper: _S):
    """scipy's `_line_for_search`: the range of l for which x + l xi stays within the
    bounds, over the entries where xi is not 0; (0, 0) where there is none (x outside the
    bounds, on a line that does not come back)."""
    moving = xi.ne(0.0)
    low, high = (lower - x) / xi, (upper - x) / xi
    ahead = xi > 0.0
    lmin = _S(fold(_where(moving, _where(ahead, low, high), -np.inf).v, [0], hlo.maximum, -np.inf))
    lmax = _S(fold(_where(moving, _where(ahead, high, low), np.inf).v, [0], hlo.minimum, np.inf))
    empty = ~(lmax >= lmin)
    return _where(empty, 0.0, lmin), _where(empty, 0.0, lmax)


def _evaluation_limits(node, options: dict, default: _S):
    """`maxiter` and `maxfev` (float64 `_S`, maybe inf) as scipy's Powell and Nelder-Mead
    default them (`default` for both where neither is given, for the one not given where
    the other is inf, else inf), and the most iterations that can run: each evaluates f
    at least once or ends. Both infinite is refused (a loop without end)."""
    maxiter, maxfun = options["maxiter"], options["maxfev"]
    if maxiter is None and maxfun is None:
        maxiter = maxfun = default
    elif maxiter is None:
        maxiter = default if maxfun == np.inf else np.inf
    elif maxfun is None:
        maxfun = default if maxiter == np.inf else np.inf
    if maxiter == np.inf and maxfun == np.inf:
        raise UnsupportedParameterError(node, "maxiter and maxfev both infinite", "the iterations would have no limit")
    maxiter, maxfun = _S.of(maxiter), _S.of(maxfun)
    return maxiter, maxfun, _where(maxiter < maxfun + 1.0, maxiter, maxfun + 1.0)


def _budgeted(evaluate, maxfun: _S, cut=lambda x: x.v, like: ir.Value | None = None):
    """f through scipy's `_wrap_scalar_function_maxfun_validation`: budgeted(x, flags,
    wanted) evaluates f at `cut(x)` where `wanted` and fewer than `maxfun` evaluations
    were made (else NaN, in a `stablehlo.if`); flags end with the count and whether a
    wanted evaluation was refused (scipy's _MaxFuncCallError, which ends the run). f is
    a float64 scalar, or of the type of `like`."""
    nan = _f64(float("nan")) if like is None else splat(_f64(float("nan")), like)

    def budgeted(x: _S, flags, wanted=True):
        *own, count, spent = flags
        over = _S(count) >= maxfun
        go = ~over & wanted

        def evaluated():
            f, new_flags = evaluate(cut(x), own)
            return [f, *new_flags]

        out = if_else(go.v, [nan.type] + [v.type for v in own], evaluated, lambda: [nan, *own])
        return _S(out[0]), [*out[1:], _where(go, _S(count) + 1.0, count).v, (_S(spent) | (over & wanted)).v]

    return budgeted


def _entries(n):
    """The size the loops' vectors have for n variables, at least one entry (padded, as
    `at_least_one` pads x, so that their reads stay valid where x may be empty), and the
    function that cuts such a vector back to its n entries."""
    if isinstance(n, int) and n > 0:
        return n, lambda x: x.v
    return dim_max(n, 1), lambda x: slice_axis(x.v, 0, 0, n)


def _l1(v: _S) -> _S:
    return _S(fold(abs(v).v, [0], hlo.add, 0.0))


def _conjugate_gradients(hess: _S, b: _S, size: _S):
    """Newton-CG's inner loop: CG on hess p = b from 0, at most 20 n steps. Returns p and
    whether it stopped (False where the steps ran out: scipy's "CG iterations didn't
    converge")."""
    maggrad = _l1(b)
    termcond = _py_min(0.5, _sqrt(maggrad)) * maggrad

    def step(s, flags):
        xsupi, ri, psupi, dri0 = s["xsupi"], s["ri"], s["psupi"], s["dri0"]
        small = _l1(ri) <= termcond
        ap = _S(dot_general(hess.v, psupi.v, ([1], [0])))
        curv = _S(_dot(psupi.v, ap.v))
        flat = (curv >= 0.0) & (curv <= 3 * _EPSMCH)
        negative = curv < 0.0
        alphai = dri0 / curv
        ri1 = ri + alphai * ap
        dri1 = _S(_dot(ri1.v, ri1.v))
        stepped = dict(s, xsupi=xsupi + alphai * psupi, ri=ri1, psupi=-ri1 + (dri1 / dri0) * psupi, dri0=dri1,
                       i=s["i"] + 1.0)
        # negative curvature at the first step: steepest descent, dri0 / -curv along b
        descent = _where(negative & s["i"].eq(0.0), dri0 / (-curv) * b, xsupi)
        done = dict(s, status=_S(_DONE), xsupi=_where(small | flat, xsupi, descent))
        return _where_all(small | flat | negative, done, stepped), flags

    ri = -b
    init = dict(status=_GOING, xsupi=_S(splat(_f64(0.0), b.v)), ri=ri, psupi=-ri, dri0=_S(_dot(ri.v, ri.v)), i=0.0)
    state, _ = _iterate(init, [], size * 20.0, step)
    return state["xsupi"], state["status"].eq(_DONE)


def _bfgs_update(h, s, y):
    """scipy's (I - rho s y') H (I - rho y s') + rho s s', rho = 1 / (y's) (1000 where
    y's is 0), expanded: H - rho (s (H'y)' + (H y) s') + (rho^2 y'H y + rho) s s'."""
    ys = _dot(y, s)
    rho = select(compare(ys, _f64(0.0), "EQ"), _f64(1000.0), divide(_f64(1.0), ys))
    hy, yh = dot_general(h, y, ([1], [0])), dot_general(y, h, ([0], [0]))
    outer = lambda a, b: _outer(_S(a), _S(b)).v  # noqa: E731
    scale = hlo.add(hlo.multiply(hlo.multiply(rho, rho), _dot(y, hy)), rho)
    correction = hlo.add(outer(s, yh), outer(hy, s))
    return hlo.add(hlo.subtract(h, hlo.multiply(splat(rho, h), correction)), hlo.multiply(splat(scale, h), outer(s, s)))


class _S:
    """A float64 (or i1, or i64 index) value with Python's operators, so that the searches
    read as the scipy and MINPACK code they follow. Python numbers become 0-d float64
    constants (in the other operand's dtype where that is another float: numpy's weak
    scalars); a 0-d operand of a vector or matrix one is broadcast to its shape."""

    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v if isinstance(v, ir.Value) else ir_constant(np.bool_(v) if isinstance(v, bool) else np.float64(v))

    @staticmethod
    def of(x) -> "_S":
        return x if isinstance(x, _S) else _S(x)

    def _binary(self, other, op, swap=False):
        other = self._weak(other)
        a, b = (other, self) if swap else (self, other)
        return _S(op(*_conform(a.v, b.v)))

    def _weak(self, other) -> "_S":
        """`other` as an operand of self: a Python number (not a bool) in self's dtype
        where that is a float other than float64 or (for an int) an integer, as numpy
        casts a weak scalar (NEP 50)."""
        if isinstance(other, (int, float)) and not isinstance(other, bool):
            dtype = np.dtype(value_dtype(self.v))
            if (dtype.kind == "f" and dtype != np.float64) or (dtype.kind in "iu" and isinstance(other, int)):
                return _S(ir_constant(dtype.type(other)))
        return _S.of(other)

    def __add__(self, o): return self._binary(o, hlo.add)  # noqa: E704
    def __radd__(self, o): return self._binary(o, hlo.add, True)  # noqa: E704
    def __sub__(self, o): return self._binary(o, hlo.subtract)  # noqa: E704
    def __rsub__(self, o): return self._binary(o, hlo.subtract, True)  # noqa: E704
    def __mul__(self, o): return self._binary(o, hlo.multiply)  # noqa: E704
    def __rmul__(self, o): return self._binary(o, hlo.multiply, True)  # noqa: E704
    def __truediv__(self, o): return self._binary(o, divide)  # noqa: E704
    def __rtruediv__(self, o): return self._binary(o, divide, True)  # noqa: E704
    def __neg__(self): return _S(hlo.negate(self.v))  # noqa: E704
    def __abs__(self): return _S(hlo.abs(self.v))  # noqa: E704
    def __lt__(self, o): return self._binary(o, lambda a, b: compare(a, b, "LT"))  # noqa: E704
    def __le__(self, o): return self._binary(o, lambda a, b: compare(a, b, "LE"))  # noqa: E704
    def __gt__(self, o): return self._binary(o, lambda a, b: compare(a, b, "GT"))  # noqa: E704
    def __ge__(self, o): return self._binary(o, lambda a, b: compare(a, b, "GE"))  # noqa: E704
    def eq(self, o): return self._binary(o, lambda a, b: compare(a, b, "EQ"))  # noqa: E704
    def ne(self, o): return self._binary(o, lambda a, b: compare(a, b, "NE"))  # noqa: E704
    def __and__(self, o): return self._binary(o, hlo.and_)  # noqa: E704
    def __or__(self, o): return self._binary(o, hlo.or_)  # noqa: E704
    def __invert__(self): return _S(hlo.not_(self.v))  # noqa: E704


def _rank(v: ir.Value) -> int:
    return ir.RankedTensorType(v.type).rank


def _conform(a: ir.Value, b: ir.Value) -> tuple[ir.Value, ir.Value]:
    """a and b, the 0-d one broadcast to the other's shape where their ranks differ."""
    if _rank(a) == _rank(b):
        return a, b
    return (broadcast_in_dim(a, shape_of(b), ()), b) if _rank(a) == 0 else (a, broadcast_in_dim(b, shape_of(a), ()))


def _where(cond: _S, a, b) -> _S:
    c, a, b = _S.of(cond).v, _S.of(a).v, _S.of(b).v
    a, b = _conform(a, b)
    if _rank(c) > _rank(a):
        a, b = _conform(a, c)[0], _conform(b, c)[0]
    return _S(select(c, a, b))


def _sqrt(a: _S) -> _S:
    return _S(hlo.sqrt(a.v))


def _py_max(*xs) -> _S:
    """Python's max: the first of the largest, comparisons with NaN false."""
    best = _S.of(xs[0])
    for x in xs[1:]:
        best = _where(_S.of(x) > best, x, best)
    return best


def _py_min(a, b) -> _S:
    return _where(_S.of(b) < a, b, a)


def _clip(x, low, high) -> _S:
    """np.clip: NaN stays NaN."""
    return _S(hlo.minimum(hlo.maximum(_S.of(x).v, _S.of(low).v), _S.of(high).v))


def _finite(x: _S) -> _S:
    return _S(hlo.is_finite(x.v))


# A loop's status: going on, done (a step found, converged), stopped without a result.
_GOING, _DONE, _STOPPED = 0.0, 1.0, 2.0


def _iterate(init: dict, carried: list, maxiter, step) -> tuple[dict, list]:
    """A `stablehlo.while` over named values (`_S`) and `carried` ones (a gradient, the
    check flags): `step(state, carried)` returns the next of both; it runs while
    `state["status"]` is _GOING, at most `maxiter` (an int or a float64 `_S`) times
    (`state["iterations"]`)."""
    names = [n for n in init if n != "iterations"] + ["iterations"]
    count = len(names)
    values = [_S.of(init[n]).v for n in names[:-1]] + [_f64(0.0), *carried]

    def cond(v):
        state = dict(zip(names, map(_S, v[:count])))
        limit = maxiter if isinstance(maxiter, _S) else float(maxiter)
        return (state["status"].eq(_GOING) & (state["iterations"] < limit)).v

    def body(v):
        state = dict(zip(names, map(_S, v[:count])))
        new, new_carried = step(state, list(v[count:]))
        new["iterations"] = state["iterations"] + 1.0
        return [_S.of(new[n]).v for n in names] + list(new_carried)

    out = while_loop(values, cond, body)
    return dict(zip(names, map(_S, out[:count]))), list(out[count:])


def _search(evaluate, x, p, fields: dict, g0, flags, step, max_evaluations: int, point=None) -> dict:
    """A line search: `_iterate` evaluating the objective at x + trial p (or at
    `point(trial)`) once an iteration (`state["iterations"]` evaluations before this
    one); `step(state, f, d, g)` gets the value, the slope and the gradient there. The
    final fields, with the
    last evaluated point's gradient ("g") and the check flags ("flags")."""

    def each(state, carried):
        at = hlo.add(x, hlo.multiply(splat(state["trial"].v, p), p)) if point is None else point(state["trial"]).v
        f, g, new_flags = evaluate(at, carried[1:])
        return step(state, _S(f), _S(_dot(g, p)), g), [g, *new_flags]

    state, carried = _iterate(fields, [g0, *flags], max_evaluations, each)
    state["g"], state["flags"] = carried[0], carried[1:]
    return state


def _gate(go: _S, new: list, old: list) -> list:
    """The check flags of an evaluation the loop keeps (`new` where `go`, else `old`)."""
    return [select(go.v, n, o) for n, o in zip(new, old, strict=True)]
# scipy's BFGS line search bounds (`_line_search_wolfe12`'s amin, amax; dcsrch's xtol)
_STPMIN, _STPMAX, _XTOL = 1e-100, 1e100, 1e-14


def _first_step(f0: _S, f_before: _S, d0: _S) -> _S:
    """min(1, 2.02 (f0 - f_before) / d0), 1 where d0 is 0 or that is negative."""
    alpha = _where(d0.ne(0.0), _py_min(1.0, 1.01 * 2 * (f0 - f_before) / d0), 1.0)
    return _where(alpha < 0.0, 1.0, alpha)


def _line_search(evaluate, x, p, f0, g0, f_before, c1, c2, flags, extra=None):
    """scipy's `_line_search_wolfe12`: MINPACK's dcsrch, and where it fails (or its step
    fails `extra(alpha, f, g)`, scipy's extra_condition) the bracketing search
    `scalar_search_wolfe2`, which takes only steps that pass `extra`. (found, alpha, f, g,
    flags) at the step."""
    f0, d0, f_before = _S(f0), _S(_dot(g0, p)), _S(f_before)
    c1, c2 = _S(c1), _S(c2)
    first = _dcsrch(evaluate, x, p, f0, d0, _first_step(f0, f_before, d0), c1, c2, g0, flags)
    found = first["status"].eq(_DONE)
    if extra is not None:
        found = found & extra(first["alpha"], first["f"], first["g"])

    def fallback():
        second = _wolfe2(evaluate, x, p, f0, d0, _first_step(f0, f_before, d0), c1, c2, g0, first["flags"], extra)
        return [second["status"].eq(_DONE).v, second["alpha"].v, second["f"].v, second["g"], *second["flags"]]

    def keep():
        return [found.v, first["alpha"].v, first["f"].v, first["g"], *first["flags"]]

    types = [found.v.type, first["alpha"].v.type, first["f"].v.type, first["g"].type] + [v.type for v in first["flags"]]
    out = if_else(found.v, types, keep, fallback)
    return out[0], out[1], out[2], out[3], out[4:]


def _dcsrch(evaluate, x, p, f0, d0, alpha1, c1, c2, g0, flags, lnsrlb: dict | None = None) -> dict:
    """scipy's DCSRCH (MINPACK-2's dcsrch, ftol c1, gtol c2) from the trial alpha1, as
    `scalar_search_wolfe1` runs it: at most 100 evaluations, the last untested. With
    `lnsrlb` (its "stpmax", "evaluations" and the trial's "point"), the C dcsrch as
    L-BFGS-B's lnsrlb runs it: xtol 0.1, stpmin 0, every evaluation tested, a warning
    ending the search at its step as convergence does, C's fmin/fmax."""
    xtol, stpmin, stpmax = (0.1, 0.0, lnsrlb["stpmax"]) if lnsrlb else (_XTOL, _STPMIN, _STPMAX)
    lower, upper = (_fmin, _fmax) if lnsrlb else (_py_min, _py_max)
    start_error = (alpha1 < stpmin) | (alpha1 > stpmax) | (d0 >= 0.0)
    gtest = c1 * d0
    width = stpmax - stpmin
    fields = dict(
        status=_where(start_error, _STOPPED, _GOING), trial=alpha1, alpha=alpha1,
        f=f0, brackt=False, stage=1.0, stx=0.0, fx=f0, gx=d0, sty=0.0, fy=f0, gy=d0,
        stmin=0.0, stmax=alpha1 + 4.0 * alpha1, width=width, width1=width / 0.5,
    )

    def step(s, f, g, _gradient):
        stp = s["trial"]
        ftest = f0 + stp * gtest
        stage = _where((s["stage"].eq(1.0)) & (f <= ftest) & (g >= 0.0), 2.0, s["stage"])
        brackt = s["brackt"]
        warn = ((brackt & ((stp <= s["stmin"]) | (stp >= s["stmax"])))
                | (brackt & (s["stmax"] - s["stmin"] <= xtol * s["stmax"]))
                | ((stp.eq(stpmax)) & (f <= ftest) & (g <= gtest))
                | ((stp.eq(stpmin)) & ((f > ftest) | (g >= gtest))))
        converged = (f <= ftest) & (abs(g) <= c2 * -d0)
        # a modified function (f - stp gtest) while the first stage finds no better point
        modified = (stage.eq(1.0)) & (f <= s["fx"]) & (f > ftest)
        shift = _where(modified, gtest, 0.0)
        stx, fx, gx, sty, fy, gy, new_stp, brackt = _dcstep(
            s["stx"], s["fx"] - s["stx"] * shift, s["gx"] - shift, s["sty"], s["fy"] - s["sty"] * shift,
            s["gy"] - shift, stp, f - stp * shift, g - shift, brackt, s["stmin"], s["stmax"])
        fx, fy, gx, gy = fx + stx * shift, fy + sty * shift, gx + shift, gy + shift
        bisect = brackt & (abs(sty - stx) >= 0.66 * s["width1"])
        new_stp = _where(bisect, stx + 0.5 * (sty - stx), new_stp)
        width1 = _where(brackt, s["width"], s["width1"])
        width = _where(brackt, abs(sty - stx), s["width"])
        stmin = _where(brackt, lower(stx, sty), new_stp + 1.1 * (new_stp - stx))
        stmax = _where(brackt, upper(stx, sty), new_stp + 4.0 * (new_stp - stx))
        new_stp = _fmin(_fmax(new_stp, stpmin), stpmax) if lnsrlb else _clip(new_stp, stpmin, stpmax)
        stuck = brackt & (((new_stp <= stmin) | (new_stp >= stmax)) | (stmax - stmin <= xtol * stmax))
        new_stp = _where(stuck, stx, new_stp)
        if lnsrlb:  # lnsrlb's caller gives up where the search asks for one evaluation too many
            last = s["iterations"] >= lnsrlb["evaluations"] - 1.0
            status = _where(converged | warn, _DONE, _where(last, _STOPPED, _GOING))
        else:  # the last evaluation (100th) is not tested; a trial that is not finite fails
            last = s["iterations"] >= 99.0
            status = _where(last, _STOPPED, _where(converged, _DONE, _where(warn, _STOPPED, _where(
                _finite(new_stp), _GOING, _STOPPED))))
        searching = status.eq(_GOING)
        keep = lambda new, old: _where(searching, new, old)  # noqa: E731
        return dict(
            status=status, trial=keep(new_stp, stp), alpha=stp, f=f,
            brackt=keep(brackt, s["brackt"]), stage=stage, stx=keep(stx, s["stx"]), fx=keep(fx, s["fx"]),
            gx=keep(gx, s["gx"]), sty=keep(sty, s["sty"]), fy=keep(fy, s["fy"]), gy=keep(gy, s["gy"]),
            stmin=keep(stmin, s["stmin"]), stmax=keep(stmax, s["stmax"]), width=keep(width, s["width"]),
            width1=keep(width1, s["width1"]),
        )

    return _search(evaluate, x, p, fields, g0, flags, step, lnsrlb["evaluations"] if lnsrlb else 100,
                   lnsrlb["point"] if lnsrlb else None)


def _dcstep(stx, fx, dx, sty, fy, dy, stp, fp, dp, brackt, stpmin, stpmax):
    """MINPACK-2's dcstep, scipy's port: the next trial step from the interval's ends
    (stx, sty) and the trial (stp), its four cases computed alike and selected."""
    sgnd = _S(hlo.sign(dp.v)) * _S(hlo.sign(dx.v))
    higher, opposite, smaller = fp > fx, sgnd < 0.0, abs(dp) < abs(dx)

    theta = 3.0 * (fx - fp) / (stp - stx) + dx + dp
    s = _py_max(abs(theta), abs(dx), abs(dp))
    root = _sqrt((theta / s) * (theta / s) - (dx / s) * (dp / s))
    # case 1: a higher value; the minimum is bracketed
    gamma = _where(stp < stx, -(s * root), s * root)
    r = ((gamma - dx) + theta) / (((gamma - dx) + gamma) + dp)
    stpc = stx + r * (stp - stx)
    stpq = stx + ((dx / ((fx - fp) / (stp - stx) + dx)) / 2.0) * (stp - stx)
    case1 = _where(abs(stpc - stx) <= abs(stpq - stx), stpc, stpc + (stpq - stpc) / 2.0)
    # case 2: derivatives of opposite sign; bracketed
    gamma = _where(stp > stx, -(s * root), s * root)
    r = ((gamma - dp) + theta) / (((gamma - dp) + gamma) + dx)
    stpc = stp + r * (stx - stp)
    secant = stp + (dp / (dp - dx)) * (stx - stp)
    case2 = _where(abs(stpc - stp) > abs(secant - stp), stpc, secant)
    # case 3: same sign, the derivative's magnitude decreases
    gamma = s * _sqrt(_py_max(0.0, (theta / s) * (theta / s) - (dx / s) * (dp / s)))
    gamma = _where(stp > stx, -gamma, gamma)
    r = ((gamma - dp) + theta) / ((gamma + (dx - dp)) + gamma)
    stpc = _where((r < 0.0) & gamma.ne(0.0), stp + r * (stx - stp), _where(stp > stx, stpmax, stpmin))
    toward = stp + 0.66 * (sty - stp)
    inside = _where(abs(stpc - stp) < abs(secant - stp), stpc, secant)
    inside = _where(stp > stx, _py_min(toward, inside), _py_max(toward, inside))
    outside = _clip(_where(abs(stpc - stp) > abs(secant - stp), stpc, secant), stpmin, stpmax)
    case3 = _where(brackt, inside, outside)
    # case 4: same sign, the derivative's magnitude does not decrease
    theta = 3.0 * (fp - fy) / (sty - stp) + dy + dp
    s = _py_max(abs(theta), abs(dy), abs(dp))
    gamma = s * _sqrt((theta / s) * (theta / s) - (dy / s) * (dp / s))
    gamma = _where(stp > sty, -gamma, gamma)
    r = ((gamma - dp) + theta) / (((gamma - dp) + gamma) + dy)
    case4 = _where(brackt, stp + r * (sty - stp), _where(stp > stx, stpmax, stpmin))

    stpf = _where(higher, case1, _where(opposite, case2, _where(smaller, case3, case4)))
    brackt = higher | opposite | brackt
    # the interval: a higher value replaces its far end; else the trial becomes the near
    # end, the old near end the far one where the derivatives' signs differ
    new_sty = _where(higher, stp, _where(opposite, stx, sty))
    new_fy = _where(higher, fp, _where(opposite, fx, fy))
    new_dy = _where(higher, dp, _where(opposite, dx, dy))
    new_stx, new_fx, new_dx = (_where(higher, old, new) for old, new in ((stx, stp), (fx, fp), (dx, dp)))
    return new_stx, new_fx, new_dx, new_sty, new_fy, new_dy, stpf, brackt


def _wolfe2(evaluate, x, p, f0, d0, alpha1, c1, c2, g0, flags, extra=None) -> dict:
    """scipy's `scalar_search_wolfe2` (amax 1e100, 10 iterations doubling the step) and
    its `_zoom` (11 evaluations): where the doubling runs out, the last step stands. A
    step meeting the curvature condition is taken only where it passes `extra(alpha, f,
    g)` too."""
    alpha1 = _py_min(alpha1, _STPMAX)
    fields = dict(
        status=_GOING, trial=alpha1, alpha=alpha1, f=f0, zooming=False, i=0.0,
        a0=0.0, phi_a0=f0, dphi_a0=d0, lo=0.0, hi=0.0, phi_lo=f0, phi_hi=f0, dphi_lo=d0, rec=0.0, phi_rec=f0,
    )

    def step(s, f, d, g):
        a, i, zooming = s["trial"], s["i"], s["zooming"]
        above = f > f0 + c1 * a * d0
        flat = abs(d) <= c2 * -d0
        if extra is not None:  # scipy's extra_condition: at the doubling loop's and zoom's acceptance
            flat = flat & extra(a, f, g)
        # the doubling loop, at a = alpha1 (phi(alpha1) = f, derphi(alpha1) = d)
        exhausted = i >= 10.0
        broken = a.eq(0.0) | (s["a0"] > _STPMAX)
        zoom_up = above | ((f >= s["phi_a0"]) & (i > 0.0))  # zoom(a0, a)
        zoom_down = d >= 0.0  # zoom(a, a0)
        main_status = _where(exhausted, _DONE, _where(broken, _STOPPED, _where(
            zoom_up, _GOING, _where(flat, _DONE, _GOING))))
        enters = ~exhausted & ~broken & (zoom_up | (~flat & zoom_down))
        entry = dict(lo=_where(zoom_up, s["a0"], a), hi=_where(zoom_up, a, s["a0"]),
                     phi_lo=_where(zoom_up, s["phi_a0"], f), phi_hi=_where(zoom_up, f, s["phi_a0"]),
                     dphi_lo=_where(zoom_up, s["dphi_a0"], d), rec=_S(0.0), phi_rec=f0)
        # a zoom iteration, at a = a_j
        high = above | (f >= s["phi_lo"])
        flip = d * (s["hi"] - s["lo"]) >= 0.0
        zoom_status = _where(~high & flat, _DONE, _where(i + 1.0 > 10.0, _STOPPED, _GOING))
        moved = dict(
            rec=_where(high | flip, s["hi"], s["lo"]), phi_rec=_where(high | flip, s["phi_hi"], s["phi_lo"]),
            hi=_where(high, a, _where(flip, s["lo"], s["hi"])), phi_hi=_where(high, f, _where(flip, s["phi_lo"], s["phi_hi"])),
            lo=_where(high, s["lo"], a), phi_lo=_where(high, s["phi_lo"], f), dphi_lo=_where(high, s["dphi_lo"], d),
        )
        status = _where(zooming, zoom_status, main_status)
        now_zooming = zooming | enters
        zoom = {k: _where(zooming, moved[k], entry[k]) for k in entry}
        zoom_i = _where(zooming, i + 1.0, 0.0)
        trial = _where(now_zooming, _zoom_trial(zoom_i, **zoom), _py_min(2.0 * a, _STPMAX))
        return dict(
            status=status, trial=trial, alpha=a, f=f, zooming=now_zooming,
            i=_where(now_zooming, zoom_i, i + 1.0), a0=_where(now_zooming, s["a0"], a),
            phi_a0=_where(now_zooming, s["phi_a0"], f), dphi_a0=_where(now_zooming, s["dphi_a0"], d),
            **{k: _where(now_zooming, v, s[k]) for k, v in zoom.items()},
        )

    return _search(evaluate, x, p, fields, g0, flags, step, 30)


def _zoom_trial(i, lo, hi, phi_lo, phi_hi, dphi_lo, rec, phi_rec) -> _S:
    """`_zoom`'s next a_j: the cubic's minimum through lo, hi and the last replaced end
    (not on the first iteration), else the quadratic's, each kept 20% and 10% inside
    the interval, else the midpoint."""
    dalpha = hi - lo
    a, b = _where(dalpha < 0.0, hi, lo), _where(dalpha < 0.0, lo, hi)
    cubic, cubic_ok = _cubicmin(lo, phi_lo, dphi_lo, hi, phi_hi, rec, phi_rec)
    cchk = 0.2 * dalpha
    use_cubic = (i > 0.0) & cubic_ok & ~(cubic > b - cchk) & ~(cubic < a + cchk)
    quad, quad_ok = _quadmin(lo, phi_lo, dphi_lo, hi, phi_hi)
    qchk = 0.1 * dalpha
    use_quad = quad_ok & ~(quad > b - qchk) & ~(quad < a + qchk)
    return _where(use_cubic, cubic, _where(use_quad, quad, lo + 0.5 * dalpha))


class _Raising:
    """numpy's `errstate(all="raise")` over a few float operations: whether any of them
    overflowed, divided by zero or made a NaN from numbers (scipy's interpolants give up
    there)."""

    def __init__(self):
        self.raised = _S(False)

    def __call__(self, result: _S, *operands) -> _S:
        operands = [_S.of(o) for o in operands]
        finite_in, nan_in = _S(True), _S(False)
        for o in operands:
            finite_in, nan_in = finite_in & _finite(o), nan_in | o.ne(o)
        self.raised = self.raised | (~_finite(result) & finite_in) | (result.ne(result) & ~nan_in)
        return result


def _cubicmin(a, fa, fpa, b, fb, c, fc):
    """scipy's `_cubicmin`: the cubic's minimum and whether scipy finds one (None where a
    step raises or the result is not finite)."""
    ok = _Raising()
    db, dc = ok(b - a, b, a), ok(c - a, c, a)
    denom = ok(ok(db * dc, db, dc) * ok(db * dc, db, dc), db, dc)
    denom = ok(denom * ok(db - dc, db, dc), denom)
    v0 = ok(ok(fb - fa, fb, fa) - ok(fpa * db, fpa, db), fb, fa)
    v1 = ok(ok(fc - fa, fc, fa) - ok(fpa * dc, fpa, dc), fc, fa)
    big_a = ok(ok(dc * dc, dc) * v0 + ok(-(db * db), db) * v1, v0, v1)
    big_b = ok(ok(-(dc * dc * dc), dc) * v0 + ok(db * db * db, db) * v1, v0, v1)
    big_a, big_b = ok(big_a / denom, big_a, denom), ok(big_b / denom, big_b, denom)
    radical = ok(big_b * big_b - 3.0 * big_a * fpa, big_a, big_b, fpa)
    root = ok(_sqrt(radical), radical)
    xmin = ok(a + ok((-big_b + root) / ok(3.0 * big_a, big_a), big_b, root), a)
    return xmin, ~ok.raised & _finite(xmin)


def _quadmin(a, fa, fpa, b, fb):
    """scipy's `_quadmin`: the quadratic's minimum and whether scipy finds one."""
    ok = _Raising()
    db = ok(b - a, b, a)
    big_b = ok(ok(ok(fb - fa, fb, fa) - ok(fpa * db, fpa, db), fb, fa) / ok(db * db, db), fb, fa, db)
    xmin = ok(a - ok(fpa / ok(2.0 * big_b, big_b), fpa, big_b), a)
    return xmin, ~ok.raised & _finite(xmin)


# --- RootScalarOp: scipy.optimize.root_scalar's secant, newton and halley --------------

# The derivatives each method reads (root_scalar runs them all through scipy's `newton`).
_ROOT_METHODS = {"secant": 0, "newton": 1, "halley": 2}
# scipy's bracketing solvers (its C code in scipy/optimize/Zeros): their start from a bracket
_BRACKETING = {"bisect", "ridder", "brentq", "brenth", "toms748"}
_ROOT_OPTIONS = {"xtol", "tol", "rtol", "maxiter", "x1", "bracket"}  # bracket: read by bisect ... brenth
_BRACKET_RTOL = 4 * float(np.finfo(np.float64).eps)  # their smallest rtol, and its default


def _root_options(node) -> dict:
    """root_scalar's keywords for its `newton` (xtol becomes tol) or a bracketing solver;
    what cannot be honoured is refused by name, and scipy's own argument errors are raised
    here."""
    op = node.op
    method = op.method.lower()
    if method not in {*_ROOT_METHODS, *_BRACKETING}:
        raise UnsupportedParameterError(node, f"method {op.method!r}",
                                        f"root_scalar is lowered with {sorted({*_ROOT_METHODS, *_BRACKETING})}")
    if method == "halley" and not (op.jac and op.hess):
        missing = "fprime2" if op.jac else "fprime"
        raise ValueError(f"{missing} must be specified for halley: root_scalar(..., jac=True, hess=True) "
                         f"(node: {node_label(node)})")
    kwargs = dict(op.optimizer_kwargs)
    kwargs.update(kwargs.pop("options", None) or {})
    unknown = sorted(set(kwargs) - _ROOT_OPTIONS)
    if unknown:
        raise UnsupportedParameterError(node, f"optimizer_kwargs {unknown}",
                                        f"root_scalar is lowered with {sorted(_ROOT_OPTIONS)}")
    if method in _BRACKETING:
        return _bracketing_options(node, method, kwargs)
    tol = kwargs["xtol"] if kwargs.get("xtol") is not None else kwargs.get("tol", 1.48e-8)
    options = dict(method=method, tol=float(tol), rtol=float(kwargs.get("rtol") or 0.0),
                   maxiter=int(kwargs.get("maxiter") or 50), x1=kwargs.get("x1") if method == "secant" else None)
    if options["tol"] <= 0:
        raise ValueError(f"tol too small ({options['tol']:g} <= 0) (node: {node_label(node)})")
    if options["maxiter"] < 1:
        raise ValueError(f"maxiter must be greater than 0 (node: {node_label(node)})")
    return options


def _bracketing_options(node, method: str, kwargs: dict) -> dict:
    """bisect's, ridder's, brentq's and brenth's: the bracket's first two points, xtol,
    rtol and maxiter with scipy's defaults and argument errors."""
    bracket = kwargs.get("bracket")
    if not isinstance(bracket, list | tuple | np.ndarray):
        raise ValueError(f"Bracket needed for {node.op.method} (node: {node_label(node)})")
    options = dict(method=method, a=float(bracket[0]), b=float(bracket[1]),
                   xtol=float(kwargs["xtol"] if kwargs.get("xtol") is not None else 2e-12),
                   rtol=float(kwargs["rtol"] if kwargs.get("rtol") is not None else _BRACKET_RTOL),
                   maxiter=int(kwargs["maxiter"] if kwargs.get("maxiter") is not None else 100))
    if options["xtol"] <= 0:
        raise ValueError(f"xtol too small ({options['xtol']:g} <= 0) (node: {node_label(node)})")
    smallest = _EPSMCH if method == "toms748" else _BRACKET_RTOL
    if options["rtol"] < smallest:
        raise ValueError(f"rtol too small ({options['rtol']:g} < {smallest:g}) (node: {node_label(node)})")
    if method == "toms748":  # toms748's own argument checks
        if options["maxiter"] < 1:
            raise ValueError(f"maxiter must be greater than 0 (node: {node_label(node)})")
        for name in ("a", "b"):
            if not np.isfinite(options[name]):
                raise ValueError(f"{name} is not finite {options[name]} (node: {node_label(node)})")
        if options["a"] >= options["b"]:
            raise ValueError(f"a and b are not an interval [{options['a']}, {options['b']}] (node: {node_label(node)})")
    return options


def _isclose(a: _S, b: _S, rtol: float, atol: float) -> _S:
    """np.isclose: |a - b| <= atol + rtol |b| where both are finite, else a == b."""
    both = _finite(a) & _finite(b)
    return _where(both, abs(a - b) <= atol + rtol * abs(b), a.eq(b))


@register_lowering(RootScalarOp)
def lower_root_scalar(ctx, node, x0, *args):
    options = _root_options(node)
    dtype = node.inputs[0].type.dtype
    if np.dtype(dtype).kind != "f":
        raise UnsupportedParameterError(node, f"x of dtype {dtype}", "x must be real floats")
    count = _ROOT_METHODS.get(options["method"], 0)
    fn, variable = _inner_function(ctx, node, count, "root_equation")
    args = [operand for i, operand in enumerate((x0, *args)) if i in variable[1:]]
    checks = ctx.checks_of(fn)

    def evaluate(p: _S, flags):
        """The equation (and its derivatives) at p, in x's dtype, as float64 values."""
        results = ctx.emit_call(fn, [convert(p.v, dtype), *args])
        values = [_S(convert(r, "float64")) for r in results[:count + 1]]
        return values, [hlo.or_(a, b) for a, b in zip(flags, results[count + 1:], strict=True)]

    flags = [ir_constant(False)] * len(checks)
    start = _S(convert(x0, "float64"))
    if options["method"] in _BRACKETING:
        root, converged, flags = _bracketing(ctx, evaluate, options, flags)
    elif options["method"] == "secant":
        root, converged, flags = _secant(ctx, evaluate, start, options, flags)
    else:
        root, converged, flags = _newton(evaluate, start, options, flags)
    for flag, check in zip(flags, checks, strict=True):
        ctx.runtime_check(flag, check.error, check.message)
    return convert(root.v, dtype), converged.v


def _secant(ctx, evaluate, x0: _S, options: dict, flags):
    """scipy's `newton` without derivatives: the secant method from x0 and x1 (by
    default x0 (1 + 1e-4) moved 1e-4 further from 0)."""
    tol, rtol = options["tol"], options["rtol"]
    if options["x1"] is not None:
        p1 = _S(float(options["x1"]))
        ctx.runtime_check(p1.eq(x0).v, ValueError, "x1 and x0 must be different")
    else:
        p1 = x0 * (1 + 1e-4)
        p1 = p1 + _where(p1 >= 0.0, 1e-4, -1e-4)
    (q0,), flags = evaluate(x0, flags)
    (q1,), flags = evaluate(p1, flags)
    swap = abs(q1) < abs(q0)
    p0, p1, q0, q1 = _where(swap, p1, x0), _where(swap, x0, p1), _where(swap, q1, q0), _where(swap, q0, q1)

    def step(s, flags):
        p0, p1, q0, q1 = s["p0"], s["p1"], s["q0"], s["q1"]
        flat = q1.eq(q0)
        secant = _where(abs(q1) > abs(q0), (-q0 / q1 * p1 + p0) / (1 - q0 / q1), (-q1 / q0 * p0 + p1) / (1 - q1 / q0))
        p = _where(flat, (p1 + p0) / 2.0, secant)
        status = _where(flat, _STOPPED, _where(_isclose(p, p1, rtol, tol), _DONE, _GOING))
        going = status.eq(_GOING)
        (q,), new_flags = evaluate(p, flags)  # (what scipy evaluates only where it goes on)
        flags = _gate(going, new_flags, flags)
        return dict(status=status, p=p, p0=_where(going, p1, p0), q0=_where(going, q1, q0),
                    p1=_where(going, p, p1), q1=_where(going, q, q1)), flags

    init = dict(status=_GOING, p=p1, p0=p0, p1=p1, q0=q0, q1=q1)
    state, flags = _iterate(init, flags, options["maxiter"], step)
    return state["p"], state["status"].eq(_DONE), flags


def _newton(evaluate, x0: _S, options: dict, flags):
    """scipy's `newton` with the first derivative (Newton's method), and the second
    (Halley's: the step divided by 1 - adj where |adj| < 1)."""
    tol, rtol, halley = options["tol"], options["rtol"], options["method"] == "halley"

    def step(s, flags):
        p0 = s["p0"]
        values, flags = evaluate(p0, flags)
        f, d = values[0], values[1]
        newton_step = f / d
        if halley:
            adj = newton_step * values[2] / d / 2
            newton_step = _where(abs(adj) < 1.0, newton_step / (1.0 - adj), newton_step)
        p = p0 - newton_step
        root, flat = f.eq(0.0), d.eq(0.0)
        status = _where(root, _DONE, _where(flat, _STOPPED, _where(_isclose(p, p0, rtol, tol), _DONE, _GOING)))
        p = _where(root | flat, p0, p)
        return dict(status=status, p=p, p0=p), flags

    state, flags = _iterate(dict(status=_GOING, p=x0, p0=x0), flags, options["maxiter"], step)
    return state["p"], state["status"].eq(_DONE), flags


def _bracketing(ctx, evaluate, options: dict, flags):
    """scipy's bracketing solvers from f(a) and f(b): their ValueError where the signs
    do not differ; a NaN value stops them there (scipy's NaN wrapper: that point, not
    converged); else scipy's iterations until converged or maxiter."""
    method, a, b = options["method"], _S(options["a"]), _S(options["b"])
    (fa,), flags = evaluate(a, flags)
    (fb,), new_flags = evaluate(b, flags)
    flags = _gate(~_isnan(fa), new_flags, flags)
    nan = _isnan(fa) | _isnan(fb)
    zero = fa.eq(0.0) | fb.eq(0.0)  # tested first; the sign test reads the sign bits
    same_sign = ~zero & ~_signs_differ(fa, fb)
    infinite = _S(False)
    if method == "toms748":  # its _callf's ValueError on an infinite value (f(b) only read after f(a))
        infinite = ~_finite(fa) & ~_isnan(fa) | (fa.ne(0.0) & ~_isnan(fa) & ~_finite(fb) & ~_isnan(fb))
        ctx.runtime_check(infinite.v, ValueError, "Invalid function value: f(a) or f(b) is infinite")
    ctx.runtime_check((~nan & ~infinite & same_sign).v, ValueError, "f(a) and f(b) must have different signs")
    status = _where(nan | same_sign | infinite, _STOPPED, _where(zero, _DONE, _GOING))
    steps = {"bisect": _bisect_step, "ridder": _ridder_step, "toms748": _toms748_step}
    step, init = steps.get(method, _brent_root_step)(evaluate, a, b, fa, fb, options)
    # where it stops before its loop: at a or b where f is 0 or NaN there (a first)
    root = _where(_isnan(fa) | fa.eq(0.0), a, _where(_isnan(fb) | fb.eq(0.0), b, init["root"]))
    # toms748's first step is its secant step, before maxiter counts its iterations
    limit = max(options["maxiter"], 1) + 1 if method == "toms748" else options["maxiter"]
    state, flags = _iterate(dict(init, status=status, root=root), flags, limit, step)
    if "infinite" in state:
        ctx.runtime_check(state["infinite"].v, ValueError, "Invalid function value: f(x) is infinite")
    return state["root"], state["status"].eq(_DONE), flags


def _isnan(x: _S) -> _S:
    return _S(is_nan(x.v))


def _isinf(x: _S) -> _S:
    return abs(x).eq(float("inf"))


def _fmax(a, b) -> _S:
    """C's fmax: the larger, NaN only where both are."""
    a, b = _S.of(a), _S.of(b)
    return _where(_isnan(b) | (a > b), a, b)


def _fmin(a, b) -> _S:
    """C's fmin: the smaller, NaN only where both are."""
    a, b = _S.of(a), _S.of(b)
    return _where(_isnan(b) | (a < b), a, b)


def _c_min(a, b) -> _S:
    """C's MIN macro, a < b ? a : b (b where either is NaN; Python's min keeps a)."""
    return _where(_S.of(a) < b, a, b)


def _signs_differ(a: _S, b: _S) -> _S:
    return _S(compare(signbit(a.v), signbit(b.v), "NE"))


def _evaluated(evaluate, x: _S, flags, going: _S | None = None):
    """f(x) and the flags, those of the evaluation only where the loop `going` (if given)
    reads it; and whether f(x) is NaN there (scipy stops at that x)."""
    (fx,), new_flags = evaluate(x, flags)
    return fx, new_flags if going is None else _gate(going, new_flags, flags), _isnan(fx)


def _bisect_step(evaluate, a, b, fa, fb, options):
    xtol, rtol = options["xtol"], options["rtol"]

    def step(s, flags):
        dm = s["dm"] * 0.5
        xm = s["xa"] + dm
        fm, flags, nan = _evaluated(evaluate, xm, flags)
        xa = _where(_signs_differ(fm, s["fa"]), s["xa"], xm)
        done = fm.eq(0.0) | (abs(dm) < xtol + rtol * abs(xm))
        return dict(s, status=_where(nan, _STOPPED, _where(done, _DONE, _GOING)), dm=dm, xa=xa,
                    root=_where(nan | done, xm, xa)), flags

    return step, dict(root=a, dm=b - a, xa=a, fa=fa)


def _ridder_step(evaluate, a, b, fa, fb, options):
    xtol, rtol = options["xtol"], options["rtol"]
    sign = lambda v: _where(v > 0.0, 1.0, -1.0)  # noqa: E731  (ridder.c's SIGN)

    def step(s, flags):
        xa, xb, fa, fb, tol = s["xa"], s["xb"], s["fa"], s["fb"], s["tol"]
        dm = 0.5 * (xb - xa)
        xm = xa + dm
        fm, flags, nan_m = _evaluated(evaluate, xm, flags)
        dn = sign(fb - fa) * dm * fm / _sqrt(fm * fm - fa * fb)
        xn = xm - sign(dn) * _c_min(abs(dn), abs(dm) - 0.5 * tol)
        fn, flags, nan_n = _evaluated(evaluate, xn, flags, ~nan_m)
        across = _signs_differ(fn, fm)
        below = ~across & _signs_differ(fn, fa)
        new = dict(xa=_where(below, xa, xn), fa=_where(below, fa, fn),
                   xb=_where(across, xm, _where(below, xn, xb)), fb=_where(across, fm, _where(below, fn, fb)),
                   tol=xtol + rtol * xn)  # (xn's sign included, as ridder.c has it)
        done = fn.eq(0.0) | (abs(new["xb"] - new["xa"]) < new["tol"])
        status = _where(nan_m | nan_n, _STOPPED, _where(done, _DONE, _GOING))
        return dict(s, **new, status=status, root=_where(nan_m, xm, xn)), flags

    return step, dict(root=_S(0.0), xa=a, xb=b, fa=fa, fb=fb, tol=xtol + rtol * _c_min(abs(a), abs(b)))


def _brent_root_step(evaluate, a, b, fa, fb, options):
    """brentq's iteration (brenth's: a hyperbolic extrapolation in place of the inverse
    quadratic one)."""
    xtol, rtol, hyperbolic = options["xtol"], options["rtol"], options["method"] == "brenth"

    def step(s, flags):
        xpre, xcur, xblk, fpre, fcur, fblk, spre, scur = (
            s[k] for k in ("xpre", "xcur", "xblk", "fpre", "fcur", "fblk", "spre", "scur"))
        straddle = fpre.ne(0.0) & fcur.ne(0.0) & _signs_differ(fpre, fcur)  # xpre: the bracket's far end
        xblk, fblk = _where(straddle, xpre, xblk), _where(straddle, fpre, fblk)
        spre, scur = _where(straddle, xcur - xpre, spre), _where(straddle, xcur - xpre, scur)
        swap = abs(fblk) < abs(fcur)
        xpre, xcur, xblk = _where(swap, xcur, xpre), _where(swap, xblk, xcur), _where(swap, xcur, xblk)
        fpre, fcur, fblk = _where(swap, fcur, fpre), _where(swap, fblk, fcur), _where(swap, fcur, fblk)
        delta = (xtol + rtol * abs(xcur)) / 2
        sbis = (xblk - xcur) / 2
        done = fcur.eq(0.0) | (abs(sbis) < delta)
        interpolate = -fcur * (xcur - xpre) / (fcur - fpre)
        dpre, dblk = (fpre - fcur) / (xpre - xcur), (fblk - fcur) / (xblk - xcur)
        if hyperbolic:
            extrapolate = -fcur * (fblk - fpre) / (fblk * dpre - fpre * dblk)
        else:
            extrapolate = -fcur * (fblk * dblk - fpre * dpre) / (dblk * dpre * (fblk - fpre))
        stry = _where(xpre.eq(xblk), interpolate, extrapolate)
        tried = (abs(spre) > delta) & (abs(fcur) < abs(fpre))
        short = tried & (2 * abs(stry) < _c_min(abs(spre), 3 * abs(sbis) - delta))
        spre, scur = _where(short, scur, sbis), _where(short, stry, sbis)
        xnew = xcur + _where(abs(scur) > delta, scur, _where(sbis > 0.0, delta, -delta))
        fnew, flags, nan = _evaluated(evaluate, xnew, flags, ~done)
        status = _where(done, _DONE, _where(nan, _STOPPED, _GOING))
        return dict(status=status, root=_where(done, xcur, xnew), xpre=xcur, fpre=fcur, xcur=xnew, fcur=fnew,
                    xblk=xblk, fblk=fblk, spre=spre, scur=scur), flags

    return step, dict(root=b, xpre=a, xcur=b, xblk=0.0, fpre=fa, fcur=fb, fblk=0.0, spre=0.0, scur=0.0)


def _toms748_step(evaluate, a, b, fa, fb, options):
    """scipy's TOMS748Solver (Alefeld, Potra and Shi's Algorithm 4.1, k = 1, as
    root_scalar calls it): a secant step first; then each iteration an inverse cubic
    interpolation step (where the four values are nonzero, finite and more than 32 eps
    apart, and its point falls inside the bracket) or two Newton steps on the quadratic
    through a, b and d; a double-length secant step from the endpoint of smaller value
    (nudged by the tolerance where it would not move); and a bisection where the bracket
    did not halve. It stops where a and b are close (|a - b| <= xtol + rtol |b|: their
    midpoint) or at maxiter, at a value of 0 (that point, converged) or NaN (that point,
    not), and raises scipy's ValueError at an infinite one."""
    xtol, rtol, maxiter = options["xtol"], options["rtol"], float(options["maxiter"])

    def value(x: _S, flags, going: _S):
        """f(x) where `going`; what ends the iteration there: 0 (converged), NaN, inf."""
        f, flags, nan = _evaluated(evaluate, x, flags, going)
        return f, flags, going & f.eq(0.0), going & nan, going & ~nan & ~_finite(f)

    def bracket_with(s: dict, c: _S, fc: _S) -> dict:
        """`_update_bracket`: c replaces the end whose value has fc's sign; d the end
        dropped."""
        low = _S(hlo.sign(s["fa"].v)) * _S(hlo.sign(fc.v)) > 0.0
        return dict(s, a=_where(low, c, s["a"]), fa=_where(low, fc, s["fa"]), b=_where(low, s["b"], c),
                    fb=_where(low, s["fb"], fc), d=_where(low, s["a"], s["b"]), fd=_where(low, s["fa"], s["fb"]))

    def ended(s: dict, at: _S, zero: _S, infinite: _S) -> dict:
        """Stopped at `at`: converged where f is 0 there, else (NaN, inf) not."""
        return dict(s, status=_where(zero, _DONE, _STOPPED), root=at, infinite=infinite)

    def step(s, flags):
        first = s["iterations"].eq(0.0)
        a, b, fa, fb = s["a"], s["b"], s["fa"], s["fb"]
        middle = (a + b) / 2.0
        width = b - a
        # the first step: scipy's _secant, where it falls inside the bracket
        swap = abs(fb) > abs(fa)
        secant = _where(swap, (-fa / fb * b + a) / (1.0 - fa / fb), (-fb / fa * a + b) / (1.0 - fb / fa))
        secant = _where(fa.eq(fb), float("nan"), secant)
        # an iteration's first point: inverse cubic interpolation, else Newton on the quadratic
        fs = [fa, fb, s["fd"], s["fe"]]
        separate = s["has_e"]
        for i, f in enumerate(fs):
            separate = separate & f.ne(0.0) & _finite(f)
            for g in fs[i + 1:]:
                separate = separate & ~(abs(f - g) <= 32.0 * _EPSMCH)
        cubic = _inverse_cubic_zero([fa, fb, s["fd"], s["fe"]], [a, b, s["d"], s["e"]])
        c = _where(separate & (a < cubic) & (cubic < b), cubic, _newton_quadratic(a, b, fa, fb, s["d"], s["fd"], 2))
        c = _where(first, _where((a < secant) & (secant < b), secant, middle), c)
        fc, flags, zero, nan, infinite = value(c, flags, _S(True))
        stop = zero | nan | infinite
        after_first = bracket_with(s, c, fc)
        after_secant = dict(after_first, e=0.0, fe=0.0, has_e=False, status=_S(_GOING))
        t = dict(after_first, e=s["d"], fe=s["fd"], has_e=True)
        # the double-length secant step from the endpoint of smaller value
        a, b, fa, fb = t["a"], t["b"], t["fa"], t["fb"]
        left = abs(fa) < abs(fb)
        u, fu, other, f_other = _where(left, a, b), _where(left, fa, fb), _where(left, b, a), _where(left, fb, fa)
        slope = (fb - fa) / (b - a)
        c2 = u - 2.0 * fu / slope
        still = abs(c2 - u) <= _EPSMCH * abs(u)  # np.isclose(c, u, rtol=eps, atol=0)
        apart = _frexp_exponent(fu) < _frexp_exponent(f_other) - 50.0
        sign = _where(left, 1.0, -1.0)
        nudged = _where(apart, (31.0 * u + other) / 32.0, u + (sign * abs(c2) * rtol + sign * xtol))
        nudged = _where((a < nudged) & (nudged < b), nudged, (a + b) / 2.0)
        c2 = _where(abs(c2 - u) > 0.5 * (b - a), (a + b) / 2.0, _where(still, nudged, c2))
        going = ~first & ~stop
        fc2, flags, zero2, nan2, infinite2 = value(c2, flags, going)
        stop2 = zero2 | nan2 | infinite2
        t2 = dict(bracket_with(t, c2, fc2), e=t["d"], fe=t["fd"])
        # a bisection where the bracket did not halve
        halve = going & ~stop2 & (t2["b"] - t2["a"] > 0.5 * width)
        z = (t2["a"] + t2["b"]) / 2.0
        fz, flags, zero3, nan3, infinite3 = value(z, flags, halve)
        stop3 = zero3 | nan3 | infinite3
        t3 = _where_all(halve, dict(bracket_with(t2, z, fz), e=t2["d"], fe=t2["fd"]), t2)
        iterations = s["iterations"] + 1.0  # scipy's: the secant step counts as one (as _iterate's steps)
        close = abs(t3["a"] - t3["b"]) <= xtol + rtol * abs(t3["b"])
        t3 = dict(t3, root=(t3["a"] + t3["b"]) / 2.0,
                  status=_where(close, _DONE, _where(iterations >= maxiter, _STOPPED, _GOING)))
        iterated = _where_all(stop, ended(s, c, zero, infinite), _where_all(
            stop2, ended(s, c2, zero2, infinite2), _where_all(stop3, ended(s, z, zero3, infinite3), t3)))
        started = _where_all(stop, ended(s, c, zero, infinite), after_secant)
        return _where_all(first, started, iterated), flags

    init = dict(root=(a + b) / 2.0, a=a, b=b, fa=fa, fb=fb, d=0.0, fd=0.0, e=0.0, fe=0.0, has_e=False,
                infinite=False)
    return step, init


def _inverse_cubic_zero(fs: list, xs: list) -> _S:
    """scipy's `_inverse_poly_zero`: x at f = 0 on the cubic through the points (f, x),
    by Neville's scheme as `_interpolated_poly` runs it (its Q and D tables, the last row
    of Q summed)."""
    count = len(fs)
    q = [[None] * count for _ in range(count)]
    dd = [[None] * count for _ in range(count)]
    for i in range(count):
        q[i][0] = dd[i][0] = xs[i]
    for k in range(1, count):
        for i in range(k, count):
            alpha = dd[i][k - 1] - q[i - 1][k - 1]
            diff = fs[i - k] - fs[i]
            q[i][k] = fs[i] / diff * alpha
            dd[i][k] = fs[i - k] / diff * alpha
    total = q[-1][1]
    for k in range(2, count):
        total = total + q[-1][k]
    return total + q[-1][0]


def _newton_quadratic(a: _S, b: _S, fa: _S, fb: _S, d: _S, fd: _S, steps: int) -> _S:
    """scipy's `_newton_quadratic`: from the end where the quadratic through (a, b, d)
    and f's sign agree, `steps` Newton steps on it, kept inside (a, b) (the last point
    inside, else the midpoint); a - fa / B where it is a line."""
    B = (fb - fa) / (b - a)
    A = ((fd - fb) / (d - b) - B) / (d - a)
    r = _where(_S(hlo.sign(A.v)) * _S(hlo.sign(fa.v)) > 0.0, a, b)
    done = _S(False)
    for _ in range(steps):
        p = (A * (r - b) + B) * (r - a) + fa
        r1 = r - p / (B + A * (2.0 * r - a - b))
        inside = (a < r1) & (r1 < b)
        fallback = _where((a < r) & (r < b), r, (a + b) / 2.0)
        r = _where(done, r, _where(inside, r1, fallback))
        done = done | ~inside
    return _where(A.eq(0.0), a - fa / B, r)


def _frexp_exponent(v: _S) -> _S:
    """np.frexp(v)[1] for a normal float64 v: its binary exponent + 1, from its bits."""
    bits = hlo.bitcast_convert(ir.RankedTensorType.get([], ir.IntegerType.get_signless(64)), abs(v).v)
    exponent = hlo.subtract(hlo.shift_right_logical(bits, ir_constant(np.int64(52))), ir_constant(np.int64(1022)))
    return _S(convert(exponent, "float64"))


# --- MinimizeScalarOp: scipy.optimize.minimize_scalar's Brent method ---------------------

_GOLD, _CG, _MINTOL = 1.618034, 0.3819660, 1.0e-11  # scipy's constants (bracket, Brent)
_BRACKET_MESSAGE = ("No valid bracket was found before the iteration limit was reached. Consider trying "
                    "different initial points or increasing `maxiter`.")


# minimize_scalar's methods: their tolerance option, its default, and maxiter's
_SCALAR_METHODS = {"brent": ("xtol", 1.48e-8, 500), "golden": ("xtol", float(np.sqrt(np.finfo(np.float64).eps)), 5000),
                   "bounded": ("xatol", 1e-5, 500)}


def _scalar_options(node) -> dict:
    """scipy.minimize_scalar's options for Brent's, the golden section's and the bounded
    method (`tol` sets xtol, or xatol), scipy's own errors raised here, what cannot be
    honoured refused by name."""
    method = node.op.method.lower()
    if method not in _SCALAR_METHODS:
        raise UnsupportedParameterError(node, f"method {node.op.method!r}",
                                        f"minimize_scalar is lowered with {sorted(_SCALAR_METHODS)}")
    tol_name, tol_default, maxiter = _SCALAR_METHODS[method]
    kwargs, options = _split_options(node, method, tol_name)
    bounds = kwargs.pop("bounds", None)
    brack = kwargs.pop("bracket", None)
    if bounds is not None and method != "bounded":
        raise ValueError(f"Use of `bounds` is incompatible with 'method={node.op.method}'. (node: {node_label(node)})")
    unknown = sorted(kwargs) + sorted(set(options) - {tol_name, "maxiter", "disp"})
    if unknown or (method != "bounded" and brack is not None and len(brack) != 2):
        what = f"optimizer_kwargs {unknown}" if unknown else "a bracket of three points"
        raise UnsupportedParameterError(node, what, f"{method} is lowered with tol, bracket=(xa, xb) (brent, golden), "
                                                    f"bounds (bounded), {tol_name} and maxiter")
    result = dict(method=method, xtol=float(options.get(tol_name, tol_default)),
                  maxiter=int(options.get("maxiter", maxiter)), bracket=tuple(map(float, brack or (0.0, 1.0))))
    if method == "bounded":
        result["bounds"] = _checked_bounds(node, bounds)
    elif result["xtol"] < 0 and method == "brent":
        raise ValueError(f"tolerance should be >= 0, got {result['xtol']!r} (node: {node_label(node)})")
    return result


def _checked_bounds(node, bounds) -> tuple[float, float]:
    """The bounded method's bounds, with scipy's errors."""
    label = node_label(node)
    if bounds is None:
        raise ValueError(f"The `bounds` parameter is mandatory for method `bounded`. (node: {label})")
    if len(bounds) != 2:
        raise ValueError(f"bounds must have two elements. (node: {label})")
    low, high = bounds
    if not all(np.ndim(b) == 0 and np.isfinite(b) for b in (low, high)):
        raise ValueError(f"Optimization bounds must be finite scalars. (node: {label})")
    if low > high:
        raise ValueError(f"The lower bound exceeds the upper bound. (node: {label})")
    return float(low), float(high)


@register_lowering(MinimizeScalarOp)
def lower_minimize_scalar(ctx, node, x0, *args):
    """minimize_scalar with Brent's method or the golden section search: scipy's
    `bracket` from (0, 1) (x0 is not read, as in scipy), then the search; where no valid
    bracket is found, scipy's recovery: the best of the three points, success False.
    With the bounded method: scipy's `_minimize_scalar_bounded` (fminbound) in the bounds."""
    options = _scalar_options(node)
    dtype = node.inputs[0].type.dtype
    if np.dtype(dtype).kind != "f":
        raise UnsupportedParameterError(node, f"x of dtype {dtype}", "x must be real floats")
    fn, variable = _inner_function(ctx, node, 0, "minimize_scalar_objective")
    args = [operand for i, operand in enumerate((x0, *args)) if i in variable[1:]]
    checks = ctx.checks_of(fn)

    def evaluate(u: _S, flags):
        results = ctx.emit_call(fn, [convert(u.v, dtype), *args])
        return _S(convert(results[0], "float64")), [hlo.or_(a, b) for a, b in zip(flags, results[1:], strict=True)]

    if options["method"] == "bounded":
        x, _, success, flags = _fminbound(evaluate, options, [ir_constant(False)] * len(checks))
        for flag, check in zip(flags, checks, strict=True):
            ctx.runtime_check(flag, check.error, check.message)
        return convert(x.v, dtype), success.v
    search = _brent if options["method"] == "brent" else _golden
    x, _, success, runaway, flags = _scalar_minimum(evaluate, options, search, options["bracket"],
                                                    [ir_constant(False)] * len(checks))
    ctx.runtime_check(runaway.v, RuntimeError, _BRACKET_MESSAGE)
    for flag, check in zip(flags, checks, strict=True):
        ctx.runtime_check(flag, check.error, check.message)
    return convert(x.v, dtype), success.v


def _scalar_minimum(evaluate, options: dict, search, bracket: tuple, flags):
    """scipy's `_recover_from_bracket_error` around minimize_scalar's `search` (`_brent`
    or `_golden`, with `options`) from `bracket(func, *bracket)`: where no valid bracket
    is found, the lowest of the three points and its value (NaN if any is NaN),
    unconverged. Returns x, f(x), success, whether `bracket` ran out of iterations (scipy's
    RuntimeError, which nothing recovers) and the flags."""
    found, flags = _bracket(evaluate, *bracket, flags)
    xs, fs = [found[k] for k in ("xa", "xb", "xc")], [found[k] for k in ("fa", "fb", "fc")]
    xa, xb, xc = xs
    fa, fb, fc = fs
    valid = ((((fb < fc) & (fb <= fa)) | ((fb < fa) & (fb <= fc)))
             & (((xa < xb) & (xb < xc)) | ((xc < xb) & (xb < xa)))
             & _finite(xa) & _finite(xb) & _finite(xc))

    def searched():
        x, fx, nit, search_flags = search(evaluate, found, options, flags)
        success = (nit < float(options["maxiter"])) & x.eq(x) & fx.eq(fx)
        return [x.v, fx.v, success.v, *search_flags]

    def recovered():  # np.argmin: the first of the lowest
        best, low = xa, fa
        for x, f in ((xb, fb), (xc, fc)):
            best, low = _where(f < low, x, best), _where(f < low, f, low)
        nan = _S(False)
        for v in (*xs, *fs):
            nan = nan | v.ne(v)
        return [_where(nan, float("nan"), best).v, _where(nan, float("nan"), low).v, _S(False).v, *flags]

    types = [_f64(0.0).type, _f64(0.0).type, ir_constant(False).type] + [f.type for f in flags]
    out = if_else(valid.v, types, searched, recovered)
    return _S(out[0]), _S(out[1]), _S(out[2]), found["status"].eq(_STOPPED), out[3:]


def _bracket(evaluate, xa: float, xb: float, flags):
    """scipy's `bracket(func, xa, xb)`: downhill from (xa, xb) by golden steps and
    parabolic extrapolation (grow limit 110) until f(xb) is below both neighbours; at
    most 1,000 iterations (beyond, status _STOPPED: scipy's RuntimeError)."""
    xa, xb = _S(xa), _S(xb)
    fa, flags = evaluate(xa, flags)
    fb, flags = evaluate(xb, flags)
    swap = fa < fb
    xa, xb, fa, fb = _where(swap, xb, xa), _where(swap, xa, xb), _where(swap, fb, fa), _where(swap, fa, fb)
    xc = xb + _GOLD * (xb - xa)
    fc, flags = evaluate(xc, flags)
    first, second = 0.0, 1.0  # phases: a case's first evaluation, the extra golden one

    def plan(s):
        """The next iteration's trial point and case (scipy's four branches), or done."""
        xa, xb, xc, fa, fb, fc = (s[k] for k in ("xa", "xb", "xc", "fa", "fb", "fc"))
        tmp1, tmp2 = (xb - xa) * (fb - fc), (xb - xc) * (fb - fa)
        val = tmp2 - tmp1
        denom = _where(abs(val) < 1e-21, 2.0 * 1e-21, 2.0 * val)
        w = xb - ((xb - xc) * tmp2 - (xb - xa) * tmp1) / denom
        wlim = xb + 110.0 * (xc - xb)
        case = _where((w - xc) * (xb - w) > 0.0, 0.0, _where((w - wlim) * (wlim - xc) >= 0.0, 1.0, _where(
            (w - wlim) * (xc - w) > 0.0, 2.0, 3.0)))
        trial = _where(case.eq(1.0), wlim, _where(case.eq(3.0), xc + _GOLD * (xc - xb), w))
        going = fc < fb
        count = _S.of(s["iter"])
        status = _where(going, _where(count > 1000.0, _STOPPED, _GOING), _DONE)
        return dict(s, status=status, case=case, trial=trial, phase=first, iter=count + 1.0)

    def shift(s, w, fw):
        return dict(s, xa=s["xb"], xb=s["xc"], xc=w, fa=s["fb"], fb=s["fc"], fc=fw)

    def step(s, flags):
        fw, new_flags = evaluate(s["trial"], flags)
        w, case, in_first = s["trial"], s["case"], s["phase"].eq(first)
        # case A (a parabolic point between xb and xc): done if it is the lowest or above
        # xb, else one golden step more; case C (between xc and the limit): if lower than
        # xc, move on to it and take one golden step more
        a_low = case.eq(0.0) & (fw < s["fc"])
        a_high = case.eq(0.0) & ~(fw < s["fc"]) & (fw > s["fb"])
        a_more = case.eq(0.0) & ~a_low & ~a_high
        c_more = case.eq(2.0) & (fw < s["fc"])
        more = in_first & (a_more | c_more)
        done = in_first & (a_low | a_high)
        moved = shift(s, w, fw)
        c_state = dict(s, xb=s["xc"], xc=w, fb=s["fc"], fc=fw)
        extra = dict(_where_all(c_more, c_state, s), phase=second)
        extra["trial"] = extra["xc"] + _GOLD * (extra["xc"] - extra["xb"])
        finished = dict(s, status=_DONE, xa=_where(a_low, s["xb"], s["xa"]), xb=_where(a_low, w, s["xb"]),
                        fa=_where(a_low, s["fb"], s["fa"]), fb=_where(a_low, fw, s["fb"]),
                        xc=_where(a_high, w, s["xc"]), fc=_where(a_high, fw, s["fc"]))
        following = plan(moved)
        return _where_all(done, finished, _where_all(more, extra, following)), new_flags

    init = plan(dict(status=_GOING, case=0.0, trial=0.0, phase=first, iter=0.0, xa=xa, xb=xb, xc=xc, fa=fa, fb=fb, fc=fc))
    state, flags = _iterate(init, flags, 2 * 1000 + 4, step)
    return state, flags


def _where_all(cond: _S, a: dict, b: dict) -> dict:
    return {k: _where(cond, a[k], b[k]) for k in a}


def _parabola(x: _S, w: _S, v: _S, fx: _S, fw: _S, fv: _S) -> tuple[_S, _S]:
    """The step from x to the vertex of the parabola through (x, fx), (w, fw), (v, fv) as
    Brent's method computes it: p / q, with q >= 0."""
    tmp1 = (x - w) * (fx - fv)
    tmp2 = (x - v) * (fx - fw)
    p = (x - v) * tmp2 - (x - w) * tmp1
    q = 2.0 * (tmp2 - tmp1)
    return _where(q > 0.0, -p, p), abs(q)


def _brent(evaluate, bracket: dict, options: dict, flags):
    """scipy's `Brent.optimize` on the bracket: parabolic steps where they are useful,
    golden-section steps otherwise, until the interval is within xtol of x."""
    tol = options["xtol"]
    xa, xb, xc, fb = bracket["xa"], bracket["xb"], bracket["xc"], bracket["fb"]
    a, b = _where(xa < xc, xa, xc), _where(xa < xc, xc, xa)

    def step(s, flags):
        x, w, v, fx, fw, fv, a, b = (s[k] for k in ("x", "w", "v", "fx", "fw", "fv", "a", "b"))
        tol1 = tol * abs(x) + _MINTOL
        tol2 = 2.0 * tol1
        xmid = 0.5 * (a + b)
        stop = abs(x - xmid) < (tol2 - 0.5 * (b - a))
        golden_delta = _where(x >= xmid, a - x, b - x)
        p, tmp2 = _parabola(x, w, v, fx, fw, fv)
        useful = (p > tmp2 * (a - x)) & (p < tmp2 * (b - x)) & (abs(p) < abs(0.5 * tmp2 * s["deltax"]))
        rat = p * 1.0 / tmp2
        u = x + rat
        rat = _where(((u - a) < tol2) | ((b - u) < tol2), _where(xmid - x >= 0.0, tol1, -tol1), rat)
        golden = abs(s["deltax"]) <= tol1
        parabolic = ~golden & useful
        deltax = _where(parabolic, s["rat"], golden_delta)
        rat = _where(parabolic, rat, _CG * golden_delta)
        u = _where(abs(rat) < tol1, _where(rat >= 0.0, x + tol1, x - tol1), x + rat)
        fu, new_flags = evaluate(u, flags)
        flags = _gate(~stop, new_flags, flags)
        higher = fu > fx
        replace_w = (fu <= fw) | w.eq(x)
        replace_v = ~replace_w & ((fu <= fv) | v.eq(x) | v.eq(w))
        worse = dict(a=_where(u < x, u, a), b=_where(u < x, b, u), v=_where(replace_w, w, _where(replace_v, u, v)),
                     w=_where(replace_w, u, w), fv=_where(replace_w, fw, _where(replace_v, fu, fv)),
                     fw=_where(replace_w, fu, fw), x=x, fx=fx)
        better = dict(a=_where(u >= x, x, a), b=_where(u >= x, b, x), v=w, w=x, x=u, fv=fw, fw=fx, fx=fu)
        moved = _where_all(higher, worse, better)
        new = dict(s, **moved, deltax=deltax, rat=rat, nit=s["nit"] + 1.0)
        return _where_all(stop, dict(s, status=_DONE), new), flags

    init = dict(status=_GOING, x=xb, w=xb, v=xb, fx=fb, fw=fb, fv=fb, a=a, b=b, deltax=0.0, rat=0.0, nit=0.0)
    state, flags = _iterate(init, flags, options["maxiter"], step)
    return state["x"], state["fx"], state["nit"], flags


# --- RootOp: scipy.optimize.root's hybr, MINPACK's hybrj ---------------------------------

# hybr's options we follow (`tol` sets xtol); band and eps only shape hybrd's finite
# differences, which the exact Jacobian replaces.
# scipy.optimize.root's methods lowered: each one's options (`tol` sets xtol), those that
# change nothing here (the differences' band and step: the Jacobian is exact), and the
# MINPACK routine that runs it
_ROOT_SOLVERS = {
    "hybr": ({"xtol": 1.49012e-08, "maxfev": 0, "factor": 100.0, "col_deriv": False}, {"band", "eps"}),
    "lm": ({"xtol": 1.49012e-08, "ftol": 1.49012e-08, "gtol": 0.0, "maxiter": 0, "factor": 100.0,
            "col_deriv": False}, {"eps"}),
}
_TINY, _HUGE = 1e-150, 1e150  # the entries whose squares _enorm sums unscaled


_DF_SANE_DEFAULTS = {"ftol": 1e-8, "fatol": 1e-300, "maxfev": 1000, "M": 10, "sigma_eps": 1e-10, "sigma_0": 1.0,
                     "line_search": "cruz", "fnorm": None, "eta_strategy": None}


def _lower_df_sane(ctx, node, x0, args):
    """root(method="df-sane"): scipy's `_root_df_sane`, the derivative-free spectral
    residual method (La Cruz, Martinez, Raydan): steps along d = -sigma F with sigma
    the spectral coefficient s's / s'y (kept within [sigma_eps, 1 / sigma_eps] in
    magnitude), each found by a nonmonotone backtracking search that tries x + a d and
    x - a d in turn (Cruz's, against the largest of the last M merit values, or
    Cheng's), allowing the merit |F|^2 to grow by |F0|^2 / (1 + k)^2. It stops where |F|
    < ftol |F0| + fatol (success), or where the wrapper refuses an evaluation past
    `maxfev`. In x's dtype, as scipy keeps it; the Jacobian is not used (scipy warns,
    and PyTensor's perform, handing scipy the equations and Jacobian as one function,
    fails with jac=True)."""
    options = _method_options(node, "df-sane", "ftol", _DF_SANE_DEFAULTS, {"disp"}, "df-sane", "no callback")
    for name in ("fnorm", "eta_strategy"):
        if options[name] is not None:
            raise UnsupportedParameterError(node, f"options {name!r}", "a callable of scipy's cannot run inside the graph")
    search = options["line_search"]
    if search not in ("cheng", "cruz"):
        raise ValueError(f"Invalid value {search!r} for 'line_search' (node: {node_label(node)})")
    x_type = node.inputs[0].type
    if np.dtype(x_type.dtype).kind != "f":
        raise UnsupportedParameterError(node, f"x of dtype {x_type.dtype}", "x must be real floats")
    dtype = np.dtype(x_type.dtype)
    fn, variable = _inner_function(ctx, node, 0, "root_equations")
    operands = [operand for i, operand in enumerate((x0, *args)) if i in variable[1:]]
    checks = ctx.checks_of(fn)
    n = dim_product(shape_of(x0))

    def equations(x: ir.Value, flags):
        results = ctx.emit_call(fn, [reshape(x, shape_of(x0)), *operands])
        values = results[0]
        merged = [hlo.or_(a, b) for a, b in zip(flags, results[1:], strict=True)]
        return convert(reshape(values, [dim_product(shape_of(values))]), dtype), merged

    x = _S(reshape(x0, [n]))
    f0_values, flags = equations(x.v, [ir_constant(False)] * len(checks))
    m = shape_of(f0_values)[0]
    mismatch = "df-sane: the equations must be as many as the variables (x moves along -sigma F)"
    _check_sizes(ctx, node, m != n if _static(m, n) else compare(dim_value(m), dim_value(n), "NE"),
                 f"{mismatch}: {m} equations in {n} variables", mismatch, ValueError)
    F0 = _S(_resized(f0_values, [n]))

    def merit(F: _S) -> _S:  # np.linalg.norm(F) ** 2
        norm = _sqrt(_S(_dot(F.v, F.v)))
        return norm * norm

    def fitted_equations(point: ir.Value, flags):
        values, flags = equations(point, flags)
        return _resized(values, [n]), flags

    budgeted = _budgeted(fitted_equations, _S.of(float(options["maxfev"])), like=F0.v)
    ftol, fatol, eps = float(options["ftol"]), float(options["fatol"]), float(options["sigma_eps"])
    window = max(int(options["M"]), 1)
    f0 = merit(F0)
    scalar = lambda value: _in_dtype(value, dtype)  # noqa: E731

    def line_search(s, flags):
        """The nonmonotone search from x along d, one evaluation a step: x + a+ d, then
        x - a- d, the two lengths shrunk by their quadratic estimates within [0.1, 0.5]
        of themselves."""
        x, d, f_k = s["x"], s["d"], s["f"]
        ceiling = _where(_S(search == "cruz"), s["f_bar"], s["C"]) + s["eta"]

        def each(t, flags):
            plus = t["phase"].eq(0.0)
            alpha = _where(plus, t["alpha_p"], t["alpha_m"])
            point = _where(plus, x + alpha * d, x - alpha * d)
            F, flags = budgeted(point, flags)
            fp = merit(F)
            accepted = fp <= ceiling - (1e-4 * (alpha * alpha)) * f_k
            estimate = alpha * alpha * f_k / (fp + (2.0 * alpha - 1.0) * f_k)
            shrunk = dict(t, phase=1.0 - t["phase"], alpha_tp=_where(plus, estimate, t["alpha_tp"]),
                          alpha_p=_where(plus, t["alpha_p"], _clip(t["alpha_tp"], 0.1 * t["alpha_p"],
                                                                     0.5 * t["alpha_p"])),
                          alpha_m=_where(plus, t["alpha_m"], _clip(estimate, 0.1 * t["alpha_m"], 0.5 * t["alpha_m"])))
            found = dict(t, status=_S(_DONE), point=point, F=F, fp=fp)
            refused = _S(flags[-1])
            return _where_all(refused, dict(t, status=_S(_STOPPED)), _where_all(accepted, found, shrunk)), flags

        one = scalar(1.0)
        init = dict(status=_GOING, phase=0.0, alpha_p=one, alpha_m=one, alpha_tp=one, point=x, F=s["F"], fp=f_k)
        return _iterate(init, flags, float(options["maxfev"]) * 2.0 + 2.0, each)

    def step(s, flags):
        sigma = s["sigma"]
        big = 1.0 / eps
        sigma = _where(abs(sigma) > big, big * _S(hlo.sign(sigma.v)), _where(abs(sigma) < eps, scalar(eps), sigma))
        d = -sigma * s["F"]
        eta = f0 / _S(convert(((1.0 + s["k"]) * (1.0 + s["k"])).v, dtype))
        f_bar = _py_max_of(s["prev"], s["count"])
        found, flags = line_search(dict(s, d=d, eta=eta, f_bar=f_bar), flags)
        xp, Fp, fp = found["point"], found["F"], found["fp"]
        s_k, y_k = xp - s["x"], Fp - s["F"]
        prev, count = _push_window(s["prev"], s["count"], fp, window)
        nu = 0.85
        q_next = nu * s["Q"] + 1.0
        moved = dict(s, x=xp, F=Fp, f=fp, sigma=_S(_dot(s_k.v, s_k.v)) / _S(_dot(s_k.v, y_k.v)), k=s["k"] + 1.0,
                     prev=prev, count=count, C=(nu * s["Q"] * (s["C"] + eta) + fp) / q_next, Q=q_next)
        moved["status"] = _where(_sqrt(fp) < ftol * s["norm0"] + fatol, _DONE, _GOING)
        return _where_all(found["status"].eq(_DONE), moved, dict(s, status=_S(_STOPPED))), flags

    zero = scalar(0.0)
    prev = _S(broadcast_in_dim(zero.v, [window], []))
    prev = _put(prev, ir_constant(np.int64(0)), f0)
    norm0 = _sqrt(f0)
    init = dict(status=_where(norm0 < ftol * norm0 + fatol, _DONE, _GOING), x=x, F=F0, f=f0,
                sigma=scalar(float(options["sigma_0"])), k=zero, prev=prev, count=1.0, C=f0, Q=scalar(1.0),
                norm0=norm0)
    flags = [*flags, _f64(1.0), ir_constant(False)]
    state, flags = _iterate(init, flags, float(options["maxfev"]) + 1.0, step)
    for flag, check in zip(flags[:len(checks)], checks, strict=True):
        ctx.runtime_check(flag, check.error, check.message)
    return reshape(convert(state["x"].v, x_type.dtype), shape_of(x0)), state["status"].eq(_DONE).v


def _py_max_of(values: _S, count: _S) -> _S:
    """Python's max over the first `count` entries, in order: the first of the largest,
    NaN never taking another's place (nor losing its own, where it is first)."""
    index = lambda j: _S(j) + 1  # noqa: E731  (the entries after the first)

    def each(j, carried):
        best, item = _S(carried[0]), _entry(values, index(j).v)
        return [_where(item > best, item, best).v]

    first = _entry(values, ir_constant(np.int64(0)))
    return _S(_for((_S(convert(count.v, "int64")) - 1).v, [first.v], each)[0])


@register_lowering(RootOp)
def lower_root(ctx, node, x0, *args):
    """scipy.optimize.root with method "hybr", MINPACK's hybrj (Powell's hybrid method: a
    dogleg step in a trust region from the QR factors of the Jacobian, which Broyden's
    rank-one updates keep current until two steps fail), or "lm", MINPACK's lmder
    (Levenberg-Marquardt: the Jacobian's pivoted QR factors at each iterate, and the step
    that minimizes the linear model in a trust region, its parameter found by lmpar). Both
    run as scipy calls them: success is hybrj's info 1, lmder's 1 to 4."""
    method = node.op.method.lower()
    if method == "df-sane":
        return _lower_df_sane(ctx, node, x0, args)
    if method not in _ROOT_SOLVERS:
        raise UnsupportedParameterError(node, f"method {node.op.method!r}",
                                        "root is lowered with scipy's 'hybr' (the default), 'lm' and 'df-sane'")
    defaults, ignored = _ROOT_SOLVERS[method]
    options = _method_options(node, method, "xtol", defaults, ignored, method, "no callback or diag")
    x_type = node.inputs[0].type
    if np.dtype(x_type.dtype).kind != "f":
        raise UnsupportedParameterError(node, f"x of dtype {x_type.dtype}", "x must be real floats")
    if x_type.ndim > 1:
        raise UnsupportedParameterError(node, f"x of {x_type.ndim} dimensions",
                                        "scipy.optimize.root takes a scalar or a vector of variables")
    f_fn, variable = _inner_function(ctx, node, 0, "root_equations")
    j_fn, _ = _inner_function(ctx, node, 1, "root_jacobian")
    args = [operand for i, operand in enumerate((x0, *args)) if i in variable[1:]]
    checks = [*ctx.checks_of(f_fn), *ctx.checks_of(j_fn)]
    n = dim_product(shape_of(x0))
    work, variables = _entries(n)  # MINPACK returns an empty x at once

    def call(fn, x: _S, flags, start: int):
        """fn's results at the float64 vector x, its check flags or-ed into flags[start:]."""
        point = reshape(convert(variables(x), x_type.dtype), shape_of(x0))
        results = ctx.emit_call(fn, [point, *args])
        own = results[len(results) - len(ctx.checks_of(fn)):] if ctx.checks_of(fn) else []
        merged = [hlo.or_(a, b) for a, b in zip(flags[start:start + len(own)], own, strict=True)]
        return results, [*flags[:start], *merged, *flags[start + len(own):]]

    x = _S(at_least_one(convert(reshape(x0, [n]), "float64"), [0]))
    results, flags = call(f_fn, x, [ir_constant(False)] * len(checks), 0)
    m = dim_product(shape_of(results[0]))
    if method == "hybr":  # scipy's _check_func: as many equations as variables
        mismatch = "fsolve: there is a mismatch between the input and output shape of the 'func' argument"
        _check_sizes(ctx, node, m != n if _static(m, n) else compare(dim_value(m), dim_value(n), "NE"),
                     f"{mismatch}: Shape should be ({n},) but it is ({m},)",
                     f"{mismatch}: the equations are not as many as the variables")
        rows = work  # hybrj's loops read n equations (cut or padded where they are not, which raises)
    else:  # leastsq's checks: no fewer equations than variables; a Jacobian read by columns is square
        _check_sizes(ctx, node, n > m if _static(m, n) else compare(dim_value(n), dim_value(m), "GT"),
                     f"Improper input: func input vector length N={n} must not exceed func output vector length M={m}",
                     "Improper input: func input vector length N must not exceed func output vector length M")
        if options["col_deriv"]:
            mismatch = ("leastsq: there is a mismatch between the input and output shape of the 'Dfun' argument "
                        "'derivative'.")
            _check_sizes(ctx, node, m != n and n != 1 if _static(m, n) else hlo.and_(
                compare(dim_value(m), dim_value(n), "NE"), compare(dim_value(n), dim_value(1), "NE")),
                f"{mismatch}Shape should be ({n}, {m}) but it is ({m}, {n}).",
                f"{mismatch} The Jacobian read by columns (col_deriv) must be square")
        rows = dim_max(m, work)  # lmder's loops read all m equations (padded to n where they are fewer)

    def as_vector(equations_value) -> _S:
        f = reshape(equations_value, [dim_product(shape_of(equations_value))])
        return _S(convert(pad_end(f, [dim_sub(rows, shape_of(f)[0])]), "float64"))

    def equations(x: _S, flags):
        results, flags = call(f_fn, x, flags, 0)
        return as_vector(results[0]), flags

    def jacobian_t(x: _S, flags):
        """The Jacobian's columns as rows (A' in MINPACK's column-major terms). With
        col_deriv scipy hands MINPACK the (m, n) array's memory as that of A': its
        reshape to (n, m), the transpose where it is square."""
        results, flags = call(j_fn, x, flags, len(ctx.checks_of(f_fn)))
        jac = results[1]  # (equations, variables)
        shape = shape_of(jac)
        at = reshape(jac, shape[::-1]) if options["col_deriv"] else transpose(jac, [1, 0])
        return _S(convert(pad_end(at, [dim_sub(work, shape[1]), dim_sub(rows, shape[0])]), "float64")), flags

    solve = _hybrj if method == "hybr" else _lmder
    size = _S(convert(dim_value(n), "float64"))
    root, success, flags = solve(equations, jacobian_t, x, as_vector(results[0]), size, options, not node.op.jac, flags)
    for flag, check in zip(flags, checks, strict=True):
        ctx.runtime_check(flag, check.error, check.message)
    return reshape(convert(variables(root), x_type.dtype), shape_of(x0)), success.v


def _static(*dims) -> bool:
    return all(isinstance(d, int) for d in dims)


def _check_sizes(ctx, node, wrong, static_message: str, runtime_message: str, error=TypeError):
    """scipy's error (a TypeError unless told) where sizes do not fit: raised when
    lowering where they are static (`wrong` a bool), else checked at call time."""
    if isinstance(wrong, bool):
        if wrong:
            raise error(f"{static_message} (node: {node_label(node)})")
    else:
        ctx.runtime_check(wrong, error, runtime_message)


def _refreshed(s: dict, flags: list, refresh) -> tuple[dict, list]:
    """The state and check flags after `refresh(s, flags)` where s["stale"], else as they
    are: MINPACK's outer-loop head (a new Jacobian, its factors) in a `stablehlo.if`."""
    names = list(s)
    types = [s[k].v.type for k in names] + [v.type for v in flags]

    def refreshing():
        new, new_flags = refresh(s, flags)
        return [new[k].v for k in names] + new_flags

    out = if_else(s["stale"].v, types, refreshing, lambda: [s[k].v for k in names] + flags)
    return dict(zip(names, map(_S, out[:len(names)]))), out[len(names):]


def _hybrj(equations, jacobian_t, x: _S, f: _S, size: _S, options: dict, differences: bool, flags):
    """MINPACK's hybrj from x (f its equations' values): the root, success (its info 1)
    and the check flags. `equations(x, flags)` and `jacobian_t(x, flags)`
    evaluate the system and its Jacobian's transpose. `size`: the number of variables
    (x has one entry more where they are none); `differences`: count a Jacobian as
    `size` evaluations and allow hybrd's default, where scipy would difference."""
    n = shape_of(x.v)[0]
    maxfev = options["maxfev"] if options["maxfev"] > 0 else None
    if maxfev is None:  # scipy's default: 100 (hybrj) or 200 (hybrd) evaluations per variable and one
        maxfev = (size + 1.0) * (200.0 if differences else 100.0)
    cost = size if differences else 0.0
    xtol, factor = float(options["xtol"]), float(options["factor"])
    index = _S(iota([n], 0, "int64"))
    rows, cols = _S(iota([n, n], 0, "int64")), _S(iota([n, n], 1, "int64"))
    improper = size.eq(0.0) | (xtol < 0.0) | (factor <= 0.0)  # hybrj's info 0: x as it was

    def refresh(s, flags):
        """The outer loop's head: the Jacobian at x, its QR factors, Q' f; at the first
        iterate the scales and the trust region's radius."""
        at, flags = jacobian_t(s["x"], flags)
        at, rdiag, acnorm = _householder_qr(at)
        first = s["iter"].eq(1.0)
        scales = _where(acnorm.eq(0.0), 1.0, acnorm)
        xnorm = _enorm(scales * s["x"])
        delta = _where((factor * xnorm).eq(0.0), factor, factor * xnorm)
        diag = _where(first, scales, s["diag"])
        r = _where(cols > rows, _S(transpose(at.v, [1, 0])), _where(cols.eq(rows), _S(
            broadcast_in_dim(rdiag.v, [n, n], [1])), 0.0))
        qt = _form_q(at, index, rows, cols)
        return dict(s, qt=qt, r=r, qtf=_S(dot_general(qt.v, s["f"].v, ([1], [0]))),
                    diag=_fmax(diag, acnorm), xnorm=_where(first, xnorm, s["xnorm"]),
                    delta=_where(first, delta, s["delta"]), nfev=s["nfev"] + cost, jeval=_S(True),
                    stale=_S(False)), flags

    def step(s, flags):
        s, flags = _refreshed(s, flags, refresh)
        x, fnorm, diag, r, qtf, delta = s["x"], s["fnorm"], s["diag"], s["r"], s["qtf"], s["delta"]
        p = -_dogleg(r, diag, qtf, delta, index, n)
        x1 = x + p
        pnorm = _enorm(diag * p)
        delta = _where(s["iter"].eq(1.0), _fmin(delta, pnorm), delta)
        f1, flags = equations(x1, flags)
        nfev = s["nfev"] + 1.0
        fnorm1 = _enorm(f1)
        actred = _where(fnorm1 < fnorm, 1.0 - (fnorm1 / fnorm) * (fnorm1 / fnorm), -1.0)
        predicted = _S(dot_general(r.v, p.v, ([1], [0]))) + qtf
        temp = _enorm(predicted)
        prered = _where(temp < fnorm, 1.0 - (temp / fnorm) * (temp / fnorm), 0.0)
        ratio = _where(prered > 0.0, actred / prered, 0.0)
        # the trust region: halved after a poor step, grown after good ones
        poor = ratio < 0.1
        ncsuc = _where(poor, 0.0, s["ncsuc"] + 1.0)
        ncfail = _where(poor, s["ncfail"] + 1.0, 0.0)
        grown = _where((ratio >= 0.5) | (ncsuc > 1.0), _fmax(delta, pnorm / 0.5), delta)
        grown = _where(abs(ratio - 1.0) <= 0.1, pnorm / 0.5, grown)
        delta = _where(poor, 0.5 * delta, grown)
        accept = ratio >= 1e-4
        x = _where(accept, x1, x)
        xnorm = _where(accept, _enorm(diag * x1), s["xnorm"])
        f, fnorm = _where(accept, f1, s["f"]), _where(accept, fnorm1, fnorm)
        iteration = _where(accept, s["iter"] + 1.0, s["iter"])
        nslow1 = _where(actred >= 0.001, 0.0, s["nslow1"] + 1.0)
        nslow2 = _where(actred >= 0.1, 0.0, _where(s["jeval"], s["nslow2"] + 1.0, s["nslow2"]))
        # hybrj's tests, in its order (the last that holds sets info)
        converged = (delta <= xtol * xnorm) | fnorm.eq(0.0)
        stopped = ((nfev >= maxfev) | (0.1 * _fmax(0.1 * delta, pnorm) <= _EPSMCH * xnorm)
                   | nslow2.eq(5.0) | nslow1.eq(10.0))
        status = _where(converged, _DONE, _where(stopped, _STOPPED, _GOING))
        # Broyden's update of the factors, unless two steps failed (then a new Jacobian)
        qt_f1 = _S(dot_general(s["qt"].v, f1.v, ([1], [0])))
        v = (qt_f1 - predicted) / pnorm
        u = diag * ((diag * p) / pnorm)
        stale = ncfail.eq(2.0)
        # (computed on every step, kept where it goes on: skipped in an `if` where a step
        # stops or asks for a new Jacobian, steady-state-20's median call was the same)
        r1, qt1, qtf1 = _rank_one_update(r, u, v, s["qt"], _where(accept, qt_f1, qtf), index)
        keep = stale | ~status.eq(_GOING)
        new = dict(status=status, x=x, f=f, fnorm=fnorm, xnorm=xnorm, delta=delta, iter=iteration, ncsuc=ncsuc,
                   ncfail=ncfail, nslow1=nslow1, nslow2=nslow2, nfev=nfev, diag=diag, r=_where(keep, r, r1),
                   qt=_where(keep, s["qt"], qt1), qtf=_where(keep, qtf, qtf1), jeval=_S(False), stale=stale)
        return new, flags

    zeros = _S(splat(_f64(0.0), x.v))
    init = dict(status=_where(improper, _STOPPED, _GOING), x=x, f=f, fnorm=_enorm(f), xnorm=0.0, delta=0.0,
                iter=1.0, ncsuc=0.0, ncfail=0.0, nslow1=0.0, nslow2=0.0, nfev=1.0, diag=zeros + 1.0,
                r=_outer(zeros, zeros), qt=_outer(zeros, zeros), qtf=zeros, jeval=True, stale=True)
    state, flags = _iterate(init, flags, maxfev if isinstance(maxfev, _S) else int(maxfev), step)
    return state["x"], state["status"].eq(_DONE), flags


_DWARF = float(np.finfo(np.float64).tiny)  # MINPACK's dpmpar(2), the smallest normal number


def _lmder(equations, jacobian_t, x: _S, f: _S, size: _S, options: dict, differences: bool, flags):
    """MINPACK's lmder from x (f its m equations' values, m >= the n variables): the
    solution, success (its info 1 to 4, as scipy's leastsq counts it) and the check
    flags. Each iteration of lmder's outer loop factors the Jacobian (`_householder_qr`,
    pivoted) and forms Q'f; each of its inner loop's steps solves for the
    Levenberg-Marquardt step in the trust region (`_lmpar`) and evaluates the equations
    there, until one reduces the sum of squares enough to be taken. One `_iterate` step
    is one inner step, the outer loop's head first where the last step was taken."""
    n = shape_of(x.v)[0]
    maxfev = int(options["maxiter"]) if options["maxiter"] > 0 else None
    if maxfev is None:  # scipy's default: 100 (lmder) or 200 (lmdif) evaluations per variable and one
        maxfev = (size + 1.0) * (200.0 if differences else 100.0)
    cost = size if differences else 0.0
    ftol, xtol, gtol, factor = (float(options[k]) for k in ("ftol", "xtol", "gtol", "factor"))
    index = _S(iota([n], 0, "int64"))
    rows, cols = _S(iota([n, n], 0, "int64")), _S(iota([n, n], 1, "int64"))
    improper = size.eq(0.0) | (ftol < 0.0) | (xtol < 0.0) | (gtol < 0.0) | (factor <= 0.0)  # info 0

    def refresh(s, flags):
        """The outer loop's head: the Jacobian's pivoted QR factors at x, Q'f, the scaled
        gradient's largest cosine with f (its test, info 4), the scales; at the first
        iterate the trust region's radius."""
        at, flags = jacobian_t(s["x"], flags)
        at, rdiag, acnorm, ipvt = _householder_qr(at, pivot=True)
        qtf = _S(slice_axis(_apply_reflections(at, s["f"]).v, 0, 0, n))
        square = _S(slice_axis(at.v, 1, 0, n))
        rt = _where(cols < rows, square, _where(cols.eq(rows), _S(broadcast_in_dim(rdiag.v, [n, n], [0])), 0.0))
        fnorm = s["fnorm"]
        scaled = _S(dot_general(rt.v, (qtf / fnorm).v, ([1], [0]))) / _gather(acnorm, ipvt)
        cosines = _where(_gather(acnorm, ipvt).ne(0.0) & ~_isnan(scaled), abs(scaled), 0.0)
        gnorm = _where(fnorm.ne(0.0), _S(fold(cosines.v, [0], hlo.maximum, 0.0)), 0.0)
        first = s["iter"].eq(1.0)
        scales = _where(acnorm.eq(0.0), 1.0, acnorm)
        xnorm = _enorm(scales * s["x"])
        delta = _where((factor * xnorm).eq(0.0), factor, factor * xnorm)
        diag = _fmax(_where(first, scales, s["diag"]), acnorm)
        return dict(s, rt=rt, ipvt=ipvt, inverse=_inverse_permutation(ipvt), qtf=qtf, gnorm=gnorm, diag=diag,
                    xnorm=_where(first, xnorm, s["xnorm"]),
                    delta=_where(first, delta, s["delta"]), nfev=s["nfev"] + cost, stale=_S(False),
                    status=_where(gnorm <= gtol, _DONE, _GOING)), flags

    def step(s, flags):
        s, flags = _refreshed(s, flags, refresh)
        x, fnorm, diag, rt, ipvt, delta = s["x"], s["fnorm"], s["diag"], s["rt"], s["ipvt"], s["delta"]
        p, par = _lmpar(rt, ipvt, s["inverse"], diag, s["qtf"], delta, s["par"])
        p = -p
        x1 = x + p
        pnorm = _enorm(diag * p)
        delta = _where(s["iter"].eq(1.0), _fmin(delta, pnorm), delta)
        f1, new_flags = equations(x1, flags)
        nfev = s["nfev"] + 1.0
        fnorm1 = _enorm(f1)
        actred = _where(0.1 * fnorm1 < fnorm, 1.0 - (fnorm1 / fnorm) * (fnorm1 / fnorm), -1.0)
        temp1 = _enorm(_S(dot_general(rt.v, _gather(p, ipvt).v, ([0], [0])))) / fnorm
        temp2 = (_sqrt(par) * pnorm) / fnorm
        prered = temp1 * temp1 + temp2 * temp2 / 0.5
        dirder = -(temp1 * temp1 + temp2 * temp2)
        ratio = _where(prered.ne(0.0), actred / prered, 0.0)
        # the trust region: shrunk after a poor step (and the parameter raised), grown after
        # a good one
        poor = ratio <= 0.25
        temp = _where(actred < 0.0, (0.5 * dirder) / (dirder + 0.5 * actred), 0.5)
        temp = _where((0.1 * fnorm1 >= fnorm) | (temp < 0.1), 0.1, temp)
        good = par.eq(0.0) | (ratio >= 0.75)
        delta = _where(poor, temp * _fmin(delta, pnorm / 0.1), _where(good, pnorm / 0.5, delta))
        par = _where(poor, par / temp, _where(good, par * 0.5, par))
        accept = ratio >= 1e-4
        x = _where(accept, x1, x)
        xnorm = _where(accept, _enorm(diag * x1), s["xnorm"])
        # lmder's tests, in its order (the last that holds sets info)
        reduced = (abs(actred) <= ftol) & (prered <= ftol) & (0.5 * ratio <= 1.0)
        converged = reduced | (delta <= xtol * xnorm)
        stopped = ((nfev >= maxfev) | ((abs(actred) <= _EPSMCH) & (prered <= _EPSMCH) & (0.5 * ratio <= 1.0))
                   | (delta <= _EPSMCH * xnorm) | (s["gnorm"] <= _EPSMCH))
        new = dict(s, status=_where(converged, _DONE, _where(stopped, _STOPPED, _GOING)), x=x,
                   f=_where(accept, f1, s["f"]), fnorm=_where(accept, fnorm1, fnorm), xnorm=xnorm, delta=delta,
                   par=par, iter=_where(accept, s["iter"] + 1.0, s["iter"]), nfev=nfev, stale=accept)
        going = s["status"].eq(_GOING)  # not where the head found the gradient flat (info 4)
        return _where_all(going, new, s), _gate(going, new_flags, flags)

    zeros = _S(splat(_f64(0.0), x.v))
    init = dict(status=_where(improper, _STOPPED, _GOING), x=x, f=f, fnorm=_enorm(f), xnorm=0.0, delta=0.0,
                par=0.0, gnorm=0.0, iter=1.0, nfev=1.0, diag=zeros + 1.0, rt=_outer(zeros, zeros),
                ipvt=index, inverse=index, qtf=zeros, stale=True)
    state, flags = _iterate(init, flags, maxfev + 1.0 if isinstance(maxfev, _S) else maxfev + 1, step)
    return state["x"], state["status"].eq(_DONE), flags


def _gather(v: _S, order: _S) -> _S:
    """v[order] for an index vector `order`."""
    return _S(take_along_axis(v.v, order.v, 0))


def _apply_reflections(at: _S, f: _S) -> _S:
    """Q'f from qrfac's Householder vectors (the rows of `at`, from their diagonal on)."""
    index = _S(iota([shape_of(f.v)[0]], 0, "int64"))

    def body(j, values):
        (f,) = map(_S, values)
        below = index >= _S(j)
        v = _where(below, _entry(at, j), 0.0)
        vj = _entry(v, j)
        reflected = _where(below, f + v * (-_S(_dot(v.v, f.v)) / vj), f)
        return [_where(vj.ne(0.0), reflected, f).v]

    return _S(_for(shape_of(at.v)[0], [f.v], body)[0])


def _lmpar(rt: _S, ipvt: _S, inverse: _S, diag: _S, qtb: _S, delta: _S, par: _S):
    """MINPACK's lmpar: the step x solving R z = Q'f, sqrt(par) D x = 0 in the least
    squares sense (x = P z) whose scaled length is within a tenth of the trust region's
    radius `delta`, or the Gauss-Newton step where that is shorter; `par` refined from
    its last value by Newton's iteration on the length, in at most ten solves
    (`_qrsolv`). `rt` holds R's columns as rows; `inverse` undoes the order `ipvt`.
    Returns x and par."""
    n = shape_of(qtb.v)[0]
    index = _S(iota([n], 0, "int64"))
    r = _S(transpose(rt.v, [1, 0]))
    rdiag = _S(diagonal(rt.v))
    scale = _gather(diag, ipvt)
    singular = _S(fold(_where(rdiag.eq(0.0), index, _S(dim_value(n))).v, [0], hlo.minimum, np.iinfo(np.int64).max))

    def back(j, values):  # the Gauss-Newton step, by columns; a rank-deficient R's least squares one
        (w,) = map(_S, values)
        wj = _entry(w, j) / _entry(rdiag, j)
        solved = _where(index < _S(j), w - _entry(rt, j) * wj, _put(w, j, wj))
        return [_where(_S(j) < singular, solved, w).v]

    gauss_newton = _S(_for(n, [_where(index < singular, qtb, 0.0).v], back, reverse=True)[0])
    x = _gather(gauss_newton, inverse)
    dxnorm = _enorm(diag * x)
    fp = dxnorm - delta

    def forward(j, values):  # R' w = v by rows
        (w,) = map(_S, values)
        total = _S(_dot(_where(index < _S(j), _entry(rt, j), 0.0).v, w.v))
        return [_put(w, j, (_entry(w, j) - total) / _entry(rdiag, j)).v]

    # bounds on the parameter: the Newton step's (where R is not singular) and the gradient's
    newton = _S(_for(n, [(scale * (_gather(diag * x, ipvt) / dxnorm)).v], forward)[0])
    temp = _enorm(newton)
    parl = _where(singular.eq(_S(dim_value(n))), ((fp / delta) / temp) / temp, 0.0)
    gnorm = _enorm(_S(dot_general(rt.v, qtb.v, ([1], [0]))) / scale)
    paru = gnorm / delta
    paru = _where(paru.eq(0.0), _DWARF / _fmin(delta, 0.1), paru)
    par = _fmin(_fmax(par, parl), paru)
    par = _where(par.eq(0.0), gnorm / dxnorm, par)

    def step(s, _):
        par = _where(s["par"].eq(0.0), _fmax(_DWARF, s["paru"] * 0.001), s["par"])
        x, sdiag, s_upper = _qrsolv(r, ipvt, inverse, _sqrt(par) * diag, qtb)
        dxnorm = _enorm(diag * x)
        fp = dxnorm - delta
        done = ((abs(fp) <= 0.1 * delta) | (s["parl"].eq(0.0) & (fp <= s["fp"]) & (s["fp"] < 0.0))
                | s["iterations"].eq(9.0))

        def correct(j, values):  # the Newton correction: S' w = v by columns
            (w,) = map(_S, values)
            wj = _entry(w, j) / _entry(sdiag, j)
            return [_put(_where(index > _S(j), w - _entry(s_upper, j) * wj, w), j, wj).v]

        w = _S(_for(n, [(scale * (_gather(diag * x, ipvt) / dxnorm)).v], correct)[0])
        temp = _enorm(w)
        parc = ((fp / delta) / temp) / temp
        parl = _where(fp > 0.0, _fmax(s["parl"], par), s["parl"])
        paru = _where(fp < 0.0, _fmin(s["paru"], par), s["paru"])
        going = dict(s, par=_fmax(parl, par + parc), parl=parl, paru=paru, fp=fp, x=x)
        return dict(_where_all(done, dict(going, par=par, parl=s["parl"], paru=s["paru"]), going),
                    status=_where(done, _DONE, _GOING)), []

    init = dict(status=_where(fp <= 0.1 * delta, _DONE, _GOING), par=par, parl=parl, paru=paru, fp=fp, x=x)
    state, _ = _iterate(init, [], 10, step)
    return state["x"], _where(fp <= 0.1 * delta, 0.0, state["par"])


def _inverse_permutation(order: _S) -> _S:
    """The positions that undo `order`: v[order][inverse] is v."""
    n = shape_of(order.v)[0]
    positions = _S(iota([n, n], 0, "int64"))
    hits = _S(broadcast_in_dim(order.v, [n, n], [0])).eq(_S(iota([n, n], 1, "int64")))
    return _S(fold(_where(hits, positions, _S(ir_constant(np.int64(0)))).v, [0], hlo.add, 0))


def _qrsolv(r: _S, ipvt: _S, inverse: _S, d: _S, qtb: _S):
    """MINPACK's qrsolv: x solving A x = b, D x = 0 in the least squares sense, from
    R (upper triangular, `r`'s rows), P (`ipvt`, undone by `inverse`) and Q'b: Givens
    rotations eliminate P'DP from below R, giving S with S'S = P'(A'A + DD)P, and x = P z
    from S z = the rotated Q'b (a least squares z where S is singular). Returns x, S's
    diagonal and S (its rows, upper triangular; the diagonal aside)."""
    n = shape_of(qtb.v)[0]
    index = _S(iota([n], 0, "int64"))
    scale = _gather(d, ipvt)

    def eliminate(j, values):  # row j of P'DP, one rotation against each row of S from j on
        w, wa, sdiag = map(_S, values)
        dj = _entry(scale, j)
        spike = _where(index.eq(_S(j)), dj, 0.0)

        def rotate(t, values):
            w, wa, spike, qtbpj = map(_S, values)
            k = hlo.add(j, t)
            row, sk = _entry(w, k), _entry(spike, k)
            cos, sin, _ = _givens(_entry(row, k), sk)
            after = index > _S(k)
            wak = _entry(wa, k)
            rotated = _put(_where(after, cos * row + sin * spike, row), k, cos * _entry(row, k) + sin * sk)
            moved = dict(w=_put(w, k, rotated), wa=_put(wa, k, cos * wak + sin * qtbpj),
                         spike=_where(after, -sin * row + cos * spike, spike), qtbpj=-sin * wak + cos * qtbpj)
            kept = dict(w=w, wa=wa, spike=spike, qtbpj=qtbpj)
            return [_where(sk.ne(0.0), moved[key], kept[key]).v for key in ("w", "wa", "spike", "qtbpj")]

        rotated = _for(hlo.subtract(dim_value(n), j), [w.v, wa.v, spike.v, _f64(0.0)], rotate)
        w, wa = (_where(dj.ne(0.0), _S(new), old) for new, old in zip(rotated[:2], (w, wa)))
        return [w.v, wa.v, _put(sdiag, j, _entry(_entry(w, j), j)).v]

    w, wa, sdiag = map(_S, _for(n, [r.v, qtb.v, splat(_f64(0.0), qtb.v)], eliminate))
    singular = _S(fold(_where(sdiag.eq(0.0), index, _S(dim_value(n))).v, [0], hlo.minimum, np.iinfo(np.int64).max))
    solvable = index < singular

    def back(j, values):  # S z = wa, by rows, up to the first zero pivot
        (z,) = map(_S, values)
        total = _S(_dot(_where((index > _S(j)) & solvable, _entry(w, j), 0.0).v, z.v))
        solved = _put(z, j, (_entry(z, j) - total) / _entry(sdiag, j))
        return [_where(_S(j) < singular, solved, z).v]

    z = _S(_for(n, [_where(solvable, wa, 0.0).v], back, reverse=True)[0])
    return _gather(z, inverse), sdiag, w


def _for(count, values: list, body, reverse: bool = False) -> list:
    """A counted `stablehlo.while`: body(j, values) for j = 0 .. count - 1 (reverse: from
    count - 1 down), j a 0-d i64; count an int or a 0-d i64 value."""
    count = dim_value(count)
    one = ir_constant(np.int64(1))

    def cond(v):
        return _lt(v[0], count)

    def next_values(v):
        j = hlo.subtract(hlo.subtract(count, v[0]), one) if reverse else v[0]
        return [hlo.add(v[0], one), *body(j, list(v[1:]))]

    return while_loop([ir_constant(np.int64(0)), *values], cond, next_values)[1:]


def _entry(v: _S, j) -> _S:
    """v[j] (a row, for a matrix) at the 0-d i64 position j."""
    return _S(read_entry(v.v, [j]))


def _put(v: _S, j, value) -> _S:
    return _S(write_entry(v.v, _S.of(value).v, [j]))


def _outer(a: _S, b: _S) -> _S:
    dims = [*shape_of(a.v), *shape_of(b.v)]
    return _S(hlo.multiply(broadcast_in_dim(a.v, dims, [0]), broadcast_in_dim(b.v, dims, [1])))


def _enorm(v: _S, axis: int | None = None) -> _S:
    """MINPACK's enorm, the Euclidean norm over `axis` (all of v by default), that neither
    overflows nor underflows: the plain sum of squares (enorm's own sum where every entry
    is moderate, and equal to its scaled sums up to rounding elsewhere) where the largest
    entry's square is a normal number, else the squares of the entries scaled by it."""
    axes = list(range(_rank(v.v))) if axis is None else [axis]
    kept = [d for d in range(_rank(v.v)) if d not in axes]
    a = abs(v)
    largest = _S(fold(a.v, axes, hlo.maximum, 0.0))
    plain = _sqrt(_S(fold((a * a).v, axes, hlo.add, 0.0)))
    spread = _S(broadcast_in_dim(largest.v, shape_of(v.v), kept))
    ratio = _where(a.eq(spread), 1.0, a / spread)  # (1 for an infinite largest entry)
    scaled = largest * _sqrt(_S(fold((ratio * ratio).v, axes, hlo.add, 0.0)))
    return _where((largest > _TINY) & (largest < _HUGE), plain, _where(largest.eq(0.0), 0.0, scaled))


def _householder_qr(at: _S, pivot: bool = False):
    """MINPACK's qrfac on A's columns (the n rows of `at`, each of m >= n entries):
    Householder vectors in A's lower trapezoid, R above the diagonal and its diagonal
    `rdiag`; `acnorm`, the columns' norms. With `pivot`, before each reflection the
    column of largest remaining norm (the first of them) is swapped into place, the norms
    downdated after it (and recomputed where they lost most of their digits); `ipvt`,
    the columns' order, is returned too."""
    n, m = shape_of(at.v)
    index, rows, cols = _S(iota([m], 0, "int64")), _S(iota([n, m], 0, "int64")), _S(iota([n, m], 1, "int64"))
    order = _S(iota([n], 0, "int64"))
    acnorm = _enorm(at, axis=1)

    def swap(at: _S, rdiag: _S, wa: _S, ipvt: _S, j):
        # the first of the largest norms from j on (qrfac's strict comparisons: NaN is
        # never taken, and nothing replaces a NaN at j)
        candidate = (order >= _S(j)) & ~_isnan(rdiag)
        largest = _S(fold(_where(candidate, rdiag, -np.inf).v, [0], hlo.maximum, -np.inf))
        first = _S(fold(_where(candidate & rdiag.eq(largest), order, _S(dim_value(n))).v, [0], hlo.minimum,
                        np.iinfo(np.int64).max))
        k = _where(_isnan(_entry(rdiag, j)), _S(j), first).v
        moved = _put(_put(at, k, _entry(at, j)), j, _entry(at, k))
        ipvt = _put(_put(ipvt, k, _entry(ipvt, j)), j, _entry(ipvt, k))
        return moved, _put(rdiag, k, _entry(rdiag, j)), _put(wa, k, _entry(wa, j)), ipvt

    def downdate(reflected: _S, rdiag: _S, wa: _S, j):
        """The norms of the columns after j, less their entry in row j."""
        after = order > _S(j)
        temp = _S(reshape(dynamic_index(reflected.v, [1], [j]), [n])) / rdiag
        shrunk = rdiag * _sqrt(_fmax(0.0, 1.0 - temp * temp))
        ratio = shrunk / wa
        lost = 0.05 * (ratio * ratio) <= _EPSMCH
        rest = _enorm(_where(cols > _S(j), reflected, 0.0), axis=1)
        update = after & rdiag.ne(0.0)
        return _where(update, _where(lost, rest, shrunk), rdiag), _where(update & lost, rest, wa)

    def body(j, values):
        at, rdiag, *pivoting = map(_S, values)  # pivoting: wa (the norms last computed), ipvt
        if pivot:
            at, rdiag, wa, ipvt = swap(at, rdiag, *pivoting, j)
        column = _entry(at, j)
        below = index >= _S(j)
        v = _where(below, column, 0.0)
        ajnorm = _enorm(v)
        ajnorm = _where(_entry(column, j) < 0.0, -ajnorm, ajnorm)
        v = v / ajnorm + _where(index.eq(_S(j)), 1.0, 0.0)
        temp = _S(dot_general(at.v, v.v, ([1], [0]))) / _entry(v, j)
        reflected = _where((rows > _S(j)) & (cols >= _S(j)), at - _outer(temp, v), at)
        reflected = _put(reflected, j, _where(below, v, column))
        zero = ajnorm.eq(0.0)
        if pivot:
            downdated = downdate(reflected, rdiag, wa, j)
            rdiag, pivoting = _where(zero, rdiag, downdated[0]), [_where(zero, wa, downdated[1]), ipvt]
        return [_where(zero, at, reflected).v, _put(rdiag, j, -ajnorm).v, *(value.v for value in pivoting)]

    if not pivot:
        at, rdiag = map(_S, _for(n, [at.v, splat(_f64(0.0), acnorm.v)], body))
        return at, rdiag, acnorm
    at, rdiag, _, ipvt = map(_S, _for(n, [at.v, acnorm.v, acnorm.v, order.v], body))
    return at, rdiag, acnorm, ipvt


def _form_q(at: _S, index: _S, rows: _S, cols: _S) -> _S:
    """MINPACK's qform: Q from qrfac's Householder vectors, its columns as rows."""
    def body(k, values):
        (q,) = map(_S, values)
        below = index >= _S(k)
        w = _where(below, _entry(q, k), 0.0)
        q = _put(q, k, _where(below, _where(index.eq(_S(k)), 1.0, 0.0), _entry(q, k)))
        wk = _entry(w, k)
        temp = _S(dot_general(q.v, w.v, ([1], [0]))) / wk
        block = (rows >= _S(k)) & (cols >= _S(k)) & wk.ne(0.0)
        return [_where(block, q - _outer(temp, w), q).v]

    return _S(_for(shape_of(at.v)[0], [_where(cols < rows, 0.0, at).v], body, reverse=True)[0])


def _dogleg(r: _S, diag: _S, qtb: _S, delta: _S, index: _S, n) -> _S:
    """MINPACK's dogleg: the Gauss-Newton step (R x = Q'f, a zero pivot replaced by
    eps times its column's largest entry) where it is inside the trust region, else
    the point of the dogleg path from the scaled gradient's minimizer to it that is."""
    column_max = _S(fold(_where(_isnan(r), 0.0, abs(r)).v, [0], hlo.maximum, 0.0))  # C's fmax skips NaN

    def back(j, values):
        (x,) = map(_S, values)
        row = _entry(r, j)
        total = _S(_dot(_where(index > _S(j), row, 0.0).v, x.v))
        pivot = _entry(row, j)
        floor = _EPSMCH * _entry(column_max, j)
        pivot = _where(pivot.eq(0.0), _where(floor.eq(0.0), _EPSMCH, floor), pivot)
        return [_put(x, j, (_entry(qtb, j) - total) / pivot).v]

    x = _S(_for(n, [splat(_f64(0.0), qtb.v)], back, reverse=True)[0])
    qnorm = _enorm(diag * x)
    gradient = _S(dot_general(r.v, qtb.v, ([0], [0]))) / diag
    gnorm = _enorm(gradient)
    direction = (gradient / gnorm) / diag
    temp = _enorm(_S(dot_general(r.v, direction.v, ([1], [0]))))
    sgnorm = (gnorm / temp) / temp
    bnorm = _enorm(qtb)
    temp = (bnorm / gnorm) * (bnorm / qnorm) * (sgnorm / delta)
    temp = temp - (delta / qnorm) * (sgnorm / delta) * (sgnorm / delta) + _sqrt(
        (temp - (delta / qnorm)) * (temp - (delta / qnorm))
        + (1.0 - (delta / qnorm) * (delta / qnorm)) * (1.0 - (sgnorm / delta) * (sgnorm / delta)))
    alpha = _where(sgnorm < delta, ((delta / qnorm) * (1.0 - (sgnorm / delta) * (sgnorm / delta))) / temp, 0.0)
    flat = gnorm.eq(0.0)
    alpha = _where(flat, delta / qnorm, alpha)
    sgnorm = _where(flat, 0.0, sgnorm)
    direction = _where(flat, gradient, direction)
    scale = (1.0 - alpha) * _fmin(sgnorm, delta)
    return _where(qnorm <= delta, x, scale * direction + alpha * x)


def _givens(a: _S, b: _S):
    """MINPACK's rotation eliminating b against a: cos, sin and tau, the number that
    stores it (sin where |sin| <= |cos|, else 1 / cos)."""
    steep = abs(a) < abs(b)
    cotan, tan = a / b, b / a
    sin_steep = 0.5 / _sqrt(0.25 + 0.25 * cotan * cotan)
    cos_steep = sin_steep * cotan
    cos_flat = 0.5 / _sqrt(0.25 + 0.25 * tan * tan)
    sin_flat = cos_flat * tan
    tau_steep = _where(abs(cos_steep) * float(np.finfo(np.float64).max) > 1.0, 1.0 / cos_steep, 1.0)
    return (_where(steep, cos_steep, cos_flat), _where(steep, sin_steep, sin_flat),
            _where(steep, tau_steep, sin_flat))


def _rotation(tau: _S):
    """The rotation a stored tau stands for: cos, sin."""
    big = abs(tau) > 1.0
    cos_big = 1.0 / tau
    return (_where(big, cos_big, _sqrt(1.0 - tau * tau)), _where(big, _sqrt(1.0 - cos_big * cos_big), tau))


def _rank_one_update(r: _S, u: _S, v: _S, qt: _S, qtf: _S, index: _S):
    """MINPACK's r1updt on R' (R's rows are the lower triangular S's columns), the
    rotations that take S + u v' back to lower triangular, and r1mpyq's on Q (its
    columns the rows of `qt`) and on the row Q'f: each rotation as r1mpyq rebuilds it
    from the tau r1updt stores. Returns R, Q's columns and Q'f, updated."""
    n = shape_of(r.v)[0]
    last = dim_sub(n, 1)
    end = dim_value(last)
    w = _put(_S(splat(_f64(0.0), v.v)), end, _entry(_entry(r, end), end))
    q = _S(hlo.concatenate([qt.v, reshape(qtf.v, [n, 1])], 1))  # rotated alike

    def turn(q, j, tau, sign):
        """Q's columns j and n - 1 (and Q'f's entries) rotated by the tau's rotation."""
        cos, sin = _rotation(tau)
        qj, qn = _entry(q, j), _entry(q, end)
        return _put(_put(q, end, sign * sin * qj + cos * qn), j, cos * qj - sign * sin * qn)

    def spread(j, values):  # rotate v into a multiple of its last entry, spreading a spike into w
        r, v, w, q = map(_S, values)
        vj, vn = _entry(v, j), _entry(v, end)
        cos, sin, tau = _givens(vn, vj)
        row, below = _entry(r, j), index >= _S(j)
        moved = dict(r=_put(r, j, _where(below, cos * row - sin * w, row)),
                     v=_put(_put(v, end, sin * vj + cos * vn), j, tau),
                     w=_where(below, sin * row + cos * w, w), q=turn(q, j, tau, 1.0))
        kept = dict(r=r, v=v, w=w, q=q)
        return [_where(vj.ne(0.0), moved[k], kept[k]).v for k in ("r", "v", "w", "q")]

    r, v, w, q = map(_S, _for(last, [r.v, v.v, w.v, q.v], spread, reverse=True))
    w = w + _entry(v, end) * u

    def eliminate(j, values):  # rotate the spike in w away
        r, w, q = map(_S, values)
        row, wj = _entry(r, j), _entry(w, j)
        cos, sin, tau = _givens(_entry(row, j), wj)
        below = index >= _S(j)
        moved = dict(r=_put(r, j, _where(below, cos * row + sin * w, row)),
                     w=_put(_where(below, cos * w - sin * row, w), j, tau), q=turn(q, j, tau, -1.0))
        kept = dict(r=r, w=w, q=q)
        return [_where(wj.ne(0.0), moved[k], kept[k]).v for k in ("r", "w", "q")]

    r, w, q = map(_S, _for(last, [r.v, w.v, q.v], eliminate))
    r = _put(r, end, _put(_entry(r, end), end, _entry(w, end)))
    return r, _S(slice_axis(q.v, 1, 0, n)), _S(reshape(slice_axis(q.v, 1, n, dim_add(n, 1)), [n]))


_GOLDEN_R = 0.61803399  # scipy's golden section: the golden ratio's conjugate, and 1 - it
_GOLDEN_C = 1.0 - _GOLDEN_R


def _golden(evaluate, bracket: dict, options: dict, flags):
    """scipy's `_minimize_scalar_golden` on the bracket: the interval (xa, xc) shrunk by
    the golden ratio around the lower of two inner points until it is within xtol of
    them. Returns the lower point, its value, the iterations and the flags."""
    tol = options["xtol"]
    xa, xb, xc = bracket["xa"], bracket["xb"], bracket["xc"]
    wide = abs(xc - xb) > abs(xb - xa)
    x1 = _where(wide, xb, xb - _GOLDEN_C * (xb - xa))
    x2 = _where(wide, xb + _GOLDEN_C * (xc - xb), xb)
    f1, flags = evaluate(x1, flags)
    f2, flags = evaluate(x2, flags)

    def step(s, flags):
        x0, x1, x2, x3, f1, f2 = (s[k] for k in ("x0", "x1", "x2", "x3", "f1", "f2"))
        stop = abs(x3 - x0) <= tol * (abs(x1) + abs(x2))
        right = f2 < f1  # the minimum is right of x1: drop x0
        u = _where(right, _GOLDEN_R * x2 + _GOLDEN_C * x3, _GOLDEN_R * x1 + _GOLDEN_C * x0)
        fu, new_flags = evaluate(u, flags)
        moved = dict(s, x0=_where(right, x1, x0), x3=_where(right, x3, x2), x1=_where(right, x2, u),
                     x2=_where(right, u, x1), f1=_where(right, f2, fu), f2=_where(right, fu, f1),
                     nit=s["nit"] + 1.0, status=_S(_GOING))
        return _where_all(stop, dict(s, status=_DONE), moved), _gate(~stop, new_flags, flags)

    init = dict(status=_GOING, x0=xa, x1=x1, x2=x2, x3=xc, f1=f1, f2=f2, nit=0.0)
    state, flags = _iterate(init, flags, options["maxiter"], step)
    lower = state["f1"] < state["f2"]
    return (_where(lower, state["x1"], state["x2"]), _where(lower, state["f1"], state["f2"]), state["nit"],
            flags)


def _fminbound(evaluate, options: dict, flags):
    """scipy's `_minimize_scalar_bounded`: Brent's method kept inside the bounds, from
    their golden-section point, until x is within xatol (and sqrt(eps) relative) of the
    interval's middle. Returns x, f(x), success (not stopped by maxiter, nothing NaN) and
    the flags."""
    sqrt_eps, golden_mean = float(np.sqrt(2.2e-16)), 0.5 * (3.0 - float(np.sqrt(5.0)))
    xatol, maxfun = options["xtol"], options["maxiter"]
    a, b = map(_S.of, options["bounds"])
    fulc = a + golden_mean * (b - a)
    fx, flags = evaluate(fulc, flags)
    sign = lambda v: _S(hlo.sign(v.v)) + _where(v.eq(0.0), 1.0, 0.0)  # noqa: E731  (np.sign, 0 as +1)

    def step(s, flags):
        a, b, xf, fx, nfc, fnfc, fulc, ffulc, e, rat = (
            s[k] for k in ("a", "b", "xf", "fx", "nfc", "fnfc", "fulc", "ffulc", "e", "rat"))
        xm = 0.5 * (a + b)
        tol1 = sqrt_eps * abs(xf) + xatol / 3.0
        tol2 = 2.0 * tol1
        stop = ~(abs(xf - xm) > (tol2 - 0.5 * (b - a)))
        p, q = _parabola(xf, nfc, fulc, fx, fnfc, ffulc)  # where the last steps were long enough
        parabolic = (abs(e) > tol1) & (abs(p) < abs(0.5 * q * e)) & (p > q * (a - xf)) & (p < q * (b - xf))
        rat_p = (p + 0.0) / q
        x_p = xf + rat_p
        rat_p = _where(((x_p - a) < tol2) | ((b - x_p) < tol2), tol1 * sign(xm - xf), rat_p)
        e_golden = _where(xf >= xm, a - xf, b - xf)
        e = _where(parabolic, rat, e_golden)
        rat = _where(parabolic, rat_p, golden_mean * e_golden)
        x = xf + sign(rat) * _S(hlo.maximum(abs(rat).v, tol1.v))
        fu, new_flags = evaluate(x, flags)
        better = fu <= fx
        to_nfc = ~better & ((fu <= fnfc) | nfc.eq(xf))
        to_fulc = ~better & ~to_nfc & ((fu <= ffulc) | fulc.eq(xf) | fulc.eq(nfc))
        moved = dict(
            a=_where(better, _where(x >= xf, xf, a), _where(x < xf, x, a)),
            b=_where(better, _where(x >= xf, b, xf), _where(x < xf, b, x)),
            fulc=_where(better | to_nfc, nfc, _where(to_fulc, x, fulc)),
            ffulc=_where(better | to_nfc, fnfc, _where(to_fulc, fu, ffulc)),
            nfc=_where(better, xf, _where(to_nfc, x, nfc)), fnfc=_where(better, fx, _where(to_nfc, fu, fnfc)),
            xf=_where(better, x, xf), fx=_where(better, fu, fx), e=e, rat=rat, fu=fu, num=s["num"] + 1.0)
        moved["status"] = _where(moved["num"] >= float(maxfun), _STOPPED, _GOING)
        return _where_all(stop, dict(s, status=_DONE), dict(s, **moved)), _gate(~stop, new_flags, flags)

    init = dict(status=_GOING, a=a, b=b, xf=fulc, fx=fx, nfc=fulc, fnfc=fx, fulc=fulc, ffulc=fx, e=0.0, rat=0.0,
                fu=float("inf"), num=1.0)
    state, flags = _iterate(init, flags, max(maxfun, 1) + 1, step)
    nan = _isnan(state["xf"]) | _isnan(state["fx"]) | _isnan(state["fu"])
    return state["xf"], state["fx"], state["status"].eq(_DONE) & ~nan, flags
