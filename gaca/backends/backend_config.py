"""``backend.*``: which backend trains the run (``name``) and that backend's own options.

The options' fields, validation and run checks are the backend's (its ``BackendSpec`` in
``gaca.backends.BACKENDS``); the Hydra keys stay flat (``backend.verl_agent_dir=...``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from gaca.backends import BACKENDS
from gaca.backends.spec import BackendSpec
from gaca.validation import check_choice, reject_unknown


@dataclass(frozen=True)
class BackendConfig:
    """What trains the run: ``name`` chooses the backend; ``options`` is its options dataclass
    (``BackendSpec.options``; None = its defaults). Another backend's keys are validated by that
    backend and otherwise ignored."""

    name: str = "cpu"
    """cpu: the embedded trainer (gaca.backends.cpu.loop); verl: a verl-agent training job
    (gaca.backends.verl.launcher.launch)."""
    options: Any = None
    """The backend's options (``CpuOptions`` of ``gaca.backends.cpu.options``, ``VerlOptions`` of
    ``gaca.backends.verl.launcher.run_options``)."""

    def __post_init__(self) -> None:
        check_choice("backend.name", self.name, BACKENDS)
        if self.options is None:
            object.__setattr__(self, "options", spec(self.name).options_class()())

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> BackendConfig:
        """``{"name": ..., **options}`` (the Hydra node, flat) validated by the named backend."""
        values = dict(values)
        owners = {name: {f.name for f in fields(spec(name).options_class())} for name in BACKENDS}
        reject_unknown("backend", values, {"name"}.union(*owners.values()))
        name = values.pop("name", "cpu")
        check_choice("backend.name", name, BACKENDS)
        mine = {key: value for key, value in values.items() if key in owners[name]}
        options = spec(name).options_class()(**mine)
        for other, keys in owners.items():  # another backend's keys: still validated, then ignored
            theirs = {key: value for key, value in values.items() if key in keys and key not in owners[name]}
            if other != name and theirs:
                spec(other).options_class()(**theirs)
        return cls(name, options)

    def to_dict(self) -> dict[str, Any]:
        """The flat Hydra node that ``from_dict`` reads back."""
        return {"name": self.name, **asdict(self.options)}


def spec(name: str) -> BackendSpec:
    """The ``BackendSpec`` of backend ``name``."""
    found: BackendSpec = BACKENDS.spec(name)
    return found
