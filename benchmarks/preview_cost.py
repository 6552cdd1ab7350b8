"""Time of `kernelscope capture SAMPLE --preview sm_90` over `kernelscope capture SAMPLE --device cpu`.

Both are whole captures in fresh processes with cold, private caches, run in the same run and
alternating, so machine noise hits both alike. A preview compiles every Triton kernel to a cubin
for the previewed arch in-process (a CPU capture compiles C++); it runs nothing. Prints one row per
sample and the median ratio. Target: at most 1.5x.

    python benchmarks/preview_cost.py [--samples add_relu softmax] [--repeat 1] [--arch sm_90]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def capture(sample: str, extra: list[str]) -> float:
    with tempfile.TemporaryDirectory(prefix="ks-preview-cost-") as tmp:
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "kernelscope", "capture", sample, "-o", str(Path(tmp) / "b"),
                               "-q", *extra], capture_output=True, text=True, cwd=str(REPO))
        seconds = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"capture {sample} {' '.join(extra)} failed: {proc.stderr.strip()[-300:]}")
    return seconds


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--samples", nargs="+", default=["add_relu", "softmax"])
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--arch", default="sm_90")
    args = p.parse_args()
    ratios = []
    print(f"{'sample':<16}{'cpu capture':>14}{'preview ' + args.arch:>16}{'ratio':>8}")
    for sample in args.samples:
        cpu, prev = [], []
        for _ in range(args.repeat):
            cpu.append(capture(sample, ["--device", "cpu"]))
            prev.append(capture(sample, ["--preview", args.arch]))
        c, v = statistics.median(cpu), statistics.median(prev)
        ratios.append(v / c)
        print(f"{sample:<16}{c:>12.1f} s{v:>14.1f} s{v / c:>7.2f}x")
    ratio = statistics.median(ratios)
    print(f"median preview / cpu capture: {ratio:.2f}x (target <= 1.5x) {'OK' if ratio <= 1.5 else 'OVER'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
