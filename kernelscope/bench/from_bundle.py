"""Bench of a bundle alone, inside the bench child (imports torch): per graph the compiled side runs
the bundle's output code (``call(args)``) and the eager side its AOT (or post-grad) FX graph, on the
same synthetic inputs of the recorded shapes, strides and dtypes (planned in bench/bundle_plan.py,
checked and made in bench/bundle_tensors.py).

One call is every planned graph in the bundle's order, as a training step runs them: a backward
graph takes the saved activations its forward graph returned in the same call. The call goes
through the function bench's timing and profiling code unchanged; its correctness is judged graph by
graph (bench/bundle_correctness.py).

The FX graph was checked by the planner (plain ATen calls on its own names) and is exec'd with only
``torch`` in scope; the output code is imported as Inductor wrote it. Both are code whoever made
the bundle wrote: the parent runs this only with the user's consent (--run-bundle-code).
"""

from __future__ import annotations

import builtins
import importlib.util
import inspect
import math
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

from kernelscope.bench import cpp_kernel_names, torch_private
from kernelscope.bench.bundle_correctness import attention_state_outputs, correctness, writes_inputs
from kernelscope.bench.bundle_plan import record_part
from kernelscope.bench.bundle_tensors import (
    check_fx_agrees,
    check_inputs,
    copy_set,
    graph_args,
    make_set,
    set_bytes,
)
from kernelscope.bench.ceilings import pin_to_one_cpu
from kernelscope.bench.printed_fx import fx_source
from kernelscope.bench.profiling import profiled
from kernelscope.bench.step import BenchFailure, rotated
from kernelscope.bench.timing import (
    HostGate,
    host_reference,
    store_host_reference,
    time_calls_pair,
    time_loop,
)


class GraphRun:
    """One graph of the bundle, both ways: ``compiled(args)`` and ``eager(args)``."""

    def __init__(self, plan: dict[str, Any], work: Path, index: int):
        self.plan = plan
        self.id = plan["graph"]
        self.inputs = plan["inputs"]
        self.module = _import_output_code(Path(plan["output_code"]), work, index, self.id)
        self.call = self.module.call
        self.fx_path = Path(plan["eager_fx"])
        self.fx_text = self.fx_path.read_text(encoding="utf-8")  # read once: the module, each dtype's, its outputs
        self.graph_module = _fx_module(self.fx_text, self.fx_path, self.id)
        # Outputs that are an attention op's RNG state, not results: never compared (bundle_correctness).
        self.rng_state_outputs = attention_state_outputs(self.fx_text, plan.get("outputs") or [])
        self.writes_in_place = writes_inputs(self.fx_text)  # its inputs always copied to see what it wrote
        self._as: dict[torch.dtype, torch.nn.Module] = {}

    def compiled(self, args: list) -> Any:
        return self.call(list(args))  # call() clears the list it is given

    def eager(self, args: list) -> Any:
        return self.graph_module(*args)

    def eager_as(self, dtype: torch.dtype) -> torch.nn.Module:
        """The FX graph with every float dtype it names read as ``dtype`` (the reference run: a bf16
        graph's casts and constants in float64 too, where only its inputs were, mm got mixed dtypes)."""
        if dtype not in self._as:
            self._as[dtype] = _fx_module(self.fx_text, self.fx_path, self.id, float_as=dtype)
        return self._as[dtype]


def _import_output_code(path: Path, work: Path, index: int, graph: str):
    """The output code as a module (its kernels compile as it is imported, into the child's private caches)."""
    copy = work / "bundle_code" / f"graph_{index}.py"
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_bytes(path.read_bytes())
    name = f"kernelscope_bundle_graph_{index}"
    spec = importlib.util.spec_from_file_location(name, copy)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise BenchFailure("bundle_code", f"{graph}: its output code does not load on this torch "
                           f"{torch.__version__}: {exc.__class__.__name__}: {str(exc).splitlines()[0][:200]}") from exc
    if not callable(getattr(module, "call", None)):
        raise BenchFailure("bundle_code", f"{graph}: its output code defines no call(args)")
    return module


