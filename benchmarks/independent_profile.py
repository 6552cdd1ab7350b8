"""An independent check of the bench's per-kernel times and sums: a compiled call under a plain
torch.profiler loop, no kernelscope measuring code involved.

    python benchmarks/independent_profile.py [CALLS]
        compiled add_relu (2**24 elements on the GPU); prints one JSON object: device kernel name ->
        median µs per launch over CALLS calls (default 50)
    python benchmarks/independent_profile.py CALLS path/to/model.py::Name [--mode reduce-overhead]
        an nn.Module of a file (no_grad, eval), its inputs from ``example_inputs(device)`` or the file's
        OPTIONS["args"] (read with kernelscope's --args parser); prints {"device_us_per_call": total of
        the device kernels per call, "kernels": name -> median µs per launch, "launches_per_call"}
"""

import importlib.util
import json
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

REPO = Path(__file__).resolve().parents[1]


def _profile(f, inputs: tuple, calls: int) -> list[tuple[str, float]]:
    for _ in range(20):
        f(*inputs)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(calls):
            f(*inputs)
            torch.cuda.synchronize()
    return [(e.name, e.time_range.elapsed_us()) for e in p.events()
            if e.device_type == torch.autograd.DeviceType.CUDA]


def _medians(events: list[tuple[str, float]]) -> dict[str, float]:
    times: dict[str, list[float]] = {}
    for name, us in events:
        times.setdefault(name, []).append(us)
    return {k: sorted(v)[len(v) // 2] for k, v in times.items()}


def _model(spec: str):
    path, name = spec.split("::")
    mspec = importlib.util.spec_from_file_location("independent_target", path)
    module = importlib.util.module_from_spec(mspec)
    mspec.loader.exec_module(module)
    model = getattr(module, name)().cuda().eval()
    if hasattr(module, "example_inputs"):
        inputs = tuple(module.example_inputs("cuda"))
    else:
        sys.path.insert(0, str(REPO))
        from kernelscope.capture.inputs import tensors
        from kernelscope.capture.spec import calls_from_text

        inputs = tuple(tensors(calls_from_text(module.OPTIONS["args"])[0], "cuda"))
    return model, inputs


def main() -> int:
    args = sys.argv[1:]
    calls = int(args[0]) if args else 50
    if len(args) < 2:
        sys.path.insert(0, str(REPO / "samples"))
        from add_relu import add_relu, add_relu_inputs

        a, b = add_relu_inputs("cuda")
        print(json.dumps(_medians(_profile(torch.compile(add_relu), (a, b), calls))))
        return 0
    mode = args[args.index("--mode") + 1] if "--mode" in args else None
    model, inputs = _model(args[1])
    f = torch.compile(model, mode=None if mode in (None, "default") else mode)
    with torch.no_grad():
        events = _profile(f, inputs, calls)
    print(json.dumps({"device_us_per_call": round(sum(us for _, us in events) / calls, 3),
                      "launches_per_call": len(events) / calls, "calls": calls, "mode": mode or "default",
                      "kernels": {k: round(v, 3) for k, v in _medians(events).items()}}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
