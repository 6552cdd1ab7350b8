"""Measurements inside the bench child (imports torch): the entry that runs the sections a request
asks for (the run: end-to-end time per call, profiler kernels, correctness; the size sweep; the
one-kernel rerun) after the device's facts and ceilings.

The sections live beside it: ceilings.py (the device, its copy and matmul ceilings), step.py (the
target, one call, its inputs), timing.py (HostGate, per-call and looped timing), profiling.py
(kernels per call and their launches), correctness.py, cudagraphs.py (reduce-overhead, static
inputs), sweep.py, rerun.py (one Triton kernel alone). The torch and triton internals they name are
in bench/torch_private.py.
"""

from __future__ import annotations

import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

from kernelscope.bench import cpp_kernel_names, torch_private
from kernelscope.bench.ceilings import ceilings, clocks, device_facts, pin_to_one_cpu
from kernelscope.bench.correctness import correctness
from kernelscope.bench.cudagraphs import SkipLog, copied_inputs, static_section, uses_cudagraphs
from kernelscope.bench.profiling import profile_l2_flushed, profiled
from kernelscope.bench.rerun import kernel_section
from kernelscope.bench.step import (
    BenchFailure,
    Step,
    apply_train_state,
    call_guarded,
    classify,
    compile_fn,
    load_target,
    make_inputs,
    rotation_sets,
)
from kernelscope.bench.sweep import sweep_section
from kernelscope.bench.timing import (
    HostGate,
    host_reference,
    store_host_reference,
    time_calls_pair,
    time_loop,
)
from kernelscope.capture import session
from kernelscope.capture.inputs import describe

# ---------------------------------------------------------------- sections

def run_section(request: dict, module, fn, events) -> dict[str, Any]:
    device, settings, options = request["device"], request["settings"], request["options"]
    backward = bool(options.get("backward"))
    events.emit("inputs", "making the inputs")
    inputs = make_inputs(request, module, device)
    apply_train_state(module, fn, options)
    eager = Step(fn, backward, options)
    # From here: Dynamo's and Inductor's imports (seconds on a GPU box), then the compile and first call.
    events.emit("compile", "torch.compile: first call")
    skips, skips_before = SkipLog(), (torch_private.cudagraph_skips() if uses_cudagraphs(options, device) else 0)
    compiled = Step(compile_fn(fn, options), backward, options)
    result: dict[str, Any] = {"inputs": [describe(v) for v in inputs],
                              "grad_mode": options.get("grad_mode"), "eval": bool(options.get("eval")),
                              "holds_modules": bool(session.modules_of(fn, module))}
    t, cached_before = time.perf_counter(), torch_private.fx_graph_cache_counts()
    loaded_before = len(torch_private.output_code_modules())
    call_guarded(compiled, inputs, request)
    output_code = torch_private.output_code_modules()[loaded_before:]  # this compile's (C++ kernels named)
    result["compile_s"] = round(time.perf_counter() - t, 3)
    result["compile_cache"] = torch_private.counts_since(cached_before)
    events.emit("correct", "compiled vs eager on fresh random inputs")
    result["correctness"] = correctness(request, module, eager, compiled)
    sets, result["rotation"] = rotation_sets(request, module, device, inputs, request["facts"].get("l2_bytes"))
    budget = float(settings["budget_s"])
    events.emit("timing", f"timing eager and compiled calls, alternating (about {2 * budget + 1.5:.0f} s)")
    result["pinned_cpu"] = pin_to_one_cpu()
    reference = host_reference(request)
    gate, loop_gate = HostGate(reference), HostGate(reference)
    try:
        timed = time_calls_pair({"eager": eager, "compiled": compiled}, sets, device, settings, gate)
        loop_gate.cached_reference_us = gate.reference_us()
        per_call = {name: statistics.median(xs) for name, xs in timed.items() if xs}
        looped = time_loop({"eager": eager, "compiled": compiled}, sets, device, loop_gate, per_call)
        store_host_reference(request, loop_gate.reference_us())
    except BenchFailure:
        raise
    except Exception as exc:
        raise classify(exc, request) from exc
    for name, step in (("eager", eager), ("compiled", compiled)):
        with cpp_kernel_names.named(output_code if name == "compiled" and device == "cpu" else []):
            result[name] = profiled(request, name, step, sets, timed[name], looped[name], gate, loop_gate, events,
                                    per_call.get(name))
    if device == "cuda":
        if uses_cudagraphs(options, device):
            result["compiled_flushed"] = {"skipped": "a CUDA-graph replay launches its kernels without Python, so "
                                          "L2 cannot be flushed between them"}
        else:
            events.emit("flushed", "profiling 3 compiled calls with L2 flushed before each Triton kernel")
            result["compiled_flushed"] = profile_l2_flushed(request, compiled, sets)
    if uses_cudagraphs(options, device):
        result["cudagraphs"] = {"skips": skips.messages, "skip_counter": torch_private.cudagraph_skips() - skips_before,
                                "copied": copied_inputs(inputs, fn)}
        result["compiled_static"] = static_section(request, fn, sets[0], eager, events)
    skips.close()
    return result



# ---------------------------------------------------------------- entry

def run(request: dict, events) -> dict[str, Any]:
    t0 = time.time()
    device = request["device"]
    events.emit("start", f"torch {torch.__version__} imported", elapsed=round(t0 - request.get("t_spawn", t0), 3))
    if device == "cuda" and not torch.cuda.is_available():
        raise BenchFailure("no_gpu", "the bench asked for cuda, but torch sees no CUDA GPU here; use --device cpu")
    facts = device_facts(device)
    request["facts"] = facts
    result: dict[str, Any] = {"device": facts, "clocks_before": clocks(device),
                              "versions": {"torch": torch.__version__, "triton": facts.get("triton"),
                                           "python": platform.python_version(), "cuda": torch.version.cuda,
                                           "driver": facts.get("driver")},
                              "settings": dict(request["settings"], options=request["options"], device=device)}
    result["ceilings"] = ceilings(request, facts, events)
    sections = request["sections"]
    if request.get("bundle_plan"):  # a bundle alone: its output code and FX graphs, no function to load
        from kernelscope.bench.from_bundle import run_section as bundle_run_section

        result["run"], sections = bundle_run_section(request, events), []
    module = fn = None
    if "run" in sections or "sweep" in sections:
        target = request["target"]
        events.emit("load", f"importing {Path(target['file']).name} and building {target['name']} on {device}")
        module, fn = load_target(request, device)
    if "run" in sections:
        result["run"] = run_section(request, module, fn, events)
    if "sweep" in sections:
        result["sweep"] = sweep_section(request, module, fn, events)
    if "kernel" in sections:
        result["kernel"] = kernel_section(request, events)
    result["clocks_after"] = clocks(device)
    result["seconds"] = round(time.time() - t0, 2)
    sys.stdout.flush()
    return result
