"""ALFWorld's command strings, written in one place for the engine and the planner."""

from __future__ import annotations

INVENTORY = "inventory"
LOOK = "look"


def go_to(receptacle: str) -> str:
    return f"go to {receptacle}"


def open_(receptacle: str) -> str:
    return f"open {receptacle}"


def close(receptacle: str) -> str:
    return f"close {receptacle}"


def take(obj: str, receptacle: str) -> str:
    return f"take {obj} from {receptacle}"


def put(obj: str, receptacle: str) -> str:
    return f"put {obj} in/on {receptacle}"


def treat(verb: str, obj: str, receptacle: str) -> str:
    """clean / heat / cool ``obj`` with ``receptacle``."""
    return f"{verb} {obj} with {receptacle}"


def use(lamp: str) -> str:
    return f"use {lamp}"


def examine(receptacle: str) -> str:
    return f"examine {receptacle}"
