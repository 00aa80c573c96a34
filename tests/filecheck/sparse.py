# RUN: %PYTHON %s | FileCheck %s
# A sparse constant times a dense matrix: gather the rows the nonzeros read, multiply by
# the nonzeros, scatter-add into the result rows; never a dense copy of the matrix.
import pytensor.sparse as ps
import pytensor.tensor as pt
import scipy.sparse as sps

from ir_printing import print_ir

y = pt.tensor("y", shape=(40, 3))
s = ps.as_sparse_variable(sps.random(50, 40, density=0.1, format="csr", random_state=0))

# CHECK-LABEL: TEST: structured_dot opt
# CHECK-NOT: tensor<50x40xf64>
# CHECK: "stablehlo.gather"
# CHECK: stablehlo.multiply
# CHECK: "stablehlo.scatter"
# CHECK: stablehlo.add
# CHECK: -> tensor<50x3xf64>
print_ir("structured_dot", [y], [ps.structured_dot(s, y)])
