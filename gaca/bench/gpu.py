"""`python -m gaca.bench.gpu` (``scripts/gpu-check.sh``): the estimators, the verl hooks and a quick
training run on CUDA, checked against the CPU, with a timing table.

1. ``compute_advantages`` for every registered estimator on the same tensors on CPU and on CUDA: the CUDA
   result stays on CUDA and equals the CPU one within ``TOLERANCE``.
2. verl's ``compute_advantage`` with gaca's plugin (verl 0.9.1's legacy trainer) and
   ``compute_batch_advantages`` (the verl-agent hook) on a batch in verl-agent's layout, on CPU and
   moved to CUDA; skipped, saying so, when verl is not installed.
3. ``gaca train trainer=quick model=small`` on CUDA and on CPU (a randomly initialised tiny Qwen2:
   nothing is downloaded), in a temporary folder with its own MLflow store.

Without CUDA it prints one line and exits 0. Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import torch

if TYPE_CHECKING:
    from verl import DataProto

TOLERANCE = 1e-5
"""Largest |CUDA - CPU| accepted on an advantage (float32 reductions run in another order on a GPU)."""


@dataclass(frozen=True)
class Row:
    check: str
    cpu_ms: float | None
    cuda_ms: float | None
    max_diff: float | None
    ok: bool
    note: str = ""


def median_ms(call: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Median wall time of ``repeats`` calls after one warm-up, CUDA synchronised; the last result."""
    result = call()
    times = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        start = time.perf_counter()
        result = call()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3, result


def compare(check: str, cpu: Callable[[], torch.Tensor], cuda: Callable[[], torch.Tensor], repeats: int) -> Row:
    cpu_ms, expected = median_ms(cpu, repeats)
    cuda_ms, got = median_ms(cuda, repeats)
    if got.device.type != "cuda":
        return Row(check, cpu_ms, cuda_ms, None, False, f"result came back on {got.device}, not cuda")
    diff = (got.cpu() - expected).abs().max().item() if expected.numel() else 0.0
    return Row(check, cpu_ms, cuda_ms, diff, diff <= TOLERANCE)


def estimator_rows(repeats: int) -> list[Row]:
    from gaca.bench.estimators import paper_scale_batch, typical_batch
    from gaca.estimators import AdvantageConfig, compute_advantages
    from gaca.estimators.registry import ESTIMATORS

    def on(device: str, columns: dict[str, list]) -> dict[str, Any]:
        tensors: dict[str, Any] = {
            key: torch.tensor(columns[key], device=device) for key in ("group", "traj", "step", "reward", "nll")
        }
        if "invalid" in columns:
            tensors.update(invalid=torch.tensor(columns["invalid"], device=device), invalid_penalty=0.1)
        return {**tensors, "anchor": columns["anchor"]}

    def advantages(config: AdvantageConfig, inputs: dict[str, Any]) -> torch.Tensor:
        return compute_advantages(config=config, **inputs).advantages

    batches = {"typical": typical_batch(), "paper-scale": paper_scale_batch()}
    rows = []
    for batch_name, columns in batches.items():
        inputs = {device: on(device, columns) for device in ("cpu", "cuda")}
        for conventions in ("spec", "verl_agent") if "invalid" in columns else ("spec",):
            for method in ESTIMATORS:
                config = AdvantageConfig(method=method, conventions=conventions)
                rows.append(
                    compare(
                        f"estimator {method} {conventions}, {batch_name} ({len(columns['reward'])} rows)",
                        functools.partial(advantages, config, inputs["cpu"]),
                        functools.partial(advantages, config, inputs["cuda"]),
                        repeats,
                    )
                )
    return rows


