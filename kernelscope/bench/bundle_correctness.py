"""Correctness of a bench of a bundle alone, inside the bench child (imports torch): the bundle's output
code (compiled) against its FX graphs (eager), judged against the same FX graphs run in float64, like
with like.

Like with like, because a training step's output code does what its FX graphs do not:
- a backward's output code reuses its saved activations' buffers in place (AOTAutograd's donated
  buffers: ``buf3 = relu; del relu  # reuse``), so a forward's outputs are taken as the forward returned
  them, before the next graph runs, never after the whole call (an fp32 MLP's saved ``relu`` read after
  its backward: compiled rmse 14 against eager's 4e-07, a false MISMATCH on correct code);
- an optimizer step writes its parameters and state in place and returns nothing, so each graph's
  inputs are compared as it left them wherever either side wrote one;
- each side's backward takes the saved activations its own forward produced (as the program would).

The reference runs the eager graphs on float64 copies of the inputs with the float dtypes the graphs
hard-code (a ``convert_element_type(x, torch.bfloat16)``, a ``full(..., dtype=torch.float32)``) read as
float64 too; where that fails (an op without float64) a half-precision bundle gets a float32 reference
the same way, else the verdict names why there is none.
"""

from __future__ import annotations

import re
import time
from typing import Any

import torch

from kernelscope.bench.bundle_tensors import copy_set, graph_args, make_set
from kernelscope.bench.correctness import compare

HALF = (torch.float16, torch.bfloat16)
# Outputs of the fused attention ops that are the state of their dropout RNG (philox seed and offset) or a
# debug mask, not a result: with dropout off they are whatever the kernel left there, so they differ
# between any two calls (an H100 Llama training step: "integer results differ" on correct code).
_ATTENTION_STATE = {"_scaled_dot_product_efficient_attention": (2, 3),
                    "_scaled_dot_product_flash_attention": (6, 7, 8),
                    "_scaled_dot_product_cudnn_attention": (6, 7, 8)}


def attention_state_outputs(fx_text: str, outputs: list[str]) -> set[int]:
    """Positions in ``outputs`` (a graph's output names) of an attention op's RNG state (_ATTENTION_STATE),
    read off the printed FX graph: ``getitem_6 = _scaled_dot_product_flash_attention[6]``, the op's
    ``_scaled_dot_product_flash_attention = torch.ops.aten._scaled_dot_product_flash_attention.default(...)``."""
    ops = {m.group(1): m.group(2) for m in re.finditer(
        r'^\s*(\w+)(?:: "[^"]*")? = torch\.ops\.aten\.(\w+)\.default\(', fx_text, re.M)}
    picked = {m.group(1): (m.group(2), int(m.group(3))) for m in re.finditer(
        r'^\s*(\w+)(?:: "[^"]*")? = (\w+)\[(\d+)\]\s*(?:;.*)?$', fx_text, re.M)}
    skip = set()
    for i, name in enumerate(outputs):
        source, index = picked.get(name, ("", -1))
        if index in _ATTENTION_STATE.get(ops.get(source, ""), ()):
            skip.add(i)
    return skip


class GraphResults:
    """What one side's call of every graph left: per graph its outputs as returned and its inputs."""

    def __init__(self) -> None:
        self.tensors: list[torch.Tensor] = []
        self.labels: list[str] = []
        self.inputs: list[list[Any]] = []  # per graph: its own inputs (None for a saved one) as it left them
        self.before: list[list[Any]] = []  # the same, as they went in (the inputs as made: each run copies them)
        self.outputs_per_graph: list[int] = []
        self.state_outputs = 0  # attention RNG state left out (see _ATTENTION_STATE)


SNAPSHOT_BYTES = 256 << 20  # inputs up to this size are compared after the call to see whether the output code wrote them
_IN_PLACE = re.compile(r"torch\.ops\.aten\.\w+_\.")  # copy_, add_, ...: an op that writes its first argument


def writes_inputs(fx_text: str) -> bool:
    """Whether a graph's printed FX code writes anything in place (an optimizer step, running statistics):
    those graphs' inputs are always compared after the call to see what changed; other graphs' only up to
    SNAPSHOT_BYTES (a write there is the output code's alone, a wrong one; a model's weights, gigabytes on
    a GPU, are not read through to look for it). GraphRun asks once."""
    return bool(_IN_PLACE.search(fx_text))


def run_graphs(graphs: list, inputs: list[list[Any]], run, float_as: torch.dtype | None = None,
               written: set[tuple[int, int]] | None = None) -> GraphResults:
    """Every graph in order on a copy of ``inputs`` (floating tensors in ``float_as``), ``run(graph, args)``
    for each: a backward takes its forward's outputs as that side returned them (its saved activations,
    which it may reuse in place), and each graph's outputs are copied the moment it returns. ``inputs``
    stay as made: they are the ``before`` of each input; an input is copied after the call only where the
    call changed it. ``written`` (the reference run): only those (graph, input) are kept, as left."""
    got = GraphResults()
    outs: dict[str, list[Any]] = {}
    with torch.no_grad():
        for gi, (g, made, args) in enumerate(zip(graphs, inputs, copy_set(inputs, float_as))):
            full = graph_args(g, args, outs)
            own = [a if s["kind"] != "saved" and isinstance(a, torch.Tensor) else None for s, a in zip(g.inputs, full)]
            if written is not None:
                own = [t if (gi, ii) in written else None for ii, t in enumerate(own)]
            elif not g.writes_in_place and sum(t.numel() * t.element_size() for t in own if t is not None) > SNAPSHOT_BYTES:
                own = [None] * len(own)  # a model's weights: not read through to look for writes its graph cannot make
            got.before.append([m if t is not None else None for m, t in zip(made, own)])
            result = run(g, full)
            result = list(result) if isinstance(result, (tuple, list)) else [result]
            outs[g.id] = result
            names = g.plan.get("outputs") or []
            count = 0
            state = g.rng_state_outputs
            got.state_outputs += len(state)
            for i, t in enumerate(result):
                if isinstance(t, torch.Tensor) and i not in state:
                    name = names[i] if i < len(names) and names[i] not in ("None", "") else ""
                    got.tensors.append(t.detach().clone())
                    got.labels.append(f"{g.id} output {i}" + (f" ({name})" if name else ""))
                    count += 1
            got.outputs_per_graph.append(count)
            # Kept as this call left them (a later graph may reuse a buffer): copied only where it changed.
            got.inputs.append([None if t is None else m if written is None and _same(m, t) else t.detach().clone()
                               for m, t in zip(made, own)])
    return got


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and torch.equal(a, b)


