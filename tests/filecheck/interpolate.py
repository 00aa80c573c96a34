# RUN: %PYTHON %s | FileCheck %s
# PyMC's SplineWrapper: knots and coefficients are constants; each point's knot interval
# is a count of the knots at or below it (one reduce), clamped to FITPACK's [k, n-k-2];
# de Boor's recursion reads the interval's knots with gathers; float64 work, one cast.
import numpy as np
import pytensor.tensor as pt
from pymc.distributions.dist_math import SplineWrapper
from scipy.interpolate import InterpolatedUnivariateSpline

from ir_printing import print_ir

x = pt.vector("x", dtype="float32", shape=(5,))
knots = np.linspace(0, 1, 6)

# Degree 1, zero outside the knots (pm.Interpolated's pdf): n = 8 knots, so the count
# is clamped to [k + 1, n - k - 1] = [2, 6] before taking 1.
# CHECK-LABEL: TEST: spline_zeros opt
# CHECK: %[[KNOTS:.*]] = stablehlo.constant dense<[0.000000e+00, 0.000000e+00, 2.000000e-01
# CHECK: %[[X:.*]] = stablehlo.convert %arg0 : (tensor<5xf32>) -> tensor<5xf64>
# CHECK: %[[OUTSIDE:.*]] = stablehlo.or
# CHECK: %[[COUNT:.*]] = stablehlo.reduce({{.*}}) applies stablehlo.add across dimensions = [1] : (tensor<5x8xi64>, tensor<i64>) -> tensor<5xi64>
# CHECK: stablehlo.clamp %{{.*}}, %[[COUNT]], %{{.*}} : tensor<5xi64>
# CHECK: "stablehlo.gather"(%[[KNOTS]], %{{.*}})
# CHECK: %[[VALUE:.*]] = stablehlo.select %[[OUTSIDE]], %{{.*}}, %{{.*}} : tensor<5xi1>, tensor<5xf64>
# CHECK-NEXT: stablehlo.convert %[[VALUE]] : (tensor<5xf64>) -> tensor<5xf32>
print_ir("spline_zeros", [x], SplineWrapper(InterpolatedUnivariateSpline(knots, knots**2, k=1, ext="zeros"))(x))

# ext="raise": any point outside the knots sets the module's check flag (scipy's ValueError).
# CHECK-LABEL: TEST: spline_raise opt
# CHECK: return {{.*}} : tensor<5xf32>, tensor<1xi1>
print_ir("spline_raise", [x], SplineWrapper(InterpolatedUnivariateSpline(knots, knots**2, k=3, ext="raise"))(x))
