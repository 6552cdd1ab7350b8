"""What a bench of a bundle alone runs (pure Python, no torch): per graph, its output code (the
compiled side) and its AOT or post-grad FX graph (the eager side), the inputs to make for both from
the recorded sizes, strides and dtypes, and the files a user must agree to run.

A bundle has no function to rerun when it was read from a TORCH_TRACE (``open``), or made by
``run`` / ``record``: only its own code is there. Inductor's output code carries ``get_args()``
(``rand_strided(size, stride, device=, dtype=)`` per input), read as text, never run, and integer
inputs are made valid for the ops the FX graph feeds them to (bench/bundle_inputs.py; the printed FX
graph is read and checked in bench/printed_fx.py); a backward graph's saved activations come from its
forward graph's outputs (matched by name), so layer-norm statistics, softmax outputs and dropout masks
are real.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any

from kernelscope.bench.bundle_inputs import InputPlan, int_range, is_integer, parse_get_args
from kernelscope.bench.printed_fx import PlanError, parse_fx
from kernelscope.bundle import provenance
from kernelscope.bundle.io import inside, read_text
from kernelscope.bundle.model import FX_AOT, FX_POST_GRAD, Bundle

SYNTHETIC = ("synthetic inputs: random values of the recorded shapes, strides and dtypes (integer inputs in the "
             "range the ops that read them accept); a backward graph's saved activations come from its forward")
EAGER_SOURCES = (FX_AOT, FX_POST_GRAD)  # the graph eager runs: AOT (ATen ops), else post-grad


@dataclass
class GraphPlan:
    graph: str
    kind: str
    compile_id: str
    output_code: str  # bundle-relative paths of the files run
    eager_fx: str
    eager_source: str  # FX_AOT or FX_POST_GRAD
    device: str
    inputs: list[InputPlan] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)  # the names the eager graph returns, in order
    random_ops: list[str] = field(default_factory=list)

    def to_dict(self, root: str) -> dict[str, Any]:
        return {"graph": self.graph, "kind": self.kind, "compile_id": self.compile_id, "device": self.device,
                "output_code": str(inside(root, self.output_code)), "eager_fx": str(inside(root, self.eager_fx)),
                "eager_source": self.eager_source, "inputs": [i.to_dict() for i in self.inputs],
                "outputs": self.outputs, "random_ops": self.random_ops}


@dataclass
class BundlePlan:
    graphs: list[GraphPlan] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # one line per graph left out, naming why

    @property
    def device(self) -> str:
        return self.graphs[0].device if self.graphs else ""

    def files(self) -> list[str]:
        """Bundle-relative paths of the code the bench would run."""
        return [p for g in self.graphs for p in (g.output_code, g.eager_fx)]


# ---------------------------------------------------------------- who may run it

def has_function(bundle: Bundle) -> bool:
    """Whether the bundle names a function the bench can compile again (a ``capture``)."""
    return bool(bundle.target.get("file") and bundle.target.get("name"))


def computed_counts(bundle: Bundle) -> dict[str, Any]:
    """The computed counts every view shows for this bundle, from the graph its bench runs as eager: the
    AOT (else post-grad) graphs for a bundle benched alone, Dynamo's for a function to rerun. One source
    before and after a bench (a run bundle read 86 kernels from fx-dynamo, then 109 from fx-aot)."""
    from kernelscope.bench.counts import counts_dict

    return counts_dict(bundle) if has_function(bundle) else counts_dict(bundle, eager_from=EAGER_SOURCES)


def written_here(bundle: Bundle) -> bool:
    """Whether this machine made the bundle's code: a record ``run`` or ``record`` kept in this user's
    cache, keyed by the code's content (bundle/provenance.py). What the manifest says of itself (its
    origin, a host name) proves nothing: anyone can write it."""
    return provenance.made_here(bundle)


def consent_line(bundle: Bundle, plan: BundlePlan) -> str:
    """The one line that asks before running code this machine did not write."""
    files = plan.files()
    shown = ", ".join(files[:4]) + (f" and {len(files) - 4} more" if len(files) > 4 else "")
    who = ("the trace's author" if bundle.target.get("kind") == "torch_trace" or bundle.target.get("origin") == "open"
           else "the bundle's sender")
    return (f"{bundle.root}: this bundle has no function to rerun, so the bench runs its own code, which {who} "
            f"wrote: {shown} (in {bundle.root}); "
            "read them, then pass --run-bundle-code to bench it")


# ---------------------------------------------------------------- the plan

def plan_bundle(bundle: Bundle) -> BundlePlan:
    """Per graph: the files both sides run and the inputs to make; graphs that cannot run are
    left out with a reason (a PlanError when none can)."""
    plan = BundlePlan()
    outputs_of: dict[str, tuple[str, list[str]]] = {}  # compile id -> (forward graph id, its outputs)
    for g in bundle.graphs:
        try:
            gp = _plan_graph(bundle, g, outputs_of)
        except PlanError as exc:
            plan.skipped.append(f"{g.id}: {exc}")
            continue
        if gp.kind == "forward":
            outputs_of[gp.compile_id] = (gp.graph, gp.outputs)
        plan.graphs.append(gp)
    if not plan.graphs:
        why = "; ".join(plan.skipped) or "it has no graph"
        raise PlanError(f"{bundle.root}: no graph of this bundle can be benched from its own code: {why}")
    devices = sorted({g.device for g in plan.graphs})
    if len(devices) > 1:
        raise PlanError(f"{bundle.root}: its graphs ran on several devices ({', '.join(devices)}); bench one at a time")
    return plan


def subset(bundle: Bundle, plan: BundlePlan) -> Bundle:
    """The bundle with only the graphs the plan runs (and their kernels): what the counts and the
    per-launch match read, so a graph left out does not leave launches nothing ran."""
    keep = {g.graph for g in plan.graphs}
    out = replace(bundle, graphs=[g for g in bundle.graphs if g.id in keep],
                  kernels=[k for k in bundle.kernels if k.graph in keep])
    out.root = bundle.root
    return out


def _plan_graph(bundle: Bundle, g, outputs_of: dict[str, tuple[str, list[str]]]) -> GraphPlan:
    code_path = g.files.get("output_code")
    code = read_text(bundle, code_path)
    if not code.strip():  # another backend's frame, a failed compile: the graph says why
        raise PlanError("no output code in the bundle" + (f" ({g.no_code})" if g.no_code else ""))
    if "def call(" not in code:
        raise PlanError("its output code has no call(args) to run")
    source = next((k for k in EAGER_SOURCES if read_text(bundle, g.files.get(k)).strip()), None)
    if source is None:
        raise PlanError("no AOT or post-grad FX graph in the bundle for the eager side")
    fx_text = read_text(bundle, g.files[source])
    fx = parse_fx(fx_text)
    recorded = parse_get_args(code)
    if recorded is None:
        raise PlanError("its output code has no get_args() with the recorded input sizes")
    if len(recorded) != len(fx.placeholders):
        raise PlanError(f"its output code's inputs ({', '.join(a.name for a in recorded)}) are not the {source} "
                        f"graph's ({', '.join(fx.placeholders)})")
    devices = {a.device for a in recorded if a.kind == "tensor"}
    if len(devices) > 1:
        raise PlanError(f"its inputs live on several devices ({', '.join(sorted(devices))})")
    device = devices.pop() if devices else ("cuda" if "triton" in code else "cpu")
    forward = outputs_of.get(g.compile_id) if g.kind == "backward" else None
    for a in recorded:
        if forward and a.kind == "tensor" and not a.name.startswith("tangents_") and a.name in forward[1]:
            a.kind, a.saved_from = "saved", {"graph": forward[0], "output": forward[1].index(a.name)}
        elif forward and a.kind in ("int", "float") and a.name in forward[1]:
            a.kind, a.saved_from = "saved", {"graph": forward[0], "output": forward[1].index(a.name)}
        elif a.kind == "tensor" and is_integer(a.dtype):
            int_range(a, fx, recorded)
    return GraphPlan(graph=g.id, kind=g.kind, compile_id=g.compile_id, output_code=code_path,
                     eager_fx=g.files[source], eager_source=source, device=device, inputs=recorded,
                     outputs=fx.outputs, random_ops=sorted(fx.random_ops))


def files_exist(bundle: Bundle, plan: BundlePlan) -> list[str]:
    """The plan's files that are missing on disk (a bundle copied in part)."""
    return [p for p in plan.files() if not os.path.isfile(inside(bundle.root, p))]


