"""The IR dump tool (pytensor-stablehlo-opt): every flag and every error path."""

import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from jax.extend.mlir import ir
from pytensor.graph.basic import Apply
from pytensor.graph.fg import FunctionGraph
from pytensor.graph.op import Op

from lowering import register_lowering
from lowering._jax_internal import make_ir_context
from lowering.cli import EMITS, main
from lowering.compile import compile_module, module_bytecode
from lowering.examples import EXAMPLES
from lowering.export import load_portable_artifact

ROOT = Path(__file__).resolve().parent.parent

GRAPHS = '''
import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.graph.fg import FunctionGraph


def graph():
    x = pt.vector("x")
    return [x], [pt.exp(x) + 1]


def as_fgraph():
    x = pt.matrix("x")
    return FunctionGraph([x], [x.sum(axis=0)])


def compiled():
    x = pt.vector("x")
    return pytensor.function([x], x * 3, mode="STABLEHLO")


def single_variables():
    x = pt.vector("x")
    return x, x.max()


def float32_graph():
    x = pt.vector("x", dtype="float32")
    y = pt.matrix("y", dtype="float32")
    return [x, y], [pt.log1p(pt.exp(x)) + y.sum(axis=0), y * 2]


def make_model():
    import pymc as pm

    with pm.Model() as model:
        mu = pm.Normal("mu")
        pm.Normal("y", mu, 1.0, observed=np.array([0.1, 0.4]))
    return model


def unsupported():
    from tests.test_core import NoRuleA

    x = pt.matrix("x")
    return [x], [NoRuleA()(x)]


def shared_data():
    data = pytensor.shared(np.arange(4.0), name="data")
    x = pt.vector("x")
    return [x], [(x[:, None] * data).sum(axis=0)]


def shared_rng():
    rng = pytensor.shared(np.random.default_rng(0), name="rng")
    mu = pt.vector("mu")
    nxt, x = pt.random.normal(mu, 1.0, rng=rng).owner.outputs
    return [mu], [x, mu * 2]


def rng_input():
    rng = pt.random.type.random_generator_type("rng")
    a = pt.vector("a")
    nxt, g = pt.random.gamma(pt.exp(a), scale=2.0, rng=rng).owner.outputs
    return [rng, a], [g, nxt]


def drop_last_of_draw():
    from tests.test_cli import _DropLast

    mu = pt.vector("mu")
    x = pt.random.uniform(mu, mu + 1, rng=pytensor.shared(np.random.default_rng(0)))
    return [mu], [_DropLast()(x)]


def broken():
    raise RuntimeError("the builder broke")


def not_a_graph():
    return 42
'''


@pytest.fixture
def graphs(tmp_path):
    path = tmp_path / "graphs.py"
    path.write_text(GRAPHS)
    return path


def run_tool(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# --- inputs ----------------------------------------------------------------------------


def test_list_examples_and_help_entry(capsys):
    code, out, _ = run_tool(capsys, "--list-examples")
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()] == list(EXAMPLES)
    code, out, _ = run_tool(capsys, "--help-entry")
    assert code == 0 and "Entry convention" in out
    assert "Shared variables the outputs read but `inputs` lacks follow it" in out


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_every_example_runs_and_matches_python_mode(capsys, name):
    code, out, err = run_tool(capsys, "--example", name, "--run")
    assert code == 0, err
    assert "func.func public @main" in out
    assert "MISMATCH" not in err and err.count(" ok") >= 1


def test_default_entry_is_graph(capsys, graphs):
    code, out, _ = run_tool(capsys, graphs)
    assert code == 0
    assert "stablehlo.exponential %arg0 : tensor<?xf64>" in out


def test_module_level_inputs_and_outputs(capsys, tmp_path):
    path = tmp_path / "vars.py"
    path.write_text("import pytensor.tensor as pt\nx = pt.vector('x')\ninputs = [x]\noutputs = [x * x]\n")
    code, out, _ = run_tool(capsys, path)
    assert code == 0 and "stablehlo.multiply %arg0, %arg0" in out


