# RUN: %PYTHON %s | FileCheck %s
# Blockwise of a core Op with no batched rule (here Eye with a diagonal per entry): the
# core Op's rule in a private function, called per entry by a while loop that writes
# each result at its entry with dynamic_update_slice.
import pytensor.tensor as pt
from pytensor.graph.replace import vectorize_graph

from ir_printing import print_ir

k = pt.lscalar("k")

# CHECK-LABEL: TEST: eye_per_entry raw int64[5]
# CHECK: %[[ZEROS:.*]] = stablehlo.constant dense<0.000000e+00> : tensor<5x3x4xf64>
# CHECK: stablehlo.while(%[[I:.*]] = %{{.*}}, %[[OUT:.*]] = %[[ZEROS]]) : tensor<i64>, tensor<5x3x4xf64>
# CHECK: stablehlo.compare LT, %[[I]]
# CHECK: %[[K:.*]] = stablehlo.dynamic_slice %arg0, %[[I]], sizes = [1]
# CHECK: %[[KS:.*]] = stablehlo.reshape %[[K]] : (tensor<1xi64>) -> tensor<i64>
# CHECK: %[[EYE:.*]] = func.call @Eye_entry(%[[KS]]) : (tensor<i64>) -> tensor<3x4xf64>
# CHECK: %[[ROW:.*]] = stablehlo.reshape %[[EYE]] : (tensor<3x4xf64>) -> tensor<1x3x4xf64>
# CHECK: stablehlo.dynamic_update_slice %[[OUT]], %[[ROW]], %[[I]]
# CHECK: func.func private @Eye_entry(%arg0: tensor<i64>) -> tensor<3x4xf64>
kb = pt.tensor("kb", dtype="int64", shape=(5,))
print_ir("eye_per_entry", [kb], [vectorize_graph(pt.eye(3, 4, k), {k: kb})], raw=True)

# A batch that may be empty: the input and the outputs at least one entry long (a zero
# entry appended, then max(n, 1) kept) keep the loop body valid IR (the loop then runs no
# step); the outputs are sliced to n after the loop. For a call with n > 0 the pad and
# the slice fold away, and the loop reads the input where it is.
# CHECK-LABEL: TEST: eye_per_entry opt int64[?]
# CHECK: %[[PAD:.*]] = stablehlo.pad %arg0, %{{.*}}, low = [0], high = [1]
# CHECK: stablehlo.maximum
# CHECK: %[[IN:.*]] = stablehlo.real_dynamic_slice %[[PAD]]
# CHECK: %[[ZEROS:.*]] = stablehlo.pad %{{.*}}, low = [0, 0, 0], high = [1, 0, 0]
# CHECK: %[[BUF:.*]] = stablehlo.real_dynamic_slice %[[ZEROS]]
# CHECK: %[[LOOP:.*]]:2 = stablehlo.while(%{{.*}} = %{{.*}}, %{{.*}} = %[[BUF]])
# CHECK: stablehlo.dynamic_slice %[[IN]]
# CHECK-NOT: call
# CHECK: stablehlo.dynamic_update_slice
# CHECK: stablehlo.real_dynamic_slice %[[LOOP]]#1
kb = pt.lvector("kb")
print_ir("eye_per_entry", [kb], [vectorize_graph(pt.eye(3, 4, k), {k: kb})])
