"""The core pipeline: types, walker, errors, passes, specialization, runtime, linker."""

from __future__ import annotations

import math
import os

import jax
import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from jax.extend.mlir import ir
from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.graph.basic import Apply
from pytensor.graph.fg import FunctionGraph
from pytensor.graph.op import Op
from scipy.special import gammainc as sp_gammainc
from scipy.special import gammaln as sp_gammaln

import lowering
from lowering import (
    LoweringError,
    LoweringOptions,
    PassPipelineError,
    UnsupportedOpsError,
    UnsupportedTypeError,
    VerificationError,
    lower,
    register_lowering,
    to_ir_type,
)
from lowering._jax_internal import make_ir_context
from lowering.passes import run_pipeline, split_pipeline
from tests.helpers import MODE, PY_MODE, assert_same, compare_each_with_py, compare_with_py, record_emitter_choices
from tests.values import finite_values

ALL_DTYPES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
]


def fg(inputs, outputs):
    return FunctionGraph(inputs, outputs, clone=True)


# --- types -----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_to_ir_type_every_dtype(dtype):
    with make_ir_context(), ir.Location.unknown():
        t = to_ir_type(pt.tensor(dtype=dtype, shape=(None, 3)).type)
        assert str(t).startswith("tensor<?x3x")
        assert lowering.types.dtype_of(t) == dtype


def test_to_ir_type_rejects_unknown_dtype_by_name():
    with make_ir_context(), ir.Location.unknown():
        with pytest.raises(UnsupportedTypeError, match="'float128'"):
            lowering.types.element_type("float128")


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_identity_roundtrip_every_dtype(dtype):
    x = pt.tensor("x", dtype=dtype, shape=(None, None))
    value = (np.arange(6).reshape(2, 3) % 3).astype(dtype)
    (got,) = lower(fg([x], [x])).compile()(value)
    assert_same(got, value)


def test_input_with_unsupported_type_names_the_input():
    from pytensor.typed_list import TypedListType

    listed = TypedListType(pt.dvector().type)()
    x = pt.vector("x")
    graph = FunctionGraph([x, listed], [x], clone=False)
    with pytest.raises(UnsupportedTypeError, match="input 1"):
        lower(graph)


# --- the graph walker ----------------------------------------------------------------


def test_divisions_are_emitted_only_by_the_guarded_builders():
    """builders.divide/remainder/truncated_divmod keep zero divisors away from MLIR's
    folders, which divide integer constants in hardware (a zero kills the process)."""
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parent.parent
    direct = [
        f"{path.relative_to(root)}:{i}"
        for path in sorted([*root.glob("dialect_rules/*.py"), *root.glob("lowering/*.py")])
        if path.name != "builders.py"
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\bhlo\.(divide|remainder)\b", line)
    ]
    assert not direct, f"use builders.divide / builders.remainder: {direct}"


def test_walker_graph_shapes():
    """Constants, several outputs, an input as output, a repeated output, unused inputs."""
    x = pt.vector("x")
    y = pt.vector("y")
    unused = pt.matrix("unused")
    two = pt.constant(np.float64(2.0))
    out = x * two + y
    compiled = lower(fg([x, y, unused], [out, x, out, y])).compile()
    a, b = np.arange(3.0), np.ones(3)
    got = compiled(a, b, np.zeros((2, 2)))
    assert len(got) == 4
    assert_same(got[0], a * 2 + b)
    assert_same(got[1], a)
    assert_same(got[2], a * 2 + b)
    assert_same(got[3], b)
    got[0][0] = 99.0  # the caller owns each output: writable, not aliased
    assert got[2][0] != 99.0


def test_constant_output_and_no_inputs():
    out = pt.constant(np.arange(4, dtype="int16"))
    (got,) = lower(FunctionGraph([], [out], clone=False)).compile()()
    assert_same(got, np.arange(4, dtype="int16"))


class NoRuleA(Op):
    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = inputs[0]


class NoRuleB(NoRuleA):
    pass


class WrongDtype(NoRuleA):
    pass


@register_lowering(WrongDtype)
def _lower_wrong_dtype(ctx, node, x):
    return lowering.convert(x, "float32")  # PyTensor says float64


class InvalidIR(NoRuleA):
    pass


@register_lowering(InvalidIR)
def _lower_invalid_ir(ctx, node, x):
    wrong = ir.RankedTensorType.get([2, 2], ir.F64Type.get())
    hlo.convert(wrong, x)  # convert cannot change the rank: the verifier says so
    return x


def test_unsupported_ops_are_all_listed_with_their_nodes():
    x = pt.vector("x")
    a = NoRuleA()(x)
    b = NoRuleB()(a * 2)
    c = NoRuleA()(b)
    with pytest.raises(UnsupportedOpsError) as info:
        lower(fg([x], [c]))
    message = str(info.value)
    assert "NoRuleA" in message and "NoRuleB" in message
    assert set(info.value.missing) == {"NoRuleA", "NoRuleB"}
    assert len(info.value.missing["NoRuleA"]) == 2
    assert isinstance(info.value, NotImplementedError)


def test_rule_with_wrong_dtype_is_caught_and_named():
    x = pt.vector("x")
    with pytest.raises(LoweringError, match="WrongDtype.*element type f32, expected f64"):
        lower(fg([x], [WrongDtype()(x)]))


def test_verifier_failure_carries_the_ir():
    x = pt.vector("x")
    with pytest.raises((VerificationError, LoweringError)) as info:
        lower(fg([x], [InvalidIR()(x)]))
    assert isinstance(info.value, VerificationError)
    assert "stablehlo.convert" in info.value.ir_text


def test_locations_name_pytensor_nodes():
    x = pt.vector("x")
    lowered = lower(fg([x], [pt.exp(x)]), pipeline=None)
    assert 'loc("Exp(x)")' in lowered.as_text(debug_info=True)
    assert "loc(" not in lowered.as_text()
    plain = lower(fg([x], [pt.exp(x)]), options=LoweringOptions(debug_info=False), pipeline=None)
    assert "Exp(x)" not in plain.as_text(debug_info=True)


def test_location_labels_are_how_pytensor_prints_the_node():
    """Less the addresses in objects' reprs (an unnamed generator's), which differ in
    each process, and with the data of constants of more than 20 elements summarized
    as numpy summarizes large arrays (the edges), not formatted element by element."""
    import re

    from pytensor.graph.traversal import io_toposort

    from lowering.graph import node_label

    x = pt.vector("x")
    y = pt.sin(x * 1.5 + 0.5) + pt.constant(np.ones(10)) + pt.constant(2.0, name="two")
    draw = pt.random.normal(x, 1.0)  # a RandomVariable's draw is its default output (".out")
    out = y.sum() + x[1:3].sum() + pt.stack([x, x]).max() + (draw * draw).sum()
    nodes = io_toposort([x], [out])
    assert any(".out" in node_label(node) for node in nodes)
    assert any(" at 0x" in str(node) for node in nodes)
    for node in nodes:
        assert node_label(node) == re.sub(" at 0x[0-9a-fA-F]+", "", str(node))

    for observed in (np.linspace(-1e-3, 1e3, 1000), np.arange(1000.0), np.full(300, 1.5)):
        (node,) = io_toposort([x], [x * pt.constant(observed, name="y")])
        assert node_label(node) == str(node)  # the same text: the cut keeps the edges
    # Where an element between the edges sets numpy's format, only the summary has the
    # edges' own.
    observed[150] = 1e5
    (node,) = io_toposort([x], [x * pt.constant(observed, name="y")])
    assert str(node) == "Mul(x, y{[1.5e+00 1 ... 0 1.5e+00]})"
    assert node_label(node) == "Mul(x, y{[1.5 1.5 1 ... 5 1.5 1.5]})"


def test_dynamic_dims_of_a_long_chain_are_read_once():
    """Each elementwise node's dims are traced to where they were first read (one
    `get_dimension_size` for the whole chain), however long the chain."""
    x = pt.vector("x")
    out = x
    for i in range(200):
        out = pt.sin(out) if i % 2 else out * 1.0001 + 0.5
    raw = lower(fg([x], [out]), pipeline=None).as_text()
    assert raw.count("stablehlo.get_dimension_size") == 1
    assert raw.count("stablehlo.dynamic_broadcast_in_dim") == 200


def test_unknown_dims_stay_dynamic():
    x = pt.matrix("x", shape=(None, 4))
    text = lower(fg([x], [pt.exp(x)])).as_text()
    assert "tensor<?x4xf64>" in text


# --- passes ------------------------------------------------------------------------


def test_default_pipeline_folds_and_cses():
    x = pt.vector("x", shape=(4,))
    one, two = pt.constant(1.0), pt.constant(2.0)
    out = x * (one + two) + x * (one + two)
    lowered = lower(fg([x], [out]))
    raw, opt = lowered.as_text(raw=True), lowered.as_text()
    assert raw.count("stablehlo.multiply") == 2
    assert opt.count("stablehlo.multiply") == 1  # CSE
    assert "dense<3.000000e+00>" in opt  # 1 + 2 folded


def test_custom_pipeline_ir_after_each_pass_and_timing():
    x = pt.vector("x", shape=(4,))
    lowered = lower(
        fg([x], [x + 0.0]), pipeline="builtin.module(stablehlo-legalize-to-hlo,canonicalize,hlo-legalize-to-stablehlo)",
        print_ir_after_all=True, timing=True,
    )
    report = lowered.pipeline_report
    assert [p.name for p in report.passes] == [
        "stablehlo-legalize-to-hlo", "canonicalize", "hlo-legalize-to-stablehlo"
    ]
    assert "mhlo." in report.passes[0].ir_after
    assert "stablehlo.add" not in report.passes[-1].ir_after  # x + 0 folded
    assert report.total_seconds > 0
    assert "total" in report.timing_table()


