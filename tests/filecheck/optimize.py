# RUN: %PYTHON %s | FileCheck %s
# MinimizeOp (BFGS): the objective and its gradient as one private function, called at
# the start and from the two line searches, loops inside the BFGS loop; the objective's
# check flags travel through the loops.
import pytensor.tensor as pt
from pytensor.raise_op import Assert
from pytensor.tensor.optimize import minimize

from ir_printing import print_ir

x, a = pt.vector("x", shape=(3,)), pt.scalar("a")

# Raw: the objective (value, gradient, one flag) at x0; the BFGS loop carries x, f, g and
# the inverse Hessian; dcsrch's loop calls the objective, scipy's wolfe2 fallback sits in
# an `if`.
# CHECK-LABEL: TEST: minimize raw
# CHECK: call @minimize_objective(%arg0, {{.*}}) -> (tensor<f64>, tensor<3xf64>, tensor<i1>)
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<i64>, tensor<3xf64>, tensor<f64>, tensor<3xf64>, tensor<3x3xf64>
# CHECK: func.call @minimize_objective
# CHECK: "stablehlo.if"
# CHECK: func.func private @minimize_objective
objective = Assert("a > 0")(((x - a) ** 2).sum() + (x**4).sum(), pt.gt(a, 0))
print_ir("minimize", [x, a], list(minimize(objective, x)), raw=True)

# Newton-CG: the gradient and Hessian at each iterate, conjugate gradients in a loop of
# their own, then the line search's loops.
# CHECK-LABEL: TEST: minimize_newton_cg raw
# CHECK: stablehlo.while
# CHECK: func.call @minimize_hessian({{.*}}) -> (tensor<f64>, tensor<3xf64>, tensor<3x3xf64>
# CHECK: stablehlo.while({{.*}}) : tensor<f64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<f64>
# CHECK: func.call @minimize_objective
print_ir("minimize_newton_cg", [x, a], list(minimize(objective, x, method="Newton-CG", hess=True, use_vectorized_jac=True)),
         raw=True)

# L-BFGS-B: the loop carries the last 10 pairs (s, y) and their curvatures; the two-loop
# recursion runs over the pairs stored, newest first then oldest first; then lnsrlb's
# dcsrch loop evaluates the objective.
# CHECK-LABEL: TEST: minimize_lbfgsb raw
# CHECK: stablehlo.while({{.*}}) : {{.*}}tensor<10x3xf64>, tensor<10x3xf64>, tensor<10xf64>
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<3xf64>, tensor<10xf64>
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<3xf64>
# CHECK: stablehlo.while
# CHECK: func.call @minimize_objective
print_ir("minimize_lbfgsb", [x, a], list(minimize(((x - a) ** 2).sum() + pt.exp(x).sum(), x, method="L-BFGS-B")),
         raw=True)

# L-BFGS-B with bounds: the loop carries the compact matrices (S, Y, S'Y, S'S and formt's
# factor); the generalized Cauchy point's loop over the breakpoints (its slope and curvature
# through the middle matrix), the subspace step in an `if` (formk's two Cholesky
# factorizations), then lnsrlb's dcsrch loop; formt's L D^-1 L' after it, a product of
# maxcor x maxcor matrices (no maxcor**3 tensor: the module stays elemental), then its
# factorization.
# CHECK-LABEL: TEST: minimize_lbfgsb_bounds raw
# CHECK: stablehlo.while({{.*}}) : {{.*}}tensor<10x3xf64>, tensor<10x3xf64>, tensor<10x10xf64>, tensor<10x10xf64>, tensor<10x10xf64>
# CHECK: stablehlo.while({{.*}}) : tensor<3xi1>, tensor<i1>, tensor<f64>, tensor<f64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<f64>, tensor<f64>, tensor<20xf64>, tensor<20xf64>
# CHECK: "stablehlo.if"
# CHECK: stablehlo.custom_call @lapack_dpotrf_ffi
# CHECK: stablehlo.custom_call @lapack_dpotrf_ffi
# CHECK: stablehlo.while
# CHECK: func.call @minimize_objective
# CHECK-NOT: tensor<10x10x10xf64>
# CHECK: stablehlo.dot_general {{.*}} contracting_dims = [1] x [1], {{.*}} : (tensor<10x10xf64>, tensor<10x10xf64>) -> tensor<10x10xf64>
# CHECK: stablehlo.custom_call @lapack_dpotrf_ffi
print_ir("minimize_lbfgsb_bounds", [x, a], list(minimize(((x - a) ** 2).sum() + pt.exp(x).sum(), x, method="L-BFGS-B",
                                                         optimizer_kwargs={"bounds": [(0.0, 2.0)]})), raw=True)

