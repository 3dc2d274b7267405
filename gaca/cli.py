"""The `gaca` command: one entry point, subcommands dispatched by name (imports deferred for start-up speed)."""

from __future__ import annotations

import importlib
import sys

BENCHMARKS = {
    "estimators": "gaca.bench.estimators",
    "envs": "gaca.bench.envs",
    "policy": "gaca.bench.policy",
    "train": "gaca.bench.train",
    "dispatch": "gaca.bench.dispatch",
}

# command -> (module with main(argv) -> int | None, one-line help)
COMMANDS = {
    "train": ("gaca.trainer.entry", "train one run: gaca train algorithm=gigpo env=shop seed=1 (Hydra overrides)"),
    "sweep": ("gaca.orchestration.sweep", "run an ablation block: gaca sweep BLOCK [--dry-run] [overrides]"),
    "status": ("gaca.orchestration.status", "what is done, running, failed or missing: gaca status [BLOCK]"),
    "search": ("gaca.orchestration.search", "Optuna search over the gate: gaca search gate [--trials N] [--workers K]"),
    "report": ("analysis.report", "LaTeX tables, figures and claims from MLflow: gaca report [BLOCK ...] [--out reports/]"),
    "mlflow": ("gaca.tracking.server", "serve the project's MLflow store on 127.0.0.1 for the UI"),
    "bench": (None, "print a benchmark table: gaca bench {" + "|".join(BENCHMARKS) + "}"),
}


def usage() -> str:
    lines = ["usage: gaca COMMAND [ARGS]", "", "commands:"]
    lines += [f"  {name:<8} {text}" for name, (_, text) in COMMANDS.items()]
    return "\n".join(lines)


def bench(argv: list[str]) -> int:
    if not argv or argv[0] not in BENCHMARKS:
        print(f"gaca bench: name one of {', '.join(BENCHMARKS)}", file=sys.stderr)
        return 2
    return importlib.import_module(BENCHMARKS[argv[0]]).main(argv[1:]) or 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    if argv[0] not in COMMANDS:
        print(f"gaca: unknown command {argv[0]!r}; known: {', '.join(COMMANDS)}\n\n{usage()}", file=sys.stderr)
        return 2
    if argv[0] == "bench":
        return bench(argv[1:])
    module = importlib.import_module(COMMANDS[argv[0]][0])
    return module.main(argv[1:]) or 0


if __name__ == "__main__":
    sys.exit(main())
