"""Why two kernels were not fused, and what the round trip between them costs. No torch.

Inductor's scheduler logs its fusion rounds (``TORCH_LOGS=fusion``: the artifact logger "fusion" of
``torch._inductor.scheduler``) to stderr: the candidates of each round (``SchedulerNode(name='op3'),
Pointwise([... 'origins=OrderedSet([add_1, mul_1])' ...])``, ``ExternKernelSchedulerNode(name='op2')``),
each fusion (``fusing op0 with op1``) and each refusal (``cannot fuse op0 with op2: intermediate nodes
between node1 & node2``). Origins are post-grad FX node names, which the bundle maps to kernels.

The pairs come from the output code: every buffer one launch writes and a later launch reads is a
round trip through memory (written once, read once). For each pair the scheduler's decision is
looked up in the log of that graph (a graph's scheduler names its nodes op0, op1 ...; each Inductor
graph starts its own rounds) and said in words a PyTorch user reads. Without the log (``open`` of a
job run without it) extern calls are still explained; other pairs say the log is missing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelscope.ingest.output_code import parse_output_code

FUSION_TAG = "[__fusion]"
# "V1201 20:30:05.592000 6820 torch/_inductor/scheduler.py:4995] [0/0] [__fusion] message"
_LINE = re.compile(r"\](?: \[(?P<cid>[^\]]*)\])? \[__fusion\] ?(?P<msg>.*)$")
_ROUND_START = re.compile(r"===== attempting fusion \(1/\d+\)")
_NODE = re.compile(r"(?P<cls>\w*SchedulerNode)\((?:name=\\?'(?P<name>[\w.]+)\\?'|nodes=(?P<nodes>[\w.]+))\)")
_ORIGINS = re.compile(r"origins=OrderedSet\(\[([^\]]*)\]\)")
_REFUSAL = re.compile(r"^cannot fuse (?P<a>\S+) with (?P<b>\S+): (?P<reason>.*)$")
_BENCH_REFUSAL = re.compile(r"^cannot fuse \(benchmark\): (?P<reason>.*)$")
_FUSING = re.compile(r"^fusing (?P<a>\S+) with (?P<b>\S+)$")
_OP = re.compile(r"op\d+")
MAX_FUSION_LOG = 4 << 20  # the log lines kept in the bundle (logs/fusion.txt)


@dataclass
class SchedulerLog:
    """One Inductor graph's fusion rounds."""

    compile_id: str
    origins: dict[str, set[str]] = field(default_factory=dict)  # op -> post-grad FX node names
    node_class: dict[str, str] = field(default_factory=dict)  # op -> SchedulerNode, ExternKernelSchedulerNode ...
    refusals: list[tuple[set[str], set[str], str, str]] = field(default_factory=list)  # ops1, ops2, reason, line
    fusions: int = 0


def fusion_log_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if FUSION_TAG in line]


def parse_fusion_log(text: str) -> list[SchedulerLog]:
    """The fusion log's graphs in the order they were compiled (a new graph begins at round 1)."""
    logs: list[SchedulerLog] = []
    current: dict[str, SchedulerLog] = {}
    for line in fusion_log_lines(text):
        m = _LINE.search(line)
        if not m:
            continue
        cid, msg = m.group("cid") or "", m.group("msg")
        if _ROUND_START.search(msg) or cid not in current:
            current[cid] = SchedulerLog(compile_id=cid)
            logs.append(current[cid])
        log = current[cid]
        if msg.startswith("  ") and "SchedulerNode(" in msg:
            _read_candidate(log, msg)
        elif r := _REFUSAL.match(msg):
            log.refusals.append((set(_OP.findall(r.group("a"))), set(_OP.findall(r.group("b"))),
                                 r.group("reason").strip(), msg.strip()))
        elif _FUSING.match(msg):
            log.fusions += 1
    return logs


def _read_candidate(log: SchedulerLog, msg: str) -> None:
    """A candidate line: each leaf node (op) with the origins that follow it up to the next node."""
    found = list(_NODE.finditer(msg))
    for i, node in enumerate(found):
        name = node.group("name")
        if not name:
            continue  # a fused node's own header; its leaves follow in snodes
        end = found[i + 1].start() if i + 1 < len(found) else len(msg)
        origins: set[str] = set()
        for o in _ORIGINS.findall(msg[node.end():end]):
            origins |= {x.strip() for x in o.split(",") if x.strip()}
        log.node_class[name] = node.group("cls")
        if origins:
            log.origins.setdefault(name, set()).update(origins)