@pytest.mark.parametrize(
    "pipeline",
    ["canonicalize", "builtin.module(no-such-pass)", "builtin.module(canonicalize", "builtin.module(a,,b)"],
)
def test_bad_pipeline_is_a_clear_error(pipeline):
    x = pt.vector("x")
    with pytest.raises(PassPipelineError):
        lower(fg([x], [x * 2]), pipeline=pipeline)


def test_split_pipeline_respects_nesting():
    assert split_pipeline("builtin.module(a,func.func(b,c),d{x=1,y=2})") == [
        "a", "func.func(b,c)", "d{x=1,y=2}"
    ]


def test_python_passes_run_by_name_and_as_extra():
    seen = []

    def count_ops(module_op):
        seen.append(len(module_op.regions[0].blocks[0].operations))

    lowering.register_python_pass("count-ops-test", count_ops)
    x = pt.vector("x")
    lower(fg([x], [x * 2]), pipeline="builtin.module(count-ops-test,cse)", extra_passes=[count_ops])
    assert seen == [1, 1]


def test_compared_sums_of_run_time_shapes_and_inside_scans_are_computed_once():
    """`compute_compared_once` on a vector of a size known only when called, inside a
    Scan's body and outside it: each sum two comparisons read is a loop's result, and the
    numbers are the Python mode's."""
    x, y = pt.vector("x"), pt.vector("y")

    def step(acc, y):
        d = acc * y - y
        return pt.switch(pt.ge(d, 0.0), d, -0.5 * d) * pt.switch(pt.lt(d, 2.0), 1.0, 0.5)

    walked = pytensor.scan(step, outputs_info=x, non_sequences=y, n_steps=4, return_updates=False)
    total = x * y + x
    outputs = [walked[-1], pt.ge(total, 0.0), pt.le(total, 1.0), total * 3.0]
    text = lower(fg([x, y], outputs)).as_text()
    assert text.count("stablehlo.while") == 3  # the Scan's loop and two sums
    rng = np.random.default_rng(5)
    compare_each_with_py([x, y], outputs, [[rng.normal(size=n), rng.normal(size=n)] for n in (3, 70)])


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int64", "float16", "float32", "float64",
                                   "complex64", "complex128"])
def test_elementwise_ops_move_before_reshapes_for_every_dtype(dtype):
    """`elementwise_before_layout` on ops of reshaped and broadcast scalars with a splat
    constant (a complex constant crashed the pass: the bindings cannot cast it): the
    Python mode's numbers and dtypes."""
    s = pt.scalar("s", dtype=dtype)
    two = pt.constant(np.array(2 if dtype != "bool" else True, dtype=dtype))
    padded = pt.shape_padleft(s, 2)
    outputs = [padded * two + padded, pt.alloc(s, 2, 3) * two, pt.shape_padleft(s * two, 2)]
    value = np.asarray(3 if dtype != "bool" else True).astype(dtype)
    compare_with_py([s], outputs, [value])


def test_inline_private_calls():
    text = """
    module {
      func.func private @twice(%a: tensor<3xf32>) -> tensor<3xf32> {
        %r = stablehlo.add %a, %a : tensor<3xf32>
        return %r : tensor<3xf32>
      }
      func.func public @main(%x: tensor<3xf32>) -> tensor<3xf32> {
        %0 = func.call @twice(%x) : (tensor<3xf32>) -> tensor<3xf32>
        %1 = func.call @twice(%0) : (tensor<3xf32>) -> tensor<3xf32>
        return %1 : tensor<3xf32>
      }
    }"""
    with make_ir_context():
        module = ir.Module.parse(text)
        run_pipeline(module, "builtin.module(inline-private-calls,symbol-dce)")
        out = str(module)
    assert "call" not in out and "@twice" not in out
    assert out.count("stablehlo.add") == 2


def test_fold_constant_if_keeps_the_branch_taken():
    """An `if` on a constant condition becomes its branch's ops, at any depth: inside a
    branch taken, inside a branch dropped (which goes with it), inside an `if` on a
    run-time condition, which stays."""
    text = """
    module {
      func.func public @main(%x: tensor<3xf64>, %p: tensor<i1>) -> (tensor<3xf64>, tensor<3xf64>) {
        %t = stablehlo.constant dense<true> : tensor<i1>
        %f = stablehlo.constant dense<false> : tensor<i1>
        %0 = "stablehlo.if"(%t) ({
          %i = "stablehlo.if"(%f) ({
            %e = stablehlo.exponential %x : tensor<3xf64>
            stablehlo.return %e : tensor<3xf64>
          }, {
            %a = stablehlo.add %x, %x : tensor<3xf64>
            stablehlo.return %a : tensor<3xf64>
          }) : (tensor<i1>) -> tensor<3xf64>
          stablehlo.return %i : tensor<3xf64>
        }, {
          %m = "stablehlo.if"(%t) ({
            %n = stablehlo.negate %x : tensor<3xf64>
            stablehlo.return %n : tensor<3xf64>
          }, {
            stablehlo.return %x : tensor<3xf64>
          }) : (tensor<i1>) -> tensor<3xf64>
          stablehlo.return %m : tensor<3xf64>
        }) : (tensor<i1>) -> tensor<3xf64>
        %1 = "stablehlo.if"(%p) ({
          %k = "stablehlo.if"(%t) ({
            %s = stablehlo.sine %0 : tensor<3xf64>
            stablehlo.return %s : tensor<3xf64>
          }, {
            %c = stablehlo.cosine %0 : tensor<3xf64>
            stablehlo.return %c : tensor<3xf64>
          }) : (tensor<i1>) -> tensor<3xf64>
          stablehlo.return %k : tensor<3xf64>
        }, {
          stablehlo.return %0 : tensor<3xf64>
        }) : (tensor<i1>) -> tensor<3xf64>
        return %0, %1 : tensor<3xf64>, tensor<3xf64>
      }
    }"""
    with make_ir_context():
        module = ir.Module.parse(text)
        run_pipeline(module, "builtin.module(fold-constant-if)")
        assert module.operation.verify()
        out = str(module)
    assert out.count("stablehlo.if") == 1 and '"stablehlo.if"(%arg1)' in out
    assert "stablehlo.add" in out and "stablehlo.sine" in out
    assert not any(op in out for op in ("exponential", "negate", "cosine"))


# --- specialization and runtime ------------------------------------------------------


def test_new_shapes_specialize_without_relowering():
    x = pt.matrix("x")
    lowered = lower(fg([x], [pt.exp(x)]))
    text = lowered.as_text()
    compiled = lowered.compile()
    for shape in [(2, 3), (5, 1), (0, 4), (2, 3)]:
        value = np.random.default_rng(0).normal(size=shape)
        assert_same(compiled(value)[0], np.exp(value))
    assert len(compiled._by_shapes) == 3
    assert lowered.as_text() == text
    static = compiled.specialized_text(np.ones((2, 3)))
    assert "tensor<2x3xf64>" in static and "?" not in static


def test_constants_folded_under_a_bound_value_keep_static_types():
    """With n and k bound to their values, `1 + n + arange(k)` folds to constants whose
    op still had the `?` type: stablehlo-refine-shapes made an invalid `tensor<?xi64>`
    constant of it (PyMC's HyperGeometric logcdf with symbolic parameters failed)."""
    import pymc as pm

    n, k = pt.lscalar("n"), pt.lscalar("k")
    f = pytensor.function([n, k], 1 + n + pt.arange(k), mode="STABLEHLO")
    assert_same(f(20, 2), np.array([21, 22]))
    N, K, draws, value = (pt.lscalar(name) for name in "NKdv")
    logcdf = pm.logcdf(pm.HyperGeometric.dist(N=N, k=K, n=draws), value)
    args = [np.int64(a) for a in (20, 7, 5, 2)]
    expected = pytensor.function([N, K, draws, value], logcdf, mode=PY_MODE)(*args)
    got = pytensor.function([N, K, draws, value], logcdf, mode="STABLEHLO")(*args)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_float64_without_global_x64():
    # PyTensor's JAX backend turns x64 on for the whole process when a test uses it.
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", False)
    try:
        x = pt.vector("x", dtype="float64")
        value = np.array([1.0 + 1e-12, np.pi])
        (got,) = lower(fg([x], [x * 3])).compile()(value)
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, value * 3)
        big = pt.vector("big", dtype="int64")
        (g2,) = lower(fg([big], [big + 1])).compile()(np.array([2**40]))
        assert g2.dtype == np.int64 and g2[0] == 2**40 + 1
    finally:
        jax.config.update("jax_enable_x64", previous)



def test_a_call_leaves_jaxs_64_bit_flag_as_it_was():
    """A call turns jax's 64-bit types on around the dispatch alone: after it, a failed
    run-time check's call included, the (thread-local) flag is what it was, off or on."""
    from jax._src import config as jax_config
    from pytensor.raise_op import Assert

    from lowering._jax_internal import enable_x64

    x = pt.dvector("x")
    fn = pytensor.function([x], Assert("x must be positive")(x * 2, pt.all(x > 0)), mode="STABLEHLO")
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", False)
    try:
        assert_same(fn(np.array([1.0, 2.5])), np.array([2.0, 5.0]))
        assert jax_config.enable_x64.value is False
        with pytest.raises(AssertionError, match="x must be positive"):
            fn(np.array([-1.0, 2.0]))
        assert jax_config.enable_x64.value is False
        with enable_x64():
            assert_same(fn(np.array([0.5])), np.array([1.0]))
            assert jax_config.enable_x64.value is True
        assert jax_config.enable_x64.value is False
    finally:
        jax.config.update("jax_enable_x64", previous)


