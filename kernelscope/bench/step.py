"""The target as the bench calls it: loading it, its inputs, one call (Step, forward and backward),
compiling, the failure a call raises, and the input sets rotated through the cache. Imports torch."""

from __future__ import annotations

import math
from typing import Any

import torch

from kernelscope.bench.ceilings import sync
from kernelscope.capture import failures, session
from kernelscope.capture import inputs as capture_inputs
from kernelscope.capture.spec import CaptureOptions
from kernelscope.units import fmt_bytes


class BenchFailure(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message



# ---------------------------------------------------------------- the target

def load_target(request: dict, device: str):
    try:
        return session.load_target(request["target"], device)
    except failures.CaptureFailure as exc:
        raise BenchFailure(exc.kind, exc.message) from exc


def make_inputs(request: dict, module, device: str) -> tuple:
    try:
        if request.get("args"):
            return capture_inputs.tensors(request["args"], device)
        return capture_inputs.make_inputs(request, module, device)
    except failures.CaptureFailure as exc:
        raise BenchFailure(exc.kind, exc.message) from exc


def tensors_of(value: Any) -> list[torch.Tensor]:
    return [v for v in capture_inputs.flatten(value) if isinstance(v, torch.Tensor)]


class Step:
    """One call of the function as the capture ran it: forward, and backward when asked."""

    def __init__(self, fn, backward: bool, options: dict | None = None):
        self.fn = fn
        self.backward = backward
        options = options or {}
        # The capture's typed options, as the capture ran its calls (grad mode).
        self.grad = CaptureOptions(no_grad=bool(options.get("no_grad")),
                                   inference_mode=bool(options.get("inference_mode")))
        self._ones: dict[tuple, torch.Tensor] = {}
        self.params = [p for p in fn.parameters() if p.requires_grad] if isinstance(fn, torch.nn.Module) else []

    def leaves(self, inputs: tuple) -> list[torch.Tensor]:
        return [t for t in inputs if isinstance(t, torch.Tensor) and t.requires_grad] + self.params

    def __call__(self, inputs: tuple):
        if not self.backward:
            with session.grad_context(self.grad):
                return self.fn(*inputs)
        for t in self.leaves(inputs):
            t.grad = None  # no accumulation kernels: every call is the same first backward
        out = self.fn(*inputs)
        outs = [o for o in tensors_of(out) if o.requires_grad]
        if not outs:
            raise BenchFailure("args", "backward: no output requires grad, nothing to differentiate")
        grads = []
        for o in outs:  # made once, outside the timed calls' steady state
            key = (tuple(o.shape), o.dtype, o.device)
            if key not in self._ones:
                self._ones[key] = torch.ones_like(o)
            grads.append(self._ones[key])
        torch.autograd.backward(outs, grad_tensors=grads)
        return out


def apply_train_state(module, fn, options: dict) -> None:
    """module.eval() on the modules the target is or holds, when the bench runs in eval (as captured)."""
    if not options.get("eval"):
        return
    held = session.modules_of(fn, module)
    if not held:
        raise BenchFailure("args", "--eval: the target is not an nn.Module and holds none; drop --eval")
    for m in held:
        m.eval()


def compile_fn(fn, options: dict):
    mode = options.get("mode") or "default"
    return torch.compile(fn, mode=None if mode == "default" else mode, dynamic=options.get("dynamic"),
                         fullgraph=bool(options.get("fullgraph")))


def classify(exc: BaseException, request: dict) -> BenchFailure:
    failure = failures.classify(exc, request["target"].get("file", ""), {"device": request["device"],
                                                                         **request["options"]})
    return BenchFailure(failure.kind, failure.message)


def call_guarded(step: Step, inputs: tuple, request: dict):
    try:
        out = step(inputs)
        sync(request["device"])
        return out
    except BenchFailure:
        raise
    except Exception as exc:
        raise classify(exc, request) from exc


# ---------------------------------------------------------------- timing and profiling

def input_bytes(inputs: tuple) -> int:
    return sum(t.numel() * t.element_size() for t in inputs if isinstance(t, torch.Tensor))


def rotated(first: Any, size: int, device: str, cache_bytes: int | None, make) -> tuple[list, dict]:
    """Input sets to cycle through so that a small input is not served from cache on every call:
    ``first`` and more from ``make()``, as many as fill 4x the cache (at most 64, within a memory budget)."""
    info: dict[str, Any] = {"input_bytes": size, "cache_bytes": cache_bytes, "sets": 1}
    if not cache_bytes or not size or size >= 2 * cache_bytes:
        info["why"] = "inputs larger than twice the cache: not rotated" if cache_bytes else "cache size unknown"
        return [first], info
    budget = 1 << 30 if device == "cuda" else 1 << 28
    sets = int(min(64, max(2, math.ceil(4 * cache_bytes / size)), max(1, budget // size)))
    out = [first] + [make() for _ in range(sets - 1)]
    info.update(sets=len(out), why=f"inputs fit in the {fmt_bytes(cache_bytes)} cache: {len(out)} sets rotated")
    return out, info


def rotation_sets(request: dict, module, device: str, first: tuple, cache_bytes: int | None) -> tuple[list, dict]:
    """The function bench's input sets (see rotated)."""
    return rotated(first, input_bytes(first), device, cache_bytes, lambda: make_inputs(request, module, device))
