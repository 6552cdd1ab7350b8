"""An independent check of the bench's per-kernel times: compiled add_relu (2**24 elements on the
GPU) under a plain torch.profiler, no kernelscope code involved.

    python benchmarks/independent_profile.py [CALLS]

Prints one JSON object: device kernel name -> median µs per launch over CALLS calls (default 50).
"""

import json
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "samples"))
from add_relu import add_relu, add_relu_inputs  # noqa: E402


def main() -> int:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    a, b = add_relu_inputs("cuda")
    f = torch.compile(add_relu)
    for _ in range(20):
        f(a, b)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(calls):
            f(a, b)
            torch.cuda.synchronize()
    times: dict[str, list[float]] = {}
    for e in p.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            times.setdefault(e.name, []).append(e.time_range.elapsed_us())
    print(json.dumps({k: sorted(v)[len(v) // 2] for k, v in times.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
