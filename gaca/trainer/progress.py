"""A progress bar with iteration, success rate, rate and ETA; silent when stderr is not a terminal."""

from __future__ import annotations

import sys

from tqdm import tqdm


class Progress:
    def __init__(self, total: int, start: int = 0, quiet: bool | None = None) -> None:
        disable = (not sys.stderr.isatty()) if quiet is None else quiet
        self.bar = tqdm(total=total, initial=start, unit="it", desc="train", disable=disable, dynamic_ncols=True)
        self.last_eval: float | None = None

    def update(self, iteration: int, train_success: float, eval_success: float | None) -> None:
        if eval_success is not None:
            self.last_eval = eval_success
        postfix = {"success": f"{train_success:.2f}"}
        if self.last_eval is not None:
            postfix["eval"] = f"{self.last_eval:.2f}"
        self.bar.set_postfix(postfix, refresh=False)
        self.bar.update(iteration - self.bar.n)

    def close(self) -> None:
        self.bar.close()