def test_run_time_errors_blame_the_node_that_raised_them():
    # JITLinker blames the first output's node for any error; ours names the node whose
    # run-time check failed, in the message and as PyTensor's `__op_instance__`.
    x, i = pt.vector("x"), pt.lscalar("i")
    index = x[i]
    outputs = [(pt.exp(x) * 2).sum(), index + 1]
    f = pytensor.function([x, i], outputs, mode="STABLEHLO")
    with pytest.raises(IndexError, match=r"Apply node that caused the error: Subtensor\{i\}\(x, "):
        f(np.ones(3), 5)
    with pytest.raises(IndexError) as caught:
        lower(fg([x, i], outputs)).compile()(np.ones(3), 5)
    assert caught.value.__op_instance__.op == index.owner.op
    # a function with no outputs (only updates) still runs and raises
    s = pytensor.shared(np.zeros(3))
    g = pytensor.function([x, i], [], mode="STABLEHLO", updates=[(s, pt.set_subtensor(s[i], x[0]))])
    assert g(np.ones(2), 1) == [] and s.get_value()[1] == 1
    with pytest.raises(IndexError, match="Apply node that caused the error: SetSubtensor"):
        g(np.ones(2), 7)

def test_argument_errors_name_the_input():
    x = pt.matrix("x", shape=(None, 3))
    y = pt.vector("y", dtype="int32")
    compiled = lower(fg([x, y], [x.sum() if False else x * 2, y])).compile()
    good_x, good_y = np.ones((2, 3)), np.arange(2, dtype="int32")
    with pytest.raises(TypeError, match=r"expected 2 arguments \(x, y\), got 1"):
        compiled(good_x)
    with pytest.raises(TypeError, match=r"input 0 \(x\).*dimensions"):
        compiled(np.ones(3), good_y)
    with pytest.raises(TypeError, match=r"input 0 \(x\).*shape"):
        compiled(np.ones((2, 4)), good_y)
    with pytest.raises(TypeError, match=r"input 1 \(y\).*loss of precision"):
        compiled(good_x, np.arange(2.5, dtype="float64"))
    with pytest.raises(ValueError, match=r"input 0 \(x\)"):
        compiled("not an array", good_y)
    # JAX's error about a tracer is not built from a message: it keeps its own, noted
    import jax

    with pytest.raises(jax.errors.TracerArrayConversionError) as caught:
        jax.jit(lambda v: compiled(v, good_y))(good_x)
    assert "while converting input 0 (x)" in caught.value.__notes__
    # still works afterwards, and castable inputs are cast as PyTensor would
    got = compiled([[1, 2, 3]], np.arange(2, dtype="int8"))
    assert_same(got[0], np.array([[2.0, 4.0, 6.0]]))
    assert_same(got[1], np.arange(2, dtype="int32"))


def test_non_contiguous_and_read_only_inputs_are_not_mutated():
    x = pt.matrix("x")
    base = np.arange(24.0).reshape(4, 6)
    strided = base[::2, ::3]
    transposed = base.T
    read_only = base.copy()
    read_only.flags.writeable = False
    compiled = lower(fg([x], [x * 2])).compile()
    for value in (strided, transposed, read_only):
        before = value.copy()
        (got,) = compiled(value)
        assert_same(got, before * 2)
        np.testing.assert_array_equal(value, before)


def test_large_constants_become_bound_arguments():
    data = np.random.default_rng(1).normal(size=(64, 64))
    x = pt.matrix("x")
    out = x + pt.constant(data)
    lowered = lower(fg([x], [out]))
    assert len(lowered.hoisted_constants) == 1
    assert "dense<" not in lowered.as_text()
    compiled = lowered.compile()
    for _ in range(2):
        assert_same(compiled(np.ones((64, 64)))[0], data + 1)
    small = lower(fg([x], [x + pt.constant(np.ones((64, 64)))]))  # a splat stays inline
    assert small.hoisted_constants == []


def test_small_hoisted_constants_are_compiled_into_the_executable():
    """Hoisted constants of at most INLINE_CONSTANT_BYTES become constants of the
    executables again (each argument costs the dispatch); larger ones stay bound
    buffers. Every dtype, beside packed inputs, run-time shapes and a while-Scan's
    probe, which takes the same arguments."""
    from pytensor.scan import until

    from lowering.specialize import INLINE_CONSTANT_BYTES

    rng = np.random.default_rng(5)
    small = {dt: finite_values(dt, 2048, seed=i) for i, dt in enumerate(ALL_DTYPES)}
    large = rng.normal(size=INLINE_CONSTANT_BYTES // 8 + 1)
    a, b, c, s = (pt.dscalar(name) for name in "abcs")  # packed
    d = pt.dvector("d")  # a run-time length
    outputs = [pt.constant(v) * 2 if v.dtype != bool else ~pt.constant(v) for v in small.values()]
    outputs += [(pt.constant(large)[: d.shape[0]] * d).sum() * a + b - c]

    def step(x, a, b):
        nx = x * a + b + pt.constant(small["float64"])[:3].sum()
        return nx, until(nx > 100.0)

    outputs += [pytensor.scan(step, outputs_info=[s], non_sequences=[a, b], n_steps=1000, return_updates=False)]
    inputs = [a, d, b, c, s]
    fn = pytensor.function(inputs, outputs, mode="STABLEHLO")
    compiled = fn.vm.jit_fn.compiled
    hoisted = compiled.lowered.hoisted_constants
    assert sorted(c.value.nbytes for c in hoisted)[-1] == large.nbytes
    assert len(hoisted) == len(small) + 1
    assert len(compiled._inlined) == len(small)
    compare_each_with_py(inputs, outputs, [[1.5, rng.normal(size=n), 0.5, -1.0, 1.0] for n in (5, 5, 9)])
    for n in (4, 6):
        fn(1.5, np.ones(n), 0.5, -1.0, 1.0)
    assert len(compiled._constant_buffers) == 1
    executables = []
    for measured in compiled._by_shapes.values():  # a probe, then the executable per length
        executables += [measured.probe, *measured.executables.values()]
    assert len(executables) == 4  # two lengths, and the probe of each
    for exe in executables:
        entry = exe.xla.hlo_modules()[0].to_string().split("ENTRY")[1]
        assert entry.count(" parameter(") == 3  # d, the large constant, the packed vector


# --- PyTensor integration -------------------------------------------------------------


def test_mode_by_name():
    x = pt.vector("x")
    for name in ("STABLEHLO", "stablehlo"):
        f = pytensor.function([x], pt.exp(x) * 2, mode=name)
        assert_same(f(np.arange(3.0)), np.exp(np.arange(3.0)) * 2)


def test_dimshuffles_read_their_c_file_once_and_keep_their_state(monkeypatch):
    """PyTensor 2's DimShuffle read its C file from disk per instance: the backend's
    import lets it read it once a process (`lowering._pytensor_internal`). The instances'
    C code, sections and the file they name are PyTensor's own (the C backend's version
    of them too), and pickles carry the same."""
    import pickle
    from pathlib import Path

    from pytensor.link.c.op import ExternalCOp
    from pytensor.tensor.elemwise import DimShuffle

    x = pt.matrix("x")
    pt.expand_dims(x, 0)  # the file has been read in this process
    reads = []
    read_text = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: reads.append(self) or read_text(self, *a, **k))
    ops = [DimShuffle(input_ndim=2, new_order=order) for order in ((1, 0), ("x", 0, 1), (0, "x", 1))]
    assert reads == []
    own = DimShuffle.__new__(DimShuffle)
    own.func_codes, own.code_sections = [], {}
    ExternalCOp.load_c_code(own, ops[0].func_files)  # PyTensor's reading
    assert len(reads) == 1
    for op in ops:
        assert op.func_files == [Path("c_code/dimshuffle.c")]
        assert (op.func_codes, op.code_sections) == (own.func_codes, own.code_sections)
        assert op.func_codes is not own.func_codes and op.code_sections is not own.code_sections

    for op in ops:
        again = pickle.loads(pickle.dumps(op))
        assert again == op
        assert (again.func_files, again.func_codes, again.code_sections) == (op.func_files, own.func_codes, own.code_sections)
        assert again.c_code_cache_version() == op.c_code_cache_version()
    assert len(reads) == 1


def test_shared_variable_updates():
    state = pytensor.shared(np.zeros(3), name="state")
    step = pt.vector("step")
    f = pytensor.function([step], state * 2, updates=[(state, state + step)], mode="STABLEHLO")
    f(np.ones(3))
    out = f(np.full(3, 2.0))
    assert_same(out, np.full(3, 2.0))
    assert_same(state.get_value(), np.full(3, 3.0))


def test_givens_and_no_inputs():
    x = pt.vector("x")
    shared = pytensor.shared(np.arange(3.0), name="s")
    f = pytensor.function([], pt.exp(x), givens={x: shared}, mode="STABLEHLO")
    assert_same(f(), np.exp(np.arange(3.0)))


