"""Assemble a bundle from raw torch.compile artifacts: TORCH_TRACE logs, output code, Triton's cache.

Used both by the capture child (on its private trace and cache folders) and by
``kernelscope open`` (on anyone's TORCH_TRACE folder). Pure Python: no torch.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelscope.bundle.model import (
    FX_AOT,
    FX_AOT_JOINT,
    FX_DYNAMO,
    FX_POST_GRAD,
    Bundle,
    Graph,
    Kernel,
    LaunchInfo,
    TritonVariant,
    UserLine,
)
from kernelscope.ingest import aoti_code, dynamic, export_records, fx
from kernelscope.ingest.dtypes import parse_placeholders
from kernelscope.ingest.frames import add_codeless_graphs
from kernelscope.ingest.output_code import kind_of, parse_output_code
from kernelscope.ingest.records import gather
from kernelscope.ingest.stderr_tables import annotate_from_stderr
from kernelscope.ingest.tracelog import TraceLog, TraceRecord
from kernelscope.ingest.triton_cache import CacheEntry, dedupe_variants, scan_cache


@dataclass
class RawCapture:
    """What a compile left behind, before it is organised into a bundle."""

    traces: list[TraceLog] = field(default_factory=list)
    # Exact output-code log messages in emission order, as (compile id, code); None: take the trace's.
    output_codes: list[tuple[str, str]] | None = None
    triton_caches: list[Path] = field(default_factory=list)
    stderr_text: str = ""  # for AUTOTUNE tables and recompile messages
    user_file: str = ""  # the user's source file as the compile saw it
    best_configs: list[dict[str, Any]] = field(default_factory=list)  # Inductor's *.best_config files
    # ``kernelscope open`` builds one compiled frame at a time (ingest/stream.py): what the whole log says
    # comes from there instead (the Triton cache read once, kernel names counted over every frame, the
    # rank prefix decided for the job), and the stderr's bundle-wide tables are read once after the frames.
    cache_entries: list[CacheEntry] | None = None
    name_counts: dict[str, int] | None = None
    rank_prefix: bool | None = None
    one_frame: bool = False


@dataclass
class _GraphParts:
    graph: Graph
    code: str
    aoti: bool = False  # AOTInductor's C++ model, not a JIT compile's Python output code
    post_grad: str = ""
    provenance: dict[str, Any] = field(default_factory=dict)
    stack_traces: dict[str, list[str]] = field(default_factory=dict)


def _slug(compile_id: str, kind: str) -> str:
    return compile_id.replace("/", "-").replace("_", "-") + "-" + kind


def _write(staging: Path, rel: str, text: str) -> str:
    path = staging / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return rel


def build_bundle(staging: Path, raw: RawCapture, bundle: Bundle) -> Bundle:
    """Fill ``bundle`` from ``raw``, writing its files into ``staging``; returns the bundle."""
    records: list[TraceRecord] = [r for t in raw.traces for r in t.records]
    # Logs of several ranks (one file each): compile ids repeat across ranks, so prefix the rank.
    rank_of = {id(t): t.filed_rank() for t in raw.traces}
    multi_rank = len(set(rank_of.values())) > 1 if raw.rank_prefix is None else raw.rank_prefix
    for t in raw.traces:
        for r in t.records:
            if t.rank is not None or r.rank is None:  # the file's rank over a record's own (a copied log)
                r.rank = rank_of[id(t)]

    def compile_id(r: TraceRecord) -> str:
        return (f"rank{r.rank}/" if multi_rank else "") + r.compile_id

    g = gather(records, bundle, compile_id)
    dynamo_graphs, code_objects = g.dynamo_graphs, g.code_objects
    trace_codes = g.trace_codes
    codes = raw.output_codes if raw.output_codes is not None else trace_codes
    strings = {}
    for t in raw.traces:
        strings.update(t.strings)

    def place(graph: Graph, cid: str) -> None:  # the compiled function and where the compile came from
        start = code_objects.get(cid) or code_objects.get(cid.split("_")[0], {})  # a restarted attempt: 0/0_1
        frames = start.get("stack") or []
        if frames:
            top = frames[-1]
            graph.code_name = str(top.get("name", ""))
            graph.code_file = strings.get(top.get("filename"), str(top.get("filename", "")))
            graph.code_line = top.get("line")
            graph.call_stack, graph.call_site = call_site(frames, strings)

    parts: list[_GraphParts] = []
    seen_ids: set[str] = set()
    per_cid_index: dict[str, int] = {}
    for cid, code in codes:
        i = per_cid_index.get(cid, 0)
        per_cid_index[cid] = i + 1
        m = re.search(r"#\s*AOT ID:\s*\['([^']*)'\]", code)
        kind = m.group(1).split("_", 1)[1] if m and "_" in m.group(1) else "inference"
        gid = _slug(cid or export_records.AOTI_COMPILE, kind)  # AOTInductor compiles outside any Dynamo frame
        gid = fx.unique_id(gid, seen_ids)
        graph = Graph(id=gid, compile_id=cid, kind=kind)
        place(graph, cid)
        p = _GraphParts(graph=graph, code=code, aoti=aoti_code.is_aoti_code(code))
        pg = g.post_grad.get(cid, [])
        if i < len(pg):
            p.post_grad = pg[i]
        if i < len(g.provenance.get(cid, [])):
            p.provenance = g.provenance[cid][i]
        if i < len(g.stacks.get(cid, [])):
            p.stack_traces = g.stacks[cid][i]
        base = f"graphs/{gid}"
        graph.files["output_code"] = _write(staging, f"{base}/output_code.{'cpp' if p.aoti else 'py'}", code)
        if cid in dynamo_graphs:
            graph.files[FX_DYNAMO] = _write(staging, f"{base}/fx_dynamo.txt", dynamo_graphs[cid])
        if cid in g.joint_graphs:
            graph.files[FX_AOT_JOINT] = _write(staging, f"{base}/fx_aot_joint.txt", g.joint_graphs[cid])
        if (cid, kind) in g.aot_graphs:
            graph.files[FX_AOT] = _write(staging, f"{base}/fx_aot_{kind}.txt", g.aot_graphs[(cid, kind)])
        if p.post_grad:
            graph.files[FX_POST_GRAD] = _write(staging, f"{base}/fx_post_grad.txt", p.post_grad)
        parts.append(p)

    cache_entries = raw.cache_entries if raw.cache_entries is not None else triton_cache_entries(raw.triton_caches)
    name_counts = raw.name_counts if raw.name_counts is not None else triton_name_counts(p.code for p in parts)
    for p in parts:
        _add_kernels(staging, bundle, p, cache_entries, dynamo_graphs.get(p.graph.compile_id, ""), raw, name_counts)
        bundle.graphs.append(p.graph)
    # Frames another backend compiled, and compiles that failed: their Dynamo graph, no kernels, and why.
    bundle.graphs += add_codeless_graphs(staging, g, {cid for cid, _ in codes}, seen_ids, _write, _slug, place)
    if not raw.one_frame:
        annotate_from_stderr(bundle, raw.stderr_text)
    dynamic.annotate(bundle, records, raw.stderr_text, raw.user_file, strings, compile_id, dynamo_graphs)
    bundle.graphs += export_records.exported_graphs(staging, g, seen_ids, _write, lambda st: call_site(st, strings))
    _annotate_compile_and_fusion(staging, raw, bundle, records, compile_id,
                                 {id(t): f"rank{rank_of[id(t)]}/" for t in raw.traces} if multi_rank else {})
    return bundle


def call_site(frames: list[Any], strings: dict[int, str]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A dynamo_start stack as (every frame, outermost first; where the compile came from): the innermost
    frame of the user's code below the compiled one (a script's ``loss = model(x)``, not transformers'
    decorator nor torch's ``_call_impl``), else the compiled frame itself (a captured function: the
    harness that called it is kernelscope's)."""
    stack = []
    for f in frames:
        if not isinstance(f, dict):
            continue
        name = f.get("filename")
        file = strings.get(name, "") if isinstance(name, int) else str(name or "")
        line = f.get("line") if isinstance(f.get("line"), int) and not isinstance(f.get("line"), bool) else None
        stack.append({"file": file, "line": line, "function": str(f.get("name") or ""),
                      "code": " ".join(str(f.get("loc") or "").split()), "kind": fx.frame_kind(file)})
    site = next((dict(f) for f in reversed(stack[:-1]) if f["kind"] == "user"), dict(stack[-1]) if stack else {})
    site.pop("kind", None)
    return stack, site


