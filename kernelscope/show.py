"""Headless views of a bundle: a readable summary, the same as JSON, or one artifact as plain text.

Everything the UI shows is reachable from here with ``less`` and ``grep``.
"""

from __future__ import annotations

import json
import re
import sys
from typing import TYPE_CHECKING, Any

from kernelscope.bundle.artifacts import RENDERED_STAGES, STORED_TEXT, stage_order
from kernelscope.bundle.io import BundleError, printable, read_bundle, read_text
from kernelscope.bundle.kernel_match import names_line
from kernelscope.bundle.model import FX_KINDS, Bundle, to_dict
from kernelscope.bundle.no_code import has_output_code, no_code_lines
from kernelscope.bundle.origin import actions as origin_actions
from kernelscope.bundle.origin import origin_line, run_state
from kernelscope.bundle.symbolic import bytes_per_call, is_symbolic
from kernelscope.compile_facts import (  # noqa: F401  (the UI and the report import them from here too)
    _compiles,
    _graph_of,
    base,
    cudagraph_line,
    failed_guard_lines,
    guard_lines,
    guard_summary_lines,
    no_fx_nodes_reason,
    per_call_lines,
    symbol_lines,
)
from kernelscope.units import base_name, fmt_bytes, plural

if TYPE_CHECKING:  # the summary's lines are read by the UI too, which has no command line to parse
    import argparse

GRAPH_ARTIFACTS = ("output_code", *FX_KINDS)
KERNEL_ARTIFACTS = STORED_TEXT  # show --artifact NAME -> the variant file it reads (bundle/artifacts.py)
LOG_ARTIFACTS = ("stdout", "stderr")
_STAGE_HELP = ", ".join(n for n in {**STORED_TEXT, **RENDERED_STAGES} if n not in ("source", "triton-source"))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("bundle", help="a bundle folder written by `kernelscope capture`")
    p.add_argument("--json", action="store_true", help="print the summary as JSON, for scripts")
    p.add_argument("--kernel", metavar="NAME",
                   help="a kernel: its id, its name, or a part of its name that only it has (add_relu)")
    p.add_argument("--graph", metavar="ID", help="a graph id, for graph artifacts (default: all graphs)")
    p.add_argument("--artifact", metavar="NAME",
                   help="print one artifact: source, output_code, fx-dynamo, fx-aot, fx-aot-joint, fx-post-grad, "
                        f"{_STAGE_HELP}, passes, facts, stdout, stderr")
    p.add_argument("--launches", action="store_true",
                   help="list each launch of a kernel launched more than once, with its own FX nodes and lines")
    p.add_argument("--fusion", action="store_true",
                   help="the kernels Inductor did not fuse: each pair joined by a buffer, why, and the bytes")
    p.add_argument("--lines", action="store_true",
                   help="device time per line of your code (after `kernelscope bench`): exclusive and shared")
    p.add_argument("--compile", action="store_true",
                   help="where the compile time went: per graph, phase and kernel (compile + autotune)")
    p.add_argument("--arch", metavar="SM", help="with --artifact: recompile the Triton kernel for this arch (sm_80)")
    p.add_argument("--guards", action="store_true",
                   help="list every guard of each compile (the summary counts them by kind)")
    p.add_argument("--job", action="store_true",
                   help="the job at a glance: each compile under the line of your code that reached it, with its "
                        "graphs, kernels, compile time, cache, guards, recompiles; ranks side by side, what differs flagged")
    p.add_argument("--stacks", action="store_true",
                   help="each compile's whole Python stack, the line of your code it was compiled from marked ▶")
    p.add_argument("--all", action="store_true", dest="all_kernels",
                   help="list every kernel of a job-sized bundle (its summary comes first: per graph, the "
                        "kernels moving the most bytes)")


