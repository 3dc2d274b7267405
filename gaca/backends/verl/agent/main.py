"""``python -m gaca.backends.verl.agent.main [Hydra overrides]``: verl-agent's ``python -m verl.trainer.main_ppo``
with gaca's hooks (``gaca.backends.verl.agent.hooks``), the entry point of ``backend=verl`` jobs.

1. It checks the verl-agent that ``import verl`` would load (``gaca.backends.verl.agent.check``), from its
   source, and exits with status 2 naming what is missing.
2. It installs the hooks in this process and in Ray's worker processes.
3. It runs verl-agent's ``verl.trainer.main_ppo`` as ``__main__``, with the same command line.
"""

from __future__ import annotations

import importlib.util
import runpy
import sys
from pathlib import Path


def checkout_root() -> Path | None:
    """The folder holding the ``verl`` package that ``import verl`` would load (not imported here)."""
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]).resolve().parent


def main(argv: list[str] | None = None) -> int:
    from gaca.backends.verl.agent import hooks as agent_hooks
    from gaca.backends.verl.agent.check import check, report
    from gaca.backends.verl.agent.options import command_line_problem

    overrides = sys.argv[1:] if argv is None else argv
    root = checkout_root()
    if root is None:
        print(
            "gaca.backends.verl.agent.main: no `verl` package is importable; install verl-agent or run from its "
            "checkout",
            file=sys.stderr,
        )
        return 2
    if (problem := command_line_problem(root, overrides)) is not None:
        print(f"gaca.backends.verl.agent.main: {problem}", file=sys.stderr)
        return 2
    results = check(root)
    if not all(result.ok for result in results):
        print(report(root, results), file=sys.stderr)
        return 2
    import ray

    agent_hooks.install()
    agent_hooks.install_in_ray_workers(ray)
    sys.argv = [sys.argv[0], *overrides]
    runpy.run_module(agent_hooks.MAIN_PPO, run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
