"""The agent's prompt: verl-agent's template, shortened, and its left truncation on token ids."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, cast

from transformers import PreTrainedTokenizerBase

from gaca.policy.config import ModelConfig
from gaca.policy.tokenizer import TextEncoder

_CHAT_SENTINEL = "\x00gaca-prompt\x00"


class ObservationLike(Protocol):
    """What the prompt needs from an environment's observation."""

    @property
    def task(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def admissible(self) -> Sequence[str]: ...


def build_prompt(
    task: str,
    observation: str,
    history: Sequence[tuple[str, str]],
    admissible: Sequence[str] | None,
    history_length: int,
) -> str:
    """The prompt for the next action, in the style of verl-agent's ALFWorld/WebShop templates.

    ``history`` holds every earlier (observation, action) pair of the episode, oldest first; the prompt
    counts them all and shows the last ``history_length``. Unlike verl-agent the task comes last, just
    before "your action :", so that cutting the prompt from the left drops old history, never the goal.
    """
    step = len(history)
    recent = list(history[-history_length:]) if history_length else []
    parts = ["you are an expert agent ."]
    if step:
        parts.append(f"prior to this step you took {step} steps .")
    if recent:
        parts.append(f"the last {len(recent)} observations and your actions :")
        first = step - len(recent) + 1
        for number, (past_observation, action) in enumerate(recent, start=first):
            parts.append(f"[ observation {number} : {past_observation} action {number} : {action} ]")
    parts.append(f"now at step {step + 1} your observation is : {observation}")
    if admissible is not None:
        parts.append(f"admissible actions : [ {' , '.join(admissible)} ]")
    goal = task.removeprefix("your task is to :").strip().removesuffix(".").strip()  # ALFWorld tasks carry the phrase
    parts.append(f"your task is to : {goal} . your action :")
    return " ".join(parts)


def observation_prompt(observation: ObservationLike, history: Sequence[tuple[str, str]], config: ModelConfig) -> str:
    """``build_prompt`` for an environment observation with the prompt options of ``config``."""
    admissible = observation.admissible if config.show_admissible else None
    return build_prompt(observation.task, observation.text, history, admissible, config.history_length)


def template_vocabulary() -> set[str]:
    """Every word the template itself writes (digits included), for the word-level tokenizer."""
    sample = build_prompt("", "", [("", "")], ["", ""], history_length=1)
    return set(sample.split()) | set("0123456789")


@dataclass(frozen=True)
class PromptEncoder:
    """Turns prompts into token ids of at most ``max_prompt_tokens``, cut from the left.

    A checkpoint whose tokenizer has a chat template gets the prompt as one user turn; the template's
    own tokens (``head``, ``tail``) are never cut, only the prompt between them.
    """

    max_prompt_tokens: int
    encode: TextEncoder
    """Texts to ids (memoised per word for word-level tokenizers)."""
    head: tuple[int, ...] = ()
    tail: tuple[int, ...] = ()

    @classmethod
    def for_tokenizer(
        cls, tokenizer: PreTrainedTokenizerBase, max_prompt_tokens: int, encode: TextEncoder | None = None
    ) -> PromptEncoder:
        """The encoder of ``tokenizer``'s prompts; ``encode`` shares a ``TextEncoder`` (and its memo)."""
        head: list[int] = []
        tail: list[int] = []
        if getattr(tokenizer, "chat_template", None):
            rendered = cast(  # tokenize=False renders the text
                str,
                tokenizer.apply_chat_template(
                    [{"role": "user", "content": _CHAT_SENTINEL}], tokenize=False, add_generation_prompt=True
                ),
            )
            head_text, tail_text = rendered.split(_CHAT_SENTINEL)
            head = tokenizer.encode(head_text, add_special_tokens=False)
            tail = tokenizer.encode(tail_text, add_special_tokens=False)
        if max_prompt_tokens - len(head) - len(tail) < 1:
            raise ValueError(
                f"model.max_prompt_tokens ({max_prompt_tokens}) leaves no room for the prompt after the "
                f"chat template's {len(head) + len(tail)} tokens; raise it"
            )
        return cls(max_prompt_tokens, encode or TextEncoder(tokenizer), tuple(head), tuple(tail))

    def __call__(self, prompts: Sequence[str]) -> list[list[int]]:
        """Token ids of each prompt: the chat head, the last tokens of the prompt, the chat tail."""
        if not prompts:
            return []
        budget = self.max_prompt_tokens - len(self.head) - len(self.tail)
        encoded = self.encode(prompts)
        return [[*self.head, *ids[-budget:], *self.tail] for ids in encoded]