def summary_dict(b: Bundle) -> dict[str, Any]:
    """What `show --json` prints: the manifest plus per-kernel derived counts."""
    from kernelscope.bundle.side_sections import load_sides

    load_sides(b)
    data = to_dict(b)
    for k, kd in zip(b.kernels, data["kernels"]):
        kd["bytes_read"] = k.bytes_read
        kd["bytes_written"] = k.bytes_written
        g = _graph_of(b, k)
        if g is not None and is_symbolic(k) and g.calls:
            kd["bytes_per_call"] = bytes_per_call(k, g)
        kd["bytes_read_bound"] = k.bytes_bound
    data["bundle"] = b.root
    return data


_CONFIG_ITEM = re.compile(r"(\w+)=('[^']*'|\"[^\"]*\"|[^,\s]+)")
_CONFIG_SHORT = {"num_warps": "warps", "num_stages": "stages"}


def compact_configs(configs: list[str]) -> list[str]:
    """Autotune configs as what matters: block sizes, warps and stages first, then any other key that
    varies between the configs; other keys equal in every config (ACC_TYPE, EVEN_K ...) are dropped.
    ``BLOCK_K=32 BLOCK_M=32 BLOCK_N=64 warps=4 stages=3``."""
    parsed = [dict(_CONFIG_ITEM.findall(c)) for c in configs]
    with_keys = [d for d in parsed if d]
    keys = {k for d in with_keys for k in d}
    varying = {k for k in keys if "BLOCK" in k or k in _CONFIG_SHORT or len({d.get(k) for d in with_keys}) > 1}

    def rank(k: str) -> tuple[int, str]:
        return (0 if "BLOCK" in k else 1 if k == "num_warps" else 2 if k == "num_stages" else 3, k)

    out = []
    for d, raw in zip(parsed, configs):
        if not d:
            out.append(raw)
            continue
        out.append(" ".join(f"{_CONFIG_SHORT.get(k, k)}={d[k]}" for k in sorted(varying & d.keys(), key=rank)))
    return out


_SAME_ANYWAY = {"hash", "name", "extern_libs"}


def variant_labels(variants: list) -> list[str]:
    """One label per compiled variant of a Triton kernel that tells it apart from the others: its block
    sizes (XBLOCK=256) when known, warps and stages, then any Triton metadata that differs, then, when
    nothing else does, its cache key."""
    labels = []
    known = [k for v in variants for k in v.config if k not in _CONFIG_SHORT]
    for v in variants:
        blocks = " ".join(f"{k}={val}" for k, val in v.config.items() if k not in _CONFIG_SHORT) or \
            " ".join(f"{k}=?" for k in dict.fromkeys(known))
        md = v.metadata
        labels.append(" ".join(x for x in (blocks, f"warps={md.get('num_warps')} stages={md.get('num_stages')}") if x))
    if len(set(labels)) < len(labels):
        keys = sorted({k for v in variants for k in v.metadata} - _SAME_ANYWAY)
        differ = [k for k in keys if len({repr(v.metadata.get(k)) for v in variants}) > 1
                  and k not in ("num_warps", "num_stages")]
        for i, v in enumerate(variants):
            extra = " ".join(f"{k}={v.metadata.get(k)}" for k in differ)
            labels[i] += f" ({extra})" if extra else ""
    if len(set(labels)) < len(labels):
        labels = [f"{label} [cache {v.cache_key[:8]}]" for label, v in zip(labels, variants)]
    return labels


def autotune_lines(b: Bundle, limit: int = 5, prefix: str = "") -> list[str]:
    """Each AUTOTUNE table: the op, then its fastest ``limit`` choices with time, % of best, and the
    config keys that differ between choices."""
    out = []
    for a in b.autotune:
        shown = a.choices[:limit]
        top = f", the fastest {len(shown)}" if len(shown) < len(a.choices) else ""
        out.append(f"{prefix}{a.op}: {plural(len(a.choices), 'choice')}{top}")
        width = max((len(c.name) for c in shown), default=0)
        for c, config in zip(shown, compact_configs([c.config for c in a.choices])):
            ms = f"{c.time_ms:.4f} ms" if c.time_ms is not None else "failed"
            out.append(f"  {c.name:<{width}} {ms:>10} {c.percent or 0:6.1f}%  {config}".rstrip())
    return out


