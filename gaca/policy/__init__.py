"""The policy LM: config, word-level tokenizer, prompt, batched constrained generation, log-probs and BC.

Names are imported on first use (PEP 562), so reading ``ModelConfig`` does not pay for importing
torch and transformers (several seconds).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "MODEL_PRESETS": "gaca.policy.config",
    "ModelConfig": "gaca.policy.config",
    "build_word_tokenizer": "gaca.policy.tokenizer",
    "build_prompt": "gaca.policy.prompt",
    "observation_prompt": "gaca.policy.prompt",
    "template_vocabulary": "gaca.policy.prompt",
    "Policy": "gaca.policy.model",
    "DECODERS": "gaca.policy.generation",
    "Generation": "gaca.policy.generation",
    "generate": "gaca.policy.generation",
    "sequence_logprobs": "gaca.policy.logprobs",
    "bc_cache_key": "gaca.policy.bc",
    "behaviour_clone": "gaca.policy.bc",
    "cached_policy": "gaca.policy.bc",
    "collect_demos": "gaca.policy.bc",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'gaca.policy' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
