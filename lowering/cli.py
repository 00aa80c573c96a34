"""pytensor-stablehlo-opt: lower a PyTensor graph and dump its IR, `mlir-opt` style.

Inputs (one of):
  FILE.py[:ENTRY]      a Python file that builds a graph (see "Entry convention")
  FILE.pkl             a pickled FunctionGraph or compiled PyTensor function
  --example NAME       a built-in example (--list-examples)

Entry convention for Python files. The file is run (not as __main__); the tool then takes
the entry named by `--entry NAME` or `FILE.py:NAME`, else a function called `graph`, else
module-level variables `inputs` and `outputs`. An entry is a value or a function called
with no arguments, giving one of:
  (inputs, outputs)              lists of PyTensor variables (or single variables)
  a FunctionGraph, a compiled PyTensor function, or `lowering.examples.Graph`
  a PyMC model                   its logp and dlogp in the model's value variables,
                                 valued at the model's initial point by --run
Shared variables the outputs read but `inputs` lacks follow it as inputs, at their values.

The graph is rewritten as `pytensor.function(..., mode="STABLEHLO")` would
(`--no-rewrite` lowers it as built; a compiled function's graph is used as it is).
The module goes to stdout (or -o FILE); reports (IR after passes, timing, statistics,
--run, --cost) go to stderr. Exit status: 0 ok, 1 lowering/compilation failed or --run
found a mismatch, 2 usage error.
"""

from __future__ import annotations

import argparse
import copy
import os
import pickle
import runpy
import sys
import traceback
from pathlib import Path

import numpy as np

from lowering.context import PLATFORMS

PROG = "pytensor-stablehlo-opt"
EMITS = ("stablehlo", "raw", "hlo", "bytecode", "portable", "jax-export", "none")
# Binary formats are written self-contained: no constants hoisted into arguments.
BINARY_EMITS = ("bytecode", "portable", "jax-export")
DEFAULT_DIM = 3  # size of unknown dims when the tool picks input shapes itself


class UsageError(Exception):
    """Bad command line or input: exit status 2."""


class Failure(Exception):
    """The graph could not be lowered, compiled or run, or --run found a mismatch: exit 1."""


# --- command line --------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Lower a PyTensor graph to StableHLO, run MLIR passes, and dump the IR.",
        epilog=f"Entry convention for Python files: see `{PROG} --help-entry`.",
    )
    src = p.add_argument_group("input")
    src.add_argument("input", nargs="?", help="FILE.py[:ENTRY] or a pickled FunctionGraph/function")
    src.add_argument("--entry", help="name of the graph entry in a Python file")
    src.add_argument("--example", help="a built-in example instead of a file")
    src.add_argument("--list-examples", action="store_true", help="list built-in examples and exit")
    src.add_argument("--help-entry", action="store_true", help="explain the Python entry convention")
    src.add_argument("--no-rewrite", action="store_true",
                     help="lower the graph as built, without the STABLEHLO mode's rewrites")

    out = p.add_argument_group("output")
    out.add_argument("--emit", choices=EMITS, default="stablehlo",
                     help="stablehlo (after the pipeline, default), raw (before any pass), hlo "
                          "(XLA's optimized HLO), bytecode (MLIR), portable (versioned StableHLO "
                          "artifact), jax-export (a serialized jax.export.Exported), none")
    out.add_argument("-o", "--output", help="write the output to FILE instead of stdout")
    out.add_argument("--debug-info", action="store_true", help="print locations naming PyTensor nodes")
    out.add_argument("--target-version", help="StableHLO version of --emit=portable/jax-export")
    out.add_argument("--platform", choices=PLATFORMS, default="cpu",
                     help="lower for this XLA platform: library calls are LAPACK on cpu, cuSOLVER on "
                          "cuda (compiling, --run and --emit=hlo then need an NVIDIA GPU)")

    passes = p.add_argument_group("passes")
    passes.add_argument("--pass-pipeline", help="replace the default pipeline: 'builtin.module(...)'")
    passes.add_argument("--print-ir-after-all", action="store_true")
    passes.add_argument("--print-ir-after", action="append", default=[], metavar="PASS")
    passes.add_argument("--pass-timing", action="store_true")
    passes.add_argument("--pass-statistics", action="store_true",
                        help="operations left after each pass, and the op kinds it changed")

    spec = p.add_argument_group("specialization and execution")
    spec.add_argument("--input-shapes", help="e.g. '3x4,4,scalar': one shape per input, 'rng' or "
                                             "nothing for a Generator; trailing shared variables may "
                                             "be left out (they keep their values)")
    spec.add_argument("--input-dtypes", help="dtypes of the values fed, e.g. 'float32,int64'; "
                                             "listed as --input-shapes")
    spec.add_argument("--inputs", help=".npz of input values (by input name, or arr_0, arr_1, ...); "
                                       "Generators and shared variables left out keep their own")
    spec.add_argument("--seed", type=int, default=0,
                      help="seed of random inputs, and of a Generator input that is not shared")
    spec.add_argument("--specialize", action="store_true",
                      help="show the module refined to concrete input shapes")
    spec.add_argument("--run", action="store_true",
                      help="execute and compare with PyTensor's Python mode (random draws: "
                           "by shape and dtype)")
    spec.add_argument("--cost", action="store_true", help="XLA's cost analysis of the executable")
    p.add_argument("--traceback", action="store_true", help="show tracebacks of errors")
    return p