def file_name(b: Bundle, file: str) -> str:
    """A frame's file as the bundle shows it: relative to your project's root (blocks.py,
    pkg/blocks.py), or below site-packages for a library file."""
    entry = b.source_entry(file)
    return entry["name"] if entry else base_name(file)


def summary_text(b: Bundle, launches_too: bool = False, all_guards: bool = False, whole: bool | None = None) -> str:
    """The bundle's summary: every graph and kernel with its nodes and lines; for a job-sized bundle
    (kernelscope/job_summary.py) the job per graph and its heaviest kernels instead, unless ``whole``."""
    from kernelscope.job_summary import is_job, job_lines

    out: list[str] = []
    t = b.target
    env = b.environment
    status = "" if b.status == "ok" else f"  [FAILED: {b.error}]"
    preview = (f"  [PREVIEW {b.preview['arch']}: {b.preview.get('device_name', '')}, generated without that GPU, "
               "never run]") if b.preview else ""
    out.append(f"{t.get('spec', '?')}  ({b.root}){preview}{status}")
    out.append(f"made by: {origin_line(t)}")
    out.append(f"can: {'; '.join(origin_actions(t, has_output_code(b)))}")
    opts = b.options
    if opts:
        # A run's device is what its program chose (unknown when it compiled nothing for CUDA): not 'None'.
        flags = [f"mode={opts.get('mode') or 'default'}"] + ([f"device={opts['device']}"] if opts.get("device") else [])
        flags += [k for k in ("dynamic", "fullgraph", "backward") if opts.get(k)]
        if run_state(opts):
            flags.append(run_state(opts))
        calls = t.get("calls") or ([t["inputs"]] if t.get("inputs") else [])
        out.append("options: " + ", ".join(flags) + (f"   inputs: {'; '.join(', '.join(c) for c in calls)}" if calls
                                                      else ""))
    if env:
        versions = ", ".join(f"{k} {env[k]}" for k in ("torch", "triton", "python") if env.get(k))
        device = env.get("device_name") or ""
        cc = f" (sm_{env['compute_capability'].replace('.', '')})" if env.get("compute_capability") else ""
        env_text = "; ".join(x for x in (versions, f"{device}{cc}".strip()) if x)
        if env_text:
            out.append(f"environment: {env_text}")
    if b.timings:
        out.append("timings: " + ", ".join(f"{k} {v:.2f} s" for k, v in b.timings.items()))
    out.append("")
    # A job, or any program's run (a real script's guards and kernels read as a wall): the summary first.
    if whole is False or (whole is None and (is_job(b) or b.target.get("origin") == "run")):
        out += job_lines(b)
        if b.notes:
            out.append("")
            out += [f"note: {n}" for n in b.notes]
        return "\n".join(out) + "\n"
    out.append(f"graphs ({len(b.graphs)}):")
    for g in b.graphs:
        where = f"  {g.code_name} at {base_name(g.code_file)}:{g.code_line}" if g.code_name else ""
        out.append(f"  {g.id:<22} {g.kind:<10} {plural(len(g.kernel_ids), 'kernel')}{where}")
        if g.called_elsewhere():
            out.append(f"  {'':<22} compiled from {g.compiled_from()}")
        out += no_code_lines(g, f"  {'':<22} ")
    out.append("")
    out.append(f"kernels in launch order ({len(b.kernels)}):")
    for g in b.graphs:
        ks = b.kernels_of(g.id)
        if not ks:
            continue
        out.append(f"  [{g.id}]")
        for k in ks:
            launches = f" x{k.launches}" if k.launches > 1 else ""
            calls = per_call_lines(k, g, prefix="        ")
            moved = ("symbolic sizes, bytes per call below" if calls and k.bytes_read is None else
                     f"read {'<= ' if k.bytes_bound else ''}{fmt_bytes(k.bytes_read)}, write {fmt_bytes(k.bytes_written)}")
            out.append(f"    {k.name}{launches}  ({k.kind}; {moved})")
            out += calls
            if k.fx_nodes:
                if len(k.launch_info) > 1 and k.launch_info[0].fx_nodes and not launches_too:
                    # One definition launched per layer: each launch has its own nodes (--launches lists them).
                    out.append(f"        fx nodes (launch 1 of {len(k.launch_info)}; --launches: each): "
                               f"{', '.join(k.launch_info[0].fx_nodes)}")
                else:
                    out.append(f"        fx nodes: {', '.join(k.fx_nodes)}")
            else:
                out.append(f"        fx nodes: {no_fx_nodes_reason(k)}")
            if k.aten_ops:
                out.append(f"        aten: {', '.join(k.aten_ops)}")
            for u in k.user_lines:
                out.append(f"        line {file_name(b, u.file)}:{u.line}: {u.code}")
            for u in k.library_lines:
                out.append(f"        library {file_name(b, u.file)}:{u.line}: {u.code}")
            if launches_too and len(k.launch_info) > 1:
                for n, li in enumerate(k.launch_info, start=1):
                    where = ", ".join(f"{file_name(b, u.file)}:{u.line}" for u in li.user_lines + li.library_lines)
                    out.append(f"        launch {n}/{len(k.launch_info)} (call() line {li.call_line}): "
                               f"{', '.join(li.fx_nodes) or '-'}" + (f"  [{where}]" if where else ""))
            if k.lang == "triton":
                stages = sorted({s for v in k.triton for s in v.files}, key=stage_order)
                cfgs = ", ".join(label + (" (chosen)" if v.chosen else "")
                                 for v, label in zip(k.triton, variant_labels(k.triton)))
                out.append(f"        triton: {cfgs or 'no compiled stages found'}"
                           + (f"; stages: {', '.join(stages)}" if stages else ""))
    if b.graph_breaks:
        out.append("")
        out.append(f"graph breaks ({len(b.graph_breaks)}):")
        for gb in b.graph_breaks:
            out.append(f"  {base_name(gb.file)}:{gb.line}: {gb.reason}" + (f"  [{gb.code}]" if gb.code else ""))
    if b.recompiles:
        out.append("")
        out.append(f"recompiles ({len(b.recompiles)}):")
        for r in b.recompiles:
            out.append(f"  {base_name(r.file)}:{r.line}: {r.reason}")
            out += failed_guard_lines(r, prefix="      ")
    for section in (symbol_lines(b), guard_lines(b) if all_guards else guard_summary_lines(b)):
        if section:
            out.append("")
            out += section
    cg = cudagraph_line(b)
    if cg:
        out += ["", cg]
    if b.autotune:
        out.append("")
        out += autotune_lines(b, limit=5, prefix="autotune ")
    if b.notes:
        out.append("")
        for n in b.notes:
            out.append(f"note: {n}")
    return "\n".join(out) + "\n"


