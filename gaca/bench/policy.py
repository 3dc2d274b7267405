"""Speed of the policy on synthetic agent prompts: batched generation and the PPO forward+backward.

    python -m gaca.bench.policy [--batch-sizes 32 128] [--models tiny small] [--repeats 3] [--compile]
        [--scored-positions]

Prompts are built with the real template from random words and cut to ``max_prompt_tokens``; every row
has its own admissible set of 12 household-style commands. Rows are distinct unless ``--group-size`` > 1
(then each prompt repeats that many times, as in a rollout group at its first step). ``--compile`` and
``--scored-positions`` time the update also through ``torch.compile`` and with the last decoder layer
at the scored positions only (``trainer.last_layer``), beside the eager full forward on the same rows.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence

import torch

from gaca.policy.config import LAST_LAYERS, ModelConfig
from gaca.policy.generation import Generation, generate
from gaca.policy.logprobs import sequence_logprobs
from gaca.policy.model import Policy
from gaca.policy.prompt import build_prompt

VERBS = ("go to", "take", "put", "open", "close", "examine", "use", "heat", "cool", "clean")


def synthetic_rows(batch_size: int, group_size: int, seed: int) -> tuple[list[str], list[list[str]], list[str]]:
    """Prompts, admissible sets and the vocabulary of ``batch_size`` synthetic agent states."""
    rng = random.Random(seed)
    syllables = [consonant + vowel for consonant in "bdfgklmnprstvz" for vowel in "aeiou"]  # 70
    made_up = [first + second for first in syllables for second in syllables[:8]]  # 560 letter-only words
    nouns, words = made_up[:300], made_up[300:500]

    def sentence(length: int) -> str:
        return " ".join(rng.choice(words + nouns) for _ in range(length)) + " ."

    def command() -> str:
        verb = rng.choice(VERBS)
        target = f"{rng.choice(nouns)} {rng.randint(1, 9)}"
        if verb in ("take", "put"):
            return f"{verb} {target} {'from' if verb == 'take' else 'in'} {rng.choice(nouns)} {rng.randint(1, 9)}"
        return f"{verb} {target}"

    prompts, admissible = [], []
    for _ in range(0, batch_size, group_size):
        history = [(sentence(25), command()) for _ in range(3)]
        commands = sorted({command() for _ in range(12)})
        prompt = build_prompt(sentence(8), sentence(30), history, None, history_length=2)
        prompts.extend([prompt] * group_size)
        admissible.extend([commands] * group_size)
    vocabulary = [*VERBS, *" ".join(VERBS).split(), *nouns, *words, "from", "in", "."]
    return prompts[:batch_size], admissible[:batch_size], vocabulary


def best_seconds(run: Callable[[], object], repeats: int) -> tuple[float, object]:
    """The fastest of ``repeats`` timed calls after a warm-up (as timeit advises: slower runs measure
    other processes, not this code)."""
    run()
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return min(times), result


def bench_generation(policy: Policy, prompts: Sequence[str], admissible: Sequence[Sequence[str]], repeats: int) -> dict:
    generator = policy.generator(0)
    seconds, generation = best_seconds(lambda: generate(policy, prompts, admissible, 1.0, generator), repeats)
    assert isinstance(generation, Generation)
    response_tokens = sum(len(ids) for ids in generation.response_ids)
    prompt_tokens = sum(len(ids) for ids in generation.prompt_ids)
    return {
        "ms/batch": 1000 * seconds,
        "prompt tok": prompt_tokens / len(prompts),
        "resp tok": response_tokens / len(prompts),
        "resp tok/s": response_tokens / seconds,
        "total tok/s": (response_tokens + prompt_tokens) / seconds,
    }


def bench_training(
    policy: Policy,
    prompts: Sequence[str],
    admissible: Sequence[Sequence[str]],
    repeats: int,
    compiled: bool = False,
    last_layer: str = LAST_LAYERS[0],
) -> dict:
    """The update's forward + backward, with ``compiled`` and ``last_layer`` as ``sequence_logprobs``
    takes them (as ``trainer.compile`` and ``trainer.last_layer`` set them): the first call (compiling,
    or loading the inductor cache) is reported apart, with the largest log-prob difference from the
    eager full forward on the same rows."""
    generation = generate(policy, prompts, admissible, 1.0, policy.generator(0))

    def logprobs(last_layer: str, compiled: bool) -> tuple[torch.Tensor, torch.Tensor]:
        values, _, mask = sequence_logprobs(
            policy.model, generation.prompt_ids, generation.response_ids, 1.0, generation.allowed, last_layer, compiled
        )
        return values * mask, mask

    def step() -> None:
        policy.model.zero_grad(set_to_none=True)
        values, mask = logprobs(last_layer, compiled)
        (-values.sum() / mask.sum()).backward()

    began = time.perf_counter()
    step()
    first = time.perf_counter() - began
    seconds, _ = best_seconds(step, repeats)
    tokens = sum(len(p) + len(r) for p, r in zip(generation.prompt_ids, generation.response_ids))
    row: dict[str, str | float] = {"compile": "yes" if compiled else "no", "last layer": last_layer}
    row.update({"ms/batch": 1000 * seconds, "tok/s": tokens / seconds, "first call s": first})
    with torch.no_grad():
        eager, _ = logprobs(LAST_LAYERS[0], False)
        row["max |dlogp|"] = f"{float((eager - logprobs(last_layer, compiled)[0]).abs().max()):.1e}"
    return row


def format_table(rows: list[dict]) -> str:
    columns = list(rows[0])
    cells = [[f"{row[c]:.1f}" if isinstance(row[c], float) else str(row[c]) for c in columns] for row in rows]
    widths = [max(len(c), *(len(line[i]) for line in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(columns, widths))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(line, widths)) for line in cells]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["tiny", "small"], choices=["tiny", "small"])
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[32, 128])
    parser.add_argument("--train-batch-size", type=int, default=64)
    parser.add_argument("--group-size", type=int, default=1, help="identical prompts per group")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    parser.add_argument("--compile", action="store_true", help="also time the update through torch.compile")
    parser.add_argument(
        "--scored-positions", action="store_true", help="also time it with the last layer at the scored positions only"
    )
    args = parser.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)

    generation_rows, training_rows = [], []
    for name in args.models:
        for decoding in ("constrained", "free"):
            _, _, vocabulary = synthetic_rows(1, 1, seed=0)
            policy = Policy.create(ModelConfig(name=name, decoding=decoding, device=args.device), vocabulary, seed=0)
            head = {"model": name, "params": f"{policy.num_parameters() / 1e6:.2f}M", "decoding": decoding}
            for batch_size in args.batch_sizes:
                prompts, admissible, _ = synthetic_rows(batch_size, args.group_size, seed=batch_size)
                result = bench_generation(policy, prompts, admissible, args.repeats)
                generation_rows.append({**head, "B": batch_size, **result})
            if decoding == "constrained":
                prompts, admissible, _ = synthetic_rows(args.train_batch_size, 1, seed=1)
                ways = [(False, LAST_LAYERS[0])]
                ways += [(True, LAST_LAYERS[0])] if args.compile else []
                ways += [(False, "scored_positions")] if args.scored_positions else []
                for compiled, last_layer in ways:
                    result = bench_training(policy, prompts, admissible, args.repeats, compiled, last_layer)
                    training_rows.append({**head, "B": args.train_batch_size, **result})

    print(f"device: {policy.device}, torch threads: {torch.get_num_threads()}")
    print("\ngeneration (temperature 1, KV cache, one batch)")
    print(format_table(generation_rows))
    print("\ntraining: sequence_logprobs forward + backward (prompt + response tokens)")
    eager = {
        row["model"]: row["ms/batch"]
        for row in training_rows
        if row["compile"] == "no" and row["last layer"] == LAST_LAYERS[0]
    }
    for row in training_rows:
        row["speed-up"] = f"{eager[row['model']] / row['ms/batch']:.2f}x"
        row["max |dlogp|"] = row.pop("max |dlogp|")  # the last column
    print(format_table(training_rows))


if __name__ == "__main__":
    main()