def test_compare_with_py_helper_catches_a_wrong_result():
    x = pt.vector("x")
    with pytest.raises(AssertionError):
        assert_same(np.array([1.0, 2.0]), np.array([1.0, 2.5]))
    compare_with_py([x], [x * 2, pt.exp(x)], [np.array([0.5, -1.0])])


def test_incompatible_runtime_shapes_name_the_node():
    a, b = pt.vector("a"), pt.vector("b")
    compiled = lower(fg([a, b], [a + b])).compile()
    with pytest.raises(ValueError, match=r"shapes \(3,\), \(5,\) do not fit.*Add\(a, b\)"):
        compiled(np.ones(3), np.ones(5))
    assert_same(compiled(np.ones(2), np.ones(2))[0], np.full(2, 2.0))


def test_a_function_blames_the_node_whose_shapes_do_not_fit():
    """PyTensor's "Apply node that caused the error" is the node the message names, not
    the first output's (a comparison here)."""
    x, y = pt.vector("x"), pt.vector("y")
    total = x * y + x
    f = pytensor.function([x, y], [pt.ge(total, 0.0), pt.lt(total, 1.0)], mode=MODE)
    with pytest.raises(ValueError, match=r"shapes \(3,\), \(2,\) do not fit") as info:
        f(np.ones(3), np.ones(2))
    message = str(info.value)
    named = message.split('"')[1]
    assert named.startswith("Mul(")
    assert f"Apply node that caused the error: {named}" in message


def test_threads_share_one_compiled_function():
    """Concurrent calls (and concurrent first-call compiles) give sequential results."""
    from concurrent.futures import ThreadPoolExecutor

    x = pt.vector("x")
    compiled = lower(fg([x], [pt.exp(x) * 2])).compile()
    values = [np.random.default_rng(i).normal(size=i % 4 + 1) for i in range(64)]
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda v: compiled(v)[0], values))
    for got, v in zip(results, values):
        assert_same(got, np.exp(v) * 2)


def test_executable_cache_is_bounded():
    from lowering.compile import ExecutableCache

    cache = ExecutableCache(max_entries=2)
    for key in "abc":
        cache.put(key, object())
    assert len(cache) == 2 and cache.get("a") is None and cache.get("c") is not None
    cache.clear()
    assert len(cache) == 0


def test_modules_of_small_tensors_compile_with_the_faster_code_generator(monkeypatch):
    """XLA:CPU's elemental emitter compiles about 0.6x as long as its fusion emitters and
    runs as fast where every tensor has at most SMALL_TENSOR_ELEMENTS elements (a
    reduction's input and a loop's state count, not just results; a constant does not)
    and there is no scatter, whose fusion-emitted code ran up to 4x faster."""
    import lowering.compile as comp

    seen = record_emitter_choices(monkeypatch)
    x, i = pt.dvector("x"), pt.lvector("i")
    mode = "STABLEHLO"  # a choice for the CPU
    fn = pytensor.function([x], [pt.exp(x).sum()], mode=mode)
    limit = comp.SMALL_TENSOR_ELEMENTS
    for n, small in ((3, True), (limit, True), (limit + 1, False)):
        values = np.linspace(-1, 1, n)
        assert_same(fn(values)[0], np.exp(values).sum(), rtol=1e-13)
        assert seen.pop() is small, n
    scatter = pytensor.function([x, i], pt.inc_subtensor(x[i], 1.0), mode=mode)
    assert_same(scatter(np.zeros(4), np.array([1, 1, 3])), np.array([0.0, 2.0, 0.0, 1.0]))
    assert seen.pop() is False
    # A loop: its state counts too, here the Scan's buffers (longer than its sequence).
    cumulative = pytensor.function([x], pytensor.scan(lambda v, acc: acc + v, sequences=[x],
                                                      outputs_info=[pt.zeros(())], return_updates=False), mode=mode)
    for n, small in ((4, True), (limit, False)):
        assert_same(cumulative(np.arange(float(n))), np.cumsum(np.arange(float(n))))
        assert seen.pop() is small, n
    # A constant does not count: a table of coefficients (the incomplete gamma function's
    # 25 x 25), only what reads it.
    table = np.arange(400.0).reshape(20, 20) / 400
    product = pytensor.function([x], pt.constant(table) @ x, mode=mode)
    assert_same(product(np.linspace(-1, 1, 20)), table @ np.linspace(-1, 1, 20), rtol=1e-14)
    assert seen.pop() is True
    assert comp.elemental_overrides("cuda") == ()
    # An XLA that no longer knows the option (jaxlib 0.11) compiles as it would anyway.
    monkeypatch.setitem(comp._ELEMENTAL_OVERRIDES, "cpu", (("xla_cpu_no_such_option", "1"),))
    values = np.linspace(-2, 2, 7)
    assert_same(fn(values)[0], np.exp(values).sum(), rtol=1e-13)
    assert comp.elemental_overrides("cpu") == ()


def test_a_long_chain_on_small_tensors_compiles_with_the_fusion_emitters(monkeypatch):
    """XLA's elemental emitter recurses once per op of a fused chain as it compiles: 10,000
    elementwise ops on 4 elements killed the process (a stack overflow on XLA's compile
    thread). Past ELEMENTAL_MAX_OPS a module gets the fusion emitters, and its loops that
    fit still run as one function each: the elemental emitter compiles only those."""
    import lowering.compile as comp

    compiled = []
    real = comp.compile_bytecode
    monkeypatch.setattr(comp, "compile_bytecode", lambda *a, **kw: compiled.append(real(*a, **kw)) or compiled[-1])
    x, a, y = pt.dvectors("x", "a", "y")
    out = x
    for i in range(10_000):
        out = pt.sin(out) if i % 2 else out * 1.0001 + 0.5
    # beside the chain, a loop (gammainc's series) past XLA's own small-loop threshold
    lowered = lower(FunctionGraph([x, a, y], [out, pt.gammainc(a, y)], clone=False))
    rng = np.random.default_rng(3)
    values = [np.linspace(0.5, 2.0, 4), rng.uniform(0.5, 5, 1_000), rng.uniform(0.1, 8, 1_000)]
    module = lowered.specialize(*values)
    assert not comp.suits_elemental_emitter(module) and not comp._fits_elemental_stack(module)
    expected = values[0]
    for i in range(10_000):
        expected = np.sin(expected) if i % 2 else expected * 1.0001 + 0.5
    chain, series = lowered.compile()(*values)
    np.testing.assert_allclose(chain, expected, rtol=1e-12)
    np.testing.assert_allclose(series, sp_gammainc(values[1], values[2]), rtol=1e-13)
    assert "xla_cpu_small_call" in compiled.pop().hlo_modules()[0].to_string()


def test_loops_over_little_data_compile_into_one_function(monkeypatch):
    """XLA:CPU compiles a while loop whose iteration touches fewer than SMALL_LOOP_BYTES
    into one function (a call it marks xla_cpu_small_call), not into kernels its executor
    runs one by one every iteration; the results are the same. Not a larger loop (of
    100,000 elements: its compacted copies, over 6,250 and 390, are small calls), not
    under STABLEHLO_NO_FMA, and not a loop past ELEMENTAL_MAX_OPS ops."""
    import lowering.compile as comp

    compiled = []
    real = comp.compile_bytecode
    monkeypatch.setattr(comp, "compile_bytecode", lambda *a, **kw: compiled.append(real(*a, **kw)) or compiled[-1])
    a, x = pt.dvector("a"), pt.dvector("x")
    rng = np.random.default_rng(5)

    def check(mode, n, small):
        values = [rng.uniform(0.5, 5, n), rng.uniform(0.1, 8, n)]
        expected = pytensor.function([a, x], pt.gammainc(a, x), mode=PY_MODE)(*values)
        assert_same(pytensor.function([a, x], pt.gammainc(a, x), mode=mode)(*values), expected, rtol=1e-13)
        text = compiled.pop().hlo_modules()[0].to_string()
        assert " while(" in text or "while_" in text
        calls = [line for line in text.splitlines() if "xla_cpu_small_call" in line]
        assert any(f"[{n}]" in line for line in calls) is small, (mode, n)

    check("STABLEHLO", 1_000, True)
    check("STABLEHLO", 100_000, False)
    check("STABLEHLO_NO_FMA", 1_000, False)
    monkeypatch.setattr(comp, "ELEMENTAL_MAX_OPS", 10)  # the loop is past it
    check("STABLEHLO", 1_000, False)


def test_the_cpu_client_threads_follow_the_setting(monkeypatch):
    """STABLEHLO_PYTENSOR_THREADS: a positive count or 'all' (XLA's one per core) for every
    function; unset, one thread, or one per core for a function with large data; anything
    else is refused by name. One thread compiles with the memory-saving schedule (an XLA
    that refuses the option drops it)."""
    import lowering.compile as comp

    try:
        for value, small, large in (("", 1, None), ("3", 3, 3), ("all", None, None), (" ALL ", None, None)):
            monkeypatch.setenv(comp.THREADS_ENV, value)
            comp._thread_setting.cache_clear()
            assert (comp.cpu_threads(), comp.cpu_threads(large=True)) == (small, large), value
        for value in ("0", "-1", "two", "1.5"):
            monkeypatch.setenv(comp.THREADS_ENV, value)
            comp._thread_setting.cache_clear()
            with pytest.raises(ValueError, match=f"STABLEHLO_PYTENSOR_THREADS='{value}': expected a positive"):
                comp.cpu_threads()
    finally:
        monkeypatch.delenv(comp.THREADS_ENV)
        comp._thread_setting.cache_clear()
    assert comp.thread_overrides("cpu", 1) == (("xla_cpu_scheduler_type", "CPU_SCHEDULER_TYPE_MEMORY_OPTIMIZED"),)
    assert comp.thread_overrides("cpu", None) == comp.thread_overrides("cuda", 1) == ()
    monkeypatch.setitem(comp._ONE_THREAD_OVERRIDES, "cpu", (("xla_cpu_no_such_option", "1"),))
    x = pt.dvector("x")
    fn = pytensor.function([x], pt.gammaln(x).sum() * 7, mode="STABLEHLO")
    values = np.linspace(0.5, 3, 9)
    assert_same(fn(values), 7 * sp_gammaln(values).sum(), rtol=1e-14)
    assert comp.thread_overrides("cpu", 1) == ()


