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
    values: torch.Tensor,
    segment: torch.Tensor,
    num_segments: int,
    one_element_raw: bool = False,
    weight: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """[S] means and unbiased (n - 1) standard deviations, as torch.std; the std of a size-1 set is 1.

    A size-1 set's mean is its element (so it normalises to 0), or 0 with ``one_element_raw``
    (verl's and verl-agent's rule: the raw value comes back). Two passes (mean, then squared
    deviations) rather than E[x^2] - E[x]^2, which cancels badly when a group's returns are nearly equal.
    ``weight`` [N] (integer counts >= 1): each row counts as that many equal rows (n = the sum of
    the weights); None: once.
    """
    count = _count(segment, num_segments, values.dtype, weight)
    mean = _weighted_sum(values, segment, num_segments, weight) / count.clamp(min=1)
    deviation = values - mean[segment]
    variance = _weighted_sum(deviation * deviation, segment, num_segments, weight) / (count - 1).clamp(min=1)
    std = torch.where(count > 1, variance.sqrt(), torch.ones_like(variance))
    if one_element_raw:
        mean = torch.where(count > 1, mean, torch.zeros_like(mean))
    return mean, std


def segment_count(
    segment: torch.Tensor, num_segments: int, dtype: torch.dtype, weight: torch.Tensor | None = None
) -> torch.Tensor:
    """[S] the number of rows of each segment, each row counted ``weight`` times (None: once)."""
    return _count(segment, num_segments, dtype, weight)


def _count(segment: torch.Tensor, num_segments: int, dtype: torch.dtype, weight: torch.Tensor | None) -> torch.Tensor:
    if weight is None:
        return torch.bincount(segment, minlength=num_segments).to(dtype)
    return segment_sum(weight.to(dtype), segment, num_segments)


def _weighted_sum(
    values: torch.Tensor, segment: torch.Tensor, num_segments: int, weight: torch.Tensor | None
) -> torch.Tensor:
    return segment_sum(values if weight is None else values * weight, segment, num_segments)


def normalize_mean_std(
    values: torch.Tensor,
    segment: torch.Tensor,
    num_segments: int,
    eps: float,
    one_element_raw: bool = False,
    weight: torch.Tensor | None = None,
) -> torch.Tensor:
    """[N] ``(x - mean) / (std + eps)`` of each row against its segment (see ``segment_mean_std``)."""
    mean, std = segment_mean_std(values, segment, num_segments, one_element_raw, weight)
    return (values - mean[segment]) / (std[segment] + eps)


def normalize_mean(
    values: torch.Tensor,
    segment: torch.Tensor,
    num_segments: int,
    eps: float,
    one_element_raw: bool = False,
    weight: torch.Tensor | None = None,
) -> torch.Tensor:
    """[N] ``x - mean`` of each row against its segment; a size-1 set's mean is 0 with ``one_element_raw``.
    ``weight`` as in ``segment_mean_std``."""
    if weight is None:
        mean = segment_mean(values, segment, num_segments)
    else:
        mean = _weighted_sum(values, segment, num_segments, weight) / _count(
            segment, num_segments, values.dtype, weight
        )
    if one_element_raw:
        count = _count(segment, num_segments, values.dtype, weight)
        mean = torch.where(count > 1, mean, torch.zeros_like(mean))
    return values - mean[segment]
