"""Ablation blocks: the Hydra config files in ``sweeps/`` and their grids, expanded run by run.

A block file is a Hydra config (``# @package _global_``) holding what the block changes from
``conf/train.yaml`` plus a ``sweep`` node: a list of grids, each mapping an override key to Hydra's
sweep syntax (``seed: 0,1,2``, ``algorithm.lambda0: range(0,1.01,0.25)``). The block's runs are the
union of the grids' Cartesian products. A list rather than one grid because some blocks are a union
(lambda0: five fixed weights with the modulation off, plus the adaptive default).

Each run is then the override list ``+sweeps=<block> ~sweep <grid point> <command-line overrides>``:
the job composes exactly that, so the ``sweep`` node never reaches a run's config. A command-line
override replaces the grid dimension with the same key, and a command-line sweep (``seed=0,1``)
adds or replaces one, as in Hydra's own multirun.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, ListConfig, OmegaConf

from gaca.compose import CONF_DIR

SWEEPS_DIR = CONF_DIR.parent / "sweeps"
"""The project's block files, one per ablation block."""
ALL = "all"
"""``gaca sweep all``: every block in ``SWEEPS_DIR``, each distinct run once."""
GRID_KEY = "sweep"
"""The node of a block file that holds its grids (removed from every run's config by ``~sweep``)."""


@dataclass(frozen=True)
class Block:
    name: str
    """The block's name: its file name without ``.yaml``, and the ``gaca.block`` tag of its runs."""
    path: Path
    grids: tuple[tuple[tuple[str, str], ...], ...]
    """Each grid as (override key, Hydra sweep value) pairs, in file order (the last varies fastest)."""

    @property
    def group(self) -> str:
        """The Hydra config group of the block file: the name of the folder that holds it."""
        return self.path.parent.name

    @property
    def search_path(self) -> Path:
        """The folder Hydra must search for ``group/name.yaml``."""
        return self.path.parent.parent

    def base_overrides(self) -> list[str]:
        """Compose the block file into a run and drop its grid node."""
        return [f"+{self.group}={self.name}", f"~{GRID_KEY}"]


def block_names(folder: Path = SWEEPS_DIR) -> list[str]:
    """The blocks in ``folder``: ``main`` (Table 1) first, then the ablations by name."""
    return sorted((path.stem for path in folder.glob("*.yaml")), key=lambda name: (name != "main", name))


def load_block(name_or_path: str, folder: Path = SWEEPS_DIR) -> Block:
    """A block by name (``detector``) or by the path of a block file elsewhere (``my/sweeps/x.yaml``)."""
    path = Path(name_or_path)
    if path.suffix != ".yaml":
        path = folder / f"{name_or_path}.yaml"
        if not path.is_file():
            known = ", ".join([*block_names(folder), ALL])
            raise ValueError(f"unknown block {name_or_path!r}; known: {known}")
    elif not path.is_file():
        raise ValueError(f"block file {path} does not exist")
    return Block(path.stem, path.resolve(), _read_grids(path))


def load_blocks(name_or_path: str, folder: Path = SWEEPS_DIR) -> list[Block]:
    """``all`` -> every block of ``folder``; otherwise the one block named."""
    if name_or_path == ALL:
        return [load_block(name, folder) for name in block_names(folder)]
    return [load_block(name_or_path, folder)]


def _read_grids(path: Path) -> tuple[tuple[tuple[str, str], ...], ...]:
    config = OmegaConf.load(path)
    grids = config.get(GRID_KEY) if isinstance(config, DictConfig) else None
    if not isinstance(grids, ListConfig) or not grids or not all(isinstance(g, DictConfig) and g for g in grids):
        raise ValueError(
            f"{path}: '{GRID_KEY}' must be a non-empty list of grids, each a mapping of override keys to "
            f"sweep values, e.g.\n{GRID_KEY}:\n  - seed: 0,1,2\n    algorithm.detector: entropy,uniform"
        )
    return tuple(tuple((str(key), _sweep_value(grid[key])) for key in grid) for grid in grids)


def _sweep_value(value: object) -> str:
    """A grid value as Hydra override text; YAML lists are accepted for comma lists."""
    if isinstance(value, ListConfig):
        return ",".join(str(item) for item in value)
    return str(value)


def expand(block: Block, overrides: list[str]) -> list[list[str]]:
    """Every run of ``block`` as its grid point plus ``overrides`` (command-line run overrides).

    Expanded as Hydra's basic sweeper expands a multirun, through Hydra's public override parser:
    one override per key, a later one (the command line) replacing an earlier one (the grid) in its
    place, the Cartesian product over the discrete sweeps (``a,b``, ``range(...)``, ``choice(...)``).
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    runs: list[list[str]] = []
    for grid in block.grids:
        by_key: dict[str, list[str]] = {}
        for override in parser.parse_overrides([f"{key}={value}" for key, value in grid] + list(overrides)):
            key = override.get_key_element()
            if not override.is_sweep_override():
                by_key[key] = [f"{key}={override.get_value_element_as_str()}"]
            elif override.is_discrete_sweep():
                by_key[key] = [f"{key}={value}" for value in override.sweep_string_iterator()]
            else:
                raise ValueError(
                    f"{key}: a sweep of a block must list its values (a,b or range(...)), got {override.input_line}"
                )
        runs.extend(list(point) for point in itertools.product(*by_key.values()))
    return runs