def fx_torch(float_as: torch.dtype | None = None) -> SimpleNamespace:
    """What a printed graph may reach as ``torch``: ATen and prims ops, nn.Module (its class's base), and
    the dtypes, layouts and memory formats its arguments name; nothing else of torch (torch.save, torch.load,
    torch.hub) exists for it, whatever the planner's check let through. With ``float_as``, the 16- and
    32-bit float dtypes are that one."""
    constants = {name: value for name in dir(torch) if not name.startswith("_")
                 for value in [getattr(torch, name, None)]
                 if isinstance(value, (torch.dtype, torch.layout, torch.memory_format))}
    if float_as is not None:
        constants.update({name: float_as for name, value in constants.items()
                          if value in (torch.float16, torch.bfloat16, torch.float32)})
    from kernelscope.bench.reference_attention import reference_aten

    aten = reference_aten() if float_as is torch.float64 else torch.ops.aten  # fused attention has no float64
    return SimpleNamespace(ops=SimpleNamespace(aten=aten, prims=torch.ops.prims),
                           nn=SimpleNamespace(Module=torch.nn.Module), **constants)


def _fx_module(printed: str, path: Path, graph: str, float_as: torch.dtype | None = None) -> torch.nn.Module:
    """The printed GraphModule (``printed``, the text of ``path``), exec'd with only torch (and the names FX
    prints: device, inf, nan)."""
    text = fx_source(printed)
    torch_private.register_inductor_prims()
    scope: dict[str, Any] = {"__name__": f"kernelscope_fx_{graph}", "torch": fx_torch(float_as), "device": torch.device,
                             "inf": math.inf, "nan": math.nan,
                             "__builtins__": {"__build_class__": builtins.__build_class__}}
    try:
        exec(compile(text, str(path), "exec"), scope)  # noqa: S102 - checked by printed_fx.check_fx_code
        return scope["GraphModule"]()
    except Exception as exc:
        raise BenchFailure("bundle_code", f"{graph}: its FX graph does not load: {exc.__class__.__name__}: "
                           f"{str(exc).splitlines()[0][:200] if str(exc) else ''}") from exc


# ---------------------------------------------------------------- inputs

class BundleStep:
    """One call of the bundle: every graph in order, compiled or eager; what each returned."""

    backward = False  # a backward graph is a graph of its own here, not autograd

    def __init__(self, graphs: list[GraphRun], side: str):
        self.graphs = graphs
        self.side = side

    def __call__(self, inputs: list[list[Any]]) -> list[Any]:
        outs: dict[str, Any] = {}
        every: list[Any] = []
        with torch.no_grad():
            for g, args in zip(self.graphs, inputs):
                full = graph_args(g, args, outs)
                result = g.compiled(full) if self.side == "compiled" else g.eager(full)
                result = list(result) if isinstance(result, (tuple, list)) else [result]
                outs[g.id] = result
                every.append(result)
        return every


def rotation(graphs: list[GraphRun], device: str, first: list, cache_bytes: int | None) -> tuple[list, dict]:
    """Input sets cycled through so that small inputs are not served from cache (step.rotated)."""
    return rotated(first, set_bytes(first), device, cache_bytes, lambda: make_set(graphs, device))


# ---------------------------------------------------------------- the section

def cpu_vectors_note(plans: list[dict[str, Any]]) -> str:
    """Build the output code's C++ for the vector width it was written for (bench/cpu_vectors.py), before
    anything is compiled; a CPU without that width is a one-line failure, not wrong numbers."""
    from kernelscope.bench import cpu_vectors

    widths = torch_private.cpu_vector_widths()
    if widths is None:
        return ""
    needed = max((cpu_vectors.vector_bits(Path(p["output_code"]).read_text(encoding="utf-8", errors="replace"))
                  or 0 for p in plans), default=0)
    try:
        bits, note = cpu_vectors.plan(needed or None, *widths)
    except ValueError as exc:
        raise BenchFailure("cpu_vectors", str(exc)) from None
    if bits:
        torch_private.compile_cpu_vectors(bits)
    return note


