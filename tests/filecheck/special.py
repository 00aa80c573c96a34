# RUN: %PYTHON %s | FileCheck %s
# Special functions are CHLO in the polymorphic module; CHLO is legalized to plain
# StableHLO once a call's shapes are known.
import numpy as np
import pytensor.tensor as pt
from pytensor.graph.fg import FunctionGraph

from ir_printing import print_ir
from lowering import lower

x = pt.vector("x")
y32 = pt.vector("y32", dtype="float32")

# CHECK-LABEL: TEST: chlo raw
# CHECK-DAG: chlo.erf %arg0
# CHECK-DAG: chlo.sinh %arg0
# CHECK: return
print_ir("chlo", [x], [pt.erf(x), pt.sinh(x)], raw=True)

# float64 gammaln and digamma are Cephes' steps, not CHLO's, and take their logs, sines
# and cosines as polynomials (XLA's are a libm call per element): no such op is left.
# CHECK-LABEL: TEST: lgamma_psi_calls raw
# CHECK-NOT: {{chlo.lgamma|chlo.digamma|stablehlo.log |stablehlo.log_plus_one|stablehlo.sine|stablehlo.cosine}}
# CHECK: return
print_ir("lgamma_psi_calls", [x], [pt.gammaln(x), pt.psi(x)], raw=True)

# gammaln: Stirling's log(2 pi) / 2 from 13 on; the logs read x's exponent from its bits.
# CHECK-LABEL: TEST: gammaln raw
# CHECK-DAG: stablehlo.constant dense<0.91893853320467278>
# CHECK-DAG: stablehlo.shift_right_arithmetic
# CHECK-DAG: stablehlo.round_nearest_even
# CHECK: return
print_ir("gammaln", [x], pt.gammaln(x), raw=True)

# digamma: the recurrence's product x (x + 1) ... (x + 9) (its coefficient 9!), and the
# reflection's nearest integer.
# CHECK-LABEL: TEST: psi raw
# CHECK-DAG: stablehlo.constant dense<3.628800e+05>
# CHECK-DAG: stablehlo.round_nearest_even
# CHECK: return
print_ir("psi", [x], pt.psi(x), raw=True)

# The reflections below the positive range (sin(pi x) of x's offset from its nearest
# integer, then a log or a division) sit in a stablehlo.if that runs only when some
# element needs them: PyMC's gamma functions take positive parameters.
# CHECK-LABEL: TEST: reflections_when_needed opt
# CHECK: stablehlo.reduce
# CHECK: "stablehlo.if"
# CHECK: stablehlo.round_nearest_even
# CHECK: stablehlo.reduce
# CHECK: "stablehlo.if"
# CHECK: stablehlo.round_nearest_even
# CHECK: stablehlo.reduce
# CHECK: "stablehlo.if"
# CHECK: stablehlo.round_nearest_even
# CHECK: return
print_ir("reflections_when_needed", [x], [pt.gammaln(x), pt.psi(x), pt.tri_gamma(x)])

# Stirling's term w A(w**2) (w = 1 / y, from 13 on) is its own quotient A~(u) / (y u**4),
# u = y**2, y at most 2**100: each of lgamma's divisions has one user, so XLA fuses the
# function into one kernel (a quotient read in three places ended a kernel there, and the
# elemental emitter ran the kernels after it, which wrote over their inputs, one element
# at a time).
# CHECK-LABEL: TEST: gammaln_stirling_term opt
# CHECK: stablehlo.constant dense<1.2676506002282294E+30>
# CHECK: %[[Y:.+]] = stablehlo.minimum
# CHECK-NEXT: %[[U:.+]] = stablehlo.multiply %[[Y]], %[[Y]]
# CHECK-NEXT: %[[U2:.+]] = stablehlo.multiply %[[U]], %[[U]]
# CHECK: %[[U4:.+]] = stablehlo.multiply %[[U2]], %[[U2]]
# CHECK-NEXT: %[[Y9:.+]] = stablehlo.multiply %[[Y]], %[[U4]]
# CHECK-NEXT: stablehlo.divide %{{.+}}, %[[Y9]]
print_ir("gammaln_stirling_term", [x], pt.gammaln(x))