# The scheduler's reasons in words a PyTorch user reads: (start of Inductor's text, plain words).
# {a} and {b} name the first and second kernel as the user sees them.
PLAIN_REASONS: tuple[tuple[str, str], ...] = (
    ("intermediate nodes between", "other work has to run between them: {b} also needs something computed after {a}, "
                                   "so fusing would have to pull that work inside"),
    ("no shared data due to indexing mismatch", "they index the buffer differently (a transpose or a view): the "
                                                "scheduler sees no data they share"),
    ("no shared data", "the scheduler sees no data they share in the same loop order"),
    ("exceeds max fusion", "fusing would exceed the most nodes one kernel may hold (inductor config max_fusion_size)"),
    ("Fusion will increase peak memory", "fusing would raise peak memory"),
    ("fusion_prevent_too_many_reads_and_writes", "the fused kernel would read and write too many buffers"),
    ("memory deps did not match", "{b} reads the buffer in a different shape or order than {a} writes it"),
    ("will create cycle", "fusing them would create a dependency cycle through another kernel"),
    ("node2 is extern or nop", "{b} is a library call: Inductor cannot fuse a kernel into it"),
    ("node1 is extern but not a triton kernel", "{a} is a library call: it cannot take a pointwise epilogue"),
    ("node1 is extern", "{a} is a library call: it cannot take this epilogue"),
    ("node1's triton kernel doesn't support epilogue fusion", "{a}'s Triton template takes no epilogue"),
    ("template epilogue not satisfied", "the matmul template cannot take this epilogue"),
    ("prologue fusion", "the matmul template cannot take it as a prologue"),
    ("template prologue", "the matmul template cannot take it as a prologue"),
    ("template has no allowed prologue inputs", "the matmul template takes no prologue on these inputs"),
    ("device mismatch", "they run on different devices"),
    ("numel/rnumel mismatch (reduce)", "their loops differ: a reduction and a kernel over a different number of "
                                       "elements (fusing would exceed the reduction's size)"),
    ("numel/rnumel mismatch", "their loops run over different numbers of elements"),
    ("nodes numel incompatibility", "their loops run over different numbers of elements"),
    ("invalid tiling for reduction", "their loops cannot share one tiling"),
    ("tiling mismatch", "their loops cannot share one tiling"),
    ("Split scan cannot fuse with reductions", "a split scan cannot fuse with a reduction"),
    ("register spilling", "fused, the kernel would spill registers (benchmarked)"),
    ("score_fusion_memory_threshold", "they share too little data for fusing to pay"),
    ("foreach", "a foreach kernel cannot fuse with this node"),
    ("grouped node must not be fused", "a grouped node is never fused with others"),
    ("fusion for buffer explicit disabled", "fusion is turned off for this buffer"),
    ("node1 must go before node2", "the consumer would have to run first"),
)


_NUMELS = re.compile(r"\((\S+), (\S+)\), \((\S+), (\S+)\)\s*$")


def plain_reason(reason: str, a: str, b: str) -> str:
    numels = _NUMELS.search(reason) if "numel" in reason else None
    if numels:
        n1, r1, n2, r2 = numels.groups()
        return (f"their loops differ: {a} runs over {n1} x {r1} elements, {b} over {n2} x {r2} "
                "(one kernel cannot run both)")
    for start, words in PLAIN_REASONS:
        if reason.startswith(start) or start in reason:
            detail = reason[len(start):].strip(" :()") if reason.startswith(start) else ""
            text = words.format(a=a, b=b)
            return text + (f" ({detail})" if detail and "%" not in detail and len(detail) < 80 else "")
    return f"Inductor says: {reason}"


def display_name(name: str, lang: str) -> str:
    """A launch as the user reads it: the kernel name, or ``mm (library call)`` for extern_kernels.mm."""
    if lang != "extern":
        return name
    op = name.rsplit(".", 1)[-1]
    if name.startswith("torch.ops."):
        op = name.split(".")[3] if name.count(".") >= 3 else op
    m = re.fullmatch(r"aoti_torch_(?:cpu|cuda|xpu|mps)_(\w+?)(?:_out)?", name)  # AOTInductor's C shim of an aten op
    if m:
        op = m.group(1)
    return f"{op} (library call)"


_LIBRARY_OPS = (("mm", "matmul"), ("addmm", "matmul"), ("bmm", "batched matmul"), ("baddbmm", "batched matmul"),
                 ("_scaled_mm", "matmul"), ("convolution", "convolution"), ("_scaled_dot_product", "attention"),
                 ("_flash_attention", "attention"), ("_efficient_attention", "attention"), ("_cudnn_attention", "attention"))


