"""A digest of what a refactor must not change: run keys, a quick run's metrics, report tables.

    python scripts/fingerprint.py --store STORE_FOLDER OUT.json
    python scripts/fingerprint.py --store STORE_FOLDER --compare BEFORE.json

Three parts, each hashed and also kept in full in the JSON so that a difference can be read:

- ``keys``: ``gaca sweep all --dry-run`` at seeds 0-2 on an empty store (every block's run keys);
- ``train``: every metric of ``gaca train trainer=quick`` (key, step, value) but its timings, its
  params but where it was written, and the tags that do not hold a time, a path or a host;
- ``report``: the tables and CSVs of ``gaca report --no-pdf`` on a store of synthetic runs (made once by
  ``python -m <report bench> --store STORE_FOLDER``; the store is read, never written).

Exit status 1 with the parts that differ under ``--compare``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from mlflow.tracking import MlflowClient

VOLATILE_TAGS = ("mlflow.", "gaca.host", "gaca.started", "gaca.finished", "gaca.git", "gaca.output")
PLACEMENT_PARAMS = ("tracking.uri", "output_dir")
"""Params that name where a run was logged or written (a temporary folder each time)."""
TIMINGS = "perf/"
"""Metrics that measure seconds and rates, which no two runs share."""


def _gaca(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "gaca.cli", *args], cwd=cwd, capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise SystemExit(f"gaca {' '.join(args)} failed: {done.stderr.strip().splitlines()[-1:]}")
    return done.stdout


def keys(work: Path) -> list[str]:
    out = _gaca("sweep", "all", "--dry-run", "seed=0,1,2", f"tracking.uri=sqlite:///{work}/keys.db", cwd=work)
    return sorted(" ".join(line.split()[1:]) for line in out.splitlines() if " to run " in line)


def train(work: Path) -> dict[str, object]:
    uri = f"sqlite:///{work}/train.db"
    _gaca("train", "trainer=quick", f"tracking.uri={uri}", f"output_dir={work}/runs", cwd=work)
    client = MlflowClient(tracking_uri=uri)
    (run,) = client.search_runs([client.get_experiment_by_name("gaca").experiment_id])
    metrics = sorted(
        (name, point.step, point.value)
        for name in run.data.metrics
        if not name.startswith(TIMINGS)
        for point in client.get_metric_history(run.info.run_id, name)
    )
    params = {k: v for k, v in run.data.params.items() if k not in PLACEMENT_PARAMS}
    tags = {k: v for k, v in run.data.tags.items() if not k.startswith(VOLATILE_TAGS)}
    return {"metrics": metrics, "params": dict(sorted(params.items())), "tags": dict(sorted(tags.items()))}


def report(work: Path, store: Path) -> dict[str, str]:
    out = work / "report"
    _gaca(
        "report",
        "--no-pdf",
        "--tracking-uri",
        f"sqlite:///{store}/mlflow.db",
        "--experiment",
        "gaca-bench",
        "--out",
        str(out),
        cwd=work,
    )
    return {
        str(path.relative_to(out)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(out.rglob("*"))
        if path.suffix in (".tex", ".csv", ".md", ".txt")
    }


def digest(part: object) -> str:
    return hashlib.sha256(json.dumps(part, sort_keys=True).encode()).hexdigest()[:16]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, help="write the fingerprint here")
    parser.add_argument("--store", type=Path, required=True, help="folder of the synthetic report store")
    parser.add_argument("--compare", type=Path, help="compare with this earlier fingerprint")
    args = parser.parse_args()
    if not (args.store / "mlflow.db").exists():
        parser.error(f"--store: no mlflow.db in {args.store}; make it with the report bench's --store")
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory(prefix="gaca-fingerprint-") as tmp:
        work = Path(tmp)
        for name in ("conf", "sweeps"):
            os.symlink(root / name, work / name)
        parts = {"keys": keys(work), "train": train(work), "report": report(work, args.store.resolve())}
    result = {name: {"digest": digest(part), "value": part} for name, part in parts.items()}
    for name, part in result.items():
        print(f"{name:7s} {part['digest']}")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1, sort_keys=True))
    if args.compare:
        before = json.loads(args.compare.read_text())
        differ = [name for name in result if before[name]["digest"] != result[name]["digest"]]
        print("unchanged, bit for bit" if not differ else f"differ: {', '.join(differ)}")
        return 1 if differ else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
