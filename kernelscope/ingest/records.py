"""TORCH_TRACE records by kind: one small handler per kind, registered in one table.

``build_bundle`` walks the records once and hands each to the handler of its kind (tlparse's
``StructuredLogParser`` + ``default_parsers()`` is the model). A handler files what its record
says into ``Gathered`` (the texts graphs are assembled from) or straight into the bundle (breaks,
recompiles, failed compiles). A new record kind = one handler and one line in ``HANDLERS``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from kernelscope.bundle.model import Bundle, GraphBreak, Recompile
from kernelscope.ingest import export_records
from kernelscope.ingest.tracelog import TraceRecord

_AOT_KINDS = {"aot_inference_graph": "inference", "aot_forward_graph": "forward", "aot_backward_graph": "backward"}


@dataclass
class Gathered:
    """What the records of one capture say, by compile id, before graphs are assembled."""

    bundle: Bundle
    dynamo_graphs: dict[str, str] = field(default_factory=dict)
    aot_graphs: dict[tuple[str, str], str] = field(default_factory=dict)  # (compile id, forward/...) -> text
    joint_graphs: dict[str, str] = field(default_factory=dict)
    post_grad: dict[str, list[str]] = field(default_factory=dict)
    trace_codes: list[tuple[str, str]] = field(default_factory=list)  # output code in emission order
    provenance: dict[str, list[dict]] = field(default_factory=dict)
    stacks: dict[str, list[dict]] = field(default_factory=dict)
    code_objects: dict[str, dict] = field(default_factory=dict)
    exported: list[str] = field(default_factory=list)  # torch.export's programs (ingest/export_records.py)
    export_inputs: list[tuple[str, list]] = field(default_factory=list)  # (source, stack) outside any compile
    aoti_programs: list[str] = field(default_factory=list)  # the graph each AOTInductor compile was handed
    metrics: dict[str, dict] = field(default_factory=dict)  # compile id -> its compilation_metrics
    errors: dict[str, str] = field(default_factory=dict)  # compile id -> the traceback Dynamo logged (dynamo_error)


Handler = Callable[[Gathered, TraceRecord, str], None]  # (gathered, record, compile id)


def _dynamo_graph(g: Gathered, r: TraceRecord, cid: str) -> None:
    g.dynamo_graphs[cid] = r.payload


def _aot_graph(g: Gathered, r: TraceRecord, cid: str) -> None:
    g.aot_graphs[(cid, _AOT_KINDS[r.kind])] = r.payload


def _joint_graph(g: Gathered, r: TraceRecord, cid: str) -> None:
    g.joint_graphs[cid] = r.payload


def _post_grad_graph(g: Gathered, r: TraceRecord, cid: str) -> None:
    g.post_grad.setdefault(cid, []).append(r.payload)


def _output_code(g: Gathered, r: TraceRecord, cid: str) -> None:
    g.trace_codes.append((cid, r.payload))


def _provenance(g: Gathered, r: TraceRecord, cid: str) -> None:
    g.provenance.setdefault(cid, []).append(_json(r.payload))


def _stack_traces(g: Gathered, r: TraceRecord, cid: str) -> None:
    g.stacks.setdefault(cid, []).append(_json(r.payload))


def _dynamo_start(g: Gathered, r: TraceRecord, cid: str) -> None:
    g.code_objects[cid] = r.data.get("dynamo_start", {})


def _graph_break_record(g: Gathered, r: TraceRecord, cid: str) -> None:
    g.bundle.graph_breaks.append(graph_break(r.payload, cid))


def _compilation_metrics(g: Gathered, r: TraceRecord, cid: str) -> None:
    metrics = r.data.get("compilation_metrics", {})
    reason = metrics.get("recompile_reason")
    if reason:
        g.bundle.recompiles.append(Recompile(compile_id=cid, reason=str(reason).strip(),
                                             file=metrics.get("co_filename") or "", line=metrics.get("co_firstlineno")))
    if isinstance(metrics, dict):
        g.metrics[cid] = metrics  # a failure is told with its graph (ingest/frames.py)


def _dynamo_error(g: Gathered, r: TraceRecord, cid: str) -> None:
    g.errors[cid] = r.payload


def default_handlers() -> dict[str, Handler]:
    """The record kinds a bundle is built from, each with its handler."""
    table: list[tuple[tuple[str, ...], Handler]] = [
        (("dynamo_output_graph",), _dynamo_graph),
        (tuple(_AOT_KINDS), _aot_graph),
        (("aot_joint_graph",), _joint_graph),
        (("artifact:inductor_post_grad_graph",), _post_grad_graph),
        (("inductor_output_code",), _output_code),
        (("artifact:inductor_provenance_tracking_node_mappings",), _provenance),
        (("artifact:inductor_provenance_tracking_kernel_stack_traces",), _stack_traces),
        (("dynamo_start",), _dynamo_start),
        (("artifact:dynamo_graph_break_reason",), _graph_break_record),
        (("compilation_metrics",), _compilation_metrics),
        (("artifact:dynamo_error",), _dynamo_error),
    ]
    table += export_records.HANDLERS  # torch.export and AOTInductor
    return {kind: handler for kinds, handler in table for kind in kinds}


HANDLERS = default_handlers()


def gather(records: list[TraceRecord], bundle: Bundle, compile_id: Callable[[TraceRecord], str],
           handlers: dict[str, Handler] = HANDLERS) -> Gathered:
    """Each record to the handler of its kind; kinds without one are skipped."""
    g = Gathered(bundle=bundle)
    for r in records:
        handler = handlers.get(r.kind)
        if handler is not None:
            handler(g, r, compile_id(r))
    return g


def _json(payload: str) -> dict:
    try:
        value = json.loads(payload)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def graph_break(payload: str, cid: str) -> GraphBreak:
    """A graph break from Dynamo's reason text: where (file:line), why, and the line of code."""
    gb = GraphBreak(reason="", detail=payload.strip(), compile_id=cid)
    m = re.search(r"Graph break in user code at (.+):(\d+)", payload)
    if m:
        gb.file, gb.line = m.group(1), int(m.group(2))
    m = re.search(r"Graph Break Reason: (.*)", payload)
    lines = payload.split("\n")
    if m:
        gb.reason = m.group(1).strip()
        # The newer format puts the specific explanation on the lines that follow.
        idx = next(i for i, line in enumerate(lines) if "Graph Break Reason:" in line)
        for extra in lines[idx + 1: idx + 4]:
            if extra.strip().startswith("Explanation:"):
                gb.reason = extra.strip()[len("Explanation:"):].strip()
                break
    elif lines:
        gb.reason = lines[0].strip()
    m = re.findall(r'File "([^"]+)", line (\d+), in [^\n]+\n\s+(.+)', payload.split("Traceback (most recent call last)")[0])
    if m:
        last = m[-1]
        if not gb.file:
            gb.file, gb.line = last[0], int(last[1])
        gb.code = last[2].strip()
    return gb
