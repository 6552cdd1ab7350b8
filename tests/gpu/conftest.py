"""GPU tests: skipped where torch sees no CUDA device (checked in a child, never imported here)."""

import glob
import os
import subprocess
import sys

import pytest

_PROBE = "import torch; print(int(torch.cuda.is_available()))"


def _has_cuda() -> bool:
    # No NVIDIA device node on Linux (none is made without the driver): no CUDA, known without the probe's
    # two seconds of torch import in every pytest process that collects (each xdist worker, each pass).
    if sys.platform.startswith("linux") and not glob.glob("/dev/nvidia*") and not os.path.exists("/dev/dxg"):
        return False
    try:
        out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.stdout.strip() == "1"


HAS_CUDA = _has_cuda()


def pytest_collection_modifyitems(config, items):
    if HAS_CUDA:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "tests/gpu/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)
