"""The criticality gate, Eq. 7: how much step-level credit a step gets given its criticality c."""

from __future__ import annotations

import torch


def gate_weight(criticality: torch.Tensor, lambda0: float, alpha_lambda: float, beta_lambda: float) -> torch.Tensor:
    """lambda_t of Eq. 7, elementwise over ``criticality`` (any shape).

    ``lambda0 * (1 + alpha_lambda * (c - 1))`` for c >= 1 and ``lambda0 * (1 - beta_lambda * (1 - c))``
    below, clipped to [0, 1]. The branches meet at c = 1 (lambda = lambda0), so the law is
    continuous and nondecreasing in c.
    """
    above = lambda0 * (1.0 + alpha_lambda * (criticality - 1.0))
    below = lambda0 * (1.0 - beta_lambda * (1.0 - criticality))
    return torch.where(criticality >= 1.0, above, below).clamp(0.0, 1.0)
