"""CUDA graphs (reduce-overhead): the skips Inductor logs, the inputs a replay copies, and the
compiled call again with its inputs marked static. Imports torch."""

from __future__ import annotations

import logging
import time
from typing import Any

import torch

from kernelscope.bench import torch_private
from kernelscope.bench.profiling import profiled
from kernelscope.bench.step import BenchFailure, Step, call_guarded, classify, compile_fn
from kernelscope.bench.timing import HostGate, host_reference, time_calls_pair, time_loop

# ---------------------------------------------------------------- CUDA graphs (reduce-overhead)

CUDAGRAPH_MODES = ("reduce-overhead", "max-autotune")


def uses_cudagraphs(options: dict, device: str) -> bool:
    return device == "cuda" and (options.get("mode") or "") in CUDAGRAPH_MODES


def mark_static_inputs(inputs: tuple) -> int:
    """Mark each input tensor as living at a fixed address, so Inductor's CUDA graph reads it in place
    instead of copying it into the graph's own buffer before every replay (what a training loop that
    reuses its buffers gets), through torch_private.mark_static_address. Returns how many were marked."""
    marked = 0
    for t in inputs:
        if isinstance(t, torch.Tensor):
            torch_private.mark_static_address(t)
            marked += 1
    return marked


def copied_inputs(inputs: tuple, fn) -> dict[str, Any]:
    """What Inductor's CUDA graph copies before each replay: the call's tensor inputs (parameters and
    buffers of a module stay in place; inputs marked static too)."""
    tensors = [t for t in inputs if isinstance(t, torch.Tensor) and t.is_cuda
               and not torch_private.is_marked_static(t)]
    return {"tensors": len(tensors), "bytes": sum(t.numel() * t.element_size() for t in tensors)}


class SkipLog(logging.Handler):
    """Inductor's "skipping cudagraphs due to ..." warnings (the ``cudagraphs`` log, on by default at
    WARNING), collected while this bench compiles."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []
        self.logger = logging.getLogger(torch_private.INDUCTOR_LOGGER)
        self.logger.addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
        except Exception:
            return
        if "cudagraph" in msg and ("skipping" in msg or "disabling" in msg):
            first = msg.strip().split("\n")[0]
            if first not in self.messages:
                self.messages.append(first)

    def close(self) -> None:
        self.logger.removeHandler(self)
        super().close()


def _fresh_code(fn):
    """A wrapper with its own code object: Dynamo caches compiled frames per code object, so a second
    torch.compile of ``fn`` itself would reuse the first compile (and its copying CUDA graph)."""
    def in_place_call(*args):
        return fn(*args)
    return in_place_call


def static_section(request: dict, fn, first: tuple, eager: Step, events) -> dict[str, Any]:
    """The compiled call again, its inputs marked static and reused on every call (one input set, not
    rotated): the CUDA graph replays with no input copies."""
    device, settings, options = request["device"], request["settings"], request["options"]
    events.emit("static", "compiling again with the inputs marked static (in place, no CUDA-graph copies)")
    inputs = tuple(t.detach().clone().requires_grad_(t.requires_grad) if isinstance(t, torch.Tensor) else t
                   for t in first)
    marked = mark_static_inputs(inputs)
    step = Step(compile_fn(_fresh_code(fn), options), eager.backward, options)
    step.params = eager.params
    t = time.perf_counter()
    call_guarded(step, inputs, request)
    compile_s = round(time.perf_counter() - t, 3)
    gate, loop_gate = HostGate(host_reference(request)), HostGate(host_reference(request))
    try:
        timed = time_calls_pair({"compiled_static": step}, [inputs], device, settings, gate)
        loop_gate.cached_reference_us = gate.reference_us()
        xs = timed["compiled_static"]
        per_call = {"compiled_static": sorted(xs)[len(xs) // 2]} if xs else None
        looped = time_loop({"compiled_static": step}, [inputs], device, loop_gate, per_call)
    except BenchFailure:
        raise
    except Exception as exc:
        raise classify(exc, request) from exc
    out = profiled(request, "compiled_static", step, [inputs], timed["compiled_static"],
                    looped["compiled_static"], gate, loop_gate, events,
                    (per_call or {}).get("compiled_static"))
    out.update(compile_s=compile_s, marked=marked, copied=copied_inputs(inputs, fn),
               how="torch._dynamo.mark_static_address on each input tensor, one input set reused (not rotated)")
    return out
