"""The policy: a Hugging Face causal LM, its tokenizer and the prompt and decoding settings that go with them."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import cast

import torch
from transformers import (
    AutoModelForCausalLM,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    Qwen2Config,
    Qwen2ForCausalLM,
)

from gaca.policy.config import ModelConfig
from gaca.policy.prompt import PromptEncoder, template_vocabulary
from gaca.policy.tokenizer import TextEncoder, build_word_tokenizer, load_tokenizer
from gaca.policy.trie import CommandTrie, TrieCache

CONFIG_FILE = "gaca_policy.json"
_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def resolve_device(device: str) -> torch.device:
    """``auto`` -> cuda when available, else cpu; ``cuda`` without a GPU is an error."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("model.device is 'cuda' but torch sees no CUDA device; use 'auto' or 'cpu'")
    return torch.device(device)


class Policy:
    """A causal LM with its tokenizer, prompt encoder and admissible-command tries.

    The model is kept in eval mode: the presets and Qwen2 checkpoints have no dropout, so training
    through ``sequence_logprobs`` needs no mode switch (as in verl, which disables dropout).
    """

    def __init__(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, config: ModelConfig) -> None:
        if tokenizer.eos_token_id is None:
            raise ValueError("the tokenizer has no eos token; generation needs one to end an action")
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.config = config
        self.encode_text = TextEncoder(tokenizer)
        self.encode_prompts = PromptEncoder.for_tokenizer(tokenizer, config.max_prompt_tokens, self.encode_text)
        self._tries = TrieCache(self.encode_text, tokenizer.eos_token_id)

    @classmethod
    def create(cls, config: ModelConfig, vocabulary: Iterable[str] = (), seed: int = 0) -> Policy:
        """A new policy: for tiny/small a Qwen2 initialised from ``seed`` with a word-level tokenizer over
        ``vocabulary`` plus the prompt template's words; for path the checkpoint and its own tokenizer."""
        device = resolve_device(config.device)
        dtype = _DTYPES[config.dtype]
        if config.name == "path":
            path = cast(str, config.path)  # ModelConfig requires it for name='path'
            tokenizer = load_tokenizer(path)
            model: PreTrainedModel = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
            # transformers wraps PreTrainedModel.to in functools.wraps, which mypy cannot bind to an instance
            return cls(model.to(device), tokenizer, config)  # type: ignore[arg-type]
        tokenizer = build_word_tokenizer(set(vocabulary) | template_vocabulary())
        # ModelConfig filled the sizes left None from the preset and checked them: each is an int here
        hidden_size, intermediate_size, num_layers, num_heads = cast(
            "tuple[int, int, int, int]",
            (config.hidden_size, config.intermediate_size, config.num_layers, config.num_heads),
        )
        model_config = Qwen2Config(
            vocab_size=len(tokenizer),
            hidden_size=hidden_size,
            intermediate_size=intermediate_size,
            num_hidden_layers=num_layers,
            num_attention_heads=num_heads,
            num_key_value_heads=config.num_kv_heads,
            # Rotary positions are computed on the fly, so this is nominal; it covers prompt plus command.
            max_position_embeddings=4 * (config.max_prompt_tokens + config.max_response_tokens),
            tie_word_embeddings=True,
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
        # A private RNG stream: the weights depend on the seed only, and the caller's RNG is left alone.
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = Qwen2ForCausalLM(model_config)
        return cls(model.to(device=device, dtype=dtype), tokenizer, config)  # type: ignore[call-arg]  # as above

    @classmethod
    def load(cls, directory: str | Path, device: str | None = None) -> Policy:
        """A policy written by ``save``; ``device`` overrides the saved ``ModelConfig.device``."""
        directory = Path(directory)
        values = json.loads((directory / CONFIG_FILE).read_text())
        if device is not None:
            values["device"] = device
        config = ModelConfig.from_dict(values)
        tokenizer = load_tokenizer(directory)
        model = AutoModelForCausalLM.from_pretrained(directory, dtype=_DTYPES[config.dtype])
        return cls(model.to(resolve_device(config.device)), tokenizer, config)  # type: ignore[arg-type]  # as in create

    def save(self, directory: str | Path) -> None:
        """Write weights, tokenizer and ``ModelConfig`` to ``directory`` (created if missing)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        from transformers.utils import logging as hf_logging

        # transformers draws a "Writing model shards" bar per save: noise in every checkpointing job's log.
        bars = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()
        try:
            self.model.save_pretrained(directory)
        finally:
            if bars:
                hf_logging.enable_progress_bar()
        self.tokenizer.save_pretrained(directory)
        (directory / CONFIG_FILE).write_text(json.dumps(self.config.to_dict(), indent=2, sort_keys=True))

    @property
    def device(self) -> torch.device:
        return self.model.device

    @property
    def eos_token_id(self) -> int:
        return self.tokenizer.eos_token_id

    def num_parameters(self) -> int:
        """Distinct parameters (tied embeddings counted once)."""
        return sum(parameter.numel() for parameter in self.model.parameters())

    def command_trie(self, admissible: Sequence[str]) -> CommandTrie:
        """The (cached) token trie of one admissible set."""
        return self._tries.get(admissible)

    def encode_actions(self, actions: Sequence[str]) -> list[list[int]]:
        """Response token ids of each action: its tokens followed by eos, as decoding produces them."""
        encoded = self.encode_text(actions)
        return [[*ids, self.eos_token_id] for ids in encoded]

    def generator(self, seed: int) -> torch.Generator:
        """A sampling RNG on the model's device, for reproducible ``generate`` calls."""
        return torch.Generator(device=self.device).manual_seed(seed)
