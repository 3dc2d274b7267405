"""``gaca verl-agent check PATH``: whether a verl-agent checkout has every function, class and
signature that gaca's hooks (``gaca.backends.verl.agent_hooks``) need, read from its source with ``ast``
(nothing of it is imported). Exit status 0 when all are there, 2 otherwise, naming each missing one.
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from gaca.backends.verl.agent_hooks import MAIN_PPO, RAY_TRAINER, STAND_IN_ESTIMATOR, TRAINER_CLASS
from gaca.backends.verl.batch import PROVIDERS, ROLLOUT

MAIN_PPO_FILE = MAIN_PPO.replace(".", "/") + ".py"
RAY_TRAINER_FILE = RAY_TRAINER.replace(".", "/") + ".py"
ROLLOUT_FILE = "agent_system/multi_turn_rollout/rollout_loop.py"
ROLLOUT_FIELDS = tuple(field for field, provider in PROVIDERS.items() if provider.startswith(ROLLOUT))
"""The ``non_tensor_batch`` fields the estimator requires from verl-agent's rollout."""


@dataclass(frozen=True)
class Requirement:
    path: str
    """The file in the checkout."""
    what: str
    """What the hooks need there, in one line."""
    missing: Callable[[ast.Module], str | None]
    """None when the file has it, else what is missing."""


@dataclass(frozen=True)
class Result:
    requirement: Requirement
    problem: str | None

    @property
    def ok(self) -> bool:
        return self.problem is None


def find_class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    return next((node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == name), None)


def find_function(scope: ast.Module | ast.ClassDef, name: str) -> ast.FunctionDef | None:
    return next((node for node in scope.body if isinstance(node, ast.FunctionDef) and node.name == name), None)


def parameters(function: ast.FunctionDef) -> list[str]:
    arguments = function.args
    return [a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]]


