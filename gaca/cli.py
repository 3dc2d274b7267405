"""The `gaca` command: one entry point, subcommands dispatched by name (imports deferred for start-up speed)."""

from __future__ import annotations

import importlib
import os
import signal
import sys

BENCHMARKS = {
    "estimators": "gaca.bench.estimators",
    "envs": "gaca.bench.envs",
    "policy": "gaca.bench.policy",
    "train": "gaca.bench.train",
    "update": "gaca.bench.update",
    "dispatch": "gaca.bench.dispatch",
    "testbed": "gaca.bench.testbed",
    "soak": "gaca.bench.soak",
    "tracking": "gaca.bench.tracking",
    "verl": "gaca.bench.verl",
    "verdicts": "analysis.benches.verdicts",
}

# command -> (module with main(argv) -> int | None, one-line help)
COMMANDS = {
    "train": ("gaca.train", "train one run: gaca train algorithm=gigpo env=shop seed=1 (Hydra overrides)"),
    "sweep": (
        "gaca.orchestration.sweep",
        "run an ablation block: gaca sweep BLOCK [--dry-run] [--until-decided] [overrides]",
    ),
    "status": ("gaca.orchestration.status", "what is done, running, failed or missing: gaca status [BLOCK]"),
    "search": ("gaca.orchestration.search", "Optuna search over the gate: gaca search gate [--trials N] [--workers K]"),
    "report": (
        "analysis.report",
        "LaTeX tables, figures and claims from MLflow: gaca report [BLOCK ...] [--out reports/]",
    ),
    "mlflow": ("gaca.tracking.server", "serve the project's MLflow store (127.0.0.1; elsewhere with authentication)"),
    "backup": (
        "gaca.tracking.backup_cli",
        "backups of the store (SQLite or PostgreSQL): gaca backup list | restore [NAME] | now",
    ),
    "verl-agent": (
        "gaca.backends.verl.agent.check",
        "can gaca's hooks run this verl-agent checkout: gaca verl-agent check PATH",
    ),
    "bench": (None, "print a benchmark table: gaca bench {" + "|".join(BENCHMARKS) + "}"),
}


QUIET_THIRD_PARTY = {
    "MLFLOW_LOGGING_LEVEL": "WARNING",  # "Creating initial MLflow database tables..." on every command
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",  # "View run ... at: http://..." after every run
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # transformers' "Loading weights" bar at every checkpoint load
}
"""Third-party output that says nothing to a gaca user; set unless the environment sets it (jobs inherit it)."""


def usage() -> str:
    lines = ["usage: gaca [--debug] COMMAND [ARGS]", "", "commands:"]
    lines += [f"  {name:<8} {text}" for name, (_, text) in COMMANDS.items()]
    lines += ["", "--debug: show the traceback of an error (otherwise one line)"]
    return "\n".join(lines)


def _exit_on_sigterm(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def bench(argv: list[str]) -> int:
    if not argv or argv[0] not in BENCHMARKS:
        print(f"gaca bench: name one of {', '.join(BENCHMARKS)}", file=sys.stderr)
        return 2
    # A benchmark trains in temporary folders: SIGTERM (kill, a scheduler's time limit) ends it as Ctrl-C
    # does, through its cleanups, instead of leaving them behind.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    return importlib.import_module(BENCHMARKS[argv[0]]).main(argv[1:]) or 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    passed_on = argv[argv.index("--") :] if "--" in argv else []  # `gaca mlflow ... -- ARGS` for mlflow server
    argv = argv[: len(argv) - len(passed_on)]
    debug = "--debug" in argv
    argv = [arg for arg in argv if arg != "--debug"] + passed_on
    if debug:
        os.environ["GACA_DEBUG"] = "1"
    for name, value in QUIET_THIRD_PARTY.items():
        os.environ.setdefault(name, value)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    if argv[0] not in COMMANDS:
        print(f"gaca: unknown command {argv[0]!r}; known: {', '.join(COMMANDS)}\n\n{usage()}", file=sys.stderr)
        return 2
    if argv[0] == "bench":
        return bench(argv[1:])
    if argv[0] == "report":
        problem = report_problem(argv[1:])
        if problem:
            print(f"gaca report: {problem}", file=sys.stderr)
            return 1
    try:
        target = COMMANDS[argv[0]][0]
        assert target is not None  # bench, the one command without a module, ran above
        module = importlib.import_module(target)
        return module.main(argv[1:]) or 0
    except Exception as error:
        if debug:
            raise
        from gaca.tracking.secrets import redact_text

        print(
            f"gaca {argv[0]}: {type(error).__name__}: {redact_text(str(error))} (gaca --debug {argv[0]} ... shows the "
            "traceback)",
            file=sys.stderr,
        )
        return 1


def report_problem(argv: list[str]) -> str | None:
    """Why ``gaca report ARGV`` has nothing to read (no store, no finished run, an unreachable server), or None.

    Looked at before the report starts, so that it neither creates an empty ``mlflow.db`` nor writes
    tables with no run in them.
    """
    import argparse

    from gaca.tracking.secrets import redact_uri
    from gaca.tracking.store import StoreUnavailable, check_store, resolve_tracking_uri, store_exists

    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--tracking-uri")
    parser.add_argument("--experiment", default="gaca")
    args, _ = parser.parse_known_args(argv)
    if {"-h", "--help"} & set(argv):
        return None
    uri = resolve_tracking_uri(args.tracking_uri)
    first = "run a sweep first (e.g. gaca sweep detector), or pass --tracking-uri of the store that holds its runs"
    if not store_exists(uri):
        return f"there is no MLflow store at {redact_uri(uri)}; {first}"
    try:
        check_store(uri, writes=False)
    except StoreUnavailable as error:
        return str(error)
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name(args.experiment)
    if experiment is None or not client.search_runs(
        [experiment.experiment_id], "attributes.status = 'FINISHED'", max_results=1
    ):
        return f"the MLflow store at {redact_uri(uri)} holds no finished run in experiment {args.experiment!r}; {first}"
    return None


if __name__ == "__main__":
    sys.exit(main())
