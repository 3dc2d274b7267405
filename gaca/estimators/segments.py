"""Vectorized per-segment statistics: every group-relative quantity of the spec is one of these.

The two group normalisations are registered by ``algorithm.norm`` in ``gaca.estimators.registry.NORMALIZERS``.
"""

from __future__ import annotations

import torch


def segment_sum(values: torch.Tensor, segment: torch.Tensor, num_segments: int) -> torch.Tensor:
    """[S] sums of ``values`` [N] over rows with the same ``segment`` code [N]."""
    return values.new_zeros(num_segments).index_add_(0, segment, values)


def segment_mean(values: torch.Tensor, segment: torch.Tensor, num_segments: int) -> torch.Tensor:
    """[S] means; a segment without rows gets 0."""
    count = torch.bincount(segment, minlength=num_segments).to(values.dtype)
    return segment_sum(values, segment, num_segments) / count.clamp(min=1)


def segment_mean_std(
    values: torch.Tensor, segment: torch.Tensor, num_segments: int, one_element_raw: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """[S] means and unbiased (n - 1) standard deviations, as torch.std; the std of a size-1 set is 1.

    A size-1 set's mean is its element (so it normalises to 0), or 0 with ``one_element_raw``
    (verl's and verl-agent's rule: the raw value comes back). Two passes (mean, then squared
    deviations) rather than E[x^2] - E[x]^2, which cancels badly when a group's returns are nearly equal.
    """
    count = torch.bincount(segment, minlength=num_segments).to(values.dtype)
    mean = segment_sum(values, segment, num_segments) / count.clamp(min=1)
    deviation = values - mean[segment]
    variance = segment_sum(deviation * deviation, segment, num_segments) / (count - 1).clamp(min=1)
    std = torch.where(count > 1, variance.sqrt(), torch.ones_like(variance))
    if one_element_raw:
        mean = torch.where(count > 1, mean, torch.zeros_like(mean))
    return mean, std


def normalize_mean_std(
    values: torch.Tensor, segment: torch.Tensor, num_segments: int, eps: float, one_element_raw: bool = False
) -> torch.Tensor:
    """[N] ``(x - mean) / (std + eps)`` of each row against its segment (see ``segment_mean_std``)."""
    mean, std = segment_mean_std(values, segment, num_segments, one_element_raw)
    return (values - mean[segment]) / (std[segment] + eps)


def normalize_mean(
    values: torch.Tensor, segment: torch.Tensor, num_segments: int, eps: float, one_element_raw: bool = False
) -> torch.Tensor:
    """[N] ``x - mean`` of each row against its segment; a size-1 set's mean is 0 with ``one_element_raw``."""
    mean = segment_mean(values, segment, num_segments)
    if one_element_raw:
        count = torch.bincount(segment, minlength=num_segments)
        mean = torch.where(count > 1, mean, torch.zeros_like(mean))
    return values - mean[segment]
