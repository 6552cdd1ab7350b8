"""The profiler glue: kernels per call in launch order, each matched to the top-level op that
launched it, and a step's profiled timings as the result reports them. Imports torch."""

from __future__ import annotations

import re
from typing import Any

import torch

from kernelscope.bench import analysis
from kernelscope.bench.ceilings import sync
from kernelscope.bench.step import BenchFailure, Step, classify
from kernelscope.bench.timing import HostGate

ALLOC_OR_VIEW = {"empty", "empty_strided", "empty_like", "view", "as_strided", "reshape", "t", "transpose",
                 "permute", "expand", "detach", "alias", "resize_", "lift_fresh", "_reshape_alias", "unsqueeze",
                 "squeeze", "select", "slice", "_unsafe_view", "resolve_conj", "resolve_neg", "result_type",
                 "to", "_to_copy_noop", "set_", "record_stream", "zeros_like_noop"}
_CPP_EVENT = re.compile(r"^graph_\d+_(cpp_\w+)$")


RUNTIME_LAUNCHES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
                    "cudaGraphLaunch", "cudaMemcpyAsync", "cudaMemsetAsync", "cudaLaunchCooperativeKernel")


def profile_calls(step: Step, sets: list, device: str, calls: int) -> tuple[list[tuple[str, float, Any, dict]],
                                                                         dict[str, int]]:
    """(kernel name, µs, group, info) in launch order over ``calls`` calls: device kernels on a GPU,
    top-level ATen ops and Inductor's C++ kernels on a CPU; and the host's launch calls counted by
    name (cudaLaunchKernel, cudaGraphLaunch: one per CUDA-graph replay). ``group`` names the top-level
    op that launched the kernel (see launch_group), so the kernels one extern call runs are timed as
    that one launch; ``info`` has that op's name ("op") and the runtime call that launched the kernel
    ("via": cudaLaunchKernel, or cudaGraphLaunch for a kernel a CUDA graph replayed) where known."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as prof:
        for i in range(calls):
            step(sets[i % len(sets)])
            sync(device)
    rows: list[tuple[float, str, float, Any, dict]] = []
    events = prof.events()
    ops = {}
    runtime: dict[int, str] = {}  # correlation id -> the runtime call (a kernel carries its launch's id)
    launches: dict[str, int] = {}
    graph_ops: set[int] = set()  # the ops a cudaGraphLaunch ran under (a fallback when ids do not pair)
    if device == "cuda":
        for e in events:
            if e.device_type != torch.autograd.DeviceType.CPU:
                continue
            if e.name in RUNTIME_LAUNCHES:
                runtime[e.id] = e.name
                launches[e.name] = launches.get(e.name, 0) + 1
                if e.name == "cudaGraphLaunch" and getattr(e, "linked_correlation_id", 0):
                    graph_ops.add(e.linked_correlation_id)
            elif not e.is_async and e.id not in ops:
                ops[e.id] = e
    for e in events:
        if device == "cuda":
            if e.device_type != torch.autograd.DeviceType.CUDA:
                continue
            linked = getattr(e, "linked_correlation_id", 0) or 0
            group = linked_group(linked, ops)
            via = runtime.get(e.id, "") or ("cudaGraphLaunch" if linked in graph_ops else "")
            info = {"op": ops[group].name if group in ops else "", "via": via}
            rows.append((e.time_range.start, e.name, e.time_range.elapsed_us(), group, info))
            continue
        m = _CPP_EVENT.match(e.name)
        if m:
            rows.append((e.time_range.start, m.group(1), e.time_range.elapsed_us(), e.id, {}))
            continue
        if not e.name.startswith("aten::") or e.name[6:] in ALLOC_OR_VIEW:
            continue
        parent = e.cpu_parent
        while parent is not None and not parent.name.startswith("aten::"):
            parent = parent.cpu_parent
        if parent is None:
            rows.append((e.time_range.start, e.name, e.time_range.elapsed_us(), e.id, {}))
    rows.sort(key=lambda r: r[0])
    return [(name, us, group, info) for _, name, us, group, info in rows], launches


def linked_group(linked: int, ops: dict[int, Any]) -> Any:
    """The launch group of a device kernel linked to CPU op ``linked``; None when it is linked to nothing.
    torch 2.11's FunctionEvent has no linked_correlation_id at all (read as 0): 0 must not look up a CPU
    op whose id happens to be 0, which put every kernel of a call in one group, so that an extern call
    after another one (a matmul after an attention) lost its kernels to it (seen on the H200)."""
    return launch_group(ops.get(linked)) if linked else None


def launch_group(op) -> Any:
    """The top-level op that launched a device kernel: the CPU op the profiler linked it to (its
    correlation id), walked up to the outermost ATen op (aten::linear over aten::addmm); a Triton
    kernel's own record function stays itself. None when the profiler linked it to nothing."""
    if op is None:
        return None
    while op.cpu_parent is not None and op.cpu_parent.name.startswith("aten::"):
        op = op.cpu_parent
    return op.id



def profiled(request: dict, name: str, step: Step, sets: list, samples: list[float], looped: list[float],
              gate: HostGate, loop_gate: HostGate, events, per_call_us: float | None = None) -> dict[str, Any]:
    settings = request["settings"]
    try:
        calls = int(settings["profile_calls"])
        # The profiler slows a call down a few times over and reads its events back afterwards.
        about = f" (about {max(1, round(4 * calls * per_call_us / 1e6 + 0.5))} s)" if per_call_us else ""
        events.emit(name, f"profiling {calls} {name} calls{about}")
        sequence, host_launches = profile_calls(step, sets, request["device"], int(settings["profile_calls"]))
    except BenchFailure:
        raise
    except Exception as exc:
        raise classify(exc, request) from exc
    return {"e2e": {**analysis.run_stats(samples), "host": gate.report(name, int(settings["reps"]))},
            "loop": {**analysis.run_stats(looped), "host": loop_gate.report(name, 7)},
            "profile_calls": int(settings["profile_calls"]), "host_launches": host_launches,
            "sequence": [[n, round(us, 3), g, info] if info else [n, round(us, 3), g] for n, us, g, info in sequence]}


def profile_l2_flushed(request: dict, step: Step, sets: list, calls: int = 3) -> dict[str, Any]:
    """The compiled call profiled again with L2 flushed before each Triton kernel (a write of twice
    the L2's size): the same launches' times with their inputs coming from memory, next to the times
    as in the call (where a kernel's input was just written by the kernel before, it comes from L2).
    Only the bundle's named kernels are read from this pass; the flushes' own kernels are ignored."""
    from kernelscope.bench import torch_private

    l2 = int(request["facts"].get("l2_bytes") or 0)
    if request["device"] != "cuda" or not l2:
        return {"skipped": "needs a CUDA GPU whose L2 size is known"}
    scratch = torch.empty(2 * l2 // 4, dtype=torch.float32, device="cuda")
    try:
        with torch_private.l2_flushed_triton_launches(scratch.zero_) as hooked:
            if not hooked:
                return {"skipped": "this torch has no CachingAutotuner.run to flush before"}
            sequence, _ = profile_calls(step, sets, "cuda", calls)
    except Exception as exc:  # the figures as in the call stand; say why there are no flushed ones
        return {"skipped": f"the flushed pass failed: {exc.__class__.__name__}: {(str(exc).splitlines() or [''])[0][:120]}"}
    finally:
        del scratch
    return {"calls": calls, "sequence": [[n, round(us, 3)] for n, us, _, _ in sequence],
            "how": f"L2 flushed before each Triton kernel (a {2 * l2 / 1e6:.0f} MB write), {calls} profiled calls"}