def artifact_text(b: Bundle, artifact: str, kernel: str | None = None, graph: str | None = None,
                  arch: str | None = None) -> str:
    k = b.kernel(kernel) if kernel else None
    if artifact in LOG_ARTIFACTS:
        rel = b.files.get(artifact)
        if not rel:
            raise BundleError(f"this bundle has no {artifact} log")
        return read_text(b, rel, required=True)
    if artifact in GRAPH_ARTIFACTS:
        graphs = [b.graph(graph)] if graph else ([b.graph(k.graph)] if k else b.graphs)
        texts = []
        for g in graphs:
            rel = g.files.get(artifact)
            if rel:
                texts.append((g.id, read_text(b, rel, required=True)))
        if not texts:
            raise BundleError(f"no {artifact} in {'graph ' + graphs[0].id if len(graphs) == 1 else 'this bundle'}")
        if len(texts) == 1:
            return texts[0][1]
        return "".join(f"# ===== kernelscope: graph {gid} =====\n{text}\n" for gid, text in texts)
    if k is None:
        raise BundleError(f"--artifact {artifact} needs --kernel NAME (a part of a name will do); kernels: "
                          + names_line(b.kernels))
    if artifact == "source" and not arch:
        if not k.source:
            raise BundleError(f"{k.name} is an extern call ({k.call_text}); it has no generated source")
        return read_text(b, k.source, required=True)
    if artifact in KERNEL_ARTIFACTS and not arch:
        variant = next((v for v in k.triton if v.chosen), k.triton[0] if k.triton else None)
        if variant is None or KERNEL_ARTIFACTS[artifact] not in variant.files:
            why = "it is not a Triton kernel" if k.lang != "triton" else "Triton's cache had no such stage for it"
            raise BundleError(f"no {artifact} for {k.name}: {why}")
        return read_text(b, variant.files[KERNEL_ARTIFACTS[artifact]], required=True)
    try:
        from kernelscope.pipeline.artifacts import ARTIFACTS, render_artifact
    except ImportError as exc:
        raise BundleError(f"--artifact {artifact} needs kernelscope.pipeline ({exc})") from exc
    if artifact not in ARTIFACTS:
        known = sorted(set(GRAPH_ARTIFACTS + tuple(KERNEL_ARTIFACTS) + LOG_ARTIFACTS) | set(ARTIFACTS))
        raise BundleError(f"unknown artifact {artifact!r}; one of: {', '.join(known)}")
    return render_artifact(b, k, artifact, arch=arch)


