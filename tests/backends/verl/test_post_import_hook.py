"""when_imported: the plugin's way to wait for verl's trainer modules (needs no verl)."""

from __future__ import annotations

import importlib
import sys

import pytest

from gaca.backends.verl.agent.imports import when_imported


@pytest.fixture
def module_on_path(tmp_path, monkeypatch):
    def write(name: str, body: str) -> str:
        (tmp_path / f"{name}.py").write_text(body)
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.delitem(sys.modules, name, raising=False)
        return name

    return write


def test_callback_runs_after_the_module_executes(module_on_path):
    name = module_on_path("gaca_hook_target_a", "VALUE = 41\n")
    seen = []
    when_imported(name, lambda module: seen.append(module.VALUE + 1))
    assert seen == []
    importlib.import_module(name)
    assert seen == [42]
    importlib.import_module(name)  # cached: no second call
    assert seen == [42]


def test_callback_runs_at_once_for_an_imported_module(module_on_path):
    name = module_on_path("gaca_hook_target_b", "VALUE = 7\n")
    module = importlib.import_module(name)
    seen = []
    when_imported(name, seen.append)
    assert seen == [module]


def test_a_failing_callback_fails_the_import_with_its_message(module_on_path):
    name = module_on_path("gaca_hook_target_c", "VALUE = 0\n")

    def refuse(module):
        raise ValueError("name clash: 'gigpo'")

    when_imported(name, refuse)
    with pytest.raises(ValueError, match="name clash: 'gigpo'"):
        importlib.import_module(name)
    assert name not in sys.modules