def run_section(request: dict, events) -> dict[str, Any]:
    device, settings = request["device"], request["settings"]
    work = Path(request["work"])
    plans = request["bundle_plan"]["graphs"]
    events.emit("compile", f"loading the bundle's output code: {len(plans)} graph{'s' if len(plans) != 1 else ''} "
                "(their kernels compile now)")
    check_inputs(plans, device)  # before any of its code loads or any input is allocated
    for p in plans:
        check_fx_agrees(p)
    vectors = cpu_vectors_note(plans) if device == "cpu" else ""
    t = time.perf_counter()
    graphs = [GraphRun(p, work, i) for i, p in enumerate(plans)]
    compile_s = round(time.perf_counter() - t, 3)
    eager, compiled = BundleStep(graphs, "eager"), BundleStep(graphs, "compiled")
    try:
        first = make_set(graphs, device)
        compiled(copy_set(first))
        eager(copy_set(first))
    except BenchFailure:
        raise
    except Exception as exc:
        raise BenchFailure("bundle_code", f"the bundle's code failed on inputs of the recorded shapes: "
                           f"{exc.__class__.__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}") from exc
    result: dict[str, Any] = {"from_bundle": {"graphs": [_graph_row(p) for p in plans],
                                              **record_part(request["bundle_plan"])},
                              "inputs": [f"{g.id}: " + ", ".join(_describe(s) for s in g.inputs) for g in graphs],
                              "grad_mode": None, "eval": False, "compile_s": compile_s}
    if vectors:
        result["from_bundle"]["cpu_vectors"] = vectors
    events.emit("correct", "compiled vs eager on fresh synthetic inputs")
    result["correctness"] = correctness(graphs, device)
    sets, result["rotation"] = rotation(graphs, device, first, request["facts"].get("l2_bytes"))
    events.emit("timing", "timing eager and compiled calls of the bundle's graphs, alternating")
    result["pinned_cpu"] = pin_to_one_cpu()
    reference = host_reference(request)
    gate, loop_gate = HostGate(reference), HostGate(reference)
    steps = {"eager": eager, "compiled": compiled}
    timed = time_calls_pair(steps, sets, device, settings, gate)
    loop_gate.cached_reference_us = gate.reference_us()
    per_call = {name: sorted(xs)[len(xs) // 2] for name, xs in timed.items() if xs}
    looped = _time_loop(steps, sets, device, loop_gate, per_call)
    store_host_reference(request, loop_gate.reference_us())
    for name, step in steps.items():
        # The output code's C++ kernels in profiler records of their names (bench/cpp_kernel_names.py).
        with cpp_kernel_names.named([g.module for g in graphs] if device == "cpu" and name == "compiled" else []):
            extra = {"per_call_us": per_call.get(name)} if "per_call_us" in inspect.signature(profiled).parameters else {}
            result[name] = profiled(request, name, step, sets, timed[name], looped[name], gate, loop_gate, events,
                                    **extra)
    return result


def _time_loop(steps: dict[str, BundleStep], sets: list, device: str, gate: HostGate,
               per_call: dict[str, float]) -> dict[str, list[float]]:
    """Back-to-back batches of about 50 ms (a model's whole training step can take that alone): the
    timing module sizes them from the per-call medians where it can (per_call_us), else ``calls``."""
    params = inspect.signature(time_loop).parameters
    if "per_call_us" in params:
        return time_loop(steps, sets, device, gate, per_call_us=per_call)
    slowest = max(per_call.values(), default=1.0)
    return time_loop(steps, sets, device, gate, calls=int(max(1, min(200, 50_000 / max(slowest, 1.0)))))


def _describe(spec: dict[str, Any]) -> str:
    if spec["kind"] == "saved":
        return f"{spec['name']} (saved by {spec['saved_from']['graph']})"
    if spec["kind"] != "tensor":
        return f"{spec['name']}={spec.get('value')!r}"
    short = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64", "int64": "i64",
             "int32": "i32", "bool": "bool"}.get(spec["dtype"], spec["dtype"])
    text = f"{short}[{', '.join(map(str, spec['shape']))}]"
    return text + (f" {spec['low']}..{spec['high']}" if spec.get("high") is not None else "")


def _graph_row(plan: dict[str, Any]) -> dict[str, Any]:
    return {"graph": plan["graph"], "kind": plan["kind"], "eager_source": plan["eager_source"],
            "int_inputs": [{"name": s["name"], "low": s["low"], "high": s["high"], "why": s.get("why", "")}
                           for s in plan["inputs"] if s.get("high") is not None],
            "saved_inputs": sum(1 for s in plan["inputs"] if s["kind"] == "saved"),
            "random_ops": plan.get("random_ops") or []}
