# RUN: %PYTHON %s | FileCheck %s
# Reductions: one stablehlo.reduce with the scalar op's body and identity init (of more
# than 7 static elements, or of a run-time size).
import pytensor.tensor as pt

from ir_printing import print_ir

x = pt.matrix("x", dtype="float32")
b = pt.matrix("b", dtype="int8")

# PyTensor's float32 Sum accumulates in float64 (its acc_dtype), as Op.perform does.
# CHECK-LABEL: TEST: sum raw
# CHECK: stablehlo.convert %arg0 : (tensor<?x?xf32>) -> tensor<?x?xf64>
# CHECK: stablehlo.reduce(%{{.*}} init: %{{.*}}) applies stablehlo.add across dimensions = [1] : (tensor<?x?xf64>, tensor<f64>) -> tensor<?xf64>
# CHECK: stablehlo.convert %{{.*}} : (tensor<?xf64>) -> tensor<?xf32>
print_ir("sum", [x], x.sum(axis=1), raw=True)

# int8 sums accumulate in int64, as numpy does.
# CHECK-LABEL: TEST: int8_sum opt
# CHECK: stablehlo.convert %arg0 : (tensor<?x?xi8>) -> tensor<?x?xi64>
# CHECK: applies stablehlo.add across dimensions = [0, 1]
print_ir("int8_sum", [b], b.sum())

# max starts from -inf. Its body keeps NaN as numpy does (a > b, or a is NaN): XLA's
# CPU client vectorizes a plain `maximum` body with instructions that drop NaN.
# CHECK-LABEL: TEST: max opt
# CHECK: stablehlo.constant dense<0xFF800000> : tensor<f32>
# CHECK: stablehlo.reduce(%arg0 init: %{{.*}}) across dimensions = [0]
# CHECK-NEXT: reducer(%[[A:.*]]: tensor<f32>, %[[B:.*]]: tensor<f32>)
# CHECK-NEXT: %[[GT:.*]] = stablehlo.compare GT, %[[A]], %[[B]], FLOAT
# CHECK-NEXT: %[[NAN:.*]] = stablehlo.compare NE, %[[A]], %[[A]], FLOAT
# CHECK-NEXT: %[[EITHER:.*]] = stablehlo.or %[[GT]], %[[NAN]]
# CHECK-NEXT: stablehlo.select %[[EITHER]], %[[A]], %[[B]]
# An empty reduced axis is numpy's ValueError: a flag returned next to the result.
# CHECK: return %{{.*}}, %{{.*}} : tensor<?xf32>, tensor<1xi1>
print_ir("max", [x], x.max(axis=0))

# argmax reduces (value, index) pairs in one variadic reduce.
# CHECK-LABEL: TEST: argmax opt
# CHECK: stablehlo.iota dim = 0 : tensor<9xi64>
# CHECK: stablehlo.reduce(%arg0 init: %{{.*}}), (%{{.*}} init: %{{.*}}) across dimensions = [1] : (tensor<3x9xf32>, tensor<3x9xi64>, tensor<f32>, tensor<i64>) -> (tensor<3xf32>, tensor<3xi64>)
# CHECK: stablehlo.select
xs = pt.matrix("xs", shape=(3, 9), dtype="float32")
print_ir("argmax", [xs], pt.argmax(xs, axis=1))

# A complex max keeps numpy's first NaN: its values reduce beside their indices, so
# the order XLA reduces in cannot pick another NaN.
# CHECK-LABEL: TEST: complex_max opt
# CHECK: stablehlo.iota dim = 0 : tensor<9xi64>
# CHECK: %[[R:.*]]:2 = stablehlo.reduce(%{{.*}} init: %{{.*}}), (%{{.*}} init: %{{.*}}) across dimensions = [1] : (tensor<4x9xcomplex<f64>>, tensor<4x9xi64>, tensor<complex<f64>>, tensor<i64>) -> (tensor<4xcomplex<f64>>, tensor<4xi64>)
# CHECK: return %[[R]]#0 : tensor<4xcomplex<f64>>
xc = pt.matrix("xc", shape=(9, 4), dtype="complex128")
print_ir("complex_max", [xc], xc.max(axis=0))

# A reduce of at most 7 static elements is written out: the slices combined one by one
# from the init, elementwise ops that XLA fuses with their neighbours (a reduce is a
# kernel of its own). A float init sits behind a barrier, where the folders would drop
# `0.0 + x`: numpy's sum of -0.0s is +0.0.
# CHECK-LABEL: TEST: short_axis opt
# CHECK-NOT: stablehlo.reduce
# CHECK: %[[E:.*]] = stablehlo.exponential %arg0 : tensor<5x2xf64>
# CHECK: %[[INIT:.*]] = stablehlo.optimization_barrier %{{.*}} : tensor<f64>
# CHECK: %[[ZERO:.*]] = stablehlo.broadcast_in_dim %[[INIT]], dims = [] : (tensor<f64>) -> tensor<5xf64>
# CHECK: stablehlo.slice %[[E]] [0:5, 0:1]
# CHECK: %[[FIRST:.*]] = stablehlo.reshape
# CHECK: %[[ONE:.*]] = stablehlo.add %[[ZERO]], %[[FIRST]] : tensor<5xf64>
# CHECK: stablehlo.slice %[[E]] [0:5, 1:2]
# CHECK: %[[SECOND:.*]] = stablehlo.reshape
# CHECK: %[[TWO:.*]] = stablehlo.add %[[ONE]], %[[SECOND]] : tensor<5xf64>
# CHECK: stablehlo.log %[[TWO]]
# CHECK-NOT: stablehlo.reduce
# CHECK: return
c = pt.matrix("c", shape=(5, 2))
print_ir("short_axis", [c], pt.logsumexp(c, axis=1))

# CHECK-LABEL: TEST: softmax opt
# CHECK: stablehlo.compare GT
# CHECK: stablehlo.select
# CHECK: stablehlo.exponential
# CHECK: applies stablehlo.add
# CHECK: stablehlo.divide
print_ir("softmax", [x], pt.special.softmax(x, axis=-1))
