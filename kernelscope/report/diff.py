"""Comparing two bundles kernel by kernel: which kernels stayed, changed, were replaced (fused or
split differently), added or removed, with unified diffs of their sources and Triton stages.

Kernels are matched by name first (the name lists the fused ops), then by the FX nodes they fused:
``extern_kernels.mm`` + ``triton_poi_fused_addmm_relu_...`` in a default capture and one
``triton_tem_fused_addmm_relu_...`` under max-autotune cover the same ``mm_default``/``relu`` nodes,
so they form one "replaced" group. Texts are normalised (temp paths, hashes) before comparing.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from kernelscope.bundle.artifacts import DIFF_STAGES
from kernelscope.bundle.io import clip_text, read_text
from kernelscope.bundle.model import Bundle, Graph, Kernel, TritonVariant
from kernelscope.bundle.origin import run_state
from kernelscope.bundle.symbolic import is_symbolic
from kernelscope.report.bench import BenchFacts, read_bench
from kernelscope.report.normalise import normalise_text, rename_kernel
from kernelscope.units import fmt_bytes

SAME, CHANGED, REPLACED, ADDED, REMOVED = "same", "changed", "replaced", "added", "removed"
STATUS_ORDER = (REPLACED, CHANGED, ADDED, REMOVED, SAME)

_PREFIX = re.compile(r"^(triton_(poi|red|per|tem|for|mm|bmm)_|triton_|cpp_)")


def name_stem(name: str) -> str:
    """The ops part of a kernel name: ``triton_poi_fused_add_relu_0`` -> ``fused_add_relu``."""
    return re.sub(r"_\d+$", "", _PREFIX.sub("", name))


@dataclass
class TextDiff:
    """A unified diff of one text (a kernel source or a Triton stage) between A and B."""

    label: str  # "source", "ttir", ...
    a_title: str
    b_title: str
    unified: str = ""  # '' when the normalised texts are equal
    added: int = 0
    removed: int = 0
    note: str = ""  # why there is no diff (absent on one side ...)

    @property
    def equal(self) -> bool:
        return not self.unified and not self.note

    def summary(self) -> str:
        if self.note:
            return f"{self.label}: {self.note}"
        return f"{self.label}: " + (f"+{self.added} -{self.removed} lines" if self.unified else "same")


@dataclass
class KernelChange:
    """One row of the kernel comparison: kernels of A matched to kernels of B."""

    status: str
    a: list[Kernel] = field(default_factory=list)
    b: list[Kernel] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)  # one line each, what a reviewer notices
    time_a_ms: float | None = None
    time_b_ms: float | None = None
    diffs: list[TextDiff] | None = None  # computed on demand (diffs_for)
    text_summary: str = ""  # the changes line that sums up the text diffs ("source: +11 -11 lines")

    @property
    def graph(self) -> str:
        return (self.b or self.a)[0].graph

    def title(self) -> str:
        a = " + ".join(k.name for k in self.a)
        b = " + ".join(k.name for k in self.b)
        if self.status in (SAME, ADDED):
            return b
        if self.status == REMOVED:
            return a
        return a if a == b else f"{a} -> {b}"


@dataclass
class BundleDiff:
    a: Bundle
    b: Bundle
    graph_pairs: list[tuple[Graph, Graph]]
    graphs_only_a: list[Graph]
    graphs_only_b: list[Graph]
    entries: list[KernelChange]
    bench_a: BenchFacts | None = None
    bench_b: BenchFacts | None = None

    def counts(self) -> dict[str, int]:
        return {s: sum(1 for e in self.entries if e.status == s) for s in STATUS_ORDER}

    def of(self, *statuses: str) -> list[KernelChange]:
        return [e for e in self.entries if e.status in statuses]


# ---- matching ---------------------------------------------------------------------------------


def pair_graphs(a: Bundle, b: Bundle) -> tuple[list[tuple[Graph, Graph]], list[Graph], list[Graph]]:
    """Graphs with the same id, then the rest by kind in order (compile ids shift across graph breaks)."""
    by_id = {g.id: g for g in b.graphs}
    pairs: list[tuple[Graph, Graph]] = []
    used_b: set[str] = set()
    rest_a = []
    for g in a.graphs:
        if g.id in by_id:
            pairs.append((g, by_id[g.id]))
            used_b.add(g.id)
        else:
            rest_a.append(g)
    only_a = []
    for g in rest_a:
        other = next((x for x in b.graphs if x.id not in used_b and x.kind == g.kind), None)
        if other is None:
            only_a.append(g)
        else:
            pairs.append((g, other))
            used_b.add(other.id)
    only_b = [g for g in b.graphs if g.id not in used_b]
    order = {g.id: i for i, g in enumerate(a.graphs)}
    pairs.sort(key=lambda p: order[p[0].id])
    return pairs, only_a, only_b


def _nodes(k: Kernel) -> set[str]:
    return set(k.fx_nodes) or {"pre:" + n for n in k.fx_nodes_pre}


def _related(x: Kernel, y: Kernel) -> bool:
    if _nodes(x) & _nodes(y):
        return True
    return not (_nodes(x) and _nodes(y)) and name_stem(x.name) == name_stem(y.name)


def _match(a: Bundle, b: Bundle, pairs: list[tuple[Graph, Graph]]) -> list[tuple[list[Kernel], list[Kernel]]]:
    left_a = list(a.kernels)
    left_b = list(b.kernels)
    groups: list[tuple[list[Kernel], list[Kernel]]] = []
    partner = {ga.id: gb.id for ga, gb in pairs}

    def take_same_name(same_graph: bool, same_sizes: bool) -> None:
        for ka in list(left_a):
            for kb in left_b:
                if kb.name == ka.name and (not same_graph or partner.get(ka.graph) == kb.graph) \
                        and (not same_sizes or is_symbolic(ka) == is_symbolic(kb)):
                    groups.append(([ka], [kb]))
                    left_a.remove(ka)
                    left_b.remove(kb)
                    break

    # A kernel of symbolic sizes first meets its symbolic namesake: static two calls recompile into a
    # dynamic graph, and that one is the --dynamic capture's kernel, not the first call's static one.
    for same_graph, same_sizes in ((True, True), (False, True), (True, False), (False, False)):
        take_same_name(same_graph, same_sizes)
    # Connected components of "fused some of the same nodes", within paired graphs.
    for ga, gb in pairs:
        ka_list = [k for k in left_a if k.graph == ga.id]
        kb_list = [k for k in left_b if k.graph == gb.id]
        seen: set[str] = set()
        for start in ka_list:
            if start.id in seen:
                continue
            comp_a, comp_b, todo = [start], [], [start]
            seen.add(start.id)
            while todo:
                k = todo.pop()
                others = kb_list if k in ka_list else ka_list
                for o in others:
                    if o.id not in seen and _related(k, o):
                        seen.add(o.id)
                        todo.append(o)
                        (comp_b if o in kb_list else comp_a).append(o)
            if comp_b:
                comp_a.sort(key=lambda k: k.launch_index)
                comp_b.sort(key=lambda k: k.launch_index)
                groups.append((comp_a, comp_b))
                for k in comp_a:
                    left_a.remove(k)
                for k in comp_b:
                    left_b.remove(k)
    groups += [([k], []) for k in left_a]
    groups += [([], [k]) for k in left_b]
    return groups


# ---- texts ------------------------------------------------------------------------------------


def _variant(k: Kernel) -> TritonVariant | None:
    return next((v for v in k.triton if v.chosen), k.triton[0] if k.triton else None)


def _stage_text(bundle: Bundle, k: Kernel, stage: str, v: TritonVariant | None = None) -> str | None:
    if stage == "source":
        return read_text(bundle, k.source) if k.source else None
    v = v or _variant(k)
    if v is None or stage not in v.files:
        return None
    return read_text(bundle, v.files[stage])


def _pair_variants(d: BundleDiff, ka: Kernel, kb: Kernel) -> tuple[TritonVariant | None, TritonVariant | None]:
    """The variants compared: each side's chosen one; where one side chose and the other kept every
    autotune candidate unchosen (a preview), the candidate whose compiled code is the chosen one's
    (else the first with its warps and stages), so that a preview is compared "up to the autotune choice"."""
    va, vb = _variant(ka), _variant(kb)
    chosen_a, chosen_b = any(v.chosen for v in ka.triton), any(v.chosen for v in kb.triton)
    if chosen_a == chosen_b or va is None or vb is None:
        return va, vb
    fixed, fixed_bundle, others, other_bundle = (va, d.a, kb.triton, d.b) if chosen_a else (vb, d.b, ka.triton, d.a)
    match = None
    for stage in ("ttgir", "ptx"):
        want = _stage_text(fixed_bundle, ka if chosen_a else kb, stage, fixed)
        if want is None:
            continue
        want = normalise_text(want)
        match = next((v for v in others if stage in v.files and
                      normalise_text(read_text(other_bundle, v.files[stage]) or "") == want), None)
        break
    if match is None:
        same_config = [v for v in others if all(v.metadata.get(key) == fixed.metadata.get(key)
                                                for key in ("num_warps", "num_stages"))]
        match = (same_config or others)[0]
    return (va, match) if chosen_a else (match, vb)


def text_diff(label: str, a_text: str | None, b_text: str | None, a_name: str, b_name: str,
              context: int = 3) -> TextDiff:
    d = TextDiff(label=label, a_title=f"A/{a_name}.{label}", b_title=f"B/{b_name}.{label}")
    if a_text is None and b_text is None:
        d.note = "in neither"
        return d
    if a_text is None or b_text is None:
        d.note = f"only in {'B' if a_text is None else 'A'}"
        return d
    # Names are normalised only when both differ; else a rename alone would show as a change of every line.
    norm_a, norm_b = normalise_text(a_text), normalise_text(b_text)
    if norm_a == norm_b or rename_kernel(norm_a, a_name) == rename_kernel(norm_b, b_name):
        return d
    lines = list(difflib.unified_diff(norm_a.splitlines(), norm_b.splitlines(),
                                      d.a_title, d.b_title, n=context, lineterm=""))
    d.unified = clip_text("\n".join(lines) + "\n")  # a 1 MB line is shown cut, with a note
    d.added = sum(1 for x in lines[2:] if x.startswith("+"))
    d.removed = sum(1 for x in lines[2:] if x.startswith("-"))
    return d


def _text_pair(e: KernelChange) -> tuple[Kernel, Kernel] | None:
    """The two kernels whose texts are compared: the pair with sources that fused the most nodes in common."""
    best = None
    for ka in e.a:
        for kb in e.b:
            if not (ka.source and kb.source):
                continue
            score = (len(_nodes(ka) & _nodes(kb)), ka.lang == kb.lang)
            if best is None or score > best[0]:
                best = (score, ka, kb)
    return (best[1], best[2]) if best else None


def diffs_for(d: BundleDiff, e: KernelChange, context: int = 3) -> list[TextDiff]:
    """Source and stage diffs of a matched entry (cached on the entry)."""
    if e.diffs is not None:
        return e.diffs
    pair = _text_pair(e)
    e.diffs = []
    if pair is not None:
        ka, kb = pair
        va, vb = _pair_variants(d, ka, kb)
        for stage in ("source", *DIFF_STAGES):
            if stage == "best_config" and (d.a.preview or d.b.preview):
                continue  # the autotune result: a preview chose nothing, so it has none to compare
            ta, tb = _stage_text(d.a, ka, stage, va), _stage_text(d.b, kb, stage, vb)
            if stage != "source" and ta is None and tb is None:
                continue
            e.diffs.append(text_diff(stage, ta, tb, ka.name, kb.name, context))
    return e.diffs


# ---- what changed -----------------------------------------------------------------------------


def _sum(values: list[float | None]) -> float | None:
    return None if not values or any(v is None for v in values) else sum(v for v in values if v is not None)


def _config(va: TritonVariant | None, vb: TritonVariant | None) -> tuple[dict[str, Any], dict[str, Any]]:
    def one(v):
        return {key: v.metadata[key] for key in ("num_warps", "num_stages") if key in v.metadata} if v else {}

    return one(va), one(vb)


def _describe(d: BundleDiff, e: KernelChange) -> None:
    a, b = e.a, e.b
    if d.bench_a:
        e.time_a_ms = _sum([d.bench_a.kernel_time_ms(k) for k in a]) if a else None
    if d.bench_b:
        e.time_b_ms = _sum([d.bench_b.kernel_time_ms(k) for k in b]) if b else None
    if not a or not b:
        return
    if len(a) > 1 or len(b) > 1:
        e.status = REPLACED
        names = lambda ks: ", ".join(f"{k.name} ({k.kind})" for k in ks)  # noqa: E731
        if len(b) == 1:
            e.changes.append(f"{names(b)} replaces {names(a)}")
        elif len(a) == 1:
            e.changes.append(f"{names(a)} is split into {names(b)}")
        else:
            e.changes.append(f"{names(a)} regrouped as {names(b)}")
    ka, kb = a[0], b[0]
    if len(a) == 1 and len(b) == 1:
        if ka.name != kb.name:
            e.changes.append(f"renamed {ka.name} -> {kb.name}")
        if ka.kind != kb.kind:
            e.changes.append(f"kind {ka.kind} -> {kb.kind}")
    nodes_a = [n for k in a for n in k.fx_nodes]
    nodes_b = [n for k in b for n in k.fx_nodes]
    plus = [n for n in nodes_b if n not in nodes_a]
    minus = [n for n in nodes_a if n not in nodes_b]
    if plus or minus:
        e.changes.append("fused nodes " + " ".join([f"+{n}" for n in plus] + [f"-{n}" for n in minus]))
    la, lb = sum(k.launches for k in a), sum(k.launches for k in b)
    if la != lb:
        e.changes.append(f"launches per call {la} -> {lb}")
    for label, attr in (("bytes read", "bytes_read"), ("bytes written", "bytes_written")):
        va, vb = _sum([getattr(k, attr) for k in a]), _sum([getattr(k, attr) for k in b])
        if va is not None and vb is not None and va != vb:
            ta, tb = fmt_bytes(int(va)), fmt_bytes(int(vb))
            if ta == tb:  # a change the rounding would hide
                ta, tb = f"{int(va):,} B", f"{int(vb):,} B"
            e.changes.append(f"{label} {ta} -> {tb}")
    ca, cb = _config(*_pair_variants(d, ka, kb))
    if len(a) == 1 and len(b) == 1 and ca and cb and ca != cb:
        e.changes.append("config " + ", ".join(f"{key} {ca.get(key)} -> {cb.get(key)}" for key in ca
                                               if ca.get(key) != cb.get(key)))
    texts = diffs_for(d, e)
    changed = [t for t in texts if not t.equal and t.note != "in neither"]
    if changed:
        e.text_summary = "; ".join(t.summary() for t in changed)
        e.changes.append(e.text_summary)
    if e.status != REPLACED:
        e.status = CHANGED if e.changes else SAME
        if e.status == SAME:
            e.diffs = None  # nothing to show: free the texts (recomputed if asked for)


OPTION_KEYS = ("device", "mode", "dynamic", "fullgraph", "backward")


def _inputs_text(target: dict[str, Any]) -> str:
    """``f32[256, 128], f32[128]``; each call's, ``;`` between calls, where the capture made several."""
    calls = target.get("calls") or ([target["inputs"]] if target.get("inputs") else [])
    return "; ".join(", ".join(map(str, call)) for call in calls if isinstance(call, list)) or "?"


