"""What this machine offers the UI, found without importing torch: a CUDA GPU or not.

The bench view's ``v`` offers cuda only where a bench could run there. KERNELSCOPE_DEVICE (cpu or
cuda) decides when set, as it does for captures; else an NVIDIA driver's device node or nvidia-smi.
"""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path


def has_cuda_gpu() -> bool:
    forced = os.environ.get("KERNELSCOPE_DEVICE")
    if forced in ("cpu", "cuda"):
        return forced == "cuda"
    return _machine_has_nvidia()


@functools.cache  # asked on every footer refresh of the bench view: the machine does not change, the setting may
def _machine_has_nvidia() -> bool:
    return Path("/dev/nvidiactl").exists() or Path("/dev/nvidia0").exists() or shutil.which("nvidia-smi") is not None
