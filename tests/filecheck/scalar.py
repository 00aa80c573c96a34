# RUN: %PYTHON %s | FileCheck %s
# Scalar ops inside Elemwise: numpy's semantics spelled out in StableHLO.
import pytensor.tensor as pt

from ir_printing import print_ir

i = pt.vector("i", dtype="int32")
j = pt.vector("j", dtype="int32")
f = pt.vector("f", dtype="float32")
u = pt.vector("u", dtype="uint8")

# Floor division: truncating divide, then the sign fix, then 0 for a zero divisor.
# CHECK-LABEL: TEST: int_floor_div raw
# CHECK: stablehlo.divide %arg0, %arg1 : tensor<?xi32>
# CHECK: stablehlo.remainder %arg0, %arg1
# CHECK: stablehlo.compare  EQ, %arg1
# CHECK: stablehlo.select
print_ir("int_floor_div", [i, j], i // j, raw=True)

# Comparisons take their comparison type from the operands.
# CHECK-LABEL: TEST: compare_types raw
# (uint8 >= an int8 constant compares in int16, numpy's promotion of the two.)
# CHECK-DAG: stablehlo.compare  LT, %arg0, %arg1, SIGNED : (tensor<?xi32>, tensor<?xi32>)
# CHECK-DAG: stablehlo.compare  GT, %arg2, {{.*}}, FLOAT : (tensor<?xf32>, tensor<?xf32>)
# CHECK-DAG: stablehlo.compare  GE, {{.*}}, SIGNED : (tensor<?xi16>, tensor<?xi16>)
print_ir("compare_types", [i, j, f, u], [i < j, f > 0, u >= 3], raw=True)

# True division of ints is computed in float64, as PyTensor's output type says.
# CHECK-LABEL: TEST: int_true_div opt
# CHECK: stablehlo.convert %arg0 : (tensor<?xi32>) -> tensor<?xf64>
# CHECK: stablehlo.divide {{.*}} : tensor<?xf64>
print_ir("int_true_div", [i, j], i / j)

# Switch on a non-bool condition: nonzero is true.
# CHECK-LABEL: TEST: switch opt
# CHECK: stablehlo.compare  NE, %arg0
# CHECK: stablehlo.select
print_ir("switch", [i, f], pt.switch(i, f, -f))

# Complex construction and magnitude.
# CHECK-LABEL: TEST: complex opt
# CHECK: stablehlo.complex %arg0, %arg1 : tensor<?xcomplex<f32>>
# CHECK: stablehlo.abs {{.*}} : (tensor<?xcomplex<f32>>) -> tensor<?xf32>
g = pt.vector("g", dtype="float32")
print_ir("complex", [f, g], [pt.complex(f, g), abs(pt.complex(f, g))])