def _written(sides: list[GraphResults], graphs: list) -> list[tuple[int, int]]:
    """(graph, input) of every input either side wrote in place (a saved activation never counts: the
    backward owns it)."""
    out = []
    for gi in range(len(graphs)):
        for ii in range(len(graphs[gi].inputs)):
            for side in sides:
                b, a = side.before[gi][ii], side.inputs[gi][ii]
                if b is not None and a is not None and b.shape == a.shape and not torch.equal(b, a):
                    out.append((gi, ii))
                    break
    return out


def _add_written(got: GraphResults, graphs: list, written: list[tuple[int, int]]) -> GraphResults:
    for gi, ii in written:
        t = got.inputs[gi][ii]
        got.tensors.append(t if t is not None else torch.empty(0))
        got.labels.append(f"{graphs[gi].id} input {graphs[gi].inputs[ii]['name']} as written in place")
    return got


def _reference(graphs: list, inputs: list[list[Any]], written: list[tuple[int, int]],
               dtypes: set[torch.dtype]) -> tuple[list[torch.Tensor] | None, str, str]:
    """The eager graphs in float64 (else float32 for a half-precision bundle): (tensors in the order the
    comparison lists them, or None; the reference's dtype name; why there is none)."""
    tries = [torch.float64] + ([torch.float32] if dtypes & set(HALF) else [])
    why = ""
    for dtype in tries:
        try:
            got = run_graphs(graphs, inputs, lambda g, a, d=dtype: g.eager_as(d)(*a), float_as=dtype, written=set(written))
        except Exception as exc:
            first = (str(exc).splitlines() or [""])[0][:120]
            why += ("; " if why else "") + f"the FX graphs do not run in {str(dtype).replace('torch.', '')} " \
                                           f"({exc.__class__.__name__}: {first})"
            continue
        return _add_written(got, graphs, written).tensors, str(dtype).replace("torch.", ""), why
    return None, "", why


def _compared(graphs: list, got: GraphResults, written: list[tuple[int, int]]) -> str:
    """Which tensors the verdict covers, in words, graph by graph."""
    wrote = [sum(1 for gi, _ in written if gi == i) for i in range(len(graphs))]
    parts = []
    for g, n, w in zip(graphs, got.outputs_per_graph, wrote):
        what = []
        if n or not w:
            many = "s" if n != 1 else ""
            what.append(f"{n} " + {"forward": f"output{many} as it returned them (saved activations too, before the "
                                              "backward reuses their buffers)",
                                   "backward": f"gradient{many} (from its own side's forward)"}.get(g.plan["kind"],
                                                                                                  f"output{many}"))
        if w:
            what.append(f"{w} input{'s' if w != 1 else ''} as it wrote them in place")
        parts.append(f"{g.id}: " + ", ".join(what))
    if got.state_outputs:
        parts.append(f"left out: {got.state_outputs} attention RNG-state output{'s' if got.state_outputs != 1 else ''} "
                     "(philox seed and offset, not results)")
    return "; ".join(parts) + "; synthetic random inputs"


def correctness(graphs: list, device: str) -> dict[str, Any]:
    seed = int(time.time() * 1000) % (1 << 31)
    torch.manual_seed(seed)
    inputs = make_set(graphs, device)
    eager = run_graphs(graphs, inputs, lambda g, a: g.eager(a))
    compiled = run_graphs(graphs, inputs, lambda g, a: g.compiled(a))
    written = _written([eager, compiled], graphs)
    _add_written(eager, graphs, written)
    _add_written(compiled, graphs, written)
    dtypes = {t.dtype for t in eager.tensors if t.is_floating_point()}
    reference, ref_dtype, why = _reference(graphs, inputs, written, dtypes)
    verdict = compare(eager.tensors, compiled.tensors, eager.labels, reference=reference, no_reference=why,
                      reference_dtype=ref_dtype or "float64")
    verdict["seed"] = seed
    verdict["compared"] = _compared(graphs, eager, written)
    random_ops = sorted({op for g in graphs for op in g.plan.get("random_ops") or []})
    if random_ops:
        why = (f"the graphs draw random numbers ({', '.join(random_ops)}): eager and compiled draw different ones, "
               "so outputs that depend on them differ by design")
        if not verdict.get("ok"):
            # A difference that dropout alone explains is no evidence of a wrong kernel: say so instead of
            # crying MISMATCH (a bundle recorded with dropout off, model.eval(), can be judged).
            verdict["judged"] = False
            verdict["not_judged"] = why + "; record the program with dropout off (model.eval()) to judge it"
        else:
            verdict.setdefault("problems", []).append(why)
    return verdict
