# RUN: %PYTHON %s | FileCheck %s
# Scan: one stablehlo.while per Scan. The loop carries the step counter, a flag the
# `until` condition clears, every traced output's buffer (here the sit-sot's, one
# scratch row longer while its size is unknown), the input taps of the next step and
# the or-ed check flags of the step function, a private function (inlined later).
import pytensor
import pytensor.tensor as pt
from pytensor.scan.utils import until

from ir_printing import print_ir

x, h0 = pt.dvector("x"), pt.dscalar("h0")
hs = pytensor.scan(lambda x_t, h: pt.tanh(h + x_t), sequences=[x], outputs_info=[h0], return_updates=False)

# CHECK-LABEL: TEST: scan raw
# CHECK: stablehlo.dynamic_pad
# CHECK: %[[LOOP:.*]]:4 = stablehlo.while(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) : tensor<i64>, tensor<i1>, tensor<?xf64>, tensor<f64>
# CHECK: cond {
# CHECK: stablehlo.compare LT
# CHECK: stablehlo.and
# CHECK: } do {
# CHECK: stablehlo.dynamic_slice
# CHECK: func.call @scan_fn_step
# CHECK: stablehlo.dynamic_update_slice
# CHECK: stablehlo.return
# CHECK: "stablehlo.dynamic_gather"
# CHECK: func.func private @scan_fn_step(%arg0: tensor<f64>, %arg1: tensor<f64>) -> tensor<f64>
# CHECK-NEXT: stablehlo.add %arg1, %arg0
# CHECK-NEXT: stablehlo.tanh
print_ir("scan", [x, h0], [hs], raw=True)

# After the pipeline the step is inlined into the loop body: one while, no call.
# CHECK-LABEL: TEST: scan opt
# CHECK-NOT: func.call
# CHECK: stablehlo.while
# CHECK: stablehlo.tanh
# CHECK-NOT: stablehlo.while
# CHECK-NOT: func.func private
print_ir("scan", [x, h0], [hs])

# A Scan of static length runs all its steps (no `until`): the count is known, so the
# trace is the ring's rows in order, a slice of the loop's buffer, not a rotation.
# CHECK-LABEL: TEST: scan_static opt
# CHECK: %[[LOOP:.*]]:3 = stablehlo.while
# CHECK-NOT: gather
# CHECK: %[[T:.*]] = stablehlo.slice %[[LOOP]]#1 [1:6] : (tensor<6xf64>) -> tensor<5xf64>
# CHECK-NEXT: return %[[T]]
xs = pt.vector("xs", shape=(5,))
static = pytensor.scan(lambda x_t, h: pt.tanh(h + x_t), sequences=[xs], outputs_info=[h0], return_updates=False)
print_ir("scan_static", [xs, h0], [static])

# The gradient is a second Scan (a mit-mot buffer for the gradient of h): two loops.
# CHECK-LABEL: TEST: scan_grad opt
# CHECK-COUNT-2: stablehlo.while
# CHECK-NOT: stablehlo.while
print_ir("scan_grad", [x, h0], pytensor.grad((hs**2).sum(), [x, h0]))

# A while-Scan: the condition clears the carried flag; outputs are trimmed to the steps
# taken with a real_dynamic_slice whose size the runtime measures.
v0, tol = pt.dvector("v0"), pt.dscalar("tol")
vs = pytensor.scan(
    lambda v: (v * 0.5, until(pt.abs(v).max() < tol)), outputs_info=[v0], n_steps=100, return_updates=False
)
# CHECK-LABEL: TEST: scan_until raw
# CHECK: stablehlo.while
# CHECK: func.call @scan_fn_step
# CHECK: stablehlo.not
# CHECK: stablehlo.return
# CHECK: stablehlo.real_dynamic_slice
print_ir("scan_until", [v0, tol], [vs], raw=True)

# The same loop read only at [-1], after the STABLEHLO mode's rewrites: ScanSaveMem keeps
# a ring of 2 rows (the initial state and one step's write), which one step fills, so
# nothing is trimmed and the result has a static shape (the runtime measures nothing).
rewritten = pytensor.function([v0, tol], vs[-1], mode="STABLEHLO").maker.fgraph
# CHECK-LABEL: TEST: scan_until_last opt
# CHECK: stablehlo.while{{.*}} tensor<2x?xf64>
# CHECK-NOT: tensor<?x?xf64>
# CHECK: return {{.*}} : tensor<?xf64>
print_ir("scan_until_last", rewritten.inputs, rewritten.outputs)
