"""Test session setup."""

import pytensor

# The Python mode's reference still runs some graphs with PyTensor's C backend: a Scan
# whose mode is None compiles its inner graph with the C VM, an OpFromGraph with
# `config.mode`. Each of those Ops is a gcc build on a cold cache (test_scan.py: 142
# builds, 181 s against 55 s warm, on a CI machine that starts cold every run). Without
# a C compiler configured, PyTensor runs them with Op.perform: the reference is the Python
# mode all the way down, and builds at once.
pytensor.config.cxx = ""
