"""The CPU backend's starting policy as a Hugging Face checkpoint that verl-agent's trainer loads, so that
both trainers start from the same weights and tokenizer (``model=tiny`` or ``small``, ``backend=verl``).

The policy is the one ``gaca.backends.cpu.loop.initial_policy`` makes (the seeded random Qwen2, or its
behaviour clone from the same cache), saved with ``Policy.save``. Two things are added so that
verl-agent's environment (transformers 4.51) reads it as the CPU backend does:

- a chat template that renders the user turn as it is (``CHAT_TEMPLATE``): verl-agent always applies
  one, and the word-level tokenizer then sees exactly the CPU backend's prompt text;
- ``tokenizer_class`` ``PreTrainedTokenizerFast`` and the model config's ``torch_dtype`` and
  ``rope_theta`` spelled out, which older transformers releases look for.
"""

from __future__ import annotations

import json
from pathlib import Path

from gaca.backends.config import RunConfig

CHAT_TEMPLATE = "{% for message in messages %}{{ message['content'] }}{% endfor %}"
"""Each turn's text, nothing around it; the generation prompt adds nothing either."""
DONE_MARKER = "gaca_export.json"
"""Written last: a folder without it is an interrupted export and is made again."""


def export_starting_policy(run: RunConfig, folder: Path) -> Path:
    """Write the run's starting policy to ``folder`` (once; a finished export is reused) and return it.

    The behaviour clone runs here, in the launching process, on ``trainer.threads`` torch threads when
    given (as the CPU backend's run does): a sweep job's clone then stays on the cores it was given."""
    import torch

    from gaca.backends.cpu.loop import initial_policy
    from gaca.envs import make_family

    if (folder / DONE_MARKER).is_file():
        return folder
    if run.trainer.threads is not None:
        torch.set_num_threads(run.trainer.threads)
    policy = initial_policy(run, make_family(run.env), Path(run.output_dir) / "bc-cache")
    policy.tokenizer.chat_template = CHAT_TEMPLATE
    policy.save(folder)
    _spell_out(folder, policy.model.config)
    (folder / DONE_MARKER).write_text(json.dumps({"parameters": policy.num_parameters()}) + "\n")
    return folder


def _spell_out(folder: Path, model_config) -> None:
    tokenizer_file = folder / "tokenizer_config.json"
    tokenizer = json.loads(tokenizer_file.read_text())
    tokenizer.update(tokenizer_class="PreTrainedTokenizerFast", chat_template=CHAT_TEMPLATE)
    tokenizer_file.write_text(json.dumps(tokenizer, indent=2, sort_keys=True))
    config_file = folder / "config.json"
    config = json.loads(config_file.read_text())
    rope = config.get("rope_parameters") or {}
    config.setdefault("torch_dtype", str(config.get("dtype", "float32")).removeprefix("torch."))
    config.setdefault("rope_theta", rope.get("rope_theta", getattr(model_config, "rope_theta", 10000.0)))
    config_file.write_text(json.dumps(config, indent=2, sort_keys=True))