def stacks_text(b: Bundle) -> str:
    """Each compile's whole stack, outermost first, the line it was compiled from marked (one per compile id)."""
    out: list[str] = []
    for g in _compiles(b):
        out.append(f"compile {g.compile_id} ({g.id}): {g.code_name or '?'} at {base(g.code_file)}:{g.code_line}")
        if not g.call_stack:
            out.append("  (the trace recorded no stack for it)")
        site = g.call_site if isinstance(g.call_site, dict) else {}
        for f in g.call_stack:
            here = (f.get("file"), f.get("line")) == (site.get("file"), site.get("line")) and g.called_elsewhere()
            tag = {"user": "", "library": " [library]", "skip": " [torch]"}.get(f.get("kind"), "")
            code = f"  {f['code']}" if f.get("code") else ""
            out.append(f"  {'▶' if here else ' '} {base(f.get('file', ''))}:{f.get('line')} in {f.get('function')}{tag}{code}")
        out.append("")
    return "\n".join(out) + ("\n" if not out else "")


def run(args: argparse.Namespace) -> int:
    b = read_bundle(args.bundle)
    if args.artifact:
        text = printable(artifact_text(b, args.artifact, args.kernel, args.graph, args.arch))
        sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
        return 0
    if getattr(args, "stacks", False):
        sys.stdout.write(printable(stacks_text(b)))
        return 0
    if getattr(args, "job", False):
        from kernelscope.bundle.io import read_text
        from kernelscope.job_view import job_text

        sys.stdout.write(printable("\n".join(job_text(b, read_text)) + "\n"))
        return 0
    if args.kernel:
        k = b.kernel(args.kernel)
        if args.json:
            print(json.dumps(to_dict(k), indent=1))  # JSON escapes control characters itself
        else:
            sub = Bundle(graphs=[b.graph(k.graph)], kernels=[k], target=b.target, source=b.source)
            sub.root = b.root
            sys.stdout.write(printable(summary_text(sub, launches_too=getattr(args, "launches", False))))
        return 0
    if args.json:
        print(json.dumps(summary_dict(b), indent=1))
    else:
        whole = True if getattr(args, "all_kernels", False) or getattr(args, "guards", False) else None
        sys.stdout.write(printable(summary_text(b, launches_too=getattr(args, "launches", False),
                                                all_guards=getattr(args, "guards", False), whole=whole)))
    return 0
