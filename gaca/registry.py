"""A small name -> object registry, the one way the project chooses implementations by name.

An entry may carry a spec (what it reads and needs), which validation, run identity and the
analysis read instead of keeping their own lists. A registry may name its home: the module whose
import registers the built-in entries (each function beside its spec, by ``register``), imported on
the first lookup. An entry may also be declared by its import path (``"package.module:attribute"``):
its spec is known at once and the module (with torch) is imported only when the entry itself is
asked for.

Names unknown to a registry are looked up once in the installed plugins: every entry point of the
group ``gaca.plugins`` is imported, and its module registers what it brings
(``[project.entry-points."gaca.plugins"] my_detector = "my_package.detector"``). A plugin's config
files (an estimator's ``algorithm/NAME.yaml``) reach every composition (``gaca train``, ``gaca
sweep``, ``gaca report``) through Hydra's own mechanism: a ``SearchPathPlugin`` in the plugin's
``hydra_plugins/`` namespace package that appends ``pkg://my_package.conf`` to the search path.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar, cast

T = TypeVar("T")

PLUGIN_GROUP = "gaca.plugins"
"""Entry-point group whose modules register estimators, detectors, environments or backends."""
_plugins_loaded = False


def load_plugins() -> None:
    """Import every installed ``gaca.plugins`` entry point once per process."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for entry in entry_points(group=PLUGIN_GROUP):
        entry.load()


def import_target(target: str) -> Any:
    """The object that ``"package.module:attribute"`` names, its module imported."""
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


class Registry(Generic[T]):
    """Maps names to implementations (and their specs); rejects a name clash and lists the known
    names on a miss.

    >>> detectors = Registry("detector")
    >>> @detectors.register("uniform", spec="reads nothing")
    ... def uniform(x): return x
    >>> detectors.get("uniform") is uniform, detectors.spec("uniform")
    (True, 'reads nothing')
    """

    def __init__(self, kind: str, home: str | None = None) -> None:
        self.kind = kind
        self.home = home
        """The module that registers the built-in entries, imported before the first lookup."""
        self._entries: dict[str, T | str] = {}
        self._specs: dict[str, Any] = {}
        self._home_loaded = home is None

    def register(self, name: str, spec: Any = None) -> Callable[[T], T]:
        def decorator(obj: T) -> T:
            self._add(name, obj, spec)
            return obj

        return decorator

    def declare(self, name: str, target: str, spec: Any = None) -> None:
        """Register ``target`` (``"package.module:attribute"``) without importing it."""
        self._add(name, target, spec)

    def _add(self, name: str, obj: T | str, spec: Any) -> None:
        if name in self._entries and self._entries[name] is not obj:
            raise ValueError(f"{self.kind} {name!r} is already registered ({self._entries[name]!r})")
        self._entries[name] = obj
        self._specs[name] = spec

    def _load_home(self) -> None:
        if not self._home_loaded:
            self._home_loaded = True
            importlib.import_module(cast(str, self.home))

    def get(self, name: str) -> T:
        entry = self._entries[self._known(name)]
        if isinstance(entry, str):
            entry = self._entries[name] = import_target(entry)
        return entry

    def spec(self, name: str) -> Any:
        """The spec registered with ``name`` (None when it was registered without one)."""
        return self._specs[self._known(name)]

    def _known(self, name: str) -> str:
        self._load_home()
        if name not in self._entries:
            load_plugins()
        if name not in self._entries:
            raise ValueError(f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}")
        return name

    def names(self) -> list[str]:
        self._load_home()
        return sorted(self._entries)

    def in_order(self) -> list[str]:
        """Every name, the installed plugins' included, in the order they were registered (built-ins first)."""
        self._load_home()
        load_plugins()
        return list(self._entries)

    def __contains__(self, name: object) -> bool:
        self._load_home()
        if name not in self._entries:
            load_plugins()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