# trust-ncg: the objective, gradient and Hessian at x0; the loop carries them with the
# radius; CG-Steihaug's loop (z, r, d, whether on the boundary, whether not finite), then
# one evaluation at the proposed step.
# CHECK-LABEL: TEST: minimize_trust_ncg raw
# CHECK: call @minimize_hessian(%arg0, {{.*}}) -> (tensor<f64>, tensor<3xf64>, tensor<3x3xf64>)
# CHECK: stablehlo.while({{.*}}) : tensor<f64>, tensor<3xf64>, tensor<f64>, tensor<3xf64>, tensor<3x3xf64>
# CHECK: stablehlo.while({{.*}}) : tensor<f64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<i1>, tensor<i1>
# CHECK: func.call @minimize_hessian
print_ir("minimize_trust_ncg", [x, a], list(minimize(((x - a) ** 2).sum() + pt.exp(x).sum(), x, method="trust-ncg",
                                                     hess=True, use_vectorized_jac=True)), raw=True)

# Powell: each evaluation sits in an `if` (scipy's wrapper refuses one past maxfev); the
# loop carries x, f, the last iteration's x and the 3x3 directions; a loop over the
# directions (its f decrease, the index of the largest, the evaluation count) holds each
# line search in an `if`: bracket's loop, then Brent's in an `if` on the bracket.
# CHECK-LABEL: TEST: minimize_powell raw
# CHECK: "stablehlo.if"
# CHECK: func.call @minimize_objective(%arg0, {{.*}}) -> tensor<f64>
# CHECK: stablehlo.while({{.*}}) : tensor<f64>, tensor<3xf64>, tensor<f64>, tensor<3xf64>, tensor<3x3xf64>
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<3xf64>, tensor<f64>, tensor<f64>, tensor<i64>, tensor<i1>, tensor<f64>, tensor<i1>
# CHECK: "stablehlo.if"
# CHECK: stablehlo.while
# CHECK: func.call @minimize_objective
# CHECK: "stablehlo.if"
# CHECK: stablehlo.while
# CHECK: func.call @minimize_objective
print_ir("minimize_powell", [x, a], list(minimize(((x - a) ** 2).sum() + pt.exp(x).sum(), x, method="Powell")),
         raw=True)

# dogleg: trust-ncg's loop; each iteration LAPACK's potrf of the Hessian (the Newton
# point from its factor by substitution, written out for 3 variables), then the objective
# at the proposed step.
# CHECK-LABEL: TEST: minimize_dogleg raw
# CHECK: stablehlo.while({{.*}}) : tensor<f64>, tensor<3xf64>, tensor<f64>, tensor<3xf64>, tensor<3x3xf64>
# CHECK: stablehlo.custom_call @lapack_dpotrf_ffi
# CHECK-NOT: stablehlo.while
# CHECK: func.call @minimize_hessian
print_ir("minimize_dogleg", [x, a], list(minimize(((x - a) ** 2).sum() + pt.exp(x).sum(), x, method="dogleg", hess=True,
                                                  use_vectorized_jac=True)), raw=True)

# Powell with bounds: each line search an `if` between Brent's search (where the line's
# segment inside the bounds has no finite end: bracket's loop, then Brent's) and
# fminbound's loop on the segment, or on its arctangent (chlo.atan of the ends,
# stablehlo.tan of each trial step) where one end is infinite.
# CHECK-LABEL: TEST: minimize_powell_bounds raw
# CHECK: stablehlo.while
# CHECK: "stablehlo.if"
# CHECK: stablehlo.while
# CHECK: chlo.atan
# CHECK: stablehlo.tan
# CHECK: stablehlo.while
# CHECK: stablehlo.tan
print_ir("minimize_powell_bounds", [x, a], list(minimize(((x - a) ** 2).sum() + pt.exp(x).sum(), x, method="Powell",
                                                         optimizer_kwargs={"bounds": [(0.0, None)]})), raw=True)