@pytest.mark.parametrize(
    "entry, expected",
    [
        ("as_fgraph", "stablehlo.reduce"),
        ("compiled", "stablehlo.multiply"),
        ("single_variables", "stablehlo.compare GT"),
    ],
)
def test_entry_kinds(capsys, graphs, entry, expected):
    code, out, err = run_tool(capsys, graphs, "--entry", entry, "--run")
    assert code == 0, err
    assert expected in out
    code, out2, _ = run_tool(capsys, f"{graphs}:{entry}")
    assert code == 0 and out2 == out


def test_pymc_model_entry_dumps_logp_and_dlogp(capsys, graphs):
    code, out, err = run_tool(capsys, f"{graphs}:make_model", "--run")
    assert code == 0, err
    assert "@main(%arg0: tensor<f64>) -> (tensor<f64>, tensor<1xf64>)" in out
    assert "output 0 (logp)" in err and "output 1 (dlogp)" in err


def test_pickled_function_graph_and_function(capsys, tmp_path):
    x = pt.vector("x")
    fg_path, fn_path = tmp_path / "fg.pkl", tmp_path / "fn.pkl"
    fg_path.write_bytes(pickle.dumps(FunctionGraph([x], [pt.sqrt(x)])))
    fn_path.write_bytes(pickle.dumps(pytensor.function([x], pt.sqrt(x), mode="STABLEHLO")))
    for path in (fg_path, fn_path):
        code, out, err = run_tool(capsys, path, "--run", "--input-shapes", "5")
        assert code == 0, err
        assert "stablehlo.sqrt" in out and "ok" in err


def test_no_rewrite_lowers_the_graph_as_built(capsys, tmp_path):
    path = tmp_path / "g.py"
    path.write_text("import pytensor.tensor as pt\nx = pt.vector('x')\ninputs, outputs = [x], [pt.log(pt.exp(x))]\n")
    _, rewritten, _ = run_tool(capsys, path)
    _, as_built, _ = run_tool(capsys, path, "--no-rewrite")
    assert "stablehlo.log " not in rewritten  # PyTensor rewrote log(exp(x)) to x
    assert "stablehlo.log " in as_built and "stablehlo.exponential" in as_built


# --- output ----------------------------------------------------------------------------


def test_emit_raw_is_before_any_pass(capsys, graphs):
    _, raw, _ = run_tool(capsys, graphs, "--emit=raw", "--no-rewrite")
    _, opt, _ = run_tool(capsys, graphs, "--no-rewrite")
    assert raw != opt
    assert raw.count("stablehlo.constant") >= opt.count("stablehlo.constant")


def test_emit_hlo_and_output_file(capsys, graphs, tmp_path):
    target = tmp_path / "out.hlo"
    code, out, _ = run_tool(capsys, graphs, "--emit=hlo", "--input-shapes", "7", "-o", target)
    assert code == 0 and out == ""
    text = target.read_text()
    assert text.startswith("HloModule") and "f64[7]" in text


def test_emit_hlo_is_what_a_function_runs(capsys, tmp_path):
    """--emit=hlo compiles the module as a function's executable is compiled: a sum of
    outer products there is a dot, not a reduce, and a small hoisted constant is a
    constant of the executable, not a parameter (a large one stays a parameter)."""
    path = tmp_path / "outer.py"
    path.write_text(
        "import numpy as np, pytensor.tensor as pt\n"
        "a = pt.tensor('a', shape=(40, 3), dtype='float64')\n"
        "b = pt.tensor('b', shape=(40, 4), dtype='float64')\n"
        "small, large = np.arange(2000.0), np.arange(20000.0)\n"
        "c = pt.dscalar('c')\n"
        "inputs = [a, b, c]\n"
        "outputs = [(a[:, :, None] * b[:, None, :]).sum(0), pt.exp(c * small), pt.exp(c * large)]\n"
    )
    code, out, _ = run_tool(capsys, path, "--emit=hlo")
    assert code == 0 and " dot(" in out and " reduce(" not in out
    entry = out.split("ENTRY")[1]
    assert entry.count(" parameter(") == 4  # a, b, c and the large constant