def triton_cache_entries(folders: list[Path]) -> list[CacheEntry]:
    """Every compiled variant in these Triton cache folders, duplicates dropped."""
    entries: list[CacheEntry] = []
    for folder in folders:
        entries.extend(scan_cache(folder))
    return dedupe_variants(entries)


_TRITON_DEF = re.compile(r"^(\w+) = async_compile\.triton\(", re.M)


def triton_name_counts(codes) -> dict[str, int]:
    """How many output codes define each Triton kernel name (a name in one only is matched to the cache by name)."""
    counts: dict[str, int] = {}
    for code in codes:
        for name in set(_TRITON_DEF.findall(code)):
            counts[name] = counts.get(name, 0) + 1
    return counts


def _annotate_compile_and_fusion(staging: Path, raw: RawCapture, bundle: Bundle, records: list[TraceRecord],
                                 compile_id, rank_prefix: dict[int, str]) -> None:
    """Where the compile time went (the trace's timed phases) and why kernels were not fused (the
    fusion log on stderr, when the capture turned it on): ``extra["compile_time"]``, ``extra["fusion"]``.
    ``rank_prefix``: per trace (by id) the prefix its compile ids take in a job of several ranks (torch's
    phase events name the compile without its rank)."""
    from kernelscope.ingest.compile_time import compile_time_summary
    from kernelscope.ingest.fusion import fusion_summary

    events = []
    for t in raw.traces:
        prefix = rank_prefix.get(id(t), "")
        for e in t.chromium_events:
            if prefix and e["args"].get("compile_id"):
                e = {**e, "args": {**e["args"], "compile_id": prefix + str(e["args"]["compile_id"])}}
            events.append(e)
    timed = compile_time_summary(events, records, bundle, compile_id)
    if timed:
        bundle.extra["compile_time"] = timed
    if raw.one_frame and raw.stderr_text:
        return  # the fusion log is read once for the whole job (ingest/stream.py); without one, pairs are per graph
    fusion = fusion_summary(raw.stderr_text, bundle, staging)
    if fusion:
        bundle.extra["fusion"] = fusion


