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
from tests.helpers import PY_MODE, RAW_MODE, compare_with_py


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


def test_an_argument_the_function_ignores_is_still_a_parameter():
    # jax.jit drops unused arguments unless told to keep them; the call passes every input.
    x, y = pt.vector("x", shape=(3,)), pt.vector("y", shape=(3,), dtype="float32")
    op = JAXOp([x.type, y.type], [TensorType(x.type.dtype, (3,))], lambda x, y: (x * 2,))
    compare_with_py([x, y], op(x, y), [np.arange(3.0, dtype=x.type.dtype), np.ones(3, "float32")])


@pytest.mark.parametrize(
    "fn, error, match",
    [
        (lambda x: x * 2, TypeError, "must return a tuple of outputs"),  # perform's own check
        (lambda x: (x, x), ValueError, "returned 2 outputs, but 1 were expected"),
    ],
    ids=["not a tuple", "too many"],
)
def test_results_that_do_not_match_the_op_are_refused_as_perform_refuses_them(fn, error, match):
    x = pt.vector("x", shape=(3,))
    out = JAXOp([x.type], [x.type], fn)(x)
    values = [np.ones(3, x.type.dtype)]
    with pytest.raises(error, match=match):
        pytensor.function([x], out, mode=PY_MODE)(*values)
    with pytest.raises(error, match=match) as info:
        pytensor.function([x], out, mode="STABLEHLO")
    assert any("JAXOp" in note for note in info.value.__notes__)  # names the node


def test_gradient_through_unknown_lengths():
    # The VJP's cotangent has the forward result's length, which PyTensor reads off that
    # result (Shape_i): it must reach JAX as the same symbolic dim as the input's.
    data = pytensor.shared(np.linspace(0.0, 1.0, 5, dtype=pytensor.config.floatX))
    assert data.type.shape == (None,)
    out = wrap_jax(lambda v: jnp.sin(v) * 2)(data)
    (grad,) = pytensor.grad(out.sum(), [data])
    compare_with_py([], [out, grad], [], rtol=1e-5, atol=1e-6)
    data.set_value(np.linspace(0.0, 1.0, 8, dtype=data.dtype))
    compare_with_py([], [out, grad], [], rtol=1e-5, atol=1e-6)


def test_gradient_when_the_op_declares_unknown_output_lengths():
    # The function's results are static (2,) though the Op says (None,): the cotangent's
    # length is a constant in our IR, and reaches JAX as one.
    x = pt.vector("x", shape=(2,))
    op = JAXOp([x.type], [TensorType(x.type.dtype, (None,))] * 2, lambda x: (jnp.tanh(x), 2 * x))
    first, second = op(x)
    (grad,) = pytensor.grad(first.sum(), [x])
    compare_with_py([x], [first, second, grad], [np.array([0.5, -1.0], x.type.dtype)], rtol=1e-5, atol=1e-6)
