# RUN: %PYTHON %s | FileCheck %s
# IfElse: one stablehlo.if whose regions call a private function per branch (the nodes
# only that branch needs); the default pipeline inlines them into the regions. A check
# inside a branch leaves the if as an i1 result, false from the other branch.
import numpy as np
import pytensor.tensor as pt
from pytensor.ifelse import ifelse

from ir_printing import print_ir

x, n = pt.dvector("x"), pt.lscalar("n")
shared = pt.exp(x)
out = ifelse(n > 0, x[n] * shared, pt.log(shared))

# CHECK-LABEL: TEST: ifelse raw
# CHECK: func.func public @main(%arg0: tensor<?xf64>, %arg1: tensor<i64>) -> (tensor<?xf64>, tensor<1xi1>)
# CHECK: %[[SHARED:.*]] = stablehlo.exponential %arg0
# CHECK: %[[FALSE:.*]] = stablehlo.constant dense<false> : tensor<i1>
# CHECK: %[[IF:.*]]:2 = "stablehlo.if"
# CHECK: func.call @ifelse_then(%[[SHARED]], %arg1, %arg0)
# CHECK: stablehlo.return
# CHECK: }, {
# CHECK: %[[ELSE:.*]] = func.call @ifelse_else(%[[SHARED]])
# CHECK: stablehlo.return %[[ELSE]], %[[FALSE]]
# CHECK: }) : (tensor<i1>) -> (tensor<?xf64>, tensor<i1>)
# CHECK: %[[FLAG:.*]] = stablehlo.reshape %[[IF]]#1
# CHECK: %[[FLAGS:.*]] = stablehlo.concatenate %[[FLAG]]
# CHECK: return %[[IF]]#0, %[[FLAGS]]
# CHECK: func.func private @ifelse_then
# CHECK: stablehlo.dynamic_gather
# CHECK: func.func private @ifelse_else(%arg0: tensor<?xf64>) -> tensor<?xf64>
# CHECK-NEXT: stablehlo.log %arg0
print_ir("ifelse", [x, n], [out], raw=True)

# CHECK-LABEL: TEST: ifelse opt
# CHECK-NOT: func.call
# CHECK: "stablehlo.if"
# CHECK: stablehlo.dynamic_gather
# CHECK: }, {
# CHECK: stablehlo.log
# CHECK-NOT: func.func private
print_ir("ifelse", [x, n], [out])

# fold-agreeing-if (part of the specialization fold loop): an if result that every branch
# returns equal (the same outer value, or equal constants) is replaced by that value.
# CHECK-LABEL: TEST: fold_agreeing_if
# CHECK: %[[C:.*]] = stablehlo.constant dense<2> : tensor<i64>
# CHECK: return %[[C]], %arg1
print("TEST: fold_agreeing_if")
from jax.extend.mlir import ir  # noqa: E402
from lowering._jax_internal import make_ir_context  # noqa: E402
from lowering.passes import run_pipeline  # noqa: E402

with make_ir_context():
    module = ir.Module.parse("""
    func.func public @main(%p: tensor<i1>, %y: tensor<f64>) -> (tensor<i64>, tensor<f64>) {
      %r:2 = "stablehlo.if"(%p) ({
        %c = stablehlo.constant dense<2> : tensor<i64>
        stablehlo.return %c, %y : tensor<i64>, tensor<f64>
      }, {
        %c = stablehlo.constant dense<2> : tensor<i64>
        stablehlo.return %c, %y : tensor<i64>, tensor<f64>
      }) : (tensor<i1>) -> (tensor<i64>, tensor<f64>)
      return %r#0, %r#1 : tensor<i64>, tensor<f64>
    }""")
    run_pipeline(module, "builtin.module(fold-agreeing-if,canonicalize)")
    print(module)