def test_cpu_executables_prefer_512_bit_vectors(monkeypatch):
    """Every CPU compile asks LLVM for 512-bit vectors (`vector_overrides`; on a host
    without AVX-512 LLVM keeps to what it has); an XLA that refuses the option drops it."""
    import lowering.compile as comp

    seen = []

    class Recording:  # the client, noting the options of each compile
        def __init__(self, backend):
            self.backend = backend

        def __getattr__(self, name):
            return getattr(self.backend, name)

        def compile_and_load(self, module, devices, options, **kwargs):
            seen.append(options)
            return self.backend.compile_and_load(module, devices, options, **kwargs)

    real = comp.get_backend
    monkeypatch.setattr(comp, "get_backend", lambda *a, **kw: Recording(real(*a, **kw)))
    x = pt.dvector("x")
    values = np.linspace(0.5, 3, 9)
    for mode in ("STABLEHLO", "STABLEHLO_NO_FMA"):
        fn = pytensor.function([x], pt.exp(x).sum() * 3.0, mode=mode)
        assert_same(fn(values), 3 * np.exp(values).sum(), rtol=1e-14)
        assert ("xla_cpu_prefer_vector_width", "512") in seen.pop().env_option_overrides, mode
    assert comp.vector_overrides("cuda") == ()
    monkeypatch.setitem(comp._VECTOR_OVERRIDES, "cpu", (("xla_cpu_no_such_option", "1"),))
    fn = pytensor.function([x], pt.exp(x).sum() * 5.0, mode="STABLEHLO")
    assert_same(fn(values), 5 * np.exp(values).sum(), rtol=1e-14)
    assert comp.vector_overrides("cpu") == ()


def test_cpu_executables_keep_a_sum_one_reduce():
    """XLA:CPU's tree_reduction_rewriter is off (`reduction_overrides`): a sum of 2,000
    elements stays one reduce, its elementwise producer fused into it, where the pass
    made it two reduce_window kernels and a reduce; the sum is as accurate as numpy's."""
    x = pt.dvector("x")
    fn = pytensor.function([x], pt.exp(x).sum(), mode="STABLEHLO")
    values = np.random.default_rng(5).normal(size=2000)
    assert_same(fn(values), math.fsum(np.exp(values)), rtol=1e-15)
    (executable,) = fn.vm.jit_fn.compiled._by_shapes.values()
    assert "reduce-window" not in executable.xla.hlo_modules()[0].to_string()


_THREADS_RUN = """
import os, numpy as np, pytensor, pytensor.tensor as pt, scipy.special as sp
import lowering
from lowering.compile import LARGE_CALL_BYTES

def pool():
    names = [open(f"/proc/self/task/{t}/comm").read() for t in os.listdir("/proc/self/task")]
    return sum(name.startswith("tf_XLAEigen") for name in names)

x = pt.dvector("x")
f = pytensor.function([x], [pt.gammaln(x), pt.psi(x).sum()], mode="STABLEHLO")
values = np.linspace(0.1, 30.0, 5000)
a, b = f(values)
np.testing.assert_allclose(a, sp.gammaln(values), rtol=2e-13)
np.testing.assert_allclose(b, sp.psi(values).sum(), rtol=1e-13)
small = pool()
n = LARGE_CALL_BYTES // 8
h = pytensor.function([x], pt.exp(pt.alloc(x[0], n)), mode="STABLEHLO")  # a large result
np.testing.assert_allclose(h(np.array([-0.5])), np.full(n, np.exp(-0.5)), rtol=1e-15)
written = pool()
big = np.linspace(0.0, 1.0, n)
g = pytensor.function([x], (pt.exp(x) * 2).sum(), mode="STABLEHLO")
np.testing.assert_allclose(g(big), (np.exp(big) * 2).sum(), rtol=1e-12)
np.testing.assert_allclose(g(big[:10]), (np.exp(big[:10]) * 2).sum(), rtol=1e-12)  # the same client
print(small, written, pool(), os.environ.get("PJRT_NPROC"))
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads through Linux's /proc")
def test_the_cpu_client_starts_with_the_threads_asked_for():
    """A function with small data runs on a client with one pool thread; one whose first
    call brings LARGE_CALL_BYTES or more, or whose results of a static shape hold that
    much, on a client with XLA's pool of one thread per core (one pool for both);
    STABLEHLO_PYTENSOR_THREADS gives every function its count. The results are the
    same, and PJRT_NPROC (which XLA reads as a client starts) is left as it was, so jax's
    own client still gets a thread per core."""
    import subprocess
    import sys

    def run(**env):
        environ = {k: v for k, v in os.environ.items() if k not in ("STABLEHLO_PYTENSOR_THREADS", "PJRT_NPROC")}
        done = subprocess.run([sys.executable, "-c", _THREADS_RUN], capture_output=True, text=True,
                              env={**environ, **env})
        assert done.returncode == 0, done.stderr[-2000:]
        small, written, both, nproc = done.stdout.split()
        return int(small), int(written), int(both), nproc

    cores = len(os.sched_getaffinity(0))
    assert run() == (1, 1 + cores, 1 + cores, "None")
    assert run(STABLEHLO_PYTENSOR_THREADS="3", PJRT_NPROC="5") == (3, 3, 3, "5")


@pytest.mark.skipif(not (hasattr(os, "sched_setaffinity") and os.path.isdir("/proc/self/task")),
                    reason="thread affinity through Linux's sched_setaffinity and /proc")
def test_the_one_thread_pool_runs_on_its_callers_core():
    """XLA's executor hands half its ready kernels to its client's pool thread whenever
    more than 8 are ready; on another core than the caller's, that thread made ARMA's
    calls 2x slower. The runtime keeps the one-thread client's pool thread on the core of
    the thread that calls, and moves it after the caller moves; the clients with a thread
    per core and other platforms' are left alone."""
    import lowering.compile as comp

    x = pt.dvector("x")
    fn = pytensor.function([x], [pt.exp(x).sum(), x * 2], mode="STABLEHLO")
    values = np.linspace(0.0, 1.0, 7)
    fn(values)
    keeper = fn.vm.jit_fn.compiled._keep_pool
    assert keeper is comp._POOL_KEEPERS[1] and keeper.threads
    for tid in keeper.threads:
        with open(f"/proc/self/task/{tid}/comm") as comm:
            assert comm.read().strip() == "tf_XLAEigen"
    assert comp.pool_beside_caller("cpu", large=True) is None
    assert comp.pool_beside_caller("cuda") is None
    mine = os.sched_getaffinity(0)  # this thread's
    try:
        for cpu in sorted(mine)[:2]:  # the caller on one core, then on another
            os.sched_setaffinity(0, {cpu})
            for _ in range(comp.PoolBesideCaller.CHECK_EVERY):
                got = fn(values)
            assert_same(got[0], np.exp(values).sum())
            assert all(os.sched_getaffinity(tid) == {cpu} for tid in keeper.threads), cpu
    finally:
        os.sched_setaffinity(0, mine)
    # Where it cannot move them, it stops, and the call goes on: a thread that is gone, or
    # no core to read (sched_getcpu's -1, which os.sched_setaffinity refuses with a
    # ValueError).
    gone = comp.PoolBesideCaller([2**22 + 12345])  # beyond Linux's default pid_max
    gone()
    assert gone.threads == ()
    lost = comp.PoolBesideCaller(keeper.threads)
    real = comp._sched_getcpu
    try:
        comp._sched_getcpu = lambda: -1
        lost()
    finally:
        comp._sched_getcpu = real
    assert lost.threads == ()


