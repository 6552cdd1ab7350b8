"""Time of `kernelscope capture` over a bare torch.compile first call of the same function.

Both run in fresh processes with cold, private caches (Inductor, Triton), in the same run,
alternating, so machine noise hits both alike. Prints one row per sample and the median ratio.
Target: at most 1.2x.

    python benchmarks/capture_overhead.py [--samples add_relu softmax] [--repeat 2] [--device cpu]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

BARE = r"""
import importlib.util, os, sys, time
import torch
spec = importlib.util.spec_from_file_location("sample", sys.argv[1])
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
name, device = sys.argv[2], sys.argv[3]
fn = getattr(mod, name)
inputs = getattr(mod, name + "_inputs")(device)
out = torch.compile(fn)(*inputs)
opts = getattr(mod, "OPTIONS", {})
if opts.get("backward"):
    sum(o.float().sum() for o in (out if isinstance(out, (tuple, list)) else [out]) if o.requires_grad).backward()
if device == "cuda":
    torch.cuda.synchronize()
"""


def bare(sample: str, device: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=f"{tmp}/ind", TRITON_CACHE_DIR=f"{tmp}/triton",
                   TORCHINDUCTOR_FX_GRAPH_CACHE="0", TORCHINDUCTOR_AUTOGRAD_CACHE="0")
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", BARE, str(REPO / "samples" / f"{sample}.py"), sample, device],
                       check=True, env=env, stdout=subprocess.DEVNULL)
        return time.perf_counter() - t


def kernelscope(sample: str, device: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "kernelscope", "capture", sample, "-o", f"{tmp}/b", "-q",
                        "--device", device], check=True, cwd=REPO)
        return time.perf_counter() - t


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--samples", nargs="+", default=["add_relu", "softmax", "linear_relu"])
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--device", default=None)
    a = p.parse_args()
    device = a.device
    if device is None:
        probe = "import torch; print('cuda' if torch.cuda.is_available() else 'cpu')"
        device = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.strip()
    print(f"capture overhead on {device}: kernelscope capture vs bare torch.compile first call (cold caches)")
    print(f"{'sample':<16} {'bare s':>8} {'capture s':>10} {'ratio':>7}")
    ratios = []
    for sample in a.samples:
        b_times, k_times = [], []
        for _ in range(a.repeat):
            b_times.append(bare(sample, device))
            k_times.append(kernelscope(sample, device))
        b, k = statistics.median(b_times), statistics.median(k_times)
        ratios.append(k / b)
        print(f"{sample:<16} {b:>8.2f} {k:>10.2f} {k / b:>6.2f}x")
    print(f"median ratio {statistics.median(ratios):.2f}x (target <= 1.2x)")


if __name__ == "__main__":
    main()