# float64 arctanh: fdlibm's steps with our log1p (one division), not CHLO's atanh, whose
# XLA log1p is a libm call per element and 129 ulps off near 0.414.
# CHECK-LABEL: TEST: arctanh raw
# CHECK-NOT: {{chlo.atanh|stablehlo.log_plus_one}}
# CHECK: stablehlo.divide
# CHECK-NOT: {{chlo.atanh|stablehlo.log_plus_one|stablehlo.divide %}}
# CHECK: stablehlo.shift_right_arithmetic
# CHECK: return
print_ir("arctanh", [x], pt.arctanh(x), raw=True)

# gamma: the recurrence's product times Cephes' rational below 25, with no log or exp;
# Stirling's formula from 25 on in a stablehlo.if that runs only when some element is
# there: log x in double-double (Veltkamp's split, 2**27 + 1) with no division (Newton's
# 1 / (2 + z)), then Stirling's term's one division and one exp, and no stablehlo.power
# (a libm call per element); the reflection in another stablehlo.if.
# CHECK-LABEL: TEST: gamma opt
# CHECK-NOT: {{chlo.lgamma|stablehlo.power|stablehlo.log}}
# CHECK: %[[SPLIT:.+]] = stablehlo.constant dense<0x41A0000002000000>
# CHECK-NOT: {{chlo.lgamma|stablehlo.power|stablehlo.log}}
# CHECK: %[[FROM:.+]] = stablehlo.constant dense<2.500000e+01>
# CHECK-NOT: {{stablehlo.exponential|stablehlo.power|stablehlo.log}}
# CHECK: stablehlo.dynamic_broadcast_in_dim %[[FROM]]
# CHECK-NOT: {{stablehlo.exponential|stablehlo.power|stablehlo.log}}
# CHECK: "stablehlo.if"
# CHECK-NOT: stablehlo.divide
# CHECK: stablehlo.dynamic_broadcast_in_dim %[[SPLIT]]
# CHECK: stablehlo.divide
# CHECK-NOT: stablehlo.divide
# CHECK: stablehlo.exponential
# CHECK-NOT: {{stablehlo.exponential|stablehlo.power}}
# CHECK: stablehlo.return
# CHECK: "stablehlo.if"
# CHECK: stablehlo.round_nearest_even
# CHECK-NOT: {{stablehlo.power|stablehlo.log}}
# CHECK: return
print_ir("gamma", [x], pt.gamma(x))

# float32 gammaln computes in float64: the same steps, then one rounding.
# CHECK-LABEL: TEST: gammaln_float32 raw
# CHECK: stablehlo.convert %arg0 : (tensor<?xf32>) -> tensor<?xf64>
# CHECK-NOT: chlo.lgamma
# CHECK: stablehlo.convert {{.*}} : (tensor<?xf64>) -> tensor<?xf32>
print_ir("gammaln_float32", [y32], pt.gammaln(y32), raw=True)

# CHECK-LABEL: TEST: legalized
# CHECK: func.func public @main(%arg0: tensor<3xf64>)
# CHECK-NOT: chlo.
# CHECK: return
print("TEST: legalized")
print(lower(FunctionGraph([x], [pt.erf(x), pt.gammaln(x)])).specialize(np.ones(3)))

# Softplus follows PyTensor's piecewise definition. Its float64 log1p(exp(x)), as Log1p's,
# is a polynomial on the exponent and fraction read from the bits (XLA's log1p calls libm
# per element, and is 129 ulps off near -0.414).
# CHECK-LABEL: TEST: softplus opt
# CHECK-DAG: stablehlo.constant dense<-3.700000e+01>
# CHECK-DAG: stablehlo.constant dense<1.800000e+01>
# CHECK-NOT: stablehlo.log_plus_one
# CHECK: %[[BITS:.*]] = stablehlo.bitcast_convert %{{.*}} : (tensor<?xf64>) -> tensor<?xi64>
# CHECK: stablehlo.shift_right_arithmetic %[[BITS]]
# CHECK-NOT: stablehlo.log_plus_one
# CHECK: return
print_ir("softplus", [x], pt.softplus(x))