def _dedupe(items: list[str]) -> list[str]:
    out: list[str] = []
    for x in items:
        if x and x not in out:
            out.append(x)
    return out


def _add_kernels(staging: Path, bundle: Bundle, p: _GraphParts, cache: list[CacheEntry], dynamo_text: str,
                 raw: RawCapture, name_counts: dict[str, int]) -> None:
    graph = p.graph
    placeholders = parse_placeholders(p.post_grad) if p.post_grad else {}
    try:
        code = (aoti_code.parse_aoti_code(p.code, p.post_grad) if p.aoti
                else parse_output_code(p.code, placeholders))
    except (SyntaxError, ValueError, RecursionError) as exc:  # a damaged log: keep the text, list no kernels
        where = f" at line {exc.lineno}" if isinstance(exc, SyntaxError) and exc.lineno else ""
        bundle.notes.append(f"graph {graph.id}: its output code does not parse as Python{where}; "
                            "its kernels are not listed")
        return
    graph.__dict__["_parsed_code"] = code  # for the fusion pairs of this build (ingest/fusion.py), parsed once
    post_nodes = {n.name: n for n in fx.fx_nodes(p.post_grad)} if p.post_grad else {}
    pre_nodes = {n.name: n for n in fx.fx_nodes(dynamo_text)} if dynamo_text else {}
    cpp_to_post = p.provenance.get("cppCodeToPost", {}) if p.provenance else {}
    post_to_pre = p.provenance.get("postToPre", {}) if p.provenance else {}
    by_id: dict[str, Kernel] = {}
    for index, launch in enumerate(code.launches):
        kdef = code.defs.get(launch.name)
        if launch.lang == "extern":
            kid = f"{graph.id}/{launch.name}@{index}"
        else:
            kid = f"{graph.id}/{launch.name}"
        if kid in by_id:
            k = by_id[kid]
            k.launches += 1
        else:
            k = Kernel(id=kid, graph=graph.id, name=launch.name, kind=kind_of(launch.name, launch.lang),
                       lang=launch.lang, launch_index=index, call_line=launch.line, call_text=launch.text,
                       def_line=kdef.def_line if kdef else None, kernel_path=kdef.kernel_path if kdef else "")
            by_id[kid] = k
            bundle.kernels.append(k)
            graph.kernel_ids.append(kid)
            if kdef:
                ext = "py" if kdef.lang == "triton" else "cpp"
                k.source = _write(staging, f"kernels/{graph.id}/{kdef.name}.{ext}", kdef.source)
            k.buffers = launch.buffers
        # Fused nodes: Inductor's provenance tracking first, the output code's comments otherwise.
        info = LaunchInfo(index=index, call_line=launch.line, handle=launch.handle)
        nodes = cpp_to_post.get(launch.handle) if launch.handle else None
        if nodes:
            k.provenance = "provenance"
            info.fx_nodes = _in_graph_order(_dedupe(nodes), post_nodes)
            pre = [x for n in nodes for x in post_to_pre.get(n, [])]
            info.fx_nodes_pre = _in_graph_order(_dedupe(pre), pre_nodes)
        else:
            k.provenance = k.provenance or "comments"
            fragment = [n for n, _ in fx.fragment_nodes(kdef.comments)] if kdef else []
            info.fx_nodes = _dedupe(fragment or [n for n in launch.comment_nodes if n in post_nodes])
            info.fx_nodes_pre = _dedupe([n for n in (launch.comment_nodes or
                                                     (kdef.comment_nodes if kdef else [])) if n])
        k.fx_nodes = _dedupe(k.fx_nodes + info.fx_nodes)
        k.fx_nodes_pre = _dedupe(k.fx_nodes_pre + info.fx_nodes_pre)
        aten = launch.comment_aten or (kdef.comment_aten if kdef else [])
        library_nodes = [n for n in info.fx_nodes if n in post_nodes and _is_extern_op(post_nodes[n].target)]
        if k.lang == "extern" and library_nodes:
            # Above a library call Inductor's comment lists every op up the chain that feeds it (an addmm
            # after a layer norm: aten.embedding ... aten.native_layer_norm); the call runs its library op.
            aten = [_aten_of(post_nodes[n].target) for n in library_nodes]
        if not aten:
            aten = [_aten_of(post_nodes[n].target) for n in k.fx_nodes if n in post_nodes]
        k.aten_ops = _dedupe(k.aten_ops + [a for a in aten if a])
        # The whole stack of each fused node: Inductor's per-launch stack traces, else the FX graphs'
        # "# File:" comments (the innermost frame only).
        stacks = [fx.stack_frames(t) for t in p.stack_traces.get(launch.handle, [])] if launch.handle else []
        stacks = [st for st in stacks if st]
        if not stacks:
            commented = [post_nodes[n].user for n in info.fx_nodes if n in post_nodes and post_nodes[n].user]
            commented += [pre_nodes[n].user for n in info.fx_nodes_pre if n in pre_nodes and pre_nodes[n].user]
            for u in commented:
                kind = fx.frame_kind(u.file)
                if kind != "skip":
                    stacks.append([UserLine(file=u.file, line=u.line, code=u.code, function=u.function,
                                            library=kind == "library")])
        for st in stacks:
            user, lib = fx.innermost(st)
            if user is not None:
                _add_line(info.user_lines, user)
            if lib is not None:
                _add_line(info.library_lines, lib)
            for f in st:
                _add_line(k.frames, f)
        for u in info.user_lines:
            _add_line(k.user_lines, u)
        for u in info.library_lines:
            _add_line(k.library_lines, u)
        k.launch_info.append(info)
        for lines in (k.user_lines, k.library_lines, k.frames):
            lines.sort(key=lambda u: (u.file, u.line))
        if k.lang == "triton" and not k.triton:
            k.triton = _variants(staging, graph.id, k, cache, raw.best_configs, name_is_unique=name_counts.get(k.name, 1) == 1)
            grid = launch_grid(kdef, launch.args, next((v.config for v in k.triton if v.chosen), {}))
            if grid:
                bundle.extra.setdefault("grids", {})[k.id] = grid
    _nodes_from_stack_lines(graph, bundle, p, post_nodes, code, raw)


