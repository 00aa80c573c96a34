# lit configuration for the FileCheck suite: `lit tests/filecheck`.
import os
import shutil
import sys

import lit.formats

config.name = "stablehlo-pytensor"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".py"]
config.excludes = ["lit.cfg.py", "ir_printing.py", "__pycache__", "Output"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.test_source_root, "Output")

repo_root = os.path.dirname(os.path.dirname(config.test_source_root))
config.substitutions.append(("%PYTHON", sys.executable))
config.substitutions.append(("%tools", os.path.join(repo_root, "tools")))

# The `filecheck` package provides FileCheck as `filecheck`.
filecheck = shutil.which("FileCheck") or shutil.which("filecheck")
if filecheck is None:
    lit_config.fatal("FileCheck not found: pip install filecheck")
config.substitutions.append(("FileCheck", filecheck))

config.environment["PYTHONPATH"] = os.pathsep.join(
    [config.test_source_root, repo_root, os.environ.get("PYTHONPATH", "")]
)
for var in ("HOME", "PATH", "XLA_FLAGS", "JAX_PLATFORMS"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
config.environment["JAX_PLATFORMS"] = "cpu"