def main(argv=None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed its usage error
        return int(exc.code or 0)
    try:
        return run(args)
    except (UsageError, Failure) as exc:
        if args.traceback:
            traceback.print_exc()
        print(f"{PROG}: error: {one_line(str(exc))}", file=sys.stderr)
        return 2 if isinstance(exc, UsageError) else 1
    except Exception as exc:  # lowering, passes, XLA: the message names the node or pass
        if args.traceback:
            traceback.print_exc()
        print(f"{PROG}: error: {type(exc).__name__}: {one_line(str(exc))}", file=sys.stderr)
        return 1


def one_line(message: str) -> str:
    """A multi-line message (an Op list, an MLIR diagnostic) as one line."""
    lines = [line.strip() for line in message.strip().splitlines()]
    lines = [line for line in lines if line and set(line) != {"^"}]
    out = lines[0] if lines else ""
    for line in lines[1:]:
        out += (" " if out.endswith(":") else "; ") + line
    return out


def run(args) -> int:
    from lowering import examples

    if args.help_entry:
        print(__doc__)
        return 0
    if args.list_examples:
        for name, ex in examples.EXAMPLES.items():
            print(f"{name:<16} {ex.description}")
        return 0
    graph = load_graph(args)
    _check_flags(args)
    lowered, fgraph = lower_graph(graph, args)
    report_passes(lowered, args)

    values = None
    if _needs_values(args):
        values = input_values(graph, fgraph, args)
    emit(lowered, fgraph, values, args)
    status = 0
    if args.run:
        names = [v.name for v in graph.outputs]
        status = compare_with_python(lowered, fgraph, values, names)
    if args.cost:
        report_cost(lowered, values)
    return status


def _check_flags(args) -> None:
    if args.emit == "raw" and (args.specialize or args.input_shapes or args.input_dtypes):
        raise UsageError("--emit=raw is the module before any pass; it cannot be specialized")
    if args.emit in BINARY_EMITS and args.output is None and sys.stdout.isatty():
        raise UsageError(f"--emit={args.emit} is binary; write it to a file with -o FILE")
    if args.target_version and args.emit not in ("portable", "jax-export"):
        raise UsageError("--target-version applies to --emit=portable and --emit=jax-export")


def _needs_values(args) -> bool:
    return bool(
        args.specialize or args.input_shapes or args.input_dtypes or args.inputs or args.run
        or args.cost or args.emit in ("hlo", "jax-export")
    )


def _specialized(args) -> bool:
    return bool(args.specialize or args.input_shapes or args.input_dtypes)


# --- loading graphs --------------------------------------------------------------------


def load_graph(args):
    from lowering import examples

    if args.example:
        if args.input:
            raise UsageError("give either an input file or --example, not both")
        try:
            return examples.example(args.example)
        except KeyError as exc:
            raise UsageError(exc.args[0]) from None
    if not args.input:
        raise UsageError("no input: give FILE.py[:ENTRY], a pickle file, or --example NAME")
    path, entry = _split_entry(args.input, args.entry)
    if not path.exists():
        raise UsageError(f"no such file: {path}")
    if path.suffix == ".py":
        return _graph_from_python(path, entry)
    if entry:
        raise UsageError(f"--entry applies to Python files, not {path}")
    return _graph_from_pickle(path)


def _split_entry(text: str, entry: str | None):
    path, sep, name = text.rpartition(":")
    if sep and path.endswith(".py") and name:
        if entry and entry != name:
            raise UsageError(f"entry given twice: {name!r} and --entry {entry!r}")
        return Path(path), name
    return Path(text), entry


def _graph_from_python(path: Path, entry: str | None):
    from lowering.examples import as_graph

    directory = str(path.resolve().parent)
    sys.path.insert(0, directory)
    try:
        namespace = runpy.run_path(str(path), run_name="__pytensor_stablehlo_opt__")
    except Exception as exc:
        raise Failure(f"running {path} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        sys.path.remove(directory)

    if entry is not None:
        if entry not in namespace:
            candidates = sorted(k for k, v in namespace.items() if callable(v) and not k.startswith("_")
                                and getattr(v, "__module__", None) == "__pytensor_stablehlo_opt__")
            hint = f" (functions defined there: {', '.join(candidates)})" if candidates else ""
            raise UsageError(f"{path} has no entry {entry!r}{hint}")
        obj, label = namespace[entry], f"{path}:{entry}"
    elif "graph" in namespace:
        obj, label = namespace["graph"], f"{path}:graph"
    elif "inputs" in namespace and "outputs" in namespace:
        obj, label = (namespace["inputs"], namespace["outputs"]), f"{path}:inputs/outputs"
    else:
        raise UsageError(
            f"{path} defines no `graph` function and no `inputs`/`outputs` variables; "
            "name the entry with --entry NAME or FILE.py:NAME"
        )
    if callable(obj) and not _is_graph_value(obj):
        try:
            obj = obj()
        except Exception as exc:
            raise Failure(f"{label} raised {type(exc).__name__}: {exc}") from exc
    try:
        return as_graph(obj, label)
    except TypeError as exc:
        raise UsageError(str(exc)) from None


def _is_graph_value(obj) -> bool:
    """Compiled PyTensor functions are callable, but they are graphs, not builders."""
    from pytensor.compile.function.types import Function

    return isinstance(obj, Function)


def _graph_from_pickle(path: Path):
    from lowering.examples import as_graph

    import lowering  # noqa: F401  (unpickling a STABLEHLO function needs the mode)

    try:
        with open(path, "rb") as fh:
            obj = pickle.load(fh)
    except Exception as exc:
        raise UsageError(
            f"cannot read {path} as a pickled FunctionGraph or PyTensor function: "
            f"{type(exc).__name__}: {exc}"
        ) from None
    try:
        return as_graph(obj, str(path))
    except TypeError as exc:
        raise UsageError(str(exc)) from None


# --- lowering ----------------------------------------------------------------------------


def lower_graph(graph, args):
    from lowering import LoweringOptions, lower
    from lowering._jax_internal import make_ir_context
    from lowering.passes import DEFAULT_PIPELINE, pass_names, split_pipeline, validate_pipeline

    pipeline = args.pass_pipeline or DEFAULT_PIPELINE
    try:
        validate_pipeline(pipeline, make_ir_context())
    except Exception as exc:
        raise UsageError(str(exc)) from None
    known = set().union(*[pass_names(e) for e in split_pipeline(pipeline)])
    for name in args.print_ir_after:
        if name not in known:
            raise UsageError(f"--print-ir-after={name}: no such pass in the pipeline {pipeline}")

    fgraph = graph.fgraph()
    if not (args.no_rewrite or graph.rewritten):
        rewrite_like_stablehlo_mode(fgraph)
    options = LoweringOptions(
        hoist_constants_over=None if args.emit in BINARY_EMITS else LoweringOptions.hoist_constants_over,
        platform=args.platform,
    )
    lowered = lower(
        fgraph, options=options, pipeline=pipeline,
        print_ir_after_all=args.print_ir_after_all, print_ir_after=tuple(args.print_ir_after),
        timing=args.pass_timing, statistics=args.pass_statistics,
    )
    return lowered, fgraph


def rewrite_like_stablehlo_mode(fgraph) -> None:
    """Apply the rewrites `pytensor.function(..., mode="STABLEHLO")` applies."""
    from pytensor.compile.mode import get_mode

    import lowering  # noqa: F401  (registers the mode)

    get_mode("STABLEHLO").optimizer.rewrite(fgraph)


def report_passes(lowered, args) -> None:
    report = lowered.pipeline_report
    for record in report.passes:
        if record.ir_after is not None:
            print(f"// -----// IR Dump After {record.name} //----- //", file=sys.stderr)
            print(record.ir_after, file=sys.stderr)
    if args.pass_timing:
        print("// pass timing", file=sys.stderr)
        print(report.timing_table(), file=sys.stderr)
    if args.pass_statistics:
        print("// pass statistics", file=sys.stderr)
        print(report.statistics_table(), file=sys.stderr)


# --- input values ---------------------------------------------------------------------

GENERATOR_ITEMS = ("", "rng")  # what --input-shapes and --input-dtypes take for a Generator


def _is_shared(var) -> bool:
    from pytensor.compile.sharedvalue import SharedVariable

    return isinstance(var, SharedVariable)


def _is_generator(var) -> bool:
    from lowering.types import is_rng_type

    return is_rng_type(var.type)


def _split_list(text: str, what: str, inputs) -> list[str | None]:
    """One item per input; trailing shared variables may be left out (None: they keep
    their values)."""
    items = [s.strip() for s in text.split(",")]
    n = listed = len(inputs)
    while listed and _is_shared(inputs[listed - 1]):
        listed -= 1
    if len(items) == n or len(items) == listed:
        return items + [None] * (n - len(items))
    counts = f"{n} input(s)" if listed == n else f"{listed} input(s) and {n - listed} shared variable(s)"
    raise UsageError(f"{what}: {len(items)} given for {counts}")


def _generator_item(item: str, var, what: str, name: str) -> bool:
    """Whether `item` stands for a Generator input, which has no shape or dtype to give."""
    if not _is_generator(var):
        return False
    if item.lower() not in GENERATOR_ITEMS:
        raise UsageError(f"{what}: {name} is a random Generator; write 'rng' or nothing in its place, "
                         f"not {item!r}")
    return True


def parse_shapes(text: str, inputs) -> list[tuple[int, ...] | None]:
    """One shape per input; None where the input keeps its own value."""
    shapes = []
    for i, (var, item) in enumerate(zip(inputs, _split_list(text, "--input-shapes", inputs))):
        name = var.name or f"input {i}"
        if item is None or _generator_item(item, var, "--input-shapes", name):
            shapes.append(None)
            continue
        if item in ("scalar", "()", ""):
            shape = ()
        else:
            try:
                shape = tuple(int(d) for d in item.lower().split("x"))
            except ValueError:
                raise UsageError(f"--input-shapes: {item!r} for {name} is not like 3x4 or scalar") from None
            if any(d < 0 for d in shape):
                raise UsageError(f"--input-shapes: negative dim in {item!r} for {name}")
        if len(shape) != var.type.ndim:
            raise UsageError(f"--input-shapes: {name} has {var.type.ndim} dims, {item!r} has {len(shape)}")
        for static, dim in zip(var.type.shape, shape):
            if static is not None and static != dim:
                raise UsageError(f"--input-shapes: {name} has static shape {var.type.shape}, not {shape}")
        shapes.append(shape)
    return shapes


def parse_dtypes(text: str, inputs) -> list[np.dtype | None]:
    """One dtype per input; None where the input's value is not cast."""
    dtypes = []
    for i, (var, item) in enumerate(zip(inputs, _split_list(text, "--input-dtypes", inputs))):
        name = var.name or f"input {i}"
        if item is None or _generator_item(item, var, "--input-dtypes", name):
            dtypes.append(None)
            continue
        try:
            dtypes.append(np.dtype(item))
        except TypeError:
            raise UsageError(f"--input-dtypes: {item!r} for {name} is not a dtype") from None
    return dtypes


def random_value(rng, shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(1, 5, size=shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype)
    return rng.normal(size=shape).astype(dtype)


def input_values(graph, fgraph, args) -> list:
    """Values for the graph's inputs: --inputs, else the source's own, else random ones
    with --input-shapes (unknown dims default to 3); cast to --input-dtypes if given.
    Generators, and shared variables these leave out, keep their own value: the shared
    variable's current one, or `default_rng(--seed)` for a Generator that is not shared."""
    inputs = list(fgraph.inputs)
    shapes = parse_shapes(args.input_shapes, inputs) if args.input_shapes else None
    dtypes = parse_dtypes(args.input_dtypes, inputs) if args.input_dtypes else None
    if args.inputs:
        values = _load_npz(args.inputs, inputs)
    elif graph.values is not None and shapes is None:
        values = [v if isinstance(v, np.random.Generator) else np.asarray(v) for v in graph.values]
    else:
        rng = np.random.default_rng(args.seed)
        values = []
        for var, shape in zip(inputs, shapes or [None] * len(inputs)):
            if shape is None and (_is_generator(var) or _is_shared(var)):
                values.append(None)
                continue
            if shape is None:
                shape = tuple(DEFAULT_DIM if d is None else d for d in var.type.shape)
            values.append(random_value(rng, shape, var.type.dtype))
    values = [_own_value(var, args.seed) if v is None else v for var, v in zip(inputs, values)]
    for var, value, shape in zip(inputs, values, shapes or ()):
        if shape is not None and value.shape != shape:
            raise UsageError(f"input {var.name}: value of shape {value.shape}, --input-shapes says {shape}")
    if dtypes is not None:
        values = [v if d is None else np.asarray(v).astype(d) for v, d in zip(values, dtypes)]
    # Through PyTensor's own argument rules, as a call would: errors name the input.
    filtered = []
    for i, (var, value) in enumerate(zip(inputs, values)):
        try:
            filtered.append(var.type.filter(value, strict=False, allow_downcast=None))
        except (TypeError, ValueError) as exc:
            raise UsageError(f"input {i} ({var.name or var}): {exc}") from None
    return filtered


def _own_value(var, seed: int):
    """A shared variable's value (a copy: runs leave the source's Generator as it was),
    or a fresh Generator for a Generator input."""
    return var.get_value() if _is_shared(var) else np.random.default_rng(seed)


def _load_npz(path: str, inputs) -> list:
    """Arrays by input name or position; None for Generators (.npz holds none) and for
    shared variables the file leaves out."""
    if not os.path.exists(path):
        raise UsageError(f"no such file: {path}")
    try:
        data = np.load(path)
    except Exception as exc:
        raise UsageError(f"cannot read {path} as .npz: {exc}") from None
    values = []
    for i, var in enumerate(inputs):
        keys = [k for k in (var.name, f"arr_{i}") if k and k in data]
        if keys and not _is_generator(var):
            values.append(data[keys[0]])
        elif _is_generator(var) or _is_shared(var):
            values.append(None)
        else:
            raise UsageError(f"{path} has no array for input {i} ({var.name or 'unnamed'}); "
                             f"it has {', '.join(data.files) or 'none'}")
    return values


# --- output ---------------------------------------------------------------------------


def emit(lowered, fgraph, values, args) -> None:
    from lowering import export

    kind = args.emit
    if kind == "none":
        return
    if kind == "raw":
        return _write(lowered.as_text(raw=True, debug_info=args.debug_info), args)
    if kind == "stablehlo":
        if _specialized(args):
            module = lowered.specialize(*values)
            with lowered.lock, lowered.context:
                text = module.operation.get_asm(enable_debug_info=args.debug_info)
        else:
            text = lowered.as_text(debug_info=args.debug_info)
        return _write(text, args)
    if kind == "hlo":
        return _write(executable(lowered, values).hlo_modules()[0].to_string(), args)
    if kind == "bytecode":
        from lowering.compile import module_bytecode

        module = lowered.specialize(*values) if _specialized(args) else lowered.module
        with lowered.lock:
            return _write(module_bytecode(module), args)
    _note_checks(lowered, kind)
    if kind == "portable":
        args_for_shapes = values if _specialized(args) else ()
        return _write(export.export_portable(lowered, *args_for_shapes,
                                             target_version=args.target_version), args)
    if kind == "jax-export":
        exported = export.jax_exported(
            lowered, *values, platform=lowered.platform, target_version=args.target_version
        )
        try:
            blob = exported.serialize()
        except ImportError as exc:
            raise Failure(f"{exc} (pip install flatbuffers)") from None
        return _write(bytes(blob), args)
    raise AssertionError(kind)


def _note_checks(lowered, kind) -> None:
    for i, check in enumerate(lowered.runtime_checks):
        print(f"{PROG}: note: --emit={kind}: element {i} of result {len(lowered.output_types)} of @main "
              f"is an error flag ({check.error.__name__}: {check.message})", file=sys.stderr)


def _write(data, args) -> None:
    if args.output:
        mode = "wb" if isinstance(data, bytes) else "w"
        with open(args.output, mode) as fh:
            fh.write(data)
        return
    if isinstance(data, bytes):
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        sys.stdout.write(data if data.endswith("\n") else data + "\n")


def executable(lowered, values):
    """The executable `--emit=hlo` and `--cost` read: the specialized module with the
    rewrites a function's executables get (`passes.executable_rewrites`; small hoisted
    constants held in the module), so the HLO shown is the HLO a `pytensor.function` runs."""
    from lowering.compile import compile_module
    from lowering.passes import executable_rewrites
    from lowering.specialize import inline_constants, small_constants

    module = lowered.specialize(*values)
    with lowered.lock:
        executable_rewrites(module.operation, lowered.platform)
        inline_constants(module, small_constants(len(lowered.input_types), lowered.hoisted_constants))
    return compile_module(module, lowered.platform, host_callbacks=lowered.host_callbacks, lock=lowered.lock)


# --- --run and --cost -------------------------------------------------------------------

_RTOL = {"float16": 1e-2, "float32": 1e-4, "complex64": 1e-4}


def compare_with_python(lowered, fgraph, values, names=None) -> int:
    """Run and compare with PyTensor's Python mode: outputs computed from random draws
    (not numpy's stream) by shape and dtype, Generators by type, the rest by value."""
    got = lowered.compile()(*values)
    reference = _python_mode(fgraph)(*[_copy(v) for v in values])
    shapes = ", ".join(
        f"{v.name or i}: {'Generator' if isinstance(a, np.random.Generator) else np.shape(a)}"
        for i, (v, a) in enumerate(zip(fgraph.inputs, values))
    )
    print(f"// run: inputs {shapes}", file=sys.stderr)
    mismatches = 0
    names = names or [v.name for v in fgraph.outputs]
    for i, (name, a, b, is_draw) in enumerate(zip(names, got, reference, _drawn_outputs(fgraph))):
        label = f"output {i}" + (f" ({name})" if name else "")
        if isinstance(a, np.random.Generator) or isinstance(b, np.random.Generator):
            ok = isinstance(a, np.random.Generator) and isinstance(b, np.random.Generator)
            mismatches += not ok
            print(f"{label}: Generator (random state: type checked) {'ok' if ok else 'MISMATCH'}",
                  file=sys.stderr)
            continue
        a, b = np.asarray(a), np.asarray(b)
        drawn = " random draws:" if is_draw else ""
        if a.shape != b.shape or a.dtype != b.dtype:
            print(f"{label}:{drawn} MISMATCH {a.dtype}{a.shape} vs Python mode {b.dtype}{b.shape}",
                  file=sys.stderr)
            mismatches += 1
            continue
        if is_draw:
            print(f"{label}: {a.dtype}{list(a.shape)} random draws: shape and dtype checked ok", file=sys.stderr)
            continue
        abs_err, rel_err = _errors(a, b)
        rtol = _RTOL.get(a.dtype.name, 1e-7)
        ok = np.allclose(a, b, rtol=rtol, atol=rtol * 1e-3, equal_nan=True) if a.dtype.kind in "fc" \
            else np.array_equal(a, b)
        mismatches += not ok
        print(f"{label}: {a.dtype}{list(a.shape)} max abs err {abs_err:.3g}, max rel err {rel_err:.3g}"
              f" {'ok' if ok else 'MISMATCH'}", file=sys.stderr)
    if mismatches:
        raise Failure(f"{mismatches} output(s) differ from PyTensor's Python mode")
    return 0


def _python_mode(fgraph):
    """`fgraph` compiled in PyTensor's Python mode. Shared inputs are swapped for plain
    variables: `pytensor.function` takes no shared variable as an explicit input."""
    import pytensor
    from pytensor.compile.mode import Mode

    inputs = [v.type(name=v.name) if _is_shared(v) else v for v in fgraph.inputs]
    givens = [(v, w) for v, w in zip(fgraph.inputs, inputs) if v is not w]
    return pytensor.function(
        inputs, list(fgraph.outputs), givens=givens, mode=Mode(linker="py", optimizer=None),
        on_unused_input="ignore",
    )


def _copy(value):
    return copy.deepcopy(value) if isinstance(value, np.random.Generator) else np.copy(value)


def _drawn_outputs(fgraph) -> list[bool]:
    """Whether each output is computed from random draws: some node on its way reads
    a Generator."""
    drawn = set()
    for node in fgraph.toposort():
        if any(_is_generator(v) or v in drawn for v in node.inputs):
            drawn.update(node.outputs)
    return [v in drawn or _is_generator(v) for v in fgraph.outputs]


def _errors(a, b) -> tuple[float, float]:
    if a.size == 0:
        return 0.0, 0.0
    if a.dtype.kind not in "fc":
        diff = np.abs(a.astype(np.float64) - b.astype(np.float64)) if a.dtype.kind != "b" else (a != b)
        return float(np.max(diff)), 0.0
    with np.errstate(all="ignore"):
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        diff = np.where(same, 0, np.abs(a - b))
        nonzero = np.abs(b) > 0
        rel = np.where(same | ~nonzero, 0, diff / np.where(nonzero, np.abs(b), 1))
    return float(np.max(diff)), float(np.max(rel))


def report_cost(lowered, values) -> None:
    costs = executable(lowered, values).cost_analysis()
    print("// XLA cost analysis", file=sys.stderr)
    for key in ("flops", "transcendentals", "bytes accessed", "optimal_seconds"):
        if key in costs:
            print(f"{key}: {costs[key]:g}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