def test_functions_that_draw_much_get_a_thread_per_core():
    """Random draws are compute enough that LARGE_DRAW_BYTES of them go to the client
    with a thread per core; fewer stay on the one-thread client, as does a function
    that writes that much without drawing. Results of a size known only at run time
    count at the first compile."""
    from lowering.compile import LARGE_DRAW_BYTES

    n = LARGE_DRAW_BYTES // 8
    x = pt.dvector("x")
    for size, draws, large in ((n - 1, True, False), (n, True, True), (n, False, False)):
        rng = pytensor.shared(np.random.default_rng(0))
        next_rng, drawn = pt.random.normal(x[0], 1.0, size=size, rng=rng).owner.outputs
        out, updates = (drawn, {rng: next_rng}) if draws else (pt.alloc(x[0], size) * 2, {})
        fn = pytensor.function([x], out, updates=updates, mode="STABLEHLO")
        assert fn(np.array([0.5])).shape == (size,)
        assert fn.vm.jit_fn.compiled._large is large, (size, draws)
    # A size read from an input (as PyMC's posterior predictive reads pm.Data's shape):
    # the module specialized to the first call tells the results' bytes; later calls of
    # other sizes keep the client.
    size = pt.lscalar("size")
    for first, large in ((n - 1, False), (n, True), (0, False)):
        rng = pytensor.shared(np.random.default_rng(0))
        next_rng, drawn = pt.random.normal(x[0], 1.0, size=(size,), rng=rng).owner.outputs
        fn = pytensor.function([x, size], drawn, updates={rng: next_rng}, mode="STABLEHLO")
        assert fn(np.array([0.5]), first).shape == (first,)
        assert fn.vm.jit_fn.compiled._large is large, first
        assert fn(np.array([0.5]), 3).shape == (3,) and fn(np.array([0.5]), n + 1).shape == (n + 1,)
        assert fn.vm.jit_fn.compiled._large is large, first
    # Without draws, LARGE_CALL_BYTES of results sized at run time, as of a static shape.
    from lowering.compile import LARGE_CALL_BYTES

    edge = (LARGE_CALL_BYTES - 16) // 8  # with the 16 bytes of x and size
    for first, large in ((edge - 1, False), (edge, True)):
        fn = pytensor.function([x, size], pt.exp(pt.alloc(x[0], size)), mode="STABLEHLO")
        assert fn(np.array([0.5]), first).shape == (first,)
        assert fn.vm.jit_fn.compiled._large is large, first
    # Sized by a shared array (pm.Data): the array's buffer, put on the first client before
    # the move, is put again on the new one, so later calls take the dispatch's fast path.
    data = pytensor.shared(np.ones(n), name="data")
    rng = pytensor.shared(np.random.default_rng(0))
    next_rng, drawn = pt.random.normal(data, 1.0, size=data.shape, rng=rng).owner.outputs
    fn = pytensor.function([], drawn, updates={rng: next_rng}, mode="STABLEHLO")
    for _ in range(3):
        assert fn().shape == (n,)
    compiled = fn.vm.jit_fn.compiled
    assert compiled._large
    held = [h for h in compiled._held.values() if h is not None]
    assert held and all(buffer.devices() == {compiled._device} for _, buffer in held)


def test_small_results_come_back_packed_and_each_is_its_own_writable_array():
    """Small results are read back as one byte buffer and split into views (one
    transfer instead of one per result); each output is still a separate, writable
    array of its own dtype and shape, and checks still raise."""
    x = pt.dvector("x")
    i8 = pt.vector("i8", dtype="int8")
    n = pt.lscalar("n")
    outputs = [x.sum(), x * 2, i8 + 1, x > 0, pt.cast(x, "float32")[:2], x[n], x.astype("complex128")]
    fn = pytensor.function([x, i8, n], outputs, mode="STABLEHLO")
    values = [np.array([1.0, -2.0, 3.0]), np.array([1, 2, 127], dtype="int8"), np.array(1)]
    got = fn(*values)
    expected = pytensor.function([x, i8, n], outputs, mode=pytensor.compile.mode.Mode(linker="py", optimizer=None))(*values)
    for g, e in zip(got, expected):
        assert_same(g, e)
        assert g.flags.writeable
    got[1][:] = 0  # writing one output leaves the others alone
    assert_same(got[0], expected[0])
    assert_same(got[2], expected[2])
    executable = next(iter(fn.vm.jit_fn.compiled._by_shapes.values()))
    # six outputs and the check flags; the complex output stays apart
    assert executable.packed is not None and len(executable.packed.views) == 7
    with pytest.raises(IndexError):
        fn(values[0], values[1], np.array(5))
    # Without it every result is in the one vector, read by `finish`'s shorter path.
    whole = pytensor.function([x, i8, n], outputs[:-1], mode="STABLEHLO")
    got = whole(*values)
    for g, e in zip(got, expected[:-1], strict=True):
        assert_same(g, e)
        assert g.flags.writeable
    got[0][...] = 0
    assert_same(whole(*values)[0], expected[0])
    executable = next(iter(whole.vm.jit_fn.compiled._by_shapes.values()))
    assert executable.packed.whole is not None and not executable.packed.float64
    with pytest.raises(IndexError):
        whole(values[0], values[1], np.array(5))


def test_calls_after_the_first_run_in_cpp_dispatch_and_behave_the_same():
    """After the first call with a signature, jaxlib's C++ dispatch puts the arguments
    on the device and runs the executable (nothing in Python until the results come
    back); hoisted constants, failed checks and other dtypes behave as on a first
    call, and earlier outputs stay as they were."""
    data = np.random.default_rng(2).normal(size=1 << 15)  # too large to compile in
    x, n = pt.dvector("x"), pt.lscalar("n")
    compiled = lower(fg([x, n], [x * pt.constant(data), x[n]])).compile()
    assert len(compiled.lowered.hoisted_constants) == 1
    puts = []
    put = compiled._put
    compiled._put = lambda value, dtype: puts.append(value) or put(value, dtype)

    first = compiled(np.ones(1 << 15), np.array(3))
    assert len(compiled._constant_buffers) == 1
    assert len(puts) == 3  # the constant (on the client the first call chooses) and two arguments
    value = np.arange(float(1 << 15))
    for i in (5, 7):
        got = compiled(value, np.array(i))
        assert_same(got[0], value * data)
        assert_same(got[1], np.float64(i))
        assert got[0].flags.writeable
    assert len(puts) == 3  # no Python argument handling after the first call
    assert_same(first[0], data)
    assert_same(first[1], np.float64(1.0))
    with pytest.raises(IndexError, match="index out of bounds"):
        compiled(value, np.array(1 << 15))
    got = compiled.call_trusted([value.astype("float32"), np.array(4)])  # converted
    assert_same(got[0], value * data)
    assert len(puts) == 5
    compiled.clear_cache()
    assert_same(compiled(value, np.array(9))[1], np.float64(9.0))
    assert len(puts) == 7


def test_jax_disable_jit_does_not_reach_our_functions():
    """`jax.disable_jit()` (how JAX users debug their code) turns jaxlib's C++ dispatch
    into a plain Python call; ours then runs the executable from Python, every call."""
    x, n = pt.dvector("x"), pt.lscalar("n")
    fn = pytensor.function([x, n], [pt.exp(x).sum(), x[n]], mode="STABLEHLO")
    value = np.linspace(0.0, 1.0, 5)
    expected = fn(value, 2)
    with jax.disable_jit():
        for _ in range(2):
            for got, want in zip(fn(value, 2), expected):
                assert_same(got, want)
        assert_same(fn(np.ones(7), 6)[1], np.float64(1.0))  # a new signature
        with pytest.raises(IndexError, match="index out of bounds"):
            fn(value, 5)
    assert_same(fn(value, 2)[0], expected[0])


def test_large_inputs_xla_cannot_read_in_place_are_copied_once_aligned():
    """XLA's CPU client reads a C-contiguous argument at a 64-byte boundary in place;
    large others (numpy puts big arrays 16 bytes past a boundary) get one numpy copy to
    an aligned buffer first. Results are the same and inputs are left as they were."""
    from lowering.runtime import _aligned_copy, _in_place

    n = 100_000
    raw = np.zeros(n * 8 + 256, np.uint8)
    start = -raw.ctypes.data % 64
    aligned = raw[start : start + n * 8].view(np.float64)
    misaligned = raw[start + 16 : start + 16 + n * 8].view(np.float64)
    misaligned[:] = np.linspace(-1.0, 1.0, n)
    strided = np.arange(2.0 * n)[::2]
    assert _in_place(aligned) and not _in_place(misaligned) and not _in_place(strided)
    copy = _aligned_copy(misaligned)
    assert _in_place(copy) and copy.dtype == misaligned.dtype
    np.testing.assert_array_equal(copy, misaligned)

    x = pt.dvector("x")
    compiled = lower(fg([x], [x * 2 + 1])).compile()
    for value in (aligned, misaligned, strided, misaligned.copy()):
        before = value.copy()
        for _ in range(2):
            assert_same(compiled(value)[0], before * 2 + 1)
        np.testing.assert_array_equal(value, before)


def _misaligned(values):
    """`values` (a float64 vector) 16 bytes past a 64-byte boundary: XLA cannot read it
    in place."""
    raw = np.empty(values.size * 8 + 128, np.uint8)
    start = -raw.ctypes.data % 64 + 16
    out = raw[start : start + values.size * 8].view(np.float64)
    out[:] = values
    return out


def test_aligned_copies_reuse_one_buffer_and_results_stay_the_callers():
    """The aligned copy of a large input goes to a buffer the function keeps (a fresh one
    costs a page fault per page): a smaller input reuses it, a larger one replaces it.
    A result never reads it, so results of earlier calls keep their values, the input
    passed through unchanged included; nothing the caller passed is changed."""
    from lowering import runtime

    x = pt.dvector("x")
    compiled = lower(fg([x], [x * 2 + 1, x])).compile()
    rng = np.random.default_rng(5)
    calls, buffers = [], []
    for n in (50_000, 50_000, 20_000, 80_000):
        value = _misaligned(rng.normal(size=n))
        before = value.copy()
        calls.append((before, compiled(value)))
        np.testing.assert_array_equal(value, before)
        buffers.append(compiled._staging[0])
    assert all(runtime._in_place(b) for b in buffers)
    assert buffers[0] is buffers[1] is buffers[2] and buffers[0].nbytes == 50_000 * 8
    assert buffers[3].nbytes == 80_000 * 8
    for before, (doubled, same) in calls:  # after every later call
        assert_same(doubled, before * 2 + 1)
        assert_same(same, before)


