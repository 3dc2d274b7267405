"""The parquet files verl-agent's trainer reads before it rolls out (``data.train_files``, ``data.val_files``),
made locally for a job with gaca's environments.

verl-agent takes from them only how many environments a rollout has (the environment manager writes every
prompt), so each file holds exactly one batch: one step of the training loader is one training iteration
and one validation pass is one evaluation. The user turn is a placeholder word, not empty as in
verl-agent's text recipes: an empty prompt tokenizes to an empty float tensor under a chat template that
adds no tokens of its own (``gaca.backends.verl.launcher.policy_export.CHAT_TEMPLATE``).
"""

from __future__ import annotations

from pathlib import Path

TRAIN_FILE = "train.parquet"
VAL_FILE = "test.parquet"
PLACEHOLDER = "task"
DATA_SOURCE = "text"
"""verl-agent's ``data_source`` of text environments (its metrics are named after it)."""


def write_task_files(folder: Path, train_rows: int, val_rows: int) -> None:
    """``folder/train.parquet`` with ``train_rows`` rows and ``folder/test.parquet`` with ``val_rows``."""
    import pandas as pd

    folder.mkdir(parents=True, exist_ok=True)
    for name, split, rows in ((TRAIN_FILE, "train", train_rows), (VAL_FILE, "test", val_rows)):
        frame = pd.DataFrame(
            {
                "data_source": [DATA_SOURCE] * rows,
                "prompt": [[{"role": "user", "content": PLACEHOLDER}] for _ in range(rows)],
                "ability": ["agent"] * rows,
                "extra_info": [{"split": split, "index": index} for index in range(rows)],
            }
        )
        temporary = folder / f".{name}.partial"
        frame.to_parquet(temporary, index=False)
        temporary.replace(folder / name)