def dotted(node: ast.AST) -> str:
    """``self.traj_collector.multi_turn_loop`` for an attribute chain, '' for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def calls(node: ast.AST, name: str) -> list[ast.Call]:
    return [call for call in ast.walk(node) if isinstance(call, ast.Call) and dotted(call.func) == name]


def method(tree: ast.Module, class_name: str, name: str) -> tuple[ast.FunctionDef | None, str | None]:
    owner = find_class(tree, class_name)
    if owner is None:
        return None, f"no class {class_name}"
    function = find_function(owner, name)
    return function, None if function else f"no method {class_name}.{name}"


def runs_as_main(tree: ast.Module) -> str | None:
    if find_function(tree, "main") is None:
        return "no module-level function main"
    for node in tree.body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) and calls(node, "main"):
            return None
    return 'no `if __name__ == "__main__": main()` block'


def starts_ray(tree: ast.Module) -> str | None:
    return None if calls(tree, "ray.init") else "no ray.init(...) call"


def stand_in_estimator(tree: ast.Module) -> str | None:
    owner = find_class(tree, "AdvantageEstimator")
    if owner is None:
        return "no class AdvantageEstimator"
    for node in owner.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value == STAND_IN_ESTIMATOR:
            return None
    return f"AdvantageEstimator has no member equal to {STAND_IN_ESTIMATOR!r}"


def critic_decision(tree: ast.Module) -> str | None:
    init, problem = method(tree, TRAINER_CLASS, "__init__")
    if init is None:
        return problem
    if parameters(init)[:2] != ["self", "config"]:
        return f"{TRAINER_CLASS}.__init__{tuple(parameters(init))} does not take config first"
    assigned = {dotted(target) for node in ast.walk(init) if isinstance(node, ast.Assign) for target in node.targets}
    missing = [name for name in ("self.config", "self.use_critic") if name not in assigned]
    if missing:
        return f"{TRAINER_CLASS}.__init__ does not set {', '.join(missing)}"
    if not any(isinstance(node, ast.Attribute) and node.attr == "GiGPO" for node in ast.walk(init)):
        return f"{TRAINER_CLASS}.__init__'s critic decision does not name AdvantageEstimator.GiGPO"
    return None


def fit_calls(tree: ast.Module) -> str | None:
    fit, problem = method(tree, TRAINER_CLASS, "fit")
    if fit is None:
        return problem
    rollouts = calls(fit, "self.traj_collector.multi_turn_loop")
    if not rollouts:
        return f"{TRAINER_CLASS}.fit does not call self.traj_collector.multi_turn_loop(...)"
    if not any(keyword.arg == "is_train" for call in rollouts for keyword in call.keywords):
        return f"{TRAINER_CLASS}.fit calls multi_turn_loop without is_train=..."
    if not any(dotted(node) == "self.global_steps" for node in ast.walk(fit)):
        return f"{TRAINER_CLASS}.fit does not use self.global_steps"
    if not calls(fit, "compute_advantage"):
        return f"{TRAINER_CLASS}.fit does not call the module's compute_advantage(...) by name"
    return None


def compute_advantage_signature(tree: ast.Module) -> str | None:
    function = find_function(tree, "compute_advantage")
    if function is None:
        return "no module-level function compute_advantage"
    if parameters(function)[:2] != ["data", "adv_estimator"]:
        return f"compute_advantage{tuple(parameters(function))} does not take (data, adv_estimator, ...)"
    return None


def rollout_signature(tree: ast.Module) -> str | None:
    loop, problem = method(tree, "TrajectoryCollector", "multi_turn_loop")
    if loop is None:
        return problem
    if "is_train" not in parameters(loop):
        return f"TrajectoryCollector.multi_turn_loop{tuple(parameters(loop))} has no is_train parameter"
    return None


def rollout_fields(tree: ast.Module) -> str | None:
    strings = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    missing = [field for field in ROLLOUT_FIELDS if field not in strings]
    return f"never names {', '.join(missing)}" if missing else None


REQUIREMENTS: tuple[Requirement, ...] = (
    Requirement(MAIN_PPO_FILE, "runs as `python -m` (main() under `if __name__ == \"__main__\"`)", runs_as_main),
    Requirement(MAIN_PPO_FILE, "starts Ray with ray.init(...) (the hooks reach its workers)", starts_ray),
    Requirement(RAY_TRAINER_FILE, f"AdvantageEstimator has {STAND_IN_ESTIMATOR!r} (critic-free stand-in)", stand_in_estimator),
    Requirement(RAY_TRAINER_FILE, f"{TRAINER_CLASS}.__init__(self, config, ...) sets use_critic, GiGPO critic-free",
                critic_decision),
    Requirement(RAY_TRAINER_FILE, f"{TRAINER_CLASS}.fit calls self.traj_collector.multi_turn_loop(..., is_train=...), "
                "uses self.global_steps, calls compute_advantage(...)", fit_calls),
    Requirement(RAY_TRAINER_FILE, "compute_advantage(data, adv_estimator, ...)", compute_advantage_signature),
    Requirement(ROLLOUT_FILE, "TrajectoryCollector.multi_turn_loop(..., is_train)", rollout_signature),
    Requirement(ROLLOUT_FILE, f"the rollout writes {', '.join(ROLLOUT_FIELDS)}", rollout_fields),
)


def check(root: Path) -> list[Result]:
    """Every requirement's result on the checkout at ``root``."""
    trees: dict[str, ast.Module | str] = {}
    results = []
    for requirement in REQUIREMENTS:
        if requirement.path not in trees:
            path = root / requirement.path
            try:
                trees[requirement.path] = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            except FileNotFoundError:
                trees[requirement.path] = "file not found"
            except (SyntaxError, UnicodeDecodeError) as error:
                trees[requirement.path] = f"cannot be parsed ({error})"
        tree = trees[requirement.path]
        results.append(Result(requirement, tree if isinstance(tree, str) else requirement.missing(tree)))
    return results


def report(root: Path, results: list[Result]) -> str:
    lines = [f"verl-agent at {root}: what gaca's hooks need (gaca.backends.verl.agent_hooks)"]
    for result in results:
        requirement = result.requirement
        status = "ok     " if result.ok else "MISSING"
        line = f"  {status} {requirement.path}: {requirement.what}"
        lines.append(line if result.ok else f"{line}: {result.problem}")
    missing = sum(not result.ok for result in results)
    lines.append(
        f"{missing} of {len(results)} missing: backend=verl jobs cannot run this checkout" if missing
        else f"all {len(results)} present: backend=verl jobs can run this checkout unmodified"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gaca verl-agent", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    check_command = commands.add_parser("check", help="check a verl-agent checkout (exit 0: ready, 2: something missing)")
    check_command.add_argument("path", type=Path, help="the checkout (the folder holding verl/ and agent_system/)")
    args = parser.parse_args(argv)
    root = args.path.expanduser().resolve()
    if not root.is_dir():
        print(f"gaca verl-agent check: {root} is not a folder", file=sys.stderr)
        return 2
    results = check(root)
    print(report(root, results))
    return 0 if all(result.ok for result in results) else 2
