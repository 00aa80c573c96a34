# RUN: %PYTHON %s | FileCheck %s
import pytensor.tensor as pt

from ir_printing import print_ir

s = pt.matrix("s", shape=(4, 5))
x = pt.matrix("x")
n = pt.lscalar("n")

# CHECK-LABEL: TEST: static_slice raw
# CHECK: stablehlo.slice %arg0 [1:3, 0:5]
# CHECK: stablehlo.slice %{{.*}} [0:2, 0:5:2]
print_ir("static_slice", [s], s[1:3, ::2], raw=True)

# CHECK-LABEL: TEST: reversed raw
# CHECK: stablehlo.reverse %arg0, dims = [0]
print_ir("reversed", [s], s[::-1], raw=True)

# Run-time bounds: numpy's clipping computed in the module, then a strided slice.
# CHECK-LABEL: TEST: runtime_stop raw
# CHECK: stablehlo.maximum
# CHECK: stablehlo.minimum
# CHECK: stablehlo.real_dynamic_slice %arg0
print_ir("runtime_stop", [x, n], x[:n], raw=True)

# A run-time integer index: dynamic_slice, plus an IndexError flag returned from @main.
# CHECK-LABEL: TEST: runtime_index raw
# CHECK: stablehlo.dynamic_slice %arg0, %{{.*}}, %{{.*}}, sizes = [1, 5]
# CHECK: return %{{.*}}, %{{.*}} : tensor<5xf64>, tensor<i1>
print_ir("runtime_index", [s, n], s[n], raw=True)
