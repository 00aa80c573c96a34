"""The README stays true: its Op table matches the registry, its example runs."""

import subprocess
import sys
from pathlib import Path

import numpy as np
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
