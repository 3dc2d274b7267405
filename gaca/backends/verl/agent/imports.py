"""Run a function right after a module is imported, without importing it ahead of time.

verl loads plugins inside ``import verl``, seconds before (and in Ray workers often without ever)
importing its trainer. Importing ``core_algos`` and ``ray_trainer`` from the plugin would add about
5 s to every ``import verl`` in every process, so the plugin waits for them instead.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

ModuleCallback = Callable[[ModuleType], None]


def when_imported(module_name: str, callback: ModuleCallback) -> None:
    """Call ``callback(module)`` once ``module_name`` is imported: now if it already is.

    An exception raised by the callback fails that import, with the callback's message.
    """
    module = sys.modules.get(module_name)
    if module is not None:
        callback(module)
        return
    _finder().callbacks.setdefault(module_name, []).append(callback)


class _PostImportFinder(importlib.abc.MetaPathFinder):
    """Finds watched modules through the other finders and wraps their loader."""

    def __init__(self) -> None:
        self.callbacks: dict[str, list[ModuleCallback]] = {}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        callbacks = self.callbacks.pop(fullname, None)
        if callbacks is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _CallbackLoader(spec.loader, callbacks)
                return spec
        self.callbacks[fullname] = callbacks  # not importable yet; keep watching
        return None


class _CallbackLoader(importlib.abc.Loader):
    """Delegates to the real loader, then runs the callbacks on the executed module."""

    def __init__(self, loader: importlib.abc.Loader, callbacks: list[ModuleCallback]) -> None:
        self._loader = loader
        self._callbacks = callbacks

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        for callback in self._callbacks:
            callback(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_resource_reader, ... of the real loader
        return getattr(self._loader, name)


def _finder() -> _PostImportFinder:
    for finder in sys.meta_path:
        if isinstance(finder, _PostImportFinder):
            return finder
    finder = _PostImportFinder()
    sys.meta_path.insert(0, finder)
    return finder