def library_words(name: str) -> str:
    """``the matmul (extern_kernels.mm)``: an extern call as a PyTorch user names it."""
    op = display_name(name, "extern").removesuffix(" (library call)")
    for prefix, words in _LIBRARY_OPS:
        if op == prefix or (prefix.startswith("_") and op.startswith(prefix)):
            return f"the {words} ({name})"
    return f"the {op} call ({name})"


@dataclass
class _Launch:
    index: int
    kernel_id: str
    name: str
    lang: str
    fx_nodes: set[str]
    buffers: list[Any]


_REUSE = re.compile(r"^\s*(\w+) = (?:reinterpret_tensor\()?(\w+)\b.*# reuse\s*$", re.M)


def reused_buffers(code_text: str) -> dict[str, str]:
    """``buf3 = buf2; del buf2  # reuse``: the new name -> the buffer whose memory it takes (a kernel
    that then reads buf3 in place reads what was written to buf2)."""
    return {new: old for new, old in _REUSE.findall(code_text) if new != old}


def _graph_launches(bundle: Any, graph: Any, code_text: str) -> list[_Launch]:
    code = graph.__dict__.pop("_parsed_code", None) or parse_output_code(code_text)
    kernels = {k.id: k for k in bundle.kernels_of(graph.id)}
    seen: dict[str, int] = {}
    out = []
    for index, launch in enumerate(code.launches):
        kid = f"{graph.id}/{launch.name}@{index}" if launch.lang == "extern" else f"{graph.id}/{launch.name}"
        k = kernels.get(kid)
        n = seen.get(kid, 0)
        seen[kid] = n + 1
        nodes: set[str] = set()
        if k is not None:
            info = k.launch_info[n] if n < len(k.launch_info) else None
            nodes = set(info.fx_nodes if info and info.fx_nodes else k.fx_nodes)
        nodes |= set(launch.comment_nodes)
        out.append(_Launch(index=index, kernel_id=kid, name=launch.name, lang=launch.lang, fx_nodes=nodes,
                           buffers=launch.buffers))
    return out


def _ops_of(launch: _Launch, log: SchedulerLog | None) -> set[str]:
    """The scheduler nodes that became this launch: by origins, and by the buffers it writes (op N
    writes buf N; an extern call's node has no origins in the log)."""
    ops = {f"op{b.name[3:]}" for b in launch.buffers if b.role in ("write", "readwrite") and re.fullmatch(r"buf\d+", b.name)}
    # An extern call's comment lists the nodes sorted around it, not its own: its buffer names it.
    if log is not None and launch.fx_nodes and launch.lang != "extern":
        ops |= {op for op, origins in log.origins.items() if origins & launch.fx_nodes}
    return ops


def _decision(p: _Launch, c: _Launch, log: SchedulerLog | None, has_log: bool) -> tuple[str, str, str]:
    """(plain reason, the scheduler's own line or '', where the decision comes from)."""
    a, b = display_name(p.name, p.lang), display_name(c.name, c.lang)
    if log is not None:
        pops, cops = _ops_of(p, log), _ops_of(c, log)
        for ops1, ops2, reason, line in reversed(log.refusals):  # the last round decided
            if (ops1 and ops2 and ((ops1 <= pops and ops2 <= cops) or (ops1 <= cops and ops2 <= pops))):
                first, second = (a, b) if ops1 <= pops else (b, a)
                return plain_reason(reason, first, second), line, "fusion log"
    if c.lang == "extern" and p.lang == "extern":
        return (f"both are library calls ({p.name}, {c.name}): Inductor fuses nothing into or out of them, so the "
                "result goes through memory", "", "extern call")
    if c.lang == "extern":
        return (f"{library_words(c.name)} is a library call: it cannot take a pointwise prologue, so {a} writes "
                "its result to memory for it", "", "extern call")
    if p.lang == "extern":
        return (f"{library_words(p.name)} is a library call: its result goes to memory before {b} reads it "
                "(Inductor fuses epilogues only into its own matmul templates, under max-autotune)", "", "extern call")
    if not has_log:
        return ("no fusion log in this bundle (captured without TORCH_LOGS=fusion): the scheduler's reason is "
                "not known", "", "no log")
    return ("the scheduler never tried to fuse this pair (no refusal logged): they were not fusion candidates "
            "for each other", "", "not in the log")


