"""The size sweep: the function compiled and timed at each size of dim 0. Imports torch."""

from __future__ import annotations

import time
from typing import Any

import torch

from kernelscope.bench import analysis, torch_private
from kernelscope.bench.step import (
    BenchFailure,
    Step,
    apply_train_state,
    call_guarded,
    classify,
    compile_fn,
    input_bytes,
    make_inputs,
    rotation_sets,
)
from kernelscope.bench.timing import HostGate, host_reference, store_host_reference, time_calls_pair
from kernelscope.capture.inputs import describe


def scaled_specs(inputs: tuple, n: int) -> tuple[list[dict], int]:
    """Specs of ``inputs`` with dim 0 set to ``n`` on every tensor whose dim 0 equals the first tensor's."""
    tensors = [t for t in inputs if isinstance(t, torch.Tensor) and t.dim() > 0]
    if not tensors:
        raise BenchFailure("args", "--sweep needs a tensor input with at least one dimension")
    lead = tensors[0].shape[0]
    specs = []
    for v in inputs:
        if not isinstance(v, torch.Tensor):
            specs.append({"value": v})
            continue
        shape = list(v.shape)
        if shape and shape[0] == lead:
            shape[0] = n
        specs.append({"dtype": str(v.dtype).replace("torch.", ""), "shape": shape, "requires_grad": v.requires_grad})
    return specs, lead


def sweep_section(request: dict, module, fn, events) -> dict[str, Any]:
    device, settings, options = request["device"], request["settings"], request["options"]
    backward = bool(options.get("backward"))
    base = make_inputs(request, module, device)
    apply_train_state(module, fn, options)
    _, lead = scaled_specs(base, 1)
    sizes = request.get("sizes") or sorted({max(1, lead >> s) for s in (14, 12, 10, 8, 6, 4, 2, 0)})
    rows = []
    sweep_settings = dict(settings, reps=settings["sweep_reps"], budget_s=settings["sweep_budget_s"])
    for n in sizes:
        specs, _ = scaled_specs(base, n)
        sub = dict(request, args=specs)
        row: dict[str, Any] = {"size": n}
        try:
            inputs = make_inputs(sub, module, device)
            row["elements"] = sum(t.numel() for t in inputs if isinstance(t, torch.Tensor))
            row["input_bytes"] = input_bytes(inputs)
            row["inputs"] = [describe(v) for v in inputs]
            events.emit("sweep", f"size {n}: compiling")
            torch_private.reset_dynamo()  # each size compiled as a user with that size would get it
            compiled = Step(compile_fn(fn, options), backward, options)
            t = time.perf_counter()
            call_guarded(compiled, inputs, request)
            row["compile_s"] = round(time.perf_counter() - t, 3)
            sets, _ = rotation_sets(sub, module, device, inputs, request["facts"].get("l2_bytes"))
            events.emit("sweep", f"size {n}: timing eager and compiled")
            gate = HostGate(host_reference(request))
            timed = time_calls_pair({"eager": Step(fn, backward, options), "compiled": compiled}, sets, device, sweep_settings,
                                    gate)
            store_host_reference(request, gate.reference_us())
            for name in ("eager", "compiled"):
                stats = analysis.run_stats(timed[name])
                row[f"{name}_us"] = stats["median_us"]
                row[f"{name}_spread_pct"] = stats["spread_pct"]
            row["speedup"] = round(row["eager_us"] / row["compiled_us"], 3) if row["compiled_us"] else None
        except BenchFailure as exc:
            row["error"] = exc.message
        except Exception as exc:
            row["error"] = classify(exc, request).message
        rows.append(row)
    dim = "dim 0 of every input whose dim 0 is " + str(lead)
    return {"rows": rows, "scaled": dim, "compiled_per_size": "torch._dynamo.reset() and a fresh torch.compile "
            "per size", "crossover": analysis.crossover(rows)}
