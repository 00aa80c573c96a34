# RUN: %PYTHON %s | FileCheck %s
# Print: a host callback on the value, whose result the graph reads on.
import pytensor.tensor as pt
from pytensor.printing import Print

from ir_printing import print_ir

x = pt.vector("x", shape=(3,))

# CHECK-LABEL: TEST: print opt
# CHECK: %[[V:.*]] = stablehlo.custom_call @xla_ffi_python_cpu_callback(%arg0)
# CHECK-SAME: (tensor<3xf64>) -> tensor<3xf64>
# CHECK: stablehlo.multiply %[[V]]
print_ir("print", [x], Print("x is")(x) * 2)