# ---------------------------------------------------------------- the request

def bundle_request(bundle: Bundle, device: str | None, run_code: bool) -> tuple[BundlePlan, dict[str, Any]]:
    """The plan and the part of the bench request that runs it; PlanError (one line) when the bundle
    cannot be benched alone, on ``device``, or without the user's consent to run its code."""
    plan = plan_bundle(bundle)
    missing = files_exist(bundle, plan)
    if missing:
        raise PlanError(f"{bundle.root}: the bundle lacks {', '.join(missing[:3])}; it was copied in part")
    if device and device != plan.device:
        raise PlanError(f"{bundle.root}: its output code was compiled for {plan.device}; it runs only there "
                        f"(--device {plan.device})")
    if not run_code and not written_here(bundle):
        raise PlanError(consent_line(bundle, plan))
    return plan, {"bundle_plan": {"graphs": [g.to_dict(str(bundle.root)) for g in plan.graphs],
                                  "skipped": plan.skipped}}


def record_part(plan_request: dict[str, Any]) -> dict[str, Any]:
    """What the stored record says about a bench of the bundle alone (beside the child's rows)."""
    return {"synthetic": SYNTHETIC, "skipped": plan_request.get("skipped") or [],
            "ran": "per graph: the output code's call(args) (compiled) and the "
                   + "/".join(sorted({g["eager_source"] for g in plan_request["graphs"]})) + " FX graph (eager)"}