def test_emit_bytecode_parses_back(capsys, graphs, tmp_path):
    target = tmp_path / "m.mlirbc"
    assert run_tool(capsys, graphs, "--emit=bytecode", "-o", target)[0] == 0
    _, text, _ = run_tool(capsys, graphs)
    with make_ir_context():
        module = ir.Module.parse(target.read_bytes())
        assert str(module).strip() == text.strip()


def test_portable_artifact_round_trips(capsys, graphs, tmp_path):
    from lowering.specialize import Signature, specialize
    from tests.helpers import device_put

    target = tmp_path / "m.vhlo"
    code, _, err = run_tool(capsys, f"{graphs}:float32_graph", "--emit=portable", "-o", target)
    assert code == 0, err
    module = load_portable_artifact(target.read_bytes())
    assert "func.func public @main" in str(module) and "?" in str(module)  # dynamic dims kept
    # The loaded module specializes and compiles like our own; results match PyTensor's.
    signature = Signature(((3,), (2, 3)), ("float32", "float32"))
    exe = compile_module(specialize(module_bytecode(module), module.context, signature))
    xv = np.array([0.5, -1.0, 2.0], np.float32)
    yv = np.arange(6, dtype=np.float32).reshape(2, 3)
    results = exe.execute_sharded([device_put(xv), device_put(yv)])
    got = [np.asarray(r[0]) for r in results.disassemble_into_single_device_arrays()]
    x, y = pt.vector("x", dtype="float32"), pt.matrix("y", dtype="float32")
    expected = pytensor.function(
        [x, y], [pt.log1p(pt.exp(x)) + y.sum(axis=0), y * 2], mode="FAST_COMPILE"
    )(xv, yv)
    for a, b in zip(got, expected):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-6)


_RUN_LAPACK_ARTIFACT = """
import sys
import jax
import numpy as np
from lowering.compile import compile_module, get_backend
from lowering.export import load_portable_artifact
jax.config.update("jax_enable_x64", True)
module = load_portable_artifact(open(sys.argv[1], "rb").read())
a = jax.device_put(np.diag([4.0, 9.0, 16.0]), get_backend("cpu").local_devices()[0])
results = compile_module(module).execute_sharded([a])
print(np.asarray(results.disassemble_into_single_device_arrays()[0][0]).diagonal().tolist())
"""


