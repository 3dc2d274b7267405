"""What a backend brings besides its trainer: its options and the checks of a run it trains.

Each entry of ``gaca.backends.BACKENDS`` carries a ``BackendSpec``; the run config reads it and
names no backend itself. Targets are import paths (``"package.module:attribute"``), imported when a
run config with that backend is validated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gaca.registry import import_target

if TYPE_CHECKING:
    from gaca.backends.config import RunConfig


@dataclass(frozen=True)
class BackendSpec:
    options: str
    """The frozen dataclass of the backend's ``backend.*`` keys (besides ``name``), validated in its
    ``__post_init__``, e.g. ``"gaca.backends.verl.launcher.run_options:VerlOptions"``."""
    check_run: str | None = None
    """A function ``(RunConfig) -> None`` raising a one-line ``ValueError`` for a run config the backend
    cannot train (run when the run config is built, before any run or file exists); None: none."""
    on_gpus: bool = False
    """Its runs train on GPUs: a sweep's estimate counts GPU hours (``gaca.orchestration.plan.estimate``)."""
    describe_jobs: str | None = None
    """A function ``(runs, uri, session) -> str`` that ``gaca sweep`` prints before launching the block's
    runs of this backend (``PlannedRun`` list, tracking URI, ``HydraSession``): what each job will start;
    None: nothing."""

    def options_class(self) -> type[Any]:
        cls: type[Any] = import_target(self.options)
        return cls

    def check(self, run: RunConfig) -> None:
        if self.check_run is not None:
            import_target(self.check_run)(run)

    def jobs_text(self, runs: list[Any], uri: str, session: Any) -> str | None:
        """``describe_jobs`` of ``runs`` (``PlannedRun``), or None without one."""
        if self.describe_jobs is None:
            return None
        text: str = import_target(self.describe_jobs)(runs, uri, session)
        return text
