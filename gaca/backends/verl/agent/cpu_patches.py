"""What verl-agent's trainer needs to run on a machine without CUDA, applied at run time in every
process of the job (the driver, the TaskRunner actor and each Ray worker), no verl-agent file edited.

A job on such a machine puts ``SITE_DIR`` on ``PYTHONPATH`` with ``CPU_FLAG=1``: Python runs its
``sitecustomize`` at start-up in every process, which calls ``install``. Each patch waits for its module
to be imported (nothing is imported ahead of time, so Ray's helper processes stay light) and does
nothing once torch reports a CUDA device: a GPU machine always runs verl-agent as it is.

The patches, each for the error it clears:

- ``torch.distributed.init_process_group`` on ``gloo``: without CUDA verl-agent's workers ask for
  ``cpu:gloo,npu:hccl`` (``Unknown c10d backend type HCCL``).
- The device-namespace functions its workers call through ``get_torch_device()`` (memory counters,
  ``empty_cache``, random states) added to ``torch.cpu``, as no-ops or as torch's CPU ones
  (``module 'torch.cpu' has no attribute 'memory_allocated'``).
- FSDP's check that parameters live on the accelerator before ``sync_module_states`` skipped: gloo
  broadcasts CPU tensors.
- FSDP's ``CPUOffload`` never offloading parameters (verl-agent asks for it for the reference model:
  ``Cannot access accelerator device`` when FSDP pins the offloaded shards); on CPU the parameters
  are in host memory anyway.

Only the standard library is imported here; ``install`` gets ``when_imported`` from its caller.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

CPU_FLAG = "GACA_VERL_CPU"
"""Set to 1 in the job's environment: the ``sitecustomize`` of ``SITE_DIR`` then calls ``install``."""
SITE_DIR = Path(__file__).resolve().parent / "cpu_site"
"""The folder holding that ``sitecustomize.py``."""
FSDP = "torch.distributed.fsdp"
FSDP_INIT_UTILS = "torch.distributed.fsdp._init_utils"
PATCHED = "_gaca_cpu_patched"

ZERO = ("memory_allocated", "memory_reserved", "max_memory_allocated", "max_memory_reserved")
NOTHING = ("empty_cache", "reset_peak_memory_stats", "manual_seed_all", "synchronize")


def install(when_imported: Callable[[str, Callable[[ModuleType], None]], None]) -> None:
    """Register every patch with ``when_imported`` (``gaca.backends.verl.agent.imports.when_imported``)."""
    when_imported("torch", patch_torch)
    when_imported(FSDP_INIT_UTILS, patch_fsdp_checks)
    when_imported(FSDP, patch_fsdp_offload)


def without_cuda(torch: ModuleType) -> bool:
    return not torch.cuda.is_available()


def patch_torch(torch: ModuleType) -> None:
    """gloo process groups and the missing ``torch.cpu`` functions (no CUDA only)."""
    if not without_cuda(torch) or getattr(torch, PATCHED, False):
        return
    distributed = torch.distributed
    init_process_group = distributed.init_process_group

    @functools.wraps(init_process_group)
    def gloo_process_group(*args: Any, **kwargs: Any) -> Any:
        if args:
            args = ("gloo", *args[1:])
        else:
            kwargs["backend"] = "gloo"
        return init_process_group(*args, **kwargs)

    distributed.init_process_group = gloo_process_group
    cpu = torch.cpu
    for name in ZERO:
        if not hasattr(cpu, name):
            setattr(cpu, name, lambda *args, **kwargs: 0)
    for name in NOTHING:
        if not hasattr(cpu, name):
            setattr(cpu, name, lambda *args, **kwargs: None)
    if not hasattr(cpu, "mem_get_info"):
        cpu.mem_get_info = lambda *args, **kwargs: (0, 0)
    if not hasattr(cpu, "get_device_name"):
        cpu.get_device_name = lambda *args, **kwargs: "cpu"
    for name, function in (
        ("get_rng_state", torch.get_rng_state),
        ("set_rng_state", torch.set_rng_state),
        ("manual_seed", torch.manual_seed),
    ):
        if not hasattr(cpu, name):
            setattr(cpu, name, lambda *args, _function=function, **kwargs: _function(*args))
    setattr(torch, PATCHED, True)


def patch_fsdp_checks(init_utils: Any) -> None:
    """Skip FSDP's accelerator check of ``sync_module_states`` (no CUDA only)."""
    import torch

    if without_cuda(torch):
        init_utils._check_module_states_for_sync_module_states = lambda *args, **kwargs: None


def patch_fsdp_offload(fsdp: Any) -> None:
    """``torch.distributed.fsdp.CPUOffload`` that keeps parameters where they are (no CUDA only)."""
    import torch

    offload = fsdp.CPUOffload
    if not without_cuda(torch) or getattr(offload, PATCHED, False):
        return

    class HostOffload(offload):  # type: ignore[misc, valid-type]  # a subclass, so that FSDP's isinstance checks still hold
        def __init__(self, offload_params: bool = False) -> None:
            super().__init__(offload_params=False)

    setattr(HostOffload, PATCHED, True)
    fsdp.CPUOffload = HostOffload
