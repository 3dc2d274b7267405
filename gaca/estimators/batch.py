"""Turn the estimator's per-step inputs into validated integer-coded tensors.

This is the only place that touches Python objects: ids of any hashable type become dense
integer codes, and every documented bad input is rejected here, before any computation.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

ArrayLike = Sequence[Any] | np.ndarray | torch.Tensor

MAGNITUDE_LIMIT = 1e100
"""Largest |reward|, nll and invalid_penalty accepted. Returns and squared deviations of up to 1e9
rows stay far inside float64 (about 1e308) below it; above it group statistics could overflow."""


@dataclass(frozen=True)
class StepBatch:
    """N step rows of T trajectories, coded densely. All tensors live on ``device``.

    Trajectory k occupies slots ``k * horizon + t`` of a padded [T, horizon] layout, so per-step
    quantities move between the row order and the padded layout with one index operation.
    """

    group: torch.Tensor  # [N] int64, prompt-group code of each row, in [0, num_groups)
    traj: torch.Tensor  # [N] int64, trajectory code of each row, in [0, num_trajs)
    step: torch.Tensor  # [N] int64, time index t
    reward: torch.Tensor  # [N] float64, r_t (the invalid-action penalty included at its row)
    anchor: torch.Tensor | None  # [N] int64, anchor-group code (anchor within its prompt group)
    nll: torch.Tensor | None  # [N] float64, H_t
    penalty: torch.Tensor | None  # [N] float64, the penalty inside each row's reward (0 on valid rows)
    weight: torch.Tensor | None  # [N] float64, 1 + the row's padding copies, where they count; None: once
    traj_group: torch.Tensor  # [T] int64, the prompt group of each trajectory
    traj_length: torch.Tensor  # [T] int64, number of steps of each trajectory
    num_groups: int
    num_trajs: int
    num_anchor_groups: int
    horizon: int  # longest trajectory

    @property
    def slot(self) -> torch.Tensor:
        """[N] position of each row in the flattened [T, horizon] layout."""
        return self.traj * self.horizon + self.step

    @property
    def device(self) -> torch.device:
        return self.reward.device


def _as_tensor(name: str, values: ArrayLike, device: torch.device | None) -> torch.Tensor | None:
    """Numeric input as a tensor, or None when it holds non-numeric (hashable) ids."""
    if isinstance(values, torch.Tensor):
        return values.detach().to(device) if device is not None else values.detach()
    if isinstance(values, np.ndarray):
        array = values
    elif len(values) and isinstance(values[0], (int, float, np.number)) and not isinstance(values[0], bool):
        try:
            array = _numeric_list(values)
        except OverflowError:
            raise ValueError(f"{name} holds an integer outside the 64-bit range") from None
    else:
        return None
    if array.dtype == np.uint64:
        if array.size and array.max() > np.iinfo(np.int64).max:
            raise ValueError(f"{name} holds an integer outside the 64-bit range")
        array = array.astype(np.int64)
    if array.dtype.kind in "biuf" and array.ndim == 1:
        return torch.from_numpy(np.ascontiguousarray(array)).to(device or "cpu")
    if array.dtype.kind in "OUS" and array.ndim == 1:
        return None
    raise ValueError(f"{name} must be a one-dimensional sequence, got dtype {array.dtype} and shape {array.shape}")


def _numeric_list(values: Sequence[Any]) -> np.ndarray:
    """A list that starts with a number as an array; fromiter is ~3x faster than asarray on lists.

    The element types are checked first: fromiter would silently truncate 1.5 in an int list.
    """
    kinds = set(map(type, values))
    if kinds <= {int}:
        return np.fromiter(values, dtype=np.int64, count=len(values))
    if kinds <= {int, float}:
        return np.fromiter(values, dtype=np.float64, count=len(values))
    array = np.asarray(values)  # numpy scalars or mixed content: let numpy decide
    if array.dtype == object:
        raise OverflowError
    return array


def _factorize(name: str, values: ArrayLike, device: torch.device) -> tuple[torch.Tensor, Callable[[int], Any]]:
    """Dense codes [N] and the id of a code, for ints, tensors or any hashable Python objects."""
    keys, objects = _keys(name, values, device)
    distinct, codes = torch.unique(keys, return_inverse=True)
    if objects is None:
        return codes, lambda code: distinct[code].item()
    return codes, lambda code: objects[int(distinct[code])]


def _keys(name: str, values: ArrayLike, device: torch.device) -> tuple[torch.Tensor, list[Any] | None]:
    """[N] int64 keys, equal exactly where the ids are equal, and the ids as a list when they are
    Python objects (a key is then the row of the id's first occurrence)."""
    tensor = _as_tensor(name, values, device)
    if tensor is not None:
        if tensor.ndim != 1:
            raise ValueError(f"{name} must be one-dimensional, got shape {tuple(tensor.shape)}")
        if tensor.is_floating_point() and not torch.isfinite(tensor).all():
            raise ValueError(f"{name} ids must be finite")
        return tensor, None
    # Hashable Python ids (anchor strings): one C-level dict pass hashes each id once and maps it
    # to the row of its first occurrence. Hashing is most of the cost (SipHash reads every byte);
    # pandas.factorize and pyarrow's dictionary_encode measured no faster on fresh strings.
    objects = values.tolist() if isinstance(values, np.ndarray) else list(values)
    first_row: dict[Any, int] = {}
    try:
        keys = np.fromiter(map(first_row.setdefault, objects, itertools.count()), dtype=np.int64, count=len(objects))
    except TypeError as error:
        raise ValueError(f"{name} ids must be hashable: {error}") from None
    return torch.from_numpy(keys).to(device), objects


def _floats(name: str, values: ArrayLike, device: torch.device) -> torch.Tensor:
    """[N] float64, finite and within ``MAGNITUDE_LIMIT``."""
    tensor = _as_tensor(name, values, device)
    if tensor is None or tensor.ndim != 1 or tensor.dtype == torch.bool:
        raise ValueError(f"{name} must be a one-dimensional sequence of numbers")
    tensor = tensor.to(torch.float64)
    bad = ~torch.isfinite(tensor)
    if bad.any():
        row = int(bad.nonzero()[0])
        raise ValueError(f"{name} must be finite (no NaN or inf); row {row} is {tensor[row].item()}")
    large = tensor.abs() > MAGNITUDE_LIMIT
    if large.any():
        row = int(large.nonzero()[0])
        raise ValueError(
            f"{name} must be within +-{MAGNITUDE_LIMIT:g} (larger values could overflow the group statistics); "
            f"row {row} is {tensor[row].item()}: rescale it"
        )
    return tensor


def _flags(name: str, values: ArrayLike, device: torch.device) -> torch.Tensor:
    """[N] bool from bools (or 0/1 integers)."""
    if isinstance(values, torch.Tensor):
        tensor = values.detach().to(device)
    else:
        array = np.asarray(values.tolist() if isinstance(values, np.ndarray) and values.dtype == object else values)
        if array.dtype.kind not in "biu":
            raise ValueError(
                f"{name} must hold one bool per step row (True: the action was invalid), got dtype {array.dtype}"
            )
        tensor = torch.from_numpy(np.ascontiguousarray(array)).to(device)
    if tensor.ndim != 1 or tensor.is_floating_point() or tensor.is_complex():
        raise ValueError(
            f"{name} must be a one-dimensional sequence of bools, got {tensor.dtype} of shape {tuple(tensor.shape)}"
        )
    if tensor.dtype != torch.bool:
        if ((tensor != 0) & (tensor != 1)).any():
            raise ValueError(f"{name} must hold bools (or 0/1), got {int(tensor[(tensor != 0) & (tensor != 1)][0])}")
        tensor = tensor != 0
    return tensor


def _rows(name: str, values: object) -> int:
    """The number of rows of a per-row input; a ValueError naming it for None, scalars and strings."""
    if values is None:
        raise ValueError(f"{name} is required: one entry per step row, got None")
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise ValueError(
            f"{name} must be a sequence with one entry per step row, got {type(values).__name__} {values!r:.40}"
        )
    if isinstance(values, (np.ndarray, torch.Tensor)) and values.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional (one entry per step row), got shape {tuple(values.shape)}")
    return len(values)


def _penalty(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAGNITUDE_LIMIT:
        raise ValueError(f"invalid_penalty must be a finite number in [0, {MAGNITUDE_LIMIT:g}], got {value!r}")
    return float(value)


def _device_of(*values: object) -> torch.device:
    for value in values:
        if isinstance(value, torch.Tensor):
            return value.device
    return torch.device("cpu")


def _common_length(fields: dict[str, ArrayLike]) -> int:
    """The number of step rows, the same for every given field and not 0."""
    lengths = {name: _rows(name, values) for name, values in fields.items()}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"all inputs must have one entry per step row; got lengths {lengths}")
    rows = lengths["reward"]
    if rows == 0:
        raise ValueError("the batch is empty: reward has no rows")
    return rows


def _nll(nll: ArrayLike | None, device: torch.device) -> torch.Tensor | None:
    """[N] float64 H_t, checked >= 0."""
    if nll is None:
        return None
    nll_t = _floats("nll", nll, device)
    if (nll_t < 0).any():
        row = int((nll_t < 0).nonzero()[0])
        raise ValueError(f"nll is a negative log-likelihood and must be >= 0; row {row} is {nll_t[row].item()}")
    return nll_t


def _penalties(invalid: ArrayLike | None, invalid_penalty: float | None, device: torch.device) -> torch.Tensor | None:
    """[N] float64: the penalty inside each row's reward (p on invalid rows, else 0)."""
    if invalid is not None:
        invalid_t = _flags("invalid", invalid, device)
        if invalid_penalty is None:
            raise ValueError("invalid_penalty is required with invalid: the penalty each invalid row's reward includes")
        return invalid_t.to(torch.float64) * _penalty(invalid_penalty)
    if invalid_penalty is not None:
        raise ValueError("invalid_penalty was given without invalid, the per-row flags it applies to")
    return None


def _weights(copies: ArrayLike | None, count_copies: bool, device: torch.device) -> torch.Tensor | None:
    """[N] float64 1 + copies when the copies are counted and some row has one, else None."""
    if copies is None:
        return None
    copies_t = _as_tensor("copies", copies, device)
    if copies_t is None or copies_t.ndim != 1 or copies_t.is_floating_point() or copies_t.dtype == torch.bool:
        raise ValueError("copies must be a one-dimensional sequence of integers (padding copies of each row)")
    if (copies_t < 0).any():
        raise ValueError(f"copies must be >= 0 (padding copies of each row); got {int(copies_t.min())}")
    if count_copies and (copies_t > 0).any():
        return 1.0 + copies_t.to(torch.float64)
    return None


def _steps(step: ArrayLike, rows: int, device: torch.device) -> torch.Tensor:
    """[N] int64 time indices, each in 0..rows-1."""
    step_t = _as_tensor("step", step, device)
    if step_t is None or step_t.ndim != 1 or step_t.is_floating_point() or step_t.dtype == torch.bool:
        raise ValueError("step must be a one-dimensional sequence of integer time indices")
    step_t = step_t.to(torch.int64)
    if (step_t < 0).any():
        raise ValueError(f"step must be >= 0 (0-based time index); got {int(step_t.min())}")
    # Steps of a trajectory are 0..T-1, so none reaches the number of rows; checked before the
    # [trajectories x horizon] layout is sized by it.
    if (step_t >= rows).any():
        row = int((step_t >= rows).nonzero()[0])
        raise ValueError(
            f"step {int(step_t[row])} at row {row} is out of range: in a batch of {rows} rows a trajectory's "
            f"steps are 0..T-1 without gaps, so every step is < {rows}"
        )
    return step_t


def _trajectories(
    group_codes: torch.Tensor, traj_codes: torch.Tensor, traj_id: Callable[[int], object], step_t: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Each trajectory's group [num_trajs] and length [num_trajs], and the horizon, checking that a
    trajectory lies in one group and holds steps 0..T-1, each once."""
    device = traj_codes.device
    num_trajs = int(traj_codes.max()) + 1
    low = torch.full((num_trajs,), torch.iinfo(torch.int64).max, device=device)
    high = torch.full((num_trajs,), -1, device=device)
    low = low.scatter_reduce(0, traj_codes, group_codes, "amin")
    high = high.scatter_reduce(0, traj_codes, group_codes, "amax")
    split = (low != high).nonzero()
    if len(split):
        raise ValueError(f"trajectory {traj_id(int(split[0]))!r} has rows in two different groups")

    traj_length = torch.bincount(traj_codes, minlength=num_trajs)
    horizon = int(step_t.max()) + 1
    slot_count = torch.bincount(traj_codes * horizon + step_t, minlength=num_trajs * horizon)
    duplicated = (slot_count > 1).nonzero()
    if len(duplicated):
        slot = int(duplicated[0])
        raise ValueError(
            f"duplicated (traj, step) pair: trajectory {traj_id(slot // horizon)!r} has step {slot % horizon} twice"
        )
    last_step = torch.full((num_trajs,), -1, device=device).scatter_reduce(0, traj_codes, step_t, "amax")
    gapped = (last_step + 1 != traj_length).nonzero()
    if len(gapped):
        k = int(gapped[0])
        raise ValueError(
            f"step indices of trajectory {traj_id(k)!r} must be 0..T-1 without gaps; "
            f"it has {int(traj_length[k])} rows but its last step is {int(last_step[k])}"
        )
    return low, traj_length, horizon


def _anchor_groups(
    anchor: ArrayLike, group_codes: torch.Tensor, rows: int, device: torch.device
) -> tuple[torch.Tensor, int]:
    """[N] anchor-group codes (the same observation in two prompt groups is two groups) and their count."""
    raw_anchor, _ = _keys("anchor", anchor, device)
    low_key, high_key = raw_anchor.min().item(), raw_anchor.max().item()
    if raw_anchor.is_floating_point() or raw_anchor.dtype == torch.bool or high_key - low_key >= rows:
        raw_anchor = torch.unique(raw_anchor, return_inverse=True)[1]  # dense, so the product below fits
        low_key, high_key = 0, int(raw_anchor.max())
    # one unique over (group, anchor) pairs codes both at once
    joint = group_codes * (high_key - low_key + 1) + (raw_anchor - low_key)
    distinct, anchor_codes = torch.unique(joint, return_inverse=True)
    return anchor_codes, len(distinct)


def build_step_batch(
    group: ArrayLike,
    traj: ArrayLike,
    step: ArrayLike,
    reward: ArrayLike,
    anchor: ArrayLike | None,
    nll: ArrayLike | None,
    code_anchor: bool = True,
    invalid: ArrayLike | None = None,
    invalid_penalty: float | None = None,
    copies: ArrayLike | None = None,
    count_copies: bool = False,
) -> StepBatch:
    """Validate and code the inputs of ``compute_advantages``; see its docstring for the fields.

    Every given field is validated; ``anchor`` is only coded (hashed) when ``code_anchor``, so GRPO
    does not pay for it. ``copies`` become the rows' ``weight`` with ``count_copies`` (and some copy).
    Bounds come before any allocation that depends on a value.

    Raises:
        ValueError: naming the field, for None, a scalar or a string where rows are expected,
            mismatched lengths, NaN or inf or a magnitude above ``MAGNITUDE_LIMIT`` in reward or
            nll, a negative nll, non-integer, negative or out-of-range steps, a duplicated
            (traj, step) pair, a trajectory with rows in two groups, a gap in a trajectory's step
            indices, non-bool invalid flags, a bad invalid_penalty, or copies that are not integers >= 0.
    """
    fields = {"group": group, "traj": traj, "step": step, "reward": reward}
    optional = {"anchor": anchor, "nll": nll, "invalid": invalid, "copies": copies}
    fields.update({name: values for name, values in optional.items() if values is not None})
    rows = _common_length(fields)
    device = _device_of(*fields.values())

    reward_t = _floats("reward", reward, device)
    nll_t = _nll(nll, device)
    penalty_t = _penalties(invalid, invalid_penalty, device)
    weight_t = _weights(copies, count_copies, device)
    step_t = _steps(step, rows, device)
    group_codes, _ = _factorize("group", group, device)
    traj_codes, traj_id = _factorize("traj", traj, device)
    traj_group, traj_length, horizon = _trajectories(group_codes, traj_codes, traj_id, step_t)
    anchor_codes, num_anchor_groups = None, 0
    if anchor is not None and code_anchor:
        anchor_codes, num_anchor_groups = _anchor_groups(anchor, group_codes, rows, device)

    return StepBatch(
        group=group_codes,
        traj=traj_codes,
        step=step_t,
        reward=reward_t,
        anchor=anchor_codes,
        nll=nll_t,
        penalty=penalty_t,
        weight=weight_t,
        traj_group=traj_group,
        traj_length=traj_length,
        num_groups=int(group_codes.max()) + 1,
        num_trajs=len(traj_length),
        num_anchor_groups=num_anchor_groups,
        horizon=horizon,
    )
