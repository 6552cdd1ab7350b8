"""TORCH_TRACE records of ``torch.export`` and AOTInductor, and the graphs a bundle lists for them.

AOTInductor (``aoti_compile_and_package``) compiles outside any Dynamo frame: its records carry no compile
id. Its graph's code comes as two ``graph_dump`` records (ingest/aoti_code.py joins and reads them), and the
graph it was handed (the exported program's ATen graph) as the ``before_pre_grad_graph`` artifact, which
takes the Dynamo graph's place: the provenance's ``postToPre`` names its nodes. Its AOT, post-grad and
provenance records are those of a JIT compile.

``torch.export.export`` logs the exported program (``exported_program``, whose text holds the graph, its
signature and range constraints) only under ``TORCH_DTRACE`` since torch 2.11; a plain TORCH_TRACE of a
non-strict export holds the tensor descriptions of its inputs alone (``describe_source`` outside any
compile), which ``open`` then names in a note. A strict export (``strict=True``) also logs its Dynamo graph
and guards as a compiled frame (ingest/frames.py lists it). Pure Python: no torch.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kernelscope.bundle.model import FX_DYNAMO, Graph
from kernelscope.ingest.aoti_code import KERNEL_RECORD, WRAPPER_RECORD, is_aoti_code, join_code
from kernelscope.ingest.tracelog import TraceRecord

Gathered = Any  # ingest/records.Gathered, which registers these handlers (named here, not imported: no circle)

AOTI_COMPILE = "aoti"  # what names an AOTInductor graph in place of a Dynamo compile id ("aoti-inference")
_RANGES = re.compile(r"^Range constraints: \{(.*)\}\s*$", re.M)
_INPUT = re.compile(r"^\s*(\w+): USER_INPUT", re.M)
_SIGNATURE_ARG = re.compile(r"(\w+): \"([a-z0-9]+\[[^\]]*\])\"")


def aoti_code(g: Gathered, r: TraceRecord, cid: str) -> None:
    """AOTInductor's wrapper code starts a graph's code; its kernel code (logged right after) joins it."""
    body = r.data.get("graph_dump")
    name = body.get("name") if isinstance(body, dict) else None
    if name == WRAPPER_RECORD:
        g.trace_codes.append((cid, r.payload))
    elif name == KERNEL_RECORD and r.payload.strip():
        for i in range(len(g.trace_codes) - 1, -1, -1):
            c, text = g.trace_codes[i]
            if c == cid and is_aoti_code(text):
                if r.payload not in text:
                    g.trace_codes[i] = (c, join_code(text, r.payload))
                break


def pre_grad_graph(g: Gathered, r: TraceRecord, cid: str) -> None:
    """The graph Inductor was handed outside any Dynamo frame (AOTInductor's exported program): the first
    stands as the frame's Dynamo graph, each compile's own is set on its graph by ``exported_graphs``."""
    if not cid:
        g.dynamo_graphs.setdefault(cid, r.payload)
        g.aoti_programs.append(r.payload)


def exported_program(g: Gathered, r: TraceRecord, cid: str) -> None:
    g.exported.append(r.payload)


def export_input(g: Gathered, r: TraceRecord, cid: str) -> None:
    """A tensor described outside any compile (torch.export's inputs): its source and the stack that made it."""
    body = r.data.get("describe_source")
    if not cid and isinstance(body, dict) and len(g.export_inputs) < 64:
        g.export_inputs.append((str(body.get("source", "")), r.data.get("stack") or []))


HANDLERS = (
    (("graph_dump",), aoti_code),
    (("artifact:before_pre_grad_graph",), pre_grad_graph),
    (("exported_program",), exported_program),
    (("describe_source",), export_input),
)


def exported_graphs(staging: Path, g: Gathered, seen_ids: set[str], write, site) -> list[Graph]:
    """A graph of kind "export" for each exported program the trace holds (its ATen graph as the graph's
    first FX view, its inputs and range constraints as guards, no kernels); ``site(stack)`` is
    ``(call stack, call site)`` of a record's stack. A trace with export's inputs and no program gets a note."""
    from kernelscope.ingest import fx

    out = []
    stack = next((s for _, s in g.export_inputs if s), [])
    # build_bundle wrote AOTInductor's code as output_code.cpp (is_aoti_code, once per code): read that, not the code again
    compiled = any(not graph.compile_id and str(graph.files.get("output_code", "")).endswith(".cpp")
                   for graph in g.bundle.graphs)
    for i, text in enumerate(g.exported):
        gid = f"export-{i}"
        gid = fx.unique_id(gid, seen_ids)
        graph = Graph(id=gid, compile_id=gid, kind="export", guards=export_guards(text))  # no Dynamo compile id
        graph.no_code = ("torch.export: an exported program (ATen graph), compiled by AOTInductor as "
                         f"{AOTI_COMPILE}-inference" if compiled else
                         "torch.export: an exported program (ATen graph); nothing compiled it here "
                         "(torch._inductor.aoti_compile_and_package does)")
        if stack:
            graph.call_stack, graph.call_site = site(stack)
        _name_the_exported_function(graph, text)
        graph.files[FX_DYNAMO] = write(staging, f"graphs/{gid}/fx_export.txt", text)
        out.append(graph)
    aoti = [graph for graph in g.bundle.graphs if graph.compile_id == "" and graph.id.startswith(AOTI_COMPILE + "-")]
    for graph, program in zip(aoti, g.aoti_programs):  # each compiled from the exported program made there
        if stack and not graph.call_site:
            graph.call_stack, graph.call_site = site(stack)
        if program != g.dynamo_graphs.get("") and graph.files.get(FX_DYNAMO):  # a second compile of the job
            write(staging, graph.files[FX_DYNAMO], program)
            _in_program_order(g.bundle.kernels_of(graph.id), program)
        if not graph.code_name:
            _name_the_exported_function(graph, program)
    if not g.exported and g.export_inputs and not g.trace_codes and not g.dynamo_graphs:
        sources = ", ".join(dict.fromkeys(s for s, _ in g.export_inputs if s))
        where = site(stack)[1] if stack else {}
        at = f" at {Path(str(where.get('file', ''))).name}:{where.get('line')}" if where.get("file") else ""
        g.bundle.notes.append(
            f"the trace holds torch.export's inputs ({sources}){at} but not the exported program: torch logs it "
            "only when TORCH_DTRACE names the folder (instead of TORCH_TRACE); a strict export (strict=True) "
            "also logs its Dynamo graph and guards")
    return out


def export_guards(text: str) -> list[dict[str, Any]]:
    """What an exported program checks of its inputs: each user input's dtype and shape, each range constraint."""
    guards: list[dict[str, Any]] = []
    user_inputs = set(_INPUT.findall(text))
    m = re.search(r"def forward\((.*?)\):", text, re.S)
    for name, spec in _SIGNATURE_ARG.findall(m.group(1) if m else ""):
        if name in user_inputs:
            guards.append({"group": "tensor match", "kind": "INPUT", "text": f"{name}: {spec}", "source": name})
    m = _RANGES.search(text)
    for part in re.split(r",\s*(?=\w+:)", m.group(1)) if m and m.group(1).strip() else []:
        guards.append({"group": "shape", "kind": "RANGE", "text": part.strip(), "source": part.split(":")[0].strip()})
    return guards


def _name_the_exported_function(graph: Graph, program: str) -> None:
    """An AOTInductor graph compiled no Dynamo frame: it names the function of the user's code its nodes came
    from (the module's ``forward``), at the first of its lines (the trace does not give the ``def`` line)."""
    from kernelscope.ingest import fx

    users = [n.user for n in fx.fx_nodes(program) if n.user is not None and fx.frame_kind(n.user.file) == "user"]
    if users:
        first = min((u for u in users if (u.file, u.function) == (users[0].file, users[0].function)),
                    key=lambda u: u.line)
        graph.code_name, graph.code_file, graph.code_line = first.function, first.file, first.line


def _in_program_order(kernels, program: str) -> None:
    """Each kernel's exported-program nodes in that program's order (they were placed in the first's)."""
    from kernelscope.ingest import fx

    place = {n.name: n.line for n in fx.fx_nodes(program)}
    for k in kernels:
        k.fx_nodes_pre = sorted(k.fx_nodes_pre, key=lambda n: place.get(n, 1 << 30))
        for info in k.launch_info:
            info.fx_nodes_pre = sorted(info.fx_nodes_pre, key=lambda n: place.get(n, 1 << 30))