# Ops Inductor hands to a library (extern calls): a node of these is never fused into a generated kernel.
_EXTERN_OPS = ("aten.mm.", "aten.addmm.", "aten.bmm.", "aten.baddbmm.", "aten.convolution.", "aten._scaled_mm.",
               "aten._scaled_dot_product")


def _is_extern_op(target: str) -> bool:
    return any(op in target for op in _EXTERN_OPS)


def _nodes_from_stack_lines(graph: Graph, bundle: Bundle, p: _GraphParts, post_nodes: dict[str, fx.FxNode],
                            code: Any, raw: RawCapture) -> None:
    """A generated kernel with no fused nodes from either source (a CPU backward graph: its provenance node
    mapping is empty and its C++ launches carry no node comments) takes them from the other provenance
    Inductor logs, the kernel's stack traces: the post-grad nodes of the same user lines that no other
    generated kernel fused and no library call runs."""
    kernels = [k for k in bundle.kernels if k.graph == graph.id]
    bare = [k for k in kernels if not k.fx_nodes and k.lang in ("cpp", "triton")]
    if not bare or not post_nodes or not p.stack_traces:
        return
    claimed = {n for k in kernels if k.lang != "extern" for n in k.fx_nodes}
    handles = {launch.name: launch.handle for launch in code.launches if launch.handle}
    for k in bare:
        frames = p.stack_traces.get(handles.get(k.name, ""), [])
        lines = {(u.file, u.line) for u in fx.stack_user_lines(frames, raw.user_file)}
        if not lines:
            continue
        nodes = [n.name for n in post_nodes.values()
                 if n.user and any(line == n.user.line and fx.same_file(file, n.user.file) for file, line in lines)
                 and n.name not in claimed and not _is_extern_op(n.target)
                 and "torch.ops." in n.target]
        if nodes:
            k.fx_nodes = nodes
            k.provenance = "stack traces: the nodes of its user lines"
            claimed.update(nodes)
            if not k.aten_ops:
                k.aten_ops = _dedupe([_aten_of(post_nodes[n].target) for n in nodes])


