"""The estimators (and detectors, group normalisations) that gaca ships, one module each beside its spec.

``gaca.estimators.registry`` imports this package on its first lookup, and this package imports
every module in it: the paper's (``paper``, first, so that GRPO, GiGPO and GACA lead every table),
then the others in name order. A new estimator is one more module here, registering its function
with its spec (docs/extending.md); the same module in an installed package is a plugin. Nothing
here may import torch at module level: specs are read, and configs validated, without it.
"""

from __future__ import annotations

import importlib
import pkgutil

from gaca.estimators.methods import paper  # noqa: F401  (registers first)

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