def option_changes(a: Bundle, b: Bundle) -> list[str]:
    """What the two captures compiled for that differs, A -> B: the inputs (``inputs f32[256, 128] ->
    f32[256, 512]``), the grad mode and train state the function ran under (``ran under grad -> no_grad
    · eval``), the compile options (``mode default -> max-autotune``). Kernels that differ for these
    reasons are no regression: a reader must see them before the kernels."""
    out = []
    ia, ib = _inputs_text(a.target), _inputs_text(b.target)
    if ia != ib and "?" not in (ia, ib):  # an opened trace records no inputs: nothing to tell apart
        out.append(f"inputs {ia} -> {ib}")
    # Compared without what torch does untold (grad, train): a bundle older than these options says nothing.
    if run_state(a.options, quiet_default=True) != run_state(b.options, quiet_default=True):
        out.append(f"ran under {run_state(a.options) or 'not recorded'} -> {run_state(b.options) or 'not recorded'}")
    for key in OPTION_KEYS:
        va, vb = a.options.get(key), b.options.get(key)
        if key == "mode":
            va, vb = va or "default", vb or "default"
        elif key != "device":
            va, vb = bool(va), bool(vb)
        elif va is None or vb is None:  # not recorded (an opened trace): unknown, not a difference
            continue
        if va != vb:
            out.append(f"{key} {va} -> {vb}")
    return out


def diff_bundles(a: Bundle, b: Bundle) -> BundleDiff:
    """Match the kernels of two captures and say what changed."""
    pairs, only_a, only_b = pair_graphs(a, b)
    d = BundleDiff(a=a, b=b, graph_pairs=pairs, graphs_only_a=only_a, graphs_only_b=only_b, entries=[],
                   bench_a=read_bench(a), bench_b=read_bench(b))
    for ka, kb in _match(a, b, pairs):
        status = ADDED if not ka else REMOVED if not kb else CHANGED
        e = KernelChange(status=status, a=ka, b=kb)
        _describe(d, e)
        d.entries.append(e)
    pos_b = {k.id: i for i, k in enumerate(b.kernels)}
    pos_a = {k.id: i for i, k in enumerate(a.kernels)}
    # Launch order of B, removed kernels where they used to be.
    d.entries.sort(key=lambda e: (pos_b[e.b[0].id] if e.b else -1, pos_a[e.a[0].id] if e.a else -1))
    return d