def hook_rows(repeats: int) -> list[Row]:
    try:
        import verl  # noqa: F401  (loads gaca's plugin through the verl.plugins entry point)
        from omegaconf import DictConfig, ListConfig, OmegaConf
        from verl.trainer.ppo import ray_trainer
    except ImportError as error:
        return [Row("verl hooks", None, None, None, True, f"skipped: verl not importable ({error})")]
    from gaca.backends.verl.agent.advantage import compute_batch_advantages
    from gaca.backends.verl.agent.batch import add_step_index
    from gaca.backends.verl.agent.layout import build_layout_batch
    from gaca.estimators.registry import verl_names

    data: dict[str, DataProto] = {}
    for device in ("cpu", "cuda"):
        layout = build_layout_batch(num_tasks=16, group_size=8, max_steps=50, response_length=64, seed=0)
        data[device] = cast("DataProto", layout.data)  # a LayoutBatch holds a verl DataProto
        add_step_index(data[device], global_step=1)
        data[device] = data[device].to(device)

    # each call overwrites the batch's advantages
    def plugin(name: str, algorithm: DictConfig | ListConfig, device: str) -> torch.Tensor:
        # verl's own trainer passes these as here: a plugin's name (no AdvantageEstimator member) and
        # the algorithm's DictConfig node
        return (
            ray_trainer.compute_advantage(
                data[device],
                adv_estimator=name,  # type: ignore[arg-type]
                gamma=1.0,
                lam=1.0,
                num_repeat=8,
                norm_adv_by_std_in_grpo=True,
                config=algorithm,  # type: ignore[arg-type]
            )
            .batch["advantages"]
            .clone()
        )

    def verl_agent(name: str, algorithm: DictConfig | ListConfig, device: str) -> torch.Tensor:
        return compute_batch_advantages(data[device], name, algorithm).batch["advantages"].clone()

    rows = []
    for name in verl_names().values():  # the plugin's algorithm.adv_estimator of each estimator offered to verl
        algorithm = OmegaConf.create(
            {"adv_estimator": name, "gamma": 1.0, "lam": 1.0, "gaca": {"conventions": "verl_agent"}}
        )
        rows_in = f"{len(data['cpu'])} rows x 64 tokens"
        for entry, run in (("verl plugin", plugin), ("verl-agent hook", verl_agent)):
            cpu, cuda = (functools.partial(run, name, algorithm, device) for device in ("cpu", "cuda"))
            rows.append(compare(f"{entry} {name}, {rows_in}", cpu, cuda, repeats))
    return rows


def train_rows() -> list[Row]:
    seconds, notes, ok = {}, [], True
    for device in ("cuda", "cpu"):
        with tempfile.TemporaryDirectory(prefix="gaca-gpu-check-") as folder:
            command = [
                sys.executable,
                "-m",
                "gaca.cli",
                "train",
                "trainer=quick",
                "model=small",
                f"model.device={device}",
                f"output_dir={folder}/runs",
                f"tracking.uri=sqlite:///{folder}/mlflow.db",
            ]
            start = time.perf_counter()
            done = subprocess.run(command, cwd=folder, capture_output=True, text=True)
            seconds[device] = time.perf_counter() - start
        if done.returncode != 0:
            ok = False
            notes.append(f"{device} run exited {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")
    return [
        Row(
            "gaca train trainer=quick model=small (s)",
            seconds["cpu"] * 1e3,
            seconds["cuda"] * 1e3,
            None,
            ok,
            "; ".join(notes),
        )
    ]


def table(rows: list[Row]) -> str:
    def number(value: float | None, scale: float = 1.0, digits: int = 1) -> str:
        return "-" if value is None else f"{value * scale:.{digits}f}"

    lines = ["| check | CPU ms | CUDA ms | max abs(CUDA - CPU) | ok |", "| --- | --- | --- | --- | --- |"]
    for row in rows:
        scale = 1e-3 if row.check.endswith("(s)") else 1.0  # the training runs are given in seconds
        diff = "-" if row.max_diff is None else f"{row.max_diff:.1e}"
        ok = ("yes" if row.ok else "NO") + (f" ({row.note})" if row.note else "")
        lines.append(f"| {row.check} | {number(row.cpu_ms, scale)} | {number(row.cuda_ms, scale)} | {diff} | {ok} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gaca.bench.gpu", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per check (median reported)")
    parser.add_argument("--skip-train", action="store_true", help="leave out the two training runs")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("gpu check: no CUDA device here (torch.cuda.is_available() is False); nothing to check")
        return 0
    print(
        f"gpu check: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}, "
        f"{torch.get_num_threads()} CPU threads",
        flush=True,
    )
    rows = estimator_rows(args.repeats) + hook_rows(args.repeats) + ([] if args.skip_train else train_rows())
    print(table(rows))
    failed = [row.check for row in rows if not row.ok]
    print(f"gpu check: {f'{len(failed)} check(s) FAILED (ok = NO above)' if failed else 'every check passed'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