# CG: BFGS's loop without a Hessian (x, f, g, the direction); dcsrch's loop, then wolfe2's in
# an `if`, both evaluating the objective.
# CHECK-LABEL: TEST: minimize_cg raw
# CHECK: stablehlo.while({{.*}}) : tensor<f64>, tensor<3xf64>, tensor<f64>, tensor<3xf64>, tensor<3xf64>
# CHECK: stablehlo.while
# CHECK: func.call @minimize_objective
# CHECK: "stablehlo.if"
# CHECK: stablehlo.while
# CHECK: func.call @minimize_objective
print_ir("minimize_cg", [x, a], list(minimize(((x - a) ** 2).sum() + pt.exp(x).sum(), x, method="CG")), raw=True)

# Nelder-Mead: one loop over the 4 x 3 simplex and its values, one evaluation a step (in
# the budget's `if`); the centroid's rows added in order in a loop of their own; a new
# vertex sorted in by selects, the whole simplex sorted (by comparisons) in an `if`: no
# sort op, no gather.
# CHECK-LABEL: TEST: minimize_nelder_mead raw
# CHECK: stablehlo.while({{.*}}) : {{.*}}tensor<4x3xf64>, tensor<4xf64>
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<3xf64>
# CHECK: "stablehlo.if"
# CHECK: func.call @minimize_objective
# CHECK-NOT: func.call
# CHECK-NOT: stablehlo.sort
# CHECK-NOT: stablehlo.gather
# CHECK: "stablehlo.if"
# CHECK-NOT: stablehlo.sort
# CHECK: func.func private @minimize_objective
print_ir("minimize_nelder_mead", [x, a], list(minimize(((x - a) ** 2).sum() + pt.exp(x).sum(), x,
                                                       method="Nelder-Mead")), raw=True)

# Optimized: the calls inlined; the result and the success flag come out of the loop.
# CHECK-LABEL: TEST: minimize opt
# CHECK-NOT: func.call
# CHECK: stablehlo.while
print_ir("minimize", [x, a], list(minimize(objective, x)))

# root_scalar (secant): two evaluations before the loop, one in it; minimize_scalar
# (Brent): the bracketing loop, then Brent's inside an `if` on the bracket's validity.
# CHECK-LABEL: TEST: root_scalar raw
# CHECK-COUNT-2: call @root_equation
# CHECK: stablehlo.while
# CHECK: func.call @root_equation
from pytensor.tensor.optimize import minimize_scalar, root_scalar  # noqa: E402

s = pt.scalar("s")
print_ir("root_scalar", [s, a], list(root_scalar(s**3 - a, s)), raw=True)

# brentq from a bracket: the equation at both ends, scipy's sign test a run-time flag,
# then one evaluation an iteration.
# CHECK-LABEL: TEST: root_scalar_brentq raw
# CHECK-COUNT-2: call @root_equation
# CHECK: stablehlo.while
# CHECK: func.call @root_equation
print_ir("root_scalar_brentq", [s, a], list(root_scalar(s**3 - a, s, method="brentq",
                                                         optimizer_kwargs={"bracket": [0.0, 3.0]})), raw=True)

# toms748 from a bracket: the equation at both ends; then its loop, three evaluations a
# step (the interpolation's point, the double-length secant step's, the bisection's).
# CHECK-LABEL: TEST: root_scalar_toms748 raw
# CHECK-COUNT-2: call @root_equation
# CHECK: stablehlo.while
# CHECK-COUNT-3: func.call @root_equation
print_ir("root_scalar_toms748", [s, a], list(root_scalar(s**3 - a, s, method="toms748",
                                                         optimizer_kwargs={"bracket": [0.0, 3.0]})), raw=True)

# CHECK-LABEL: TEST: minimize_scalar raw
# CHECK: stablehlo.while
# CHECK: "stablehlo.if"
# CHECK: stablehlo.while
# CHECK: func.call @minimize_scalar_objective
print_ir("minimize_scalar", [s, a], list(minimize_scalar((s - a) ** 2, s)), raw=True)

# The bounded method: one evaluation at the bounds' golden-section point, then fminbound's
# loop (no bracketing loop, no `if`).
# CHECK-LABEL: TEST: minimize_scalar_bounded raw
# CHECK: call @minimize_scalar_objective
# CHECK-NOT: "stablehlo.if"
# CHECK: stablehlo.while
# CHECK: func.call @minimize_scalar_objective
# CHECK-NOT: stablehlo.while
# CHECK: func.func private @minimize_scalar_objective
print_ir("minimize_scalar_bounded", [s, a], list(minimize_scalar((s - a) ** 2, s, method="bounded",
                                                                 optimizer_kwargs={"bounds": (0.0, 5.0)})), raw=True)

