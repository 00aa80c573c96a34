# RUN: %PYTHON %s | FileCheck %s
# Scalar ops inside Elemwise: numpy's semantics spelled out in StableHLO.
import pytensor.tensor as pt

from ir_printing import print_ir

i = pt.vector("i", dtype="int32")
j = pt.vector("j", dtype="int32")
f = pt.vector("f", dtype="float32")
g = pt.vector("g", dtype="float32")
u = pt.vector("u", dtype="uint8")
b = pt.vector("b", dtype="bool")
s64 = pt.vector("s64", dtype="int64")
u64 = pt.vector("u64", dtype="uint64")
z = pt.vector("z", dtype="complex64")
w = pt.vector("w", dtype="complex64")

# Floor division: truncating divide, then the sign fix, then 0 for a zero divisor. The
# divisor's zeros are replaced by 1 first: MLIR's folders would divide a zero constant
# in hardware (SIGFPE) once the runtime binds argument values.
# CHECK-LABEL: TEST: int_floor_div raw
# CHECK: %[[ZEROS:.*]] = stablehlo.compare EQ, %arg1, %{{.*}} : (tensor<?xi32>, tensor<?xi32>) -> tensor<?xi1>
# CHECK: %[[SAFE:.*]] = stablehlo.select %[[ZEROS]], %{{.*}}, %arg1
# CHECK: stablehlo.divide %arg0, %[[SAFE]] : tensor<?xi32>
# CHECK: stablehlo.remainder %arg0, %[[SAFE]]
# CHECK: stablehlo.select %[[ZEROS]]
print_ir("int_floor_div", [i, j], i // j, raw=True)

# Modulo takes the divisor's sign: where the truncated remainder's sign differs from
# the divisor's, the divisor is added back.
# CHECK-LABEL: TEST: int_mod_sign opt
# CHECK: %[[REM:.*]] = stablehlo.remainder %arg0, %{{.*}} : tensor<?xi32>
# CHECK: %[[FIXED:.*]] = stablehlo.add %[[REM]], %arg1 : tensor<?xi32>
# CHECK: stablehlo.select %{{.*}}, %[[FIXED]], %[[REM]]
print_ir("int_mod_sign", [i, j], i % j)

# Integer power multiplies through every exponent bit (8 for a uint8 exponent), and an
# unsigned exponent needs no negative-exponent check.
# CHECK-LABEL: TEST: int_pow opt
# CHECK-NOT: stablehlo.power
# CHECK-NOT: stablehlo.reduce
# CHECK-COUNT-7: stablehlo.shift_right_logical
# CHECK: return %{{[0-9]+}} : tensor<?xi32>
print_ir("int_pow", [i, u], i**u)

# Comparisons take their comparison type from the operands.
# CHECK-LABEL: TEST: compare_types raw
# (uint8 >= an int8 constant compares in int16, numpy's promotion of the two.)
# CHECK-DAG: stablehlo.compare  LT, %arg0, %arg1, SIGNED : (tensor<?xi32>, tensor<?xi32>)
# CHECK-DAG: stablehlo.compare  GT, %arg2, {{.*}}, FLOAT : (tensor<?xf32>, tensor<?xf32>)
# CHECK-DAG: stablehlo.compare  GE, {{.*}}, SIGNED : (tensor<?xi16>, tensor<?xi16>)
print_ir("compare_types", [i, j, f, u], [i < j, f > 0, u >= 3], raw=True)

# int64 against uint64 compares exactly (numpy's 'qQ->?' loop), not in float64.
# CHECK-LABEL: TEST: int64_vs_uint64 opt
# CHECK-NOT: f64
# CHECK: stablehlo.compare  LT, %arg0, %{{.*}}, SIGNED : (tensor<?xi64>, tensor<?xi64>)
# CHECK: stablehlo.compare  LT, %{{.*}}, %arg1, UNSIGNED : (tensor<?xui64>, tensor<?xui64>)
print_ir("int64_vs_uint64", [s64, u64], pt.lt(s64, u64))

# True division of ints is computed in float64, as PyTensor's output type says.
# CHECK-LABEL: TEST: int_true_div opt
# CHECK: stablehlo.convert %arg0 : (tensor<?xi32>) -> tensor<?xf64>
# CHECK: stablehlo.divide {{.*}} : tensor<?xf64>
print_ir("int_true_div", [i, j], i / j)

# A bool becomes a float through a select: XLA would turn multiply(convert(bool), x)
# into a select that loses False * inf = nan.
# CHECK-LABEL: TEST: bool_times_float opt
# CHECK-NOT: stablehlo.convert %arg0
# CHECK: %[[ONE_ZERO:.*]] = stablehlo.select %arg0, {{.*}} : tensor<?xi1>, tensor<?xf32>
# CHECK: stablehlo.multiply %[[ONE_ZERO]], %arg1 : tensor<?xf32>
print_ir("bool_times_float", [b, f], b * f)

# Switch on a non-bool condition: nonzero is true.
# CHECK-LABEL: TEST: switch opt
# CHECK: stablehlo.compare  NE, %arg0
# CHECK: stablehlo.select
print_ir("switch", [i, f], pt.switch(i, f, -f))

# Complex construction and magnitude.
# CHECK-LABEL: TEST: complex opt
# CHECK: stablehlo.complex %arg0, %arg1 : tensor<?xcomplex<f32>>
# CHECK: stablehlo.abs {{.*}} : (tensor<?xcomplex<f32>>) -> tensor<?xf32>
print_ir("complex", [f, g], [pt.complex(f, g), abs(pt.complex(f, g))])

# Complex order is lexicographic: real parts first, imaginary parts on a tie.
# CHECK-LABEL: TEST: complex_less raw
# CHECK-DAG: %[[ZR:.*]] = stablehlo.real %arg0
# CHECK-DAG: %[[WR:.*]] = stablehlo.real %arg1
# CHECK: stablehlo.compare  LT, %[[ZR]], %[[WR]], FLOAT
# CHECK: stablehlo.compare  EQ, %[[ZR]], %[[WR]], FLOAT
print_ir("complex_less", [z, w], pt.lt(z, w), raw=True)

# Complex division is numpy's Smith algorithm on the parts, not stablehlo.divide on
# complex values (which gets division by -0.0 and the rounding wrong).
# CHECK-LABEL: TEST: complex_div opt
# CHECK-NOT: stablehlo.divide {{.*}} : tensor<?xcomplex
# CHECK: stablehlo.compare  GE, {{.*}}, FLOAT : (tensor<?xf32>, tensor<?xf32>)
# CHECK: stablehlo.complex {{.*}} : tensor<?xcomplex<f32>>
print_ir("complex_div", [z, w], z / w)
