"""Run by Python at start-up in every process of a verl job on a machine without CUDA (this folder is
put on ``PYTHONPATH`` with ``GACA_VERL_CPU=1``): installs ``gaca.backends.verl.agent.cpu_patches``.

Both modules are loaded from their files under private names, not through the ``gaca`` package, whose
``__init__`` imports torch: Ray's helper processes start here too and never need it.
"""

import importlib.util
import os
import sys
from pathlib import Path


def _load(name: str, file: Path):
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_here = Path(__file__).resolve().parent.parent
_patches = _load("_gaca_verl_cpu_patches", _here / "cpu_patches.py")
if os.environ.get(_patches.CPU_FLAG) == "1":
    _patches.install(_load("_gaca_verl_imports", _here / "imports.py").when_imported)