def test_aligned_copies_of_concurrent_calls_do_not_share_a_buffer():
    """Calls running at once: one uses the kept buffer, the others fresh copies."""
    import threading

    x = pt.dvector("x")
    compiled = lower(fg([x], [pt.cumsum(x) * 2])).compile()
    values = [_misaligned(np.full(100_000, float(k))) for k in range(4)]
    compiled(values[0])
    failures = []

    def work(k):
        for _ in range(20):
            got = compiled(values[k])[0]
            if got[-1] != 2.0 * k * 100_000 or got[0] != 2.0 * k:
                failures.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


def test_a_failed_call_leaves_its_aligned_copy_to_the_run():
    """A call that raises (a failed run-time check) gives up the kept buffer, which the
    run may still read; the next call makes a new one and is right."""
    from pytensor.raise_op import Assert

    x = pt.dvector("x")
    checked = Assert("x must be positive")(x * 3, pt.all(x > 0))
    compiled = lower(fg([x], [checked])).compile()
    good = _misaligned(np.linspace(1.0, 2.0, 30_000))
    compiled(good)
    first = compiled._staging[0]
    with pytest.raises(AssertionError, match="x must be positive"):
        compiled(_misaligned(np.linspace(-1.0, 2.0, 30_000)))
    assert 0 not in compiled._staging
    assert_same(compiled(good)[0], np.linspace(1.0, 2.0, 30_000) * 3)
    assert compiled._staging[0] is not first


def test_small_float64_inputs_travel_packed():
    """Three or more small float64 inputs of static shape go to the executable as one
    vector (two travel apart); the others (a shape known at run time, other dtypes) as
    themselves. Results match the Python mode, at the first call and through the C++
    dispatch after."""
    a, b = pt.dscalar("a"), pt.dscalar("b")
    v = pt.tensor("v", shape=(3,), dtype="float64")
    m = pt.tensor("m", shape=(2, 3), dtype="float64")
    d = pt.dvector("d")  # a run-time length
    k = pt.iscalar("k")
    f = pt.tensor("f", shape=(3,), dtype="float32")
    inputs = [a, d, v, k, m, f, b]
    outputs = [a * v + m.sum(0) * b, (d * a).sum() + k, f * b, m.T @ v[:2] - a]
    compiled = pytensor.function(inputs, outputs, mode="STABLEHLO").vm.jit_fn.compiled
    assert set(compiled._packing.parts) == {0, 2, 4, 6}
    rng = np.random.default_rng(9)
    values = [[np.float64(rng.normal()), rng.normal(size=n), rng.normal(size=3), np.int32(n),
               rng.normal(size=(2, 3)), rng.normal(size=3).astype("float32"), np.float64(rng.normal())]
              for n in (4, 4, 7, 0)]
    compare_each_with_py(inputs, outputs, values)
    three = pytensor.function([a, v, b], a * v + b, mode="STABLEHLO").vm.jit_fn.compiled
    assert set(three._packing.parts) == {0, 1, 2}
    assert pytensor.function([a, v], a * v, mode="STABLEHLO").vm.jit_fn.compiled._packing is None


def test_packed_inputs_of_other_dtypes_under_trust_input():
    """Under trust_input a packed input may come as another dtype or layout: float64
    arrays travel as their bytes, the rest converted to float64 as numpy converts them,
    so an int64 or big-endian array is never read as float64 bits. A complex input
    raises a TypeError naming it."""
    a, b = pt.dscalar("a"), pt.dscalar("b")
    v = pt.tensor("v", shape=(3,), dtype="float64")
    fn = pytensor.function([a, v, b], a * v + b, mode="STABLEHLO", trust_input=True)
    assert fn.vm.jit_fn.compiled._packing is not None
    for args in [
        (np.float64(2.0), np.array([1.0, 2.0, 3.0]), np.array(0.5)),
        (2.0, np.array([1.0, 2.0, 3.0]), 0.5),  # Python floats
        (np.array(2.0), np.arange(6.0)[::2], np.array(0.5)),  # a strided view
        (np.array(2.0), np.array([1, 2, 3]), np.array(0.5)),  # int64, as many bytes
        (np.array(2.0), np.array([1.0, 2.0, 3.0], dtype=">f8"), np.array(0.5)),  # big-endian
        (np.float32(2.0), np.array([1.0, 2.0, 3.0], dtype="float32"), np.array(0.5, dtype="float32")),
        (np.array(2.0), np.array([True, False, True]), 1),
    ]:
        expected = np.float64(args[0]) * np.asarray(args[1], dtype="float64") + np.float64(args[2])
        assert_same(fn(*args), expected)
    with pytest.raises(TypeError, match=r"input 1 \(v\): expected float64, got complex128"):
        fn(2.0, np.array([1.0, 2.0, 3.0]) + 1j, 0.5)


def test_packed_inputs_of_value_dependent_shapes_and_python_numbers():
    """Packed scalars whose values decide shapes (arange's length) specialize per value,
    or size a while-Scan a probe measures; under trust_input, Python floats pack too,
    and a packed input of another shape, even one of as many elements, raises a
    ValueError naming it."""
    a, b, c, n = (pt.dscalar(name) for name in "abcn")
    outputs = [pt.arange(n) * a + b - c]
    fn = pytensor.function([a, b, c, n], outputs, mode="STABLEHLO")
    assert fn.vm.jit_fn.compiled._packing is not None
    for length in (3.0, 5.0, 3.0):
        assert_same(fn(2.0, 1.0, 0.5, length)[0], np.arange(length) * 2.0 + 0.5)
    # A while-Scan's length, measured by a probe that reads the packed vector too.
    from pytensor.scan import until

    def step(x, a, b):
        nx = x * a + b
        return nx, until(nx > 100.0)

    xs = pytensor.scan(step, outputs_info=[c], non_sequences=[a, b], n_steps=1000, return_updates=False)
    compare_each_with_py([a, b, c, n], [xs, xs.sum() * n],
                         [[1.5, 1.0, 1.0, 2.0], [2.0, 0.5, 3.0, -1.0], [1.5, 1.0, 1.0, 2.0]])
    trusted = pytensor.function([a, b, c, n], outputs, mode="STABLEHLO", trust_input=True)
    assert_same(trusted(2.0, 1.0, 0.5, 4.0)[0], np.arange(4.0) * 2.0 + 0.5)
    v = pt.tensor("v", shape=(3,), dtype="float64")
    bad = pytensor.function([a, b, c, v], a * v + b - c, mode="STABLEHLO", trust_input=True)
    assert_same(bad(1.0, 2.0, 3.0, np.ones(3)), np.full(3, 0.0))
    with pytest.raises(ValueError, match=r"input 3 \(v\): expected shape \(3,\), got \(4,\)"):
        bad(1.0, 2.0, 3.0, np.ones(4))
    m = pt.tensor("m", shape=(2, 3), dtype="float64")
    same_size = pytensor.function([a, b, c, m], m.sum(0) * a + b - c, mode="STABLEHLO", trust_input=True)
    with pytest.raises(ValueError, match=r"input 3 \(m\): expected shape \(2, 3\), got \(3, 2\)"):
        same_size(1.0, 2.0, 3.0, np.ones((3, 2)))  # as many elements: never read as (2, 3)


def test_shared_data_stays_on_the_device_while_its_array_is_the_same(monkeypatch):
    """A shared variable the function does not update (observed data) is read where it
    is: an array XLA cannot read in place is replaced in its container by an aligned
    copy, once; `set_value` is seen at the next call, and an updated shared variable
    is passed every call."""
    import lowering.runtime as runtime

    copies = []
    aligned_copy = runtime._aligned_copy
    monkeypatch.setattr(runtime, "_aligned_copy", lambda a: copies.append(a.shape) or aligned_copy(a))
    rng = np.random.default_rng(3)
    first = rng.normal(size=50_001)[1:]  # 8 bytes past numpy's alignment: never in place
    data = pytensor.shared(first, name="data", borrow=True)
    total = pytensor.shared(np.float64(0.0), name="total")
    w = pt.dscalar("w")
    f = pytensor.function([w], (data * w).sum(), updates=[(total, total + w)], mode="STABLEHLO")
    assert f.vm.jit_fn.compiled.lowered.resident_inputs == (1,)
    for step in range(3):
        np.testing.assert_allclose(f(2.0), 2 * first.sum(), rtol=1e-12)
    assert copies == [first.shape]  # once
    held = data.get_value(borrow=True)
    assert runtime._in_place(held) and held is not first
    np.testing.assert_array_equal(held, first)
    assert total.get_value() == 6.0
    second = rng.normal(size=30_000)
    data.set_value(second)
    np.testing.assert_allclose(f(1.0), second.sum(), rtol=1e-12)
    np.testing.assert_allclose(f(3.0), 3 * second.sum(), rtol=1e-12)
    assert total.get_value() == 10.0
    # PyTensor's way to change it in place: the same array, changed, given back with
    # borrow=True
    inside = data.get_value(borrow=True)
    inside *= 10
    data.set_value(inside, borrow=True)
    np.testing.assert_allclose(f(1.0), 10 * second.sum(), rtol=1e-12)


