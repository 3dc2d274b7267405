"""One rollout step of gaca's served environments through verl-agent's own code, run by verl-agent's Python
(``test_same_start.py`` starts it): its ``TrajectoryCollector`` builds the prompts, its ``HFRollout``
samples the responses under ``torch.manual_seed(SEED)``, its decoding gives the text actions, and
``ServedEnvironments.command`` parses them. Prints JSON: prompt ids, response ids (up to eos), actions.

    python rollout_probe.py RUN_CONFIG_JSON POLICY_FOLDER TEMPERATURE SEED HOOKS(0|1)
"""

from __future__ import annotations

import json
import sys

import numpy as np
import torch
from omegaconf import OmegaConf


def main(run_json: str, folder: str, temperature: float, seed: int, hooks: bool) -> None:
    from gaca.backends.verl.agent import cpu_patches
    from gaca.backends.verl.agent.imports import when_imported

    cpu_patches.install(when_imported)  # as in every process of a CPU job
    if hooks:
        from gaca.backends.verl.agent import hooks as agent_hooks

        agent_hooks.install()
    from agent_system.multi_turn_rollout.rollout_loop import TrajectoryCollector
    from transformers import AutoModelForCausalLM
    from verl import DataProto
    from verl.utils import hf_tokenizer
    from verl.workers.rollout.hf_rollout import HFRollout

    from gaca.backends.config import RunConfig
    from gaca.backends.verl.agent.env_manager import ServedEnvironments, SpecialTokensKept
    from gaca.envs import make_family

    run = RunConfig.from_dict(json.loads(run_json))
    envs = ServedEnvironments(run, make_family(run.env), False, folder)
    observations, _ = envs.reset()
    rows = len(observations["text"])
    config = OmegaConf.create(
        {
            "data": {"max_prompt_length": run.model.max_prompt_tokens, "truncation": "left", "return_raw_chat": True},
            "env": {"rollout": {"n": 1}},
        }
    )
    tokenizer = hf_tokenizer(folder)
    collector = TrajectoryCollector(config, SpecialTokensKept(tokenizer) if hooks else tokenizer)
    gen_batch = DataProto.from_single_dict(
        {
            "input_ids": torch.zeros(rows, 1, dtype=torch.long),
            "raw_prompt": np.array([[{"role": "user", "content": ""}]] * rows, dtype=object),
            "data_source": np.array(["gaca"] * rows, dtype=object),
        }
    )
    batch = collector.preprocess_batch(gen_batch, observations)
    rollout_config = OmegaConf.create(
        {
            "do_sample": temperature > 0,
            "temperature": temperature,
            "top_k": -1,
            "top_p": 1.0,
            "response_length": run.model.max_response_tokens,
            "n": 1,
            "val_kwargs": {"top_k": -1, "top_p": 1.0, "temperature": temperature, "n": 1, "do_sample": temperature > 0},
        }
    )
    model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32, attn_implementation="sdpa")
    prompts = DataProto.from_dict(
        {key: batch.batch[key] for key in ("input_ids", "attention_mask", "position_ids")},
        meta_info={"eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id},
    )
    torch.manual_seed(seed)
    output = HFRollout(model, rollout_config).generate_sequences(prompts)
    responses = output.batch["responses"]
    texts = collector.tokenizer.batch_decode(responses, skip_special_tokens=True)
    eos = tokenizer.eos_token_id
    prompt_ids, response_ids = [], []
    for row in range(rows):
        mask = batch.batch["attention_mask"][row].bool()
        prompt_ids.append(batch.batch["input_ids"][row][mask].tolist())
        ids = responses[row].tolist()
        response_ids.append(ids[: ids.index(eos) + 1] if eos in ids else ids)
    actions = [envs.command(text, observation) for text, observation in zip(texts, envs.observations)]
    print(json.dumps({"prompt_ids": prompt_ids, "response_ids": response_ids, "actions": actions}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1")
