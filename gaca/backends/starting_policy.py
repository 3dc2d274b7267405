"""The source fingerprint in a behaviour-cloned start's cache key (``RunConfig.starting_policy``)."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

STARTING_POLICY_CODE = ("envs", "policy", "backends/cpu/start.py", "backends/cpu/seeds.py")
"""The parts of ``gaca`` a behaviour-cloned start is made by (the demonstrations, the prompt, the
model, the cloning and its prior stage, the seeds it draws with; not the training loop): their
source is part of the clone's cache key, so that a folder's ``runs/bc-cache`` never hands a new
version of them a clone the old one made."""
GACA_ROOT = Path(__file__).parents[1]
"""The ``gaca`` package folder, the root of ``STARTING_POLICY_CODE``."""


@functools.cache
def source_fingerprint(root: Path, parts: tuple[str, ...]) -> str:
    """sha256 over the ``.py`` files of ``parts`` (folders, searched recursively, or files) under
    ``root``: each file's path relative to ``root`` and its bytes, in path order."""
    digest = hashlib.sha256()
    for part in parts:
        path = root / part
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            digest.update(file.relative_to(root).as_posix().encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()
