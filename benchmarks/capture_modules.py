"""A pytest plugin that keeps every module the tests compile, for `code_generators.py --modules`.

    CAPTURE_MODULES_DIR=/tmp/modules python -m pytest -p benchmarks.capture_modules tests/test_linalg.py

Each distinct module (as compiled: static shapes, CHLO expanded) is written once as
`<sha256 prefix>.mlirbc`; modules that call back into Python are left out.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import lowering.compile as comp

_compile_bytecode = comp.compile_bytecode


def _capturing(bytecode, platform="cpu", fp_contraction=True, host_callbacks=(), **options):
    if not host_callbacks:
        path = Path(os.environ["CAPTURE_MODULES_DIR"]) / f"{hashlib.sha256(bytecode).hexdigest()[:16]}.mlirbc"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(bytecode)
    return _compile_bytecode(bytecode, platform, fp_contraction, host_callbacks, **options)


comp.compile_bytecode = _capturing
