"""Finding and running NVIDIA's binary tools (nvdisasm, cuobjdump) without importing triton.

The PATH's copy wins; otherwise the one bundled in triton's wheel (``triton/backends/nvidia/bin``),
located with ``importlib.util.find_spec`` so the UI process never imports triton.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

TOOL_TIMEOUT_S = 60


def triton_bin_dir() -> Path | None:
    """triton's bundled NVIDIA tool folder, if triton is installed (found without importing it)."""
    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        folder = Path(loc) / "backends" / "nvidia" / "bin"
        if folder.is_dir():
            return folder
    return None


def find_tool(name: str) -> Path | None:
    """The tool's path: ``$KERNELSCOPE_<NAME>`` if set, then PATH, then triton's wheel; None if nowhere."""
    override = os.environ.get(f"KERNELSCOPE_{name.upper()}")
    if override is not None:
        path = Path(override)
        return path if path.is_file() and os.access(path, os.X_OK) else None
    found = shutil.which(name)
    if found:
        return Path(found)
    folder = triton_bin_dir()
    if folder is not None:
        path = folder / name
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


class ToolError(Exception):
    """A tool that is missing or failed; the message is one line for the user."""


def run_tool(name: str, args: list[str]) -> str:
    """Stdout of ``name args``; ToolError with a one-line reason when it is missing or fails."""
    tool = find_tool(name)
    if tool is None:
        raise ToolError(f"{name} not found on PATH or in triton's wheel (install the CUDA toolkit or triton)")
    try:
        done = subprocess.run([str(tool), *args], capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolError(f"{name} could not run: {exc}") from exc
    if done.returncode != 0:
        msg = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise ToolError(f"{name} failed: {msg}")
    return done.stdout