def consent_question(bundle: Bundle) -> str:
    """The UI's question before a bench runs the bundle's own code ('' when nothing needs asking:
    a function to rerun, code this machine wrote, or a bundle that cannot be benched alone anyway)."""
    if has_function(bundle) or written_here(bundle):
        return ""
    try:
        plan = plan_bundle(bundle)
    except PlanError:
        return ""  # the bench says why, as the CLI does
    files = plan.files()
    shown = "\n".join(f"  {p}" for p in files[:8]) + (f"\n  … and {len(files) - 8} more" if len(files) > 8 else "")
    return ("This bundle has no function to rerun: the bench runs its own output code and FX graphs, which "
            f"whoever made it wrote (in {bundle.root}):\n{shown}\non synthetic inputs of the recorded shapes. "
            "Run them? y/n")


def record_lines(rec: dict[str, Any]) -> list[str]:
    """What the bench table says of a bench of the bundle alone ([] for a function's bench)."""
    alone = rec.get("from_bundle")
    if not alone:
        return []
    out = [f"bench of the bundle alone (no function to rerun): {alone.get('ran', '')}",
           f"  {alone.get('synthetic', SYNTHETIC)}"]
    for g in alone.get("graphs") or []:
        parts = [f"eager from {g.get('eager_source')}"]
        if g.get("saved_inputs"):
            parts.append(f"{g['saved_inputs']} saved activations from its forward")
        for i in g.get("int_inputs") or []:
            parts.append(f"{i['name']} in [{i['low']}, {i['high']}): {i.get('why', '')}")
        if g.get("random_ops"):
            parts.append("draws random numbers (" + ", ".join(g["random_ops"]) + ")")
        out.append(f"  {g.get('graph')} ({g.get('kind')}): " + "; ".join(parts))
    for line in alone.get("skipped") or []:
        out.append(f"  left out: {line}")
    if isinstance(alone.get("cpu_vectors"), str) and alone["cpu_vectors"]:
        out.append(f"  {alone['cpu_vectors']}")
    return out
