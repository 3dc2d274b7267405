"""The policy's configuration: model size or checkpoint, prompt shape and decoding, validated once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, cast

from gaca.validation import check_bool, check_choice, check_int, reject_unknown

NAMES = ("tiny", "small", "path")
DECODINGS = ("constrained", "free")
DTYPES = ("float32", "bfloat16", "float16")
DEVICES = ("auto", "cpu", "cuda")
LAST_LAYERS = ("every_position", "scored_positions")
"""How scoring computes the last decoder layer (``trainer.last_layer``): the model's own forward at every
position, or ``gaca.policy.last_layer.scored_logits`` at the scored positions only. Here, beside the other
choices, so that validating a config does not import torch."""
SIZE_FIELDS = ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "intermediate_size")
MIN_PROMPT_TOKENS = 16
"""Room for the prompt's fixed ending (task and "your action :") plus some observation."""

MODEL_PRESETS: dict[str, dict[str, int]] = {
    # The paper's 1.5B / 7B pair in miniature: about 0.08M and 0.41M parameters with household's vocabulary.
    # Sized so that a whole run fits in minutes on 2 CPU cores (compute grows with parameters x prompt tokens).
    "tiny": dict(hidden_size=64, num_layers=2, num_heads=4, num_kv_heads=2, intermediate_size=128),
    "small": dict(hidden_size=128, num_layers=2, num_heads=4, num_kv_heads=2, intermediate_size=384),
}


@dataclass(frozen=True)
class ModelConfig:
    """Options of the policy LM, its prompt and its decoding.

    The size fields left as None take the values of the preset ``name`` (``MODEL_PRESETS``); for
    ``name="path"`` they must stay None because the checkpoint fixes them. Every field is checked in
    ``__post_init__``; a bad value raises ``ValueError`` naming the field and what it may be.
    """

    name: str = "tiny"
    """tiny | small: a randomly initialised Qwen2 with a word-level tokenizer; path: a Hugging Face checkpoint."""
    path: str | None = None
    """Directory or hub id of the checkpoint (with its tokenizer); required for name=path, else None."""
    hidden_size: int | None = None
    """Width d of the residual stream; divisible by num_heads."""
    num_layers: int | None = None
    """Number of decoder layers."""
    num_heads: int | None = None
    """Attention heads; hidden_size / num_heads must be even (rotary embeddings)."""
    num_kv_heads: int | None = None
    """Key/value heads (grouped-query attention); divides num_heads."""
    intermediate_size: int | None = None
    """Width of the SwiGLU MLP."""
    max_prompt_tokens: int = 64
    """Prompts are cut from the left to this many tokens, keeping the task and "your action :" ending."""
    max_response_tokens: int = 12
    """Free decoding stops here; constrained decoding always completes an admissible command."""
    history_length: int = 1
    """How many of the most recent (observation, action) pairs the prompt shows."""
    show_admissible: bool = True
    """List the admissible commands in the prompt (costs tokens; constrained decoding enforces them anyway)."""
    decoding: str = "free"
    """constrained: sampling masked to continuations of admissible commands; free: any tokens up to eos."""
    dtype: str = "float32"
    """Parameter dtype: float32 | bfloat16 | float16 (bfloat16 is slow on CPU)."""
    device: str = "auto"
    """auto: cuda when available, else cpu; cpu; cuda (fails at model creation when there is none)."""

    def __post_init__(self) -> None:
        _choice("name", self.name, NAMES)
        _choice("decoding", self.decoding, DECODINGS)
        _choice("dtype", self.dtype, DTYPES)
        _choice("device", self.device, DEVICES)
        if self.name == "path":
            if not isinstance(self.path, str) or not self.path:
                raise ValueError("model.path must name a checkpoint directory or hub id when name='path'")
            set_sizes = [field for field in SIZE_FIELDS if getattr(self, field) is not None]
            if set_sizes:
                raise ValueError(f"model.{set_sizes[0]} must be None when name='path' (the checkpoint fixes it)")
        else:
            if self.path is not None:
                raise ValueError(f"model.path must be None when name={self.name!r}; use name='path' to load it")
            for field, value in MODEL_PRESETS[self.name].items():
                if getattr(self, field) is None:
                    object.__setattr__(self, field, value)
            for field in SIZE_FIELDS:
                _positive_int(field, getattr(self, field))
            # the preset filled the sizes left None and _positive_int checked them: each is an int here
            hidden_size, num_heads, num_kv_heads = cast(
                "tuple[int, int, int]", (self.hidden_size, self.num_heads, self.num_kv_heads)
            )
            if hidden_size % num_heads or (hidden_size // num_heads) % 2:
                raise ValueError(
                    f"model.hidden_size ({self.hidden_size}) must be num_heads ({self.num_heads}) "
                    "times an even head size"
                )
            if num_heads % num_kv_heads:
                raise ValueError(f"model.num_kv_heads ({self.num_kv_heads}) must divide num_heads ({self.num_heads})")
        _positive_int("max_prompt_tokens", self.max_prompt_tokens, minimum=MIN_PROMPT_TOKENS)
        _positive_int("max_response_tokens", self.max_response_tokens)
        _positive_int("history_length", self.history_length, minimum=0)
        check_bool("model.show_admissible", self.show_admissible)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> ModelConfig:
        """Build from a mapping (e.g. a Hydra node), rejecting unknown keys by name."""
        reject_unknown("model", values, [field.name for field in fields(cls)])
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _choice(field: str, value: object, allowed: tuple[str, ...]) -> None:
    check_choice(f"model.{field}", value, allowed)


def _positive_int(field: str, value: object, minimum: int = 1) -> None:
    check_int(f"model.{field}", value, minimum)