@pytest.mark.parametrize("offset", [0, 1, 2])
def test_shared_data_changed_in_place_by_a_function_of_another_mode(offset):
    """Another mode's function that updates a shared variable in place (the C and Numba
    backends write into its array) is seen by the next call, wherever the array sits
    (and on a GPU, with STABLEHLO_TEST_PLATFORM=cuda, which copies it at each call)."""
    data = pytensor.shared(np.zeros(1003)[offset:offset + 1000], name="data", borrow=True)
    in_place = pytensor.compile.mode.Mode(linker="py", optimizer="fast_run")  # Add{inplace}
    increment = pytensor.function([], [], updates=[(data, data + 1)], mode=in_place)
    read = pytensor.function([], data.sum(), mode=MODE)
    read()
    array = data.get_value(borrow=True)
    for step in range(1, 4):
        increment()
        assert data.get_value(borrow=True) is array  # (changed in place)
        assert read() == 1000.0 * step


def test_a_client_that_copies_inputs_to_its_device_holds_no_buffer_and_aligns_nothing(monkeypatch):
    """Holding a shared variable's buffer and aligning large inputs serve XLA's CPU
    client, which reads host arrays in place. A client that copies each input to its
    device (a GPU's) gets every array as it is at each call: a held copy would miss
    changes made to it in place, and an aligned copy would be a second copy."""
    import lowering.runtime as runtime

    monkeypatch.setattr(runtime, "_reads_host_memory", lambda device: False)
    monkeypatch.setattr(runtime, "_aligned_copy", lambda a: pytest.fail("an aligned copy was made"))
    data = pytensor.shared(np.zeros(50_001)[1:], name="data", borrow=True)  # never in place
    x = pt.dvector("x")
    f = pytensor.function([x], (data + x).sum(), mode="STABLEHLO")
    compiled = f.vm.jit_fn.compiled
    assert compiled.lowered.resident_inputs and not compiled._prepare
    misaligned = np.linspace(0.0, 1.0, 50_001)[1:]
    expected = misaligned.sum()
    np.testing.assert_allclose(f(misaligned), expected, rtol=1e-12)
    data.get_value(borrow=True)[:] += 1  # in place
    np.testing.assert_allclose(f(misaligned), expected + 50_000, rtol=1e-12)


def test_functions_with_no_outputs():
    x = pt.dvector("x")
    counter = pytensor.shared(np.int64(0))
    assert pytensor.function([], [], mode="STABLEHLO")() == []
    assert pytensor.function([x], [], mode="STABLEHLO", on_unused_input="ignore")(np.ones(2)) == []
    f = pytensor.function([], [], updates=[(counter, counter + 1)], mode="STABLEHLO")
    assert f() == [] and f() == []
    assert counter.get_value() == 2


_DISK_CACHE_RUN = """
import numpy as np, pytensor, pytensor.tensor as pt
import lowering, lowering.compile as comp
compiles = []
class Counting:
    def __init__(self, backend):
        self.backend = backend
    def __getattr__(self, name):
        return getattr(self.backend, name)
    def compile_and_load(self, *args):
        exe = self.backend.compile_and_load(*args)  # an option this XLA refuses is no compile
        compiles.append(1)
        return exe
real = comp.get_backend
comp.get_backend = lambda *args: Counting(real(*args))
x = pt.dvector("x")
f = pytensor.function([x], pt.exp(x).sum() * 3, mode="STABLEHLO")
result = float(f(np.arange(3.0))), len(compiles)
comp.get_backend = real
"""


def test_a_second_process_loads_its_executables_from_the_opt_in_disk_cache(tmp_path, monkeypatch):
    """This process compiles and stores; a second one loads with no compile; a damaged
    entry is compiled again and replaced."""
    import subprocess
    import sys

    import lowering.compile as comp

    monkeypatch.setenv(comp.DISK_CACHE_ENV, str(tmp_path))

    def here():
        monkeypatch.setattr(comp, "EXECUTABLES", comp.ExecutableCache())  # nothing in memory
        scope = {}
        exec(_DISK_CACHE_RUN, scope)
        return scope["result"]

    def child():
        script = _DISK_CACHE_RUN + "print(*result)"
        run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
        value, compiles = run.stdout.split()
        return float(value), int(compiles)

    first = here()
    np.testing.assert_allclose(first[0], 3 * np.exp(np.arange(3.0)).sum(), rtol=1e-15)
    assert first[1] >= 1
    entries = list(tmp_path.glob("cpu-*.xla"))
    assert entries
    second = child()
    assert second == (first[0], 0)
    for entry in entries:
        entry.write_bytes(b"not an executable")
    third = here()
    assert third[0] == first[0] and third[1] >= 1
    assert all(entry.read_bytes() != b"not an executable" for entry in entries)



def test_leading_constants_have_one_order_so_one_graph_is_one_module():
    """MLIR's folding hoists a loop's constants to the top of the function in an order
    that changed between processes (a censored Gamma model's module differed in one run
    of four, and missed the disk cache); compiled modules order them by type and value."""
    import itertools

    from lowering.compile import order_leading_constants

    constants = [
        "%a = stablehlo.constant dense<0> : tensor<4xi8>",
        "%b = stablehlo.constant dense<-13.8> : tensor<4xf64>",
        "%c = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf64>",
        "%d = stablehlo.constant dense<2.5> : tensor<4xf64>",
        "%e = stablehlo.constant dense<(1.0, 0.0)> : tensor<4xcomplex<f64>>",
        "%f = stablehlo.constant dense<[(1.0, 2.0), (0.0, 1.0), (3.0, 0.0), (0.5, 0.5)]> : tensor<4xcomplex<f64>>",
        "%g = stablehlo.constant dense<[true, false, true, true]> : tensor<4xi1>",
    ]
    body = """
    %0 = stablehlo.convert %a : (tensor<4xi8>) -> tensor<4xf64>
    %1 = stablehlo.add %b, %c : tensor<4xf64>
    %2 = stablehlo.multiply %1, %d : tensor<4xf64>
    %3 = stablehlo.add %2, %0 : tensor<4xf64>
    %4 = stablehlo.multiply %e, %f : tensor<4xcomplex<f64>>
    %5 = stablehlo.real %4 : (tensor<4xcomplex<f64>>) -> tensor<4xf64>
    %6 = stablehlo.select %g, %3, %5 : tensor<4xi1>, tensor<4xf64>
    return %6 : tensor<4xf64>"""
    modules = set()
    with make_ir_context():
        for order in itertools.permutations(constants):
            text = "func.func @main() -> tensor<4xf64> {\n" + "\n".join(order) + body + "\n}"
            module = ir.Module.parse(text)
            order_leading_constants(module)
            assert module.operation.verify()
            modules.add(str(module))  # (the bytecode would hold each op's line in `text`)
    assert len(modules) == 1

def test_a_second_process_loads_a_sampler_of_an_unnamed_generator_from_the_disk_cache(tmp_path, monkeypatch):
    """An unnamed random generator shared variable prints as its Generator's repr, with
    the object's address, and node names become the module's locations: the address
    must not reach the module, or no other process finds its executable (every PyMC
    forward-sampling function holds such generators)."""
    import ast
    import subprocess
    import sys

    import lowering.compile as comp

    monkeypatch.setenv(comp.DISK_CACHE_ENV, str(tmp_path))
    draws = _DISK_CACHE_RUN.replace(
        'x = pt.dvector("x")\nf = pytensor.function([x], pt.exp(x).sum() * 3, mode="STABLEHLO")\n'
        "result = float(f(np.arange(3.0))), len(compiles)",
        "rng = pytensor.shared(np.random.default_rng(7))\n"
        "next_rng, y = pt.random.poisson(pt.exp(pt.arange(4.0)), rng=rng).owner.outputs\n"
        'f = pytensor.function([], y, updates={rng: next_rng}, mode="STABLEHLO")\n'
        "result = f().tolist(), len(compiles)",
    )
    assert draws != _DISK_CACHE_RUN

    def child():
        run = subprocess.run([sys.executable, "-c", draws + "print(result)"], capture_output=True, text=True, check=True)
        return ast.literal_eval(run.stdout)

    first, second = child(), child()
    assert first[1] >= 1 and list(tmp_path.glob("cpu-*.xla"))
    assert second == (first[0], 0)


def test_disk_cache_names_stay_short_whatever_the_options(tmp_path, monkeypatch):
    """An entry is named by a hash of the module's hash and its compile options: the
    options spelled out could pass the 255 bytes a file name may have (NO_FMA's took 240)."""
    import lowering.compile as comp

    monkeypatch.setenv(comp.DISK_CACHE_ENV, str(tmp_path))
    keys = [("cpu", "0" * 64 + "".join(f"-xla_option_{i}=value" for i in range(n))) for n in (1, 40)]
    paths = [comp._disk_path(key) for key in keys]
    assert paths[0] != paths[1] and all(len(path.name) < 120 for path in paths)
    paths[1].write_bytes(b"")  # a name the file system takes


def test_device_arrays_from_jax_own_client_are_moved_to_ours():
    """A jax array on jax's default CPU client (another client than the one our
    executables run on) is copied over, on the first call and on later ones."""
    from lowering._jax_internal import enable_x64

    x, n = pt.dvector("x"), pt.lscalar("n")
    compiled = lower(fg([x, n], [x * 2, x[n]])).compile()
    with enable_x64():
        value = jax.device_put(np.arange(3.0))
    assert value.dtype == np.float64
    for i in (1, 2, 2):
        got = compiled.call_trusted([value, np.array(i)])
        assert_same(got[0], np.arange(3.0) * 2)
        assert_same(got[1], np.float64(i))