def test_an_artifact_calling_lapack_runs_in_a_process_that_lowered_nothing(capsys, tmp_path):
    """Rules load jaxlib's LAPACK as they emit its targets; a process that only reads an
    artifact back must get it loaded by the compile (or the call crashes the process)."""
    import sys

    source, target = tmp_path / "chol.py", tmp_path / "chol.vhlo"
    source.write_text(
        "import pytensor.tensor as pt\nx = pt.dmatrix('x')\ninputs, outputs = [x], [pt.linalg.cholesky(x)]\n"
    )
    code, _, err = run_tool(capsys, source, "--input-shapes=3x3", "--emit=portable", "-o", target)
    assert code == 0, err
    run = subprocess.run([sys.executable, "-c", _RUN_LAPACK_ARTIFACT, str(target)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split("\n")[0] == "[2.0, 3.0, 4.0]"


def test_jax_export_round_trips(capsys, graphs, tmp_path):
    import jax

    target = tmp_path / "m.jaxexport"
    code, _, err = run_tool(capsys, f"{graphs}:float32_graph", "--emit=jax-export",
                            "--input-shapes", "3,2x3", "-o", target)
    assert code == 0, err
    exported = jax.export.deserialize(bytearray(target.read_bytes()))
    xv = np.array([0.5, -1.0, 2.0], np.float32)
    yv = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert exported.platforms == ("cpu",)
    # Exported for the CPU (the tool's default platform): called there, whatever jax's
    # default device is.
    cpu = jax.devices("cpu")[0]
    got = exported.call(jax.device_put(xv, cpu), jax.device_put(yv, cpu))
    x, y = pt.vector("x", dtype="float32"), pt.matrix("y", dtype="float32")
    expected = pytensor.function(
        [x, y], [pt.log1p(pt.exp(x)) + y.sum(axis=0), y * 2], mode="FAST_COMPILE"
    )(xv, yv)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-6)


def test_debug_info_names_pytensor_nodes(capsys, graphs):
    _, out, _ = run_tool(capsys, graphs, "--debug-info")
    assert 'loc("Exp(x)")' in out
    _, raw, _ = run_tool(capsys, graphs, "--debug-info", "--emit=raw")
    assert 'loc("Exp(x)")' in raw


# --- passes ----------------------------------------------------------------------------


def test_custom_pipeline_and_ir_after_passes(capsys, graphs):
    code, out, err = run_tool(
        capsys, graphs, "--pass-pipeline", "builtin.module(stablehlo-legalize-to-hlo,cse)",
        "--print-ir-after-all", "--pass-timing", "--pass-statistics",
    )
    assert code == 0
    assert "mhlo.exponential" in out  # the pipeline really replaced the default one
    assert "IR Dump After stablehlo-legalize-to-hlo" in err and "IR Dump After cse" in err
    assert "// pass timing" in err and "total" in err
    assert "// pass statistics" in err and "input" in err


def test_print_ir_after_one_pass(capsys, graphs):
    code, _, err = run_tool(capsys, graphs, "--print-ir-after", "canonicalize", "--emit=none")
    assert code == 0
    assert err.count("IR Dump After") == 1 and "IR Dump After canonicalize" in err


# --- specialization and execution ------------------------------------------------------------


def test_specialize_with_shapes_and_defaults(capsys, graphs):
    _, out, _ = run_tool(capsys, graphs, "--input-shapes", "5")
    assert "@main(%arg0: tensor<5xf64>) -> tensor<5xf64>" in out
    _, out, _ = run_tool(capsys, graphs, "--specialize")
    assert "@main(%arg0: tensor<3xf64>) -> tensor<3xf64>" in out
    _, out, _ = run_tool(capsys, graphs, "--input-shapes", "0")
    assert "tensor<0xf64>" in out


def test_input_dtypes_go_through_pytensor_casting_rules(capsys, graphs):
    code, _, err = run_tool(capsys, graphs, "--input-dtypes", "float32", "--run", "--emit=none")
    assert code == 0 and "ok" in err
    code, _, err = run_tool(capsys, graphs, "--input-dtypes", "complex128", "--run")
    assert code == 2 and "input 0 (x)" in err


def test_inputs_from_npz(capsys, graphs, tmp_path):
    by_name, positional = tmp_path / "named.npz", tmp_path / "pos.npz"
    np.savez(by_name, x=np.array([0.0, 1.0]))
    np.savez(positional, np.array([0.0, 1.0, 2.0, 3.0]))
    code, _, err = run_tool(capsys, graphs, "--inputs", by_name, "--run", "--emit=none")
    assert code == 0 and "x: (2,)" in err
    code, _, err = run_tool(capsys, graphs, "--inputs", positional, "--run", "--emit=none")
    assert code == 0 and "x: (4,)" in err
    np.savez(by_name, y=np.zeros(2))
    code, _, err = run_tool(capsys, graphs, "--inputs", by_name, "--run")
    assert code == 2 and "no array for input 0 (x)" in err


def test_cost_analysis(capsys, graphs):
    code, _, err = run_tool(capsys, graphs, "--cost", "--input-shapes", "10", "--emit=none")
    assert code == 0
    assert "flops:" in err and "transcendentals: 10" in err and "bytes accessed:" in err


class _PlusOne(Op):
    """perform adds one; the (deliberately wrong) test rule below does not."""

    def make_node(self, x):
        x = pt.as_tensor(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = inputs[0] + 1


@register_lowering(_PlusOne)
def _wrong_plus_one(ctx, node, x):
    return x


class _DropLast(_PlusOne):
    """perform drops the last element; the rule (inherited) keeps it."""

    def perform(self, node, inputs, outputs):
        outputs[0][0] = inputs[0][:-1]


def test_run_reports_a_mismatch(capsys, tmp_path):
    x = pt.vector("x")
    path = tmp_path / "wrong.pkl"
    path.write_bytes(pickle.dumps(FunctionGraph([x], [_PlusOne()(x)])))
    code, _, err = run_tool(capsys, path, "--run", "--emit=none")
    assert code == 1
    assert "MISMATCH" in err and "1 output(s) differ from PyTensor's Python mode" in err


# --- shared variables and random generators ----------------------------------------------------


def test_shared_variables_follow_the_inputs_in_pytensor_function_order():
    from lowering.examples import Graph, as_graph

    rng = pytensor.shared(np.random.default_rng(0), name="rng")
    data = pytensor.shared(np.arange(3.0), name="data")
    mu = pt.vector("mu")
    for out in (data + pt.random.normal(mu, rng=rng), pt.random.normal(mu, rng=rng) + data):
        graph = as_graph(([mu], [out]), "g")
        expected = pytensor.function([mu], out, mode="STABLEHLO").maker.fgraph.inputs
        assert [v.name for v in graph.inputs] == [v.name for v in expected]
    graph = as_graph(([mu, data], [data * mu]), "g")  # listed: not added twice
    assert graph.inputs == [mu, data]
    graph = as_graph(Graph("g", [mu], [data * mu], [np.ones(3)]), "g")  # values: theirs appended
    assert graph.inputs == [mu, data] and np.array_equal(graph.values[1], np.arange(3.0))


def test_shared_data_array_is_an_input_at_its_value(capsys, graphs, tmp_path):
    code, out, err = run_tool(capsys, f"{graphs}:shared_data", "--run")
    assert code == 0, err
    assert "@main(%arg0: tensor<?xf64>, %arg1: tensor<?xf64>)" in out
    assert "inputs x: (3,), data: (4,)" in err and "output 0: float64[4] max abs err" in err
    # --input-shapes may leave the shared variable out (it keeps its value) or give it a shape.
    code, _, err = run_tool(capsys, f"{graphs}:shared_data", "--input-shapes", "5", "--run", "--emit=none")
    assert code == 0 and "x: (5,), data: (4,)" in err and " ok" in err
    code, out, err = run_tool(capsys, f"{graphs}:shared_data", "--input-shapes", "5,6", "--run")
    assert code == 0 and "x: (5,), data: (6,)" in err
    assert "@main(%arg0: tensor<5xf64>, %arg1: tensor<6xf64>)" in out
    npz = tmp_path / "in.npz"
    np.savez(npz, x=np.ones(2))
    code, _, err = run_tool(capsys, f"{graphs}:shared_data", "--inputs", npz, "--run", "--emit=none")
    assert code == 0 and "x: (2,), data: (4,)" in err
    np.savez(npz, x=np.ones(2), data=np.ones(7))
    code, _, err = run_tool(capsys, f"{graphs}:shared_data", "--inputs", npz, "--run", "--emit=none")
    assert code == 0 and "x: (2,), data: (7,)" in err


def test_shared_generator_is_a_key_input(capsys, graphs):
    code, out, err = run_tool(capsys, f"{graphs}:shared_rng", "--run")
    assert code == 0, err
    assert "@main(%arg0: tensor<?xf64>, %arg1: tensor<2xui32>)" in out
    assert "// run: inputs mu: (3,), rng: Generator" in err
    assert "output 0: float64[3] random draws: shape and dtype checked ok" in err
    assert "output 1: float64[3] max abs err 0, max rel err 0 ok" in err  # not a draw: by value
    for shapes in ("5", "5,rng", "5,"):
        code, out, err = run_tool(capsys, f"{graphs}:shared_rng", "--input-shapes", shapes, "--run")
        assert code == 0, err
        assert "@main(%arg0: tensor<5xf64>, %arg1: tensor<2xui32>)" in out and "mu: (5,)" in err
    code, _, err = run_tool(capsys, f"{graphs}:shared_rng", "--input-dtypes", "float32,rng", "--run",
                            "--emit=none")
    assert code == 0 and "random draws" in err


@pytest.mark.parametrize("seed", ["0", "5"])
def test_run_on_a_random_graph_with_a_generator_input(capsys, graphs, seed):
    code, out, err = run_tool(capsys, f"{graphs}:rng_input", "--run", "--seed", seed)
    assert code == 0, err
    assert "@main(%arg0: tensor<2xui32>, %arg1: tensor<?xf64>)" in out
    assert "inputs rng: Generator, a: (3,)" in err
    assert "output 0: float64[3] random draws: shape and dtype checked ok" in err
    assert "output 1: Generator (random state: type checked) ok" in err
    code, _, err = run_tool(capsys, f"{graphs}:rng_input", "--input-shapes", ",4",
                            "--input-dtypes", "rng,float32", "--cost", "--run", "--emit=none")
    assert code == 0 and "a: (4,)" in err and "flops:" in err


def test_random_output_of_a_wrong_shape_is_a_mismatch(capsys, graphs):
    code, _, err = run_tool(capsys, f"{graphs}:drop_last_of_draw", "--run", "--emit=none")
    assert code == 1
    assert "output 0: random draws: MISMATCH float64(3,) vs Python mode float64(2,)" in err


@pytest.mark.parametrize("kind", EMITS)
def test_emit_each_kind_on_a_random_graph(capsys, graphs, tmp_path, kind):
    import jax

    target = tmp_path / "out"
    code, _, err = run_tool(capsys, f"{graphs}:shared_rng", f"--emit={kind}", "-o", target)
    assert code == 0, err
    key = "tensor<2xui32>"
    if kind in ("stablehlo", "raw"):
        assert f"%arg1: {key}" in target.read_text()
    elif kind == "hlo":
        assert "u32[2]{0} parameter(1)" in target.read_text()
    elif kind == "bytecode":
        with make_ir_context():
            assert f"%arg1: {key}" in str(ir.Module.parse(target.read_bytes()))
    elif kind == "portable":  # `?` dims kept, CHLO expanded
        text = str(load_portable_artifact(target.read_bytes()))
        assert f"%arg0: tensor<?xf64>, %arg1: {key}" in text and "chlo." not in text
    elif kind == "jax-export":
        exported = jax.export.deserialize(bytearray(target.read_bytes()))
        assert [str(a) for a in exported.in_avals] == ["float64[3]", "uint32[2]"]
    else:
        assert not target.exists()


def test_specialized_random_graph(capsys, graphs):
    code, out, err = run_tool(capsys, f"{graphs}:rng_input", "--specialize")
    assert code == 0, err
    assert "@main(%arg0: tensor<2xui32>, %arg1: tensor<3xf64>) -> (tensor<3xf64>, tensor<2xui32>" in out


def test_compiled_function_with_shared_generator_and_update(capsys, tmp_path):
    rng = pytensor.shared(np.random.default_rng(0), name="rng")
    mu = pt.vector("mu")
    nxt, x = pt.random.normal(mu, 1.0, rng=rng).owner.outputs
    path = tmp_path / "fn.pkl"
    path.write_bytes(pickle.dumps(pytensor.function([mu], x, updates={rng: nxt}, mode="STABLEHLO")))
    code, out, err = run_tool(capsys, path, "--run", "--input-shapes", "4")
    assert code == 0, err
    assert "mu: (4,), rng: Generator" in err
    assert "random draws: shape and dtype checked ok" in err and "Generator (random state" in err


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, code, message",
    [
        (["missing.py"], 2, "no such file: missing.py"),
        (["{graphs}", "--entry", "nope"], 2, "has no entry 'nope' (functions defined there:"),
        (["{graphs}:broken"], 1, "raised RuntimeError: the builder broke"),
        (["{graphs}:not_a_graph"], 2, "gave a int; expected (inputs, outputs)"),
        (["{graphs}:unsupported"], 1, "UnsupportedOpsError: no StableHLO lowering for these Ops: NoRuleA"),
        (["{graphs}", "--pass-pipeline", "builtin.module(no-such-pass)"], 2,
         "invalid pass pipeline element 'no-such-pass'"),
        (["{graphs}", "--pass-pipeline", "cse"], 2, "must have the form 'builtin.module(...)'"),
        (["{graphs}", "--print-ir-after", "nope"], 2, "--print-ir-after=nope: no such pass"),
        (["{graphs}", "--input-shapes", "3x4"], 2, "x has 1 dims, '3x4' has 2"),
        (["{graphs}", "--input-shapes", "3,4"], 2, "2 given for 1 input(s)"),
        (["{graphs}", "--input-shapes", "a"], 2, "is not like 3x4 or scalar"),
        (["{graphs}", "--input-dtypes", "floaty"], 2, "'floaty' for x is not a dtype"),
        (["{graphs}", "--inputs", "nothere.npz"], 2, "no such file: nothere.npz"),
        (["{graphs}", "--emit=raw", "--specialize"], 2, "cannot be specialized"),
        (["{graphs}", "--target-version", "1.0.0"], 2, "--target-version applies to"),
        (["{graphs}", "--emit=portable", "--target-version", "0.0.1", "-o", "{tmp}/p"], 1,
         "cannot serialize to StableHLO version '0.0.1'"),
        (["--example", "nope"], 2, "no example named 'nope'; choose from elemwise"),
        (["--example", "elemwise", "{graphs}"], 2, "either an input file or --example"),
        ([], 2, "no input: give FILE.py[:ENTRY]"),
        (["{tmp}/bad.pkl"], 2, "cannot read"),
        (["{tmp}/empty.py"], 2, "defines no `graph` function and no `inputs`/`outputs`"),
        (["{graphs}:graph", "--entry", "other"], 2, "entry given twice"),
        (["{graphs}:rng_input", "--input-shapes", "4"], 2, "1 given for 2 input(s)"),
        (["{graphs}:rng_input", "--input-shapes", "2,4"], 2,
         "rng is a random Generator; write 'rng' or nothing in its place, not '2'"),
        (["{graphs}:rng_input", "--input-dtypes", "uint32,float64"], 2, "rng is a random Generator"),
        (["{graphs}:shared_rng", "--input-shapes", "3,rng,4"], 2,
         "3 given for 1 input(s) and 1 shared variable(s)"),
    ],
)
def test_errors_are_one_line_with_exit_status(capsys, graphs, tmp_path, argv, code, message):
    (tmp_path / "bad.pkl").write_bytes(b"not a pickle")
    (tmp_path / "empty.py").write_text("x = 1\n")
    argv = [a.format(graphs=graphs, tmp=tmp_path) for a in argv]
    got, out, err = run_tool(capsys, *argv)
    assert got == code, err
    assert message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("pytensor-stablehlo-opt: error: ")


def test_unknown_flag_is_a_usage_error(capsys):
    code, _, err = run_tool(capsys, "--bogus")
    assert code == 2 and "unrecognized arguments: --bogus" in err


def test_traceback_flag(capsys, graphs):
    code, _, err = run_tool(capsys, f"{graphs}:unsupported", "--traceback")
    assert code == 1 and "Traceback" in err and "UnsupportedOpsError" in err


def test_binary_output_refuses_a_terminal(capsys, graphs, monkeypatch):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    code, _, err = run_tool(capsys, graphs, "--emit=bytecode")
    assert code == 2 and "is binary; write it to a file with -o FILE" in err


def test_the_tool_runs_from_a_checkout(graphs):
    """tools/pytensor-stablehlo-opt is what lit's RUN lines call."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "pytensor-stablehlo-opt"), str(graphs), "--specialize"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "tensor<3xf64>" in result.stdout


def test_python_entry_file_is_not_run_as_main(capsys, tmp_path):
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent("""
        import pytensor.tensor as pt
        x = pt.vector("x")
        inputs, outputs = [x], [x + 1]
        if __name__ == "__main__":
            raise SystemExit("ran as a script")
    """))
    code, out, _ = run_tool(capsys, path)
    assert code == 0 and "stablehlo.add" in out