# CHECK-LABEL: TEST: log1p opt
# CHECK-NOT: stablehlo.log_plus_one
# CHECK: stablehlo.bitcast_convert %{{.*}} : (tensor<?xf64>) -> tensor<?xi64>
# CHECK-NOT: stablehlo.log_plus_one
# CHECK: return
print_ir("log1p", [x], pt.log1p(x))

# float32 keeps XLA's log1p.
# CHECK-LABEL: TEST: log1p_float32 opt
# CHECK: stablehlo.log_plus_one %arg0 : tensor<?xf32>
print_ir("log1p_float32", [y32], pt.log1p(y32))

# erfcx: Veltkamp's split of x (the 2**27 + 1 multiplier) for exp(x**2), chlo.erfc below
# 10, the continued fraction above (ending in 1/sqrt(pi)) under an `if` some |x| is above
# 10, and inf below -27.
# CHECK-LABEL: TEST: erfcx raw
# CHECK: stablehlo.constant dense<0x41A0000002000000>
# CHECK: chlo.erfc
# CHECK: stablehlo.if
# CHECK: stablehlo.constant dense<0.56418958354775628>
# CHECK: stablehlo.constant dense<-2.700000e+01>
print_ir("erfcx", [x], pt.erfcx(x), raw=True)

# Complex sin is -i sinh(iz), as C99 defines it: the parts are swapped (no complex
# product, which would make NaN of inf * 0) and sinh is built from real functions
# (XLA's complex sinh cancels e^x - e^-x near 0). No complex sine is left.
# CHECK-LABEL: TEST: complex_sin raw
# CHECK: %[[NEG:.*]] = stablehlo.negate %{{.*}} : tensor<?xf64>
# CHECK: stablehlo.complex %[[NEG]], %{{.*}} : tensor<?xcomplex<f64>>
# CHECK: chlo.sinh %{{.*}} : tensor<?xf64> -> tensor<?xf64>
# CHECK-NOT: stablehlo.sine %{{.*}} : tensor<?xcomplex
# CHECK: return %{{.*}} : tensor<?xcomplex<f64>>
z = pt.zvector("z")
print_ir("complex_sin", [z], pt.sin(z), raw=True)

# Complex asinh: XLA's value at |re|, |im| with the parts' signs put back, then Annex
# G's values wherever a part is NaN (XLA gives asinh(nan + 1e300j) = 691 + nan j).
# CHECK-LABEL: TEST: complex_asinh opt
# CHECK: %[[RE:.*]] = stablehlo.real %arg0
# CHECK: %[[IM:.*]] = stablehlo.imag %arg0
# CHECK: chlo.asinh
# CHECK: %[[RE_NAN:.*]] = stablehlo.compare NE, %[[RE]], %[[RE]], FLOAT
# CHECK: %[[IM_NAN:.*]] = stablehlo.compare NE, %[[IM]], %[[IM]], FLOAT
# CHECK: %[[SOME_NAN:.*]] = stablehlo.or %[[RE_NAN]], %[[IM_NAN]]
# CHECK: %[[U:.*]] = stablehlo.select %[[SOME_NAN]],
# CHECK: %[[V:.*]] = stablehlo.select %[[SOME_NAN]],
# CHECK: stablehlo.complex %[[U]], %[[V]]
print_ir("complex_asinh", [z], pt.arcsinh(z))

# Complex log1mexp picks its form by numpy's lexicographic order against log(1/2)
# (real parts, then imaginary parts where the real ones tie), as Log1mexp.impl's `<`.
# CHECK-LABEL: TEST: complex_log1mexp opt
# CHECK: %[[RE:.*]] = stablehlo.real %arg0
# CHECK: %[[IM:.*]] = stablehlo.imag %arg0
# CHECK: stablehlo.log_plus_one
# CHECK: stablehlo.log
# CHECK: stablehlo.compare LT, %[[RE]], %[[HALF:[0-9a-z_]+]], FLOAT
# CHECK: stablehlo.compare EQ, %[[RE]], %[[HALF]], FLOAT
# CHECK: stablehlo.compare LT, %[[IM]],
# CHECK: %[[R:.*]] = stablehlo.select %{{.*}} : tensor<?xi1>, tensor<?xcomplex<f64>>
# CHECK: return %[[R]]
print_ir("complex_log1mexp", [z], pt.log1mexp(z))
