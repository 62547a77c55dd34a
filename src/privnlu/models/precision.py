"""bfloat16 autocast where the hardware runs it natively.

``--bf16 auto`` (the default) turns autocast on for the encoder's forward (and so its backward) only where the
device has native bfloat16 arithmetic: a CUDA GPU with bf16 support, or a CPU with AVX-512 BF16 or AMX
(``torch.cpu._is_avx512_bf16_supported`` / ``_is_amx_tile_supported``, else the ``avx512_bf16`` / ``amx_bf16``
flags of /proc/cpuinfo). Elsewhere bf16 is emulated and slower, so ``auto`` stays in float32. ``on`` and ``off``
force it. Weights, optimizer state and everything after the encoder (TextHide, the head, the loss) stay float32:
autocast only lowers the precision of the matrix products inside the encoder.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import torch

from ..choices import BF16_MODES
from ..errors import require_choice

NATIVE_CPU_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
CPUINFO = "/proc/cpuinfo"


def cpu_flags(path: str | Path | None = None) -> frozenset[str]:
    """The CPU feature flags of /proc/cpuinfo (empty where there is none)."""
    try:
        for line in Path(path or CPUINFO).read_text().splitlines():
            if line.startswith("flags"):
                return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def cpu_native_bf16() -> bool:
    """Whether this CPU has bfloat16 instructions (AVX-512 BF16 or AMX)."""
    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    for name in probes:
        probe = getattr(torch.cpu, name, None)
        if probe is not None and probe():
            return True
    return bool(NATIVE_CPU_FLAGS & cpu_flags())


def native_bf16(device: str | torch.device) -> bool:
    """Whether ``device`` runs bfloat16 matrix products natively."""
    dev = torch.device(device)
    if dev.type == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported(including_emulation=False)
    return dev.type == "cpu" and cpu_native_bf16()


def resolve_bf16(mode: str | bool | None, device: str | torch.device = "cpu") -> bool:
    """``auto`` (or None): native support decides; ``on``/``off`` (or a bool) force it."""
    if isinstance(mode, bool):
        return mode
    mode = "auto" if mode is None else mode
    require_choice("--bf16", mode, BF16_MODES)
    return mode == "on" or (mode == "auto" and native_bf16(device))


def autocast(device: str | torch.device, enabled: bool) -> contextlib.AbstractContextManager:
    """bfloat16 autocast on ``device`` when ``enabled``; a no-op context otherwise."""
    if not enabled:
        return contextlib.nullcontext()
    return torch.autocast(device_type=torch.device(device).type, dtype=torch.bfloat16)
