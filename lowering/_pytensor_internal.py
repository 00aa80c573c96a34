"""Workarounds that reach into PyTensor's internals, so an upgrade touches one file."""

from __future__ import annotations

import threading

from pytensor.link.c.op import ExternalCOp
from pytensor.tensor.elemwise import DimShuffle

# PyTensor 2.x's DimShuffle is an ExternalCOp, whose constructor resolves the path of its
# C file (realpath: a system call per path component) and reads and parses the file, for
# every instance. Rewriting makes dozens (eight schools: 81, 38 of them in two calls of
# local_reshape_to_dimshuffle lifting an expand_dims through a gradient's sums), about
# 0.1 ms each: 5-12% of a small model's warm build (benchmarks/README.md), in every backend.
# PyTensor 3 inlined the C code (pymc-devs/pytensor#2292); here
# each file is read once a process. Instances keep their state as before (the relative
# path included), so pickles are unchanged.
_C_CODE: dict[tuple, tuple[list[str], dict[str, str]]] = {}
_lock = threading.Lock()


def _load_c_code_once(self, func_files) -> None:
    key = (type(self), tuple(func_files))
    with _lock:
        loaded = _C_CODE.get(key)
    if loaded is None:
        ExternalCOp.load_c_code(self, func_files)
        with _lock:
            _C_CODE[key] = (list(self.func_codes), dict(self.code_sections))
        return
    codes, sections = loaded
    self.func_codes.extend(codes)
    self.code_sections.update(sections)


def read_dimshuffle_c_code_once() -> None:
    """Let DimShuffle read its C file once a process (where it still reads one)."""
    if issubclass(DimShuffle, ExternalCOp) and "load_c_code" not in vars(DimShuffle):
        DimShuffle.load_c_code = _load_c_code_once
