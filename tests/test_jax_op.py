"""JAXOp / wrap_jax: the user's JAX function spliced into our module, one executable."""

import jax.numpy as jnp
import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor import wrap_jax
from pytensor.graph.fg import FunctionGraph
from pytensor.link.jax.ops import JAXOp
from pytensor.tensor.type import TensorType

from lowering import lower
from tests.helpers import RAW_MODE, compare_with_py


@wrap_jax
def _scaled_sin(x, y):
    return jnp.sin(x) @ y + 1.0


def test_wrap_jax_inside_a_graph_and_its_gradient():
    x, y = pt.matrix("x", shape=(3, 4)), pt.matrix("y", shape=(4, 2))
    out = _scaled_sin(x, y) * 2 + x.sum()
    grad = pytensor.grad(out.sum(), x)  # wrap_jax's gradient is another JAXOp (a VJP)
    rng = np.random.default_rng(0)
    # Without jax_enable_x64 JAX computes in float32, as JAXOp.perform does: compare at that precision.
    compare_with_py([x, y], [out, grad], [rng.normal(size=(3, 4)), rng.normal(size=(4, 2))], rtol=1e-5, atol=1e-5)


def test_the_jax_function_becomes_a_private_function_of_our_module():
    x, y = pt.matrix("x", shape=(3, 4)), pt.matrix("y", shape=(4, 2))
    lowered = lower(FunctionGraph([x, y], [_scaled_sin(x, y)]))
    raw = lowered.as_text(raw=True)
    assert "func.func private @jax_main" in raw and "call @jax_main" in raw
    assert "call @" not in lowered.as_text()  # inlined: one module, one executable


def _symbolic_op():
    def g(x, y):
        return jnp.sin(x) @ y + 1.0, x.sum()

    types = [TensorType("float32", (None, 4)), TensorType("float32", (4, None))]
    return JAXOp(types, [TensorType("float32", (None, None)), TensorType("float32", ())], g)


def test_unknown_dims_use_jax_symbolic_shapes():
    x, y = pt.matrix("x", shape=(None, 4), dtype="float32"), pt.matrix("y", shape=(4, None), dtype="float32")
    outputs = list(_symbolic_op()(x, y))
    rng = np.random.default_rng(1)
    compare_with_py([x, y], outputs, [rng.normal(size=(3, 4)).astype("float32"),
                                      rng.normal(size=(4, 2)).astype("float32")])
    compare_with_py([x, y], outputs, [np.ones((5, 4), "float32"), np.ones((4, 1), "float32")])


def test_jax_shape_assertions_become_clear_errors():
    # JAX's symbolic dims are >= 1: a size-0 input fails its shape assertion, by name.
    x, y = pt.matrix("x", shape=(None, 4), dtype="float32"), pt.matrix("y", shape=(4, None), dtype="float32")
    fn = pytensor.function([x, y], list(_symbolic_op()(x, y)), mode=RAW_MODE)
    with pytest.raises(ValueError, match="Expected value >= 1 for dimension variable"):
        fn(np.ones((0, 4), "float32"), np.ones((4, 2), "float32"))