# Vectorized (a Blockwise of the Op): the per-entry loop calls the Op's function, whose
# solution has x's shape.
# CHECK-LABEL: TEST: minimize_batched raw
# CHECK: stablehlo.while
# CHECK: func.call @MinimizeOp_entry({{.*}}) -> (tensor<3xf64>, tensor<i1>)
from pytensor.graph.replace import vectorize_graph  # noqa: E402

batch = pt.matrix("batch", shape=(2, 3))
xs = pt.vector("xs", shape=(3,))
av = pt.vector("av", shape=(3,))
solution, success = minimize(((xs - av) ** 2).sum(), xs)
print_ir("minimize_batched", [xs, batch], vectorize_graph([solution, success], {av: batch}), raw=True)

# root (hybr, MINPACK's hybrj): the equations at x0 before the loop; each iteration
# evaluates the Jacobian in an `if` (after two failed steps, and at the start), its QR
# factors by Householder loops, then the equations at the dogleg step, and updates the
# factors by Givens rotations in two loops that rotate Q's columns and Q'f alike (one
# 2x3 matrix).
# CHECK-LABEL: TEST: root raw
# CHECK: call @root_equations(%arg0, %arg1) : (tensor<2xf64>, tensor<f64>) -> tensor<2xf64>
# CHECK: stablehlo.while
# CHECK: "stablehlo.if"
# CHECK: func.call @root_jacobian
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<2x2xf64>, tensor<2xf64>
# CHECK: func.call @root_equations
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<2x2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2x3xf64>
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<2x2xf64>, tensor<2xf64>, tensor<2x3xf64>
# CHECK: func.func private @root_equations
# CHECK: func.func private @root_jacobian
from pytensor.tensor.optimize import root  # noqa: E402

v = pt.vector("v", shape=(2,))
print_ir("root", [v, a], list(root(pt.stack([v[0] ** 2 + v[1] ** 2 - a, v[0] * v[1] - 1]), v)), raw=True)

# root with df-sane: the loop carries x, F, the spectral coefficient and the last 10 merit
# values; Python's max over them in a loop of its own; the nonmonotone search's loop, one
# evaluation a step in the budget's `if`.
# CHECK-LABEL: TEST: root_df_sane raw
# CHECK: stablehlo.while({{.*}}) : tensor<f64>, tensor<3xf64>, tensor<3xf64>, {{.*}}tensor<10xf64>
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<f64>
# CHECK: stablehlo.while
# CHECK: "stablehlo.if"
# CHECK: func.call @root_equations
print_ir("root_df_sane", [x, a], list(root(pt.exp(x) - a, x, method="df-sane", jac=False)), raw=True)

# root (lm, MINPACK's lmder): three equations in two variables, at x0 before the loop;
# each iteration after a step was taken evaluates the Jacobian in an `if` and factors it
# by the pivoted Householder loop (A' 2x3, the column norms, the columns' order), then
# applies the reflections to f (3 entries); lmpar's loop of at most ten solves holds
# qrsolv's Givens rotations, a loop in a loop over the 2x2 R; then the equations at the
# step.
# CHECK-LABEL: TEST: root_lm raw
# CHECK: call @root_equations(%arg0, %arg1) : (tensor<2xf64>, tensor<f64>) -> tensor<3xf64>
# CHECK: stablehlo.while
# CHECK: "stablehlo.if"
# CHECK: func.call @root_jacobian
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<2x3xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xi64>
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<3xf64>
# CHECK: stablehlo.while
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<2x2xf64>, tensor<2xf64>, tensor<2xf64>
# CHECK-NEXT: cond
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<2x2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<f64>
# CHECK: func.call @root_equations({{.*}}) : (tensor<2xf64>, tensor<f64>) -> tensor<3xf64>
# CHECK: func.func private @root_equations
# CHECK: func.func private @root_jacobian
print_ir("root_lm", [v, a], list(root(pt.stack([v[0] ** 2 + v[1] ** 2 - a, v[0] * v[1] - 1, v[0] - v[1]]), v,
                                      method="lm")), raw=True)
