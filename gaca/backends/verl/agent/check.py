"""``gaca verl-agent check PATH [--python PY]``: whether a verl-agent checkout has every function,
class and signature that gaca's hooks (``gaca.backends.verl.agent.hooks``) need, read from its source
with ``ast`` (nothing of it is imported), and whether the trainer's Python (PY, default this one) has
versions its pins accept (``setup.py``'s ``install_requires`` and ``requirements.txt``). Exit status
0 when all is well, 2 otherwise, naming each missing item and each conflicting version.

A package pinned in both files passes when its version satisfies either pin (the two files
disagree on tensordict); a package neither file pins is not checked. The project's own ``verl``
extra (verl 0.9.1, transformers >= 5.5.3, Ray unpinned) fails these pins: it must not be installed
into verl-agent's environment.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gaca.backends.verl.agent.batch import PROVIDERS, ROLLOUT
from gaca.backends.verl.agent.hooks import MAIN_PPO, RAY_TRAINER, STAND_IN_ESTIMATOR, TRAINER_CLASS

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
    version: bool = False
    """A version of the trainer's Python against the checkout's pins (else something the hooks need)."""

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
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and node.value.value == STAND_IN_ESTIMATOR
        ):
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
    Requirement(MAIN_PPO_FILE, 'runs as `python -m` (main() under `if __name__ == "__main__"`)', runs_as_main),
    Requirement(MAIN_PPO_FILE, "starts Ray with ray.init(...) (the hooks reach its workers)", starts_ray),
    Requirement(
        RAY_TRAINER_FILE, f"AdvantageEstimator has {STAND_IN_ESTIMATOR!r} (critic-free stand-in)", stand_in_estimator
    ),
    Requirement(
        RAY_TRAINER_FILE,
        f"{TRAINER_CLASS}.__init__(self, config, ...) sets use_critic, GiGPO critic-free",
        critic_decision,
    ),
    Requirement(
        RAY_TRAINER_FILE,
        f"{TRAINER_CLASS}.fit calls self.traj_collector.multi_turn_loop(..., is_train=...), "
        "uses self.global_steps, calls compute_advantage(...)",
        fit_calls,
    ),
    Requirement(RAY_TRAINER_FILE, "compute_advantage(data, adv_estimator, ...)", compute_advantage_signature),
    Requirement(ROLLOUT_FILE, "TrajectoryCollector.multi_turn_loop(..., is_train)", rollout_signature),
    Requirement(ROLLOUT_FILE, f"the rollout writes {', '.join(ROLLOUT_FIELDS)}", rollout_fields),
)


@dataclass(frozen=True)
class Pin:
    package: str
    """The distribution name, normalised (``ray[default]`` -> ``ray``)."""
    specifier: str
    """Its version specifier, e.g. ``<=4.57.3``."""
    source: str
    """The file it is written in."""


def pins(root: Path) -> list[Pin]:
    """The version-pinned requirements of the checkout at ``root`` (unpinned ones are left out):
    setup.py's ``install_requires`` (what ``pip install -e .`` installs) and requirements.txt."""
    from packaging.requirements import InvalidRequirement
    from packaging.requirements import Requirement as Spec

    texts: list[tuple[str, str]] = []
    setup = root / "setup.py"
    if setup.is_file():
        for node in ast.walk(ast.parse(setup.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign) and any(dotted(t) == "install_requires" for t in node.targets):
                if isinstance(node.value, ast.List):
                    texts += [
                        ("setup.py", item.value)
                        for item in node.value.elts
                        if isinstance(item, ast.Constant) and isinstance(item.value, str)
                    ]
    requirements = root / "requirements.txt"
    if requirements.is_file():
        lines = (line.split("#", 1)[0].strip() for line in requirements.read_text(encoding="utf-8").splitlines())
        texts += [("requirements.txt", line) for line in lines if line]
    found = []
    for source, text in texts:
        try:
            spec = Spec(text)
        except InvalidRequirement:
            continue
        if str(spec.specifier):
            found.append(Pin(normalised(spec.name), str(spec.specifier), source))
    return found


def normalised(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


VERSIONS_SCRIPT = """
import importlib.metadata, json, sys
def version(name):
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None
print(json.dumps({name: version(name) for name in sys.argv[1:]}))
"""
"""Prints {package: installed version or null} of the Python that runs it, for its arguments."""


def installed_versions(python: str | None, packages: list[str]) -> dict[str, str | None]:
    """package -> its version in ``python`` (None: this interpreter), None where not installed.

    Raises:
        ValueError: one line, when ``python`` cannot be run or fails.
    """
    command = [python or sys.executable, "-c", VERSIONS_SCRIPT, *packages]
    try:
        answer = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except OSError as error:
        raise ValueError(f"--python {python} cannot be run: {error.strerror or error}") from None
    if answer.returncode != 0:
        last = (answer.stderr.strip().splitlines() or ["no output"])[-1]
        raise ValueError(f"--python {python} exited with status {answer.returncode}: {last}")
    return json.loads(answer.stdout.strip().splitlines()[-1])


def version_results(root: Path, python: str | None = None) -> list[Result]:
    """One result per pinned package: its version in ``python`` against every pin the checkout has for it."""
    from packaging.specifiers import SpecifierSet

    by_package: dict[str, list[Pin]] = {}
    for pin in pins(root):
        by_package.setdefault(pin.package, []).append(pin)
    if not by_package:
        return []
    versions = installed_versions(python, sorted(by_package))
    results = []
    for package, package_pins in sorted(by_package.items()):
        stated = ", ".join(f"{package}{pin.specifier} ({pin.source})" for pin in package_pins)
        requirement = Requirement(
            " + ".join(dict.fromkeys(pin.source for pin in package_pins)), stated, lambda tree: None
        )
        version = versions.get(package)
        if version is None:
            problem = f"{package} is not installed"
        elif any(SpecifierSet(pin.specifier).contains(version, prereleases=True) for pin in package_pins):
            problem = None
        else:
            problem = f"{package} {version} is installed, which conflicts"
        results.append(Result(requirement, problem, version=True))
    return results


def check(root: Path, python: str | None = None) -> list[Result]:
    """Every requirement's result on the checkout at ``root``, the versions of ``python`` (None:
    this interpreter) against its pins last."""
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
    return results + version_results(root, python)


def report(root: Path, results: list[Result], python: str | None = None) -> str:
    hooks = [result for result in results if not result.version]
    versions = [result for result in results if result.version]
    lines = [f"verl-agent at {root}: what gaca's hooks need (gaca.backends.verl.agent.hooks)"]
    for result in hooks:
        requirement = result.requirement
        status = "ok     " if result.ok else "MISSING"
        line = f"  {status} {requirement.path}: {requirement.what}"
        lines.append(line if result.ok else f"{line}: {result.problem}")
    if versions:
        lines.append(f"the trainer's Python ({python or sys.executable}) against the checkout's pins:")
    for result in versions:
        status = "ok      " if result.ok else "CONFLICT" if "conflicts" in (result.problem or "") else "MISSING "
        line = f"  {status} {result.requirement.what}"
        lines.append(line if result.ok else f"{line}: {result.problem}")
    missing = sum(not result.ok for result in hooks)
    conflicts = sum(not result.ok for result in versions)
    pinned = f", {conflicts} of {len(versions)} pinned versions not as pinned" if versions else ""
    if missing or conflicts:
        lines.append(
            f"{missing} of {len(hooks)} missing{pinned}: backend=verl jobs cannot run this checkout"
            + (" with this Python" if conflicts else "")
        )
    else:
        lines.append(
            f"all {len(hooks)} present{', every pinned version as pinned' if versions else ''}: "
            "backend=verl jobs can run this checkout unmodified"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gaca verl-agent", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    check_command = commands.add_parser(
        "check", help="check a verl-agent checkout (exit 0: ready, 2: something missing)"
    )
    check_command.add_argument("path", type=Path, help="the checkout (the folder holding verl/ and agent_system/)")
    check_command.add_argument(
        "--python", help="the trainer's Python, whose installed versions are checked (default: this one)"
    )
    args = parser.parse_args(argv)
    root = args.path.expanduser().resolve()
    if not root.is_dir():
        print(f"gaca verl-agent check: {root} is not a folder", file=sys.stderr)
        return 2
    try:
        results = check(root, args.python)
    except ValueError as error:
        print(f"gaca verl-agent check: {error}", file=sys.stderr)
        return 2
    print(report(root, results, args.python))
    return 0 if all(result.ok for result in results) else 2
