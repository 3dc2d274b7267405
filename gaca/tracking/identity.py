"""A run's identity: a stable hash of what determines its result (``gaca.contract.canonical``)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from gaca.contract import canonical, normalize


def run_key(config: Mapping[str, Any]) -> str:
    """16 hex digits of SHA-256 over the canonical config as sorted JSON."""
    text = json.dumps(normalize(canonical(config)), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
