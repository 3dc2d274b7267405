"""Secrets never leave the process: URIs' passwords and secret-looking variables, masked wherever a
config or a message is written (params, artifacts, logs, job pickles, printed plans).

A tracking URI's credentials travel to MLflow through its own variables (``MLFLOW_TRACKING_USERNAME``
and ``MLFLOW_TRACKING_PASSWORD``, see ``gaca.tracking.store.resolve_tracking_uri``), so a redacted
URI (``http://alice:***@host``) is still a working reference to the store in a job's config. A
secret-looking ``backend.env_vars`` value reaches a job the same way, through the environment
(``through_environment``): its override says ``${oc.env:GACA_SECRET_NAME}``, which the job resolves.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, MutableMapping
from typing import Any

MASK = "***"
SECRET_WORDS = frozenset(
    {"KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "CREDENTIALS", "AUTH"}
)
"""A variable whose name holds one of these words (split at ``_``) is a secret: ``WANDB_API_KEY``, ``HF_TOKEN``."""
ENV_PREFIX = "GACA_SECRET_"
"""The driver's variable that carries a job's secret ``backend.env_vars.NAME`` (``GACA_SECRET_NAME``)."""
ENV_VARS_KEY = "backend.env_vars"
PUBLIC_NAMES = frozenset({"RUN_KEY", "GACA_RUN_KEY"})
"""Names with a secret word that hold no secret: a run's identity hash (the verl job's ``GACA_RUN_KEY``)."""

# ``scheme://user:password@``, also as Hydra escapes it in an override (``http\://alice\:pw@``).
_USERINFO = re.compile(
    r"(?P<scheme>\b[a-zA-Z][\w+.-]*\\?://)(?P<user>[^\s:/@'\"\\]*)(?:(?P<colon>\\?:)(?P<password>[^\s/@'\"]*))?@"
)
# An upper-case variable name, its separator (``=``, ``: `` or a quoted dict key's ``': ``) and its value.
_ASSIGNMENT = re.compile(
    r"(?P<name>\b[A-Z][A-Z0-9_]*)(?P<separator>['\"]?\s*[:=]\s*)(?P<value>'[^']*'|\"[^\"]*\"|[^\s,}\])'\"]+)"
)


def looks_secret(name: str) -> bool:
    """Whether a variable called ``name`` holds a secret (case-insensitive; the last dotted part counts)."""
    last = name.rsplit(".", 1)[-1].upper()
    return last not in PUBLIC_NAMES and bool(SECRET_WORDS & set(last.split("_")))


def split_userinfo(uri: str) -> tuple[str, str | None, str | None]:
    """(URI without user-info, user, password) of ``scheme://user:password@host/...``."""
    match = _USERINFO.match(uri)
    if match is None:
        return uri, None, None
    return match["scheme"] + uri[match.end() :], match["user"], match["password"]


def _masked_userinfo(match: re.Match) -> str:
    if match["password"] is not None:
        return f"{match['scheme']}{match['user']}{match['colon']}{MASK}@"
    return f"{match['scheme']}{MASK}@"  # a lone user part is usually a token


def _masked_assignment(match: re.Match) -> str:
    if not looks_secret(match["name"]) or match["value"].strip("'\"") == MASK:
        return match[0]
    quote = match["value"][0] if match["value"][0] in "'\"" else ""
    return f"{match['name']}{match['separator']}{quote}{MASK}{quote}"


def redact_uri(uri: str) -> str:
    """``http://alice:s3cret@host`` -> ``http://alice:***@host``; ``https://token@host`` -> ``https://***@host``."""
    return _USERINFO.sub(_masked_userinfo, uri)


def redact_text(text: str) -> str:
    """``text`` with every URI's credentials and every secret-looking ``NAME=value`` / ``NAME: value`` masked."""
    return _ASSIGNMENT.sub(_masked_assignment, redact_uri(str(text)))


def redact_config(config: Any) -> Any:
    """A copy of a plain config with secrets masked: URIs' credentials in any string, and the value of
    every secret-looking key of a mapping (``backend.env_vars.WANDB_API_KEY``)."""
    if isinstance(config, Mapping):
        return {
            key: MASK if looks_secret(str(key)) and isinstance(value, str) else redact_config(value)
            for key, value in config.items()
        }
    if isinstance(config, (list, tuple)):
        return [redact_config(item) for item in config]
    if isinstance(config, str):
        return redact_text(config)
    return config


def redact_params(params: Mapping[str, str]) -> dict[str, str]:
    """Flattened params (``backend.env_vars.HF_TOKEN``) with secrets masked, as ``redact_config`` does."""
    return {key: MASK if looks_secret(key) else redact_text(value) for key, value in params.items()}


def through_environment(overrides: list[str], environ: MutableMapping[str, str] | None = None) -> list[str]:
    """A job's ``overrides`` with each secret-looking ``backend.env_vars`` value replaced by
    ``${oc.env:GACA_SECRET_NAME}`` and put in ``environ`` (default ``os.environ``, which local jobs
    inherit and ``sbatch`` exports), so that no job pickle holds it. ``+backend.env_vars.NAME=value``
    and ``backend.env_vars={NAME: value, ...}`` are both rewritten; a name that two runs give
    different values gets ``GACA_SECRET_NAME_2``, and so on."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from gaca.text import quoted

    target: MutableMapping[str, str] = os.environ if environ is None else environ
    parser = OverridesParser.create()

    def reference(name: str, value: str) -> str:
        variable, n = f"{ENV_PREFIX}{name}", 1
        while target.get(variable) not in (None, value):
            n += 1
            variable = f"{ENV_PREFIX}{name}_{n}"
        target[variable] = value
        return "${oc.env:" + variable + "}"

    rewritten = []
    for text in overrides:
        head = text.split("=", 1)[0]
        key = head.lstrip("+~")
        if "=" not in text or not (key == ENV_VARS_KEY or key.startswith(ENV_VARS_KEY + ".")):
            rewritten.append(text)
            continue
        value = parser.parse_override(text).value()
        if key != ENV_VARS_KEY and looks_secret(key) and isinstance(value, str):
            rewritten.append(f"{head}={reference(key.rsplit('.', 1)[1], value)}")
        elif key == ENV_VARS_KEY and isinstance(value, dict) and any(map(looks_secret, value)):
            items = [
                f"{name}: {reference(name, v) if looks_secret(name) and isinstance(v, str) else quoted(str(v))}"
                for name, v in value.items()
            ]
            rewritten.append(f"{head}={{{', '.join(items)}}}")
        else:
            rewritten.append(text)
    return rewritten
