"""The README stays true: its Op table matches the registry, its example runs."""

import subprocess
import sys
from pathlib import Path

import pytensor.tensor as pt
from pytensor.graph.fg import FunctionGraph

import lowering
from lowering.coverage import readme_with_table, unsupported_ops

ROOT = Path(__file__).resolve().parent.parent


def test_readme_op_table_is_current():
    import pytensor

    text = (ROOT / "README.md").read_text()
    if f"PyTensor {pytensor.__version__}'s" in text:
        assert readme_with_table(text) == text, "run tools/update-readme-ops"
    else:  # another PyTensor (Op classes differ): the same families are documented
        families = lambda t: [ln.split("`")[1] for ln in t.splitlines() if ln.startswith("| `")]  # noqa: E731
        assert families(readme_with_table(text)) == families(text), "run tools/update-readme-ops"


def test_unsupported_ops_reports_before_compiling():
    x = pt.vector("x")
    assert unsupported_ops(FunctionGraph([x], [pt.exp(x) * 2])) == {}
    from tests.test_core import NoRuleA

    missing = unsupported_ops(FunctionGraph([x], [NoRuleA()(x)]))
    assert list(missing) == ["NoRuleA"]


def test_main_job_runs_and_matches():
    out = subprocess.run(
        [sys.executable, "-m", "lowering"], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert "stablehlo.reduce" in out.stdout
    assert "matches PyTensor's Python mode: yes" in out.stdout


def test_readme_tool_lines_run(tmp_path):
    """The three lines of 'The IR dump tool' work as written (the tool from this checkout)."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## The IR dump tool", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    lines = [ln for ln in block.splitlines() if ln.strip()]
    assert len(lines) == 3
    tool = f"{sys.executable} {ROOT / 'tools' / 'pytensor-stablehlo-opt'}"
    script = "\n".join(["set -e", *[ln.replace("pytensor-stablehlo-opt", tool) for ln in lines]])
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=tmp_path,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "func.func public @main" in out.stdout and "HloModule main" in out.stdout
    assert "output 1 (dlogp)" in out.stderr and "flops:" in out.stderr


def test_unsupported_ops_registers_the_rules_itself():
    """A fresh process asking before anything was lowered gets the true answer."""
    code = (
        "import pytensor.tensor as pt\n"
        "from pytensor.graph.fg import FunctionGraph\n"
        "from lowering import unsupported_ops\n"
        "from tests.test_core import NoRuleA\n"
        "x = pt.matrix('x')\n"
        "print(unsupported_ops(FunctionGraph([x], [pt.tril(x) @ x, NoRuleA()(x)])))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith("{'NoRuleA': [")
    assert "Elemwise" not in out.stdout and "Dot" not in out.stdout