def _add_line(lines: list[UserLine], ul: UserLine) -> None:
    if all((u.file, u.line) != (ul.file, ul.line) for u in lines):
        lines.append(UserLine(file=ul.file, line=ul.line, code=ul.code, function=ul.function, library=ul.library))


def launch_grid(kdef, args: list, config: dict[str, Any]) -> str:
    """The launch grid of an Inductor Grid1D/Grid2D kernel, from its numel arguments and the picked
    block sizes: "(16384, 1, 1) = ceil(xnumel 16777216 / XBLOCK 1024)"; '' when either is unknown."""
    if kdef is None or kdef.lang != "triton" or not config:
        return ""
    m = re.search(r"'grid_type':\s*'(Grid1D|Grid2D)'", kdef.source)
    if not m:
        return ""
    positional = [n for n, t in kdef.signature if t != "constexpr"]
    values = {n: a[1] for n, a in zip(positional, args) if a[0] == "lit"}
    dims, why = [], []
    for axis in ("x", "y")[: 1 if m.group(1) == "Grid1D" else 2]:
        numel, block = values.get(f"{axis}numel"), config.get(f"{axis.upper()}BLOCK")
        if not isinstance(numel, int) or not isinstance(block, int) or block <= 0:
            return ""
        dims.append(-(-numel // block))
        why.append(f"ceil({axis}numel {numel} / {axis.upper()}BLOCK {block})")
    dims += [1] * (3 - len(dims))
    return f"({', '.join(map(str, dims))}) = " + " x ".join(why)


def _in_graph_order(names: list[str], nodes: dict[str, fx.FxNode]) -> list[str]:
    return sorted(names, key=lambda n: nodes[n].line if n in nodes else 1 << 30)


def _aten_of(target: str) -> str:
    m = re.match(r"torch\.ops\.(aten\.\w+)", target)
    return m.group(1) if m else ""


def _variants(staging: Path, gid: str, k: Kernel, cache: list[CacheEntry],
              best: list[dict[str, Any]], name_is_unique: bool = True) -> list[TritonVariant]:
    same = [e for e in cache if e.name == k.name]
    if k.kernel_path:
        exact = [e for e in same if e.kernel_path == k.kernel_path]
        if not exact:
            base = k.kernel_path.rsplit("/", 1)[-1]
            exact = [e for e in same if e.kernel_path.rsplit("/", 1)[-1] == base]
        # Inductor may reuse the compile of an autotuning benchmark (another file) for a template
        # kernel: take it by name, but only when no other kernel of the capture has that name.
        same = exact or (same if name_is_unique else [])
    variants = []
    # Without a cache hash, the tuned config beside this kernel's file tells by its warps and stages.
    kdir = k.kernel_path.rsplit("/", 2)[-2] if k.kernel_path.count("/") >= 2 else None
    beside = [b for b in best if kdir and b.get("_dir") == kdir and not b.get("triton_cache_hash")]
    for e in same:
        v = TritonVariant(cache_key=e.key, metadata=e.metadata)
        for stage, path in e.files.items():
            rel = f"triton/{gid}/{k.name}/{e.key}/{path.name}"
            dest = staging / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
            v.files[stage] = rel
        picked = [b for b in best if b.get("triton_cache_hash") in (e.key, e.metadata.get("hash"))]
        if picked:  # Inductor saves the cache key of the config it picked
            v.chosen = True
            v.config = {key: value for key, value in picked[0].items() if key.isupper() or key in ("num_warps",
                                                                                                   "num_stages")}
            best_config = {key: value for key, value in picked[0].items() if not key.startswith("_")}
            v.files["best_config"] = _write(staging, f"triton/{gid}/{k.name}/{e.key}/{k.name}.best_config",
                                            json.dumps(best_config, indent=1) + "\n")
        elif any(b.get("num_warps") == e.metadata.get("num_warps") and b.get("num_stages") ==
                 e.metadata.get("num_stages") for b in beside):
            v.chosen = True
        variants.append(v)
    if len(variants) == 1:
        variants[0].chosen = True
    if sum(v.chosen for v in variants) > 1:  # ambiguous match: do not claim to know
        for v in variants:
            v.chosen = False
    return variants