def fusion_pairs(bundle: Any, root: Path, logs: list[SchedulerLog], has_log: bool) -> list[dict[str, Any]]:
    """Every (producer, consumer) pair of launches joined by a buffer, with bytes and the decision,
    most bytes first."""
    per_cid: dict[str, list[SchedulerLog]] = {}
    for log in logs:
        per_cid.setdefault(log.compile_id, []).append(log)
    taken: dict[str, int] = {}
    pairs = []
    for graph in bundle.graphs:
        rel = graph.files.get("output_code")
        path = (root / rel) if rel else None
        if path is None or not path.is_file():
            continue
        try:
            launches = _graph_launches(bundle, graph, path.read_text(encoding="utf-8"))
        except (SyntaxError, ValueError, RecursionError, KeyError):
            continue
        cid = graph.compile_id.split("/", 1)[1] if graph.compile_id.startswith("rank") else graph.compile_id
        i = taken.get(cid, 0)
        taken[cid] = i + 1
        cands = per_cid.get(cid, [])
        log = cands[i] if i < len(cands) else None
        aliases = reused_buffers(path.read_text(encoding="utf-8"))
        writer: dict[str, tuple[_Launch, Any]] = {}
        joined: dict[tuple[int, int], dict[str, Any]] = {}
        for launch in launches:
            for use in launch.buffers:
                source = use.name
                while source not in writer and source in aliases and aliases[source] != use.name:
                    source = aliases[source]
                if use.role not in ("read", "readwrite") or source not in writer:
                    continue
                producer, wrote = writer[source]
                if producer.index == launch.index:
                    continue
                pair = joined.setdefault((producer.index, launch.index), {
                    "graph": graph.id, "producer": producer.kernel_id, "consumer": launch.kernel_id,
                    "producer_name": display_name(producer.name, producer.lang),
                    "consumer_name": display_name(launch.name, launch.lang),
                    "producer_launch": producer.index, "consumer_launch": launch.index, "buffers": [],
                    "_p": producer, "_c": launch})
                read = use.read_bytes if use.read_bytes is not None else use.bytes
                pair["buffers"].append({"name": use.name, "shape": list(wrote.shape or use.shape),
                                        "dtype": wrote.dtype or use.dtype, "bytes_written": wrote.bytes,
                                        "bytes_read": read})
            for use in launch.buffers:
                if use.role in ("write", "readwrite"):
                    writer[use.name] = (launch, use)
        readers: dict[str, int] = {}
        for pair in joined.values():
            for buf in pair["buffers"]:
                readers[buf["name"]] = readers.get(buf["name"], 0) + 1
        for pair in joined.values():
            p, c = pair.pop("_p"), pair.pop("_c")
            reason, line, source = _decision(p, c, log, has_log)
            sizes = [(b["bytes_written"], b["bytes_read"]) for b in pair["buffers"]]
            known = all(w is not None and r is not None for w, r in sizes)
            for b in pair["buffers"]:
                b["readers"] = readers[b["name"]]
            pair.update(reason=reason, scheduler=line, decided_by=source, transfers=2 * len(sizes),
                        bytes=sum(w + r for w, r in sizes) if known else None)
            pairs.append(pair)
    pairs.sort(key=lambda x: (-(x["bytes"] or 0), x["graph"], x["producer_launch"], x["consumer_launch"]))
    return pairs


def fusion_summary(stderr_text: str, bundle: Any, staging: Path) -> dict[str, Any]:
    """``bundle.extra["fusion"]``: the not-fused pairs, ranked by bytes, and what the log said; the
    log's lines go to ``logs/fusion.txt``. Empty when the bundle has no output code to pair."""
    lines = fusion_log_lines(stderr_text)
    logs = parse_fusion_log(stderr_text) if lines else []
    pairs = fusion_pairs(bundle, staging, logs, has_log=bool(lines))
    if not pairs and not lines:
        return {}
    out: dict[str, Any] = {"log": bool(lines), "pairs": pairs,
                           "fusions_logged": sum(x.fusions for x in logs),
                           "refusals_logged": sum(len(x.refusals) for x in logs),
                           "source": "output code buffers (pairs, bytes); TORCH_LOGS=fusion (reasons)"}
    if lines:
        text = "\n".join(lines) + "\n"
        if len(text) > MAX_FUSION_LOG:
            text = text[:MAX_FUSION_LOG] + f"\n… kernelscope: {len(text) - MAX_FUSION_LOG} characters cut\n"
        (staging / "logs").mkdir(parents=True, exist_ok=True)
        (staging / "logs" / "fusion.txt").write_text(text, encoding="utf-8")
        bundle.files["fusion"] = "logs/fusion.txt"
    return out
