"""Dynamo's guards, from TORCH_TRACE's ``dynamo_cpp_guards_str`` (the guard tree tlparse shows), and the
guard behind each recompile ("0/0: tensor 'x' size mismatch at index 0. expected 8, actual 16").

A guard line looks like::

    | | +- TENSOR_MATCH: check_tensor(L['x'], Tensor, ..., size=[8], stride=[1])  # return (x + 1).relu()  # mp/h15/run.py:8 in add
    +- LAMBDA_GUARD: 2 <= L['x'].size()[0]  # m = x.amax(dim=-1)  # mp/h15/run.py:4 in softmax (user code shown is ...)

torch shortens the file to its last characters, so the user line is matched against the user's file by
its tail. Pure Python.
"""

from __future__ import annotations

import re
from typing import Any

from kernelscope.bundle.model import Bundle, Recompile

GROUP_TENSOR = "tensor match"
GROUP_SHAPE = "shape"
GROUP_GLOBAL = "global state"
GROUP_MODULE = "module attributes"
GROUP_OTHER = "other"
GROUPS = (GROUP_TENSOR, GROUP_SHAPE, GROUP_GLOBAL, GROUP_MODULE, GROUP_OTHER)

_LINE = re.compile(r"^[|\s]*\+- ([A-Z_]+): (.*)$")
_MANAGER = re.compile(r"^[|\s]*\+- \w*GuardManager: source=(.*?), accessed_by=")
_WHERE = re.compile(r"^(.*?):(\d+) in (\S+)")
_TENSOR_KINDS = {"TENSOR_MATCH", "NO_TENSOR_ALIASING", "TENSOR_ALIASING", "DIMENSION_DYNAMIC_MARKING_GUARD",
                 "TENSOR_SUBCLASS_METADATA_MATCH", "STORAGE_OVERLAPPING"}
_GLOBAL_KINDS = {"GLOBAL_STATE", "TORCH_FUNCTION_MODE_STACK", "DEFAULT_DEVICE", "GRAD_MODE", "DETERMINISTIC_ALGORITHMS",
                 "AUTOGRAD_SAVED_TENSORS_HOOKS", "SHAPE_ENV_GUARDS_DISABLED", "DUAL_LEVEL", "FUNCTORCH_STACK_MATCH"}
_SIZE = re.compile(r"\.(size|stride|storage_offset)\(\)|\bs\d+\b")


def parse_guard_tree(text: str, user_file: str = "") -> list[dict[str, Any]]:
    """Each guard of a ``dynamo_cpp_guards_str`` tree: {group, kind, text, source, file, line, code}."""
    guards: list[dict[str, Any]] = []
    source = ""
    for raw in (text or "").split("\n"):
        m = _MANAGER.match(raw)
        if m:
            source = m.group(1).strip()
            continue
        m = _LINE.match(raw)
        if not m:
            continue
        kind, rest = m.group(1), m.group(2)
        parts = [p.strip() for p in re.split(r"\s{2,}# ", rest, maxsplit=2)]
        expr = parts[0]
        src = source if raw.startswith("| |") else ""
        m_src = re.match(r"check_tensor\(([^,]+),", expr)
        if m_src:
            src = m_src.group(1).strip()
        guard = {"group": _group(kind, expr, src), "kind": kind, "text": expr, "source": src,
                 "file": "", "line": None, "code": ""}
        # "code  # file:line in fn (note)" when torch knows the user line; "file:line in fn" for framework guards.
        if len(parts) == 3:
            where = _WHERE.match(parts[2])
            if where:
                guard.update(file=_resolve(where.group(1), user_file), line=int(where.group(2)), code=parts[1])
        elif len(parts) == 2 and (where := _WHERE.match(parts[1])) and not parts[1].startswith(("_dynamo/", "(")):
            guard.update(file=_resolve(where.group(1), user_file), line=int(where.group(2)))
        guards.append(guard)
    return guards


def _group(kind: str, expr: str, source: str) -> str:
    if kind in _TENSOR_KINDS:
        return GROUP_TENSOR
    if kind in _GLOBAL_KINDS or "top_saved_tensors_hooks" in expr or "___check_global_state" in expr:
        return GROUP_GLOBAL
    if _SIZE.search(expr):
        return GROUP_SHAPE
    if "L['self']" in (source + expr) or "_modules[" in expr or "_parameters[" in expr or "G['" in (source + expr):
        return GROUP_MODULE
    return GROUP_OTHER


def _resolve(short: str, user_file: str) -> str:
    """torch prints the guard's file as its last characters ("mp/h15/run.py"): the user's file when it ends so."""
    if user_file and (user_file.endswith(short) or short.endswith(user_file.rsplit("/", 1)[-1])):
        return user_file
    return short


_FAIL_PREFIX = re.compile(r"^(\d+/\d+(?:_\d+)?): (.*)$", re.S)
_TENSOR_FAIL = re.compile(r"^tensor '([^']+)' (.*?)mismatch(?: at index (\d+))?\.?\s*(.*)$", re.S)
_EXPECTED = re.compile(r"expected (.+?),\s*actual (.+)$")


def link_recompile(r: Recompile, guards_by_cid: dict[str, list[dict[str, Any]]], graphs_by_cid: dict[str, str]) -> None:
    """Set ``r.guard``: the guard of the earlier compile that failed, with the values on both sides."""
    first = re.split(r";\s*|\n", r.reason.strip())[0]
    m = _FAIL_PREFIX.match(first)
    cid, text = (m.group(1), m.group(2).strip()) if m else ("", first.strip())
    candidates = guards_by_cid.get(cid) or (guards_by_cid.get(_previous(r.compile_id)) or [])
    if not cid:
        cid = _previous(r.compile_id)
    failed: dict[str, Any] | None = None
    info: dict[str, Any] = {}
    tm = _TENSOR_FAIL.match(text)
    if tm:
        name = tm.group(1)
        what = (tm.group(2).strip() or "tensor").strip()
        info["what"] = what + (f" at index {tm.group(3)}" if tm.group(3) else "")
        failed = next((g for g in candidates if g["kind"] == "TENSOR_MATCH" and
                       g["source"] in (name, f"L['{name}']")), None)
        em = _EXPECTED.search(tm.group(4))
        if em:
            info["expected"], info["actual"] = em.group(1).strip(), em.group(2).strip().rstrip(".")
    else:
        plain = text.split("  #")[0].strip()
        failed = next((g for g in candidates if g["text"] == plain), None) or \
            next((g for g in candidates if plain and plain in g["text"]), None)
        em = _EXPECTED.search(text)
        if em:
            info["expected"], info["actual"] = em.group(1).strip(), em.group(2).strip()
    guard: dict[str, Any] = {"compile_id": cid, "graph": graphs_by_cid.get(cid, ""), "failure": text}
    if failed:
        guard.update({k: failed[k] for k in ("group", "kind", "text", "source", "file", "line", "code")})
    guard.update(info)
    r.guard = guard


def _previous(cid: str) -> str:
    m = re.match(r"^(\d+)/(\d+)", cid or "")
    return f"{m.group(1)}/{int(m.group(2)) - 1}" if m and int(m.group(2)) > 0 else ""


# -- CUDA graphs ---------------------------------------------------------------------------------

_GLOG = re.compile(r"^[VIWEC]\d{4} [\d:.]+ +\d+ [^\]]*\] (?:\[(?!__)([^\]]*)\] )?(?:\[__\w+\] )?(.*)$")
_SKIP = re.compile(r"(?:skipping|disabling) cudagraphs? due to (.*)")
_RECORD = re.compile(r"\[?([\d/_]+)?\]? ?Recording cudagraph tree for (.*)")
CUDAGRAPH_MODES = ("reduce-overhead", "max-autotune")


# torch 2.13 (torch/_inductor/output_code.py cudagraph_partition_post_compile): with graph partition on (the
# default, TORCHINDUCTOR_GRAPH_PARTITION=1) a graph with fail reasons, or with no partition to capture, drops
# its CUDA graph with no log line and no cudagraph_skip_reason; only the non-partition path logs
# "skipping cudagraphs due to ..." (cudagraph_utils.log_cudagraph_skip_and_bump_counter, WARNING on the
# "cudagraphs" artifact, on by default). A graph that did get one logs "Recording cudagraph tree" (INFO on
# the same artifact, enabled by TORCH_LOGS=cudagraphs) on its first call.
UNLOGGED = ("no CUDA graph recorded on its call and no skip reason logged: with graph partition (on by default) "
            "Inductor drops a graph's CUDA graph silently when no part of it can be captured (e.g. a CPU tensor "
            "input); `kernelscope bench` counts the replays (cudaGraphLaunch per call)")


def parse_cudagraph_log(text: str) -> dict[str, dict[str, Any]]:
    """{compile id: {status, reason}} from Inductor's TORCH_LOGS (``cudagraphs``, ``perf_hints``, and the
    cudagraph_trees INFO log): "skipping cudagraphs due to cpu device (arg0_1)", "Recording cudagraph tree
    for graph without symints". A skip wins over a recording of the same compile; '' keys lines without
    a compile id."""
    out: dict[str, dict[str, Any]] = {}
    for line in (text or "").split("\n"):
        m = _GLOG.match(line)
        cid, msg = (m.group(1) or "", m.group(2)) if m else ("", line.strip())
        sk = _SKIP.search(msg)
        if sk:
            reason = re.sub(r"\.?\s*Found from\s*:?\s*$", "", sk.group(1).strip())
            out[cid] = {"status": "skipped", "reason": reason}
            continue
        rec = _RECORD.search(msg)
        if rec:
            key = rec.group(1) or cid
            entry = out.setdefault(key, {"status": "recorded", "reason": ""})
            if entry["status"] == "recorded":
                entry["records"] = entry.get("records", 0) + 1
                entry["reason"] = "recorded for " + rec.group(2).strip()
    return out


def cudagraph_status(bundle: Bundle, log: dict[str, dict[str, Any]], metric_skips: dict[str, str]) -> None:
    """Set ``graph.cudagraphs`` for every graph of a capture."""
    mode = (bundle.options or {}).get("mode") or ""
    device = (bundle.options or {}).get("device") or (bundle.environment or {}).get("device") or ""
    uses = mode in CUDAGRAPH_MODES or bool(log) or bool(metric_skips)
    for g in bundle.graphs:
        base = g.compile_id.split("_")[0]
        if g.compile_id in metric_skips or base in metric_skips:
            reason = metric_skips.get(g.compile_id) or metric_skips[base]
            g.cudagraphs = {"status": "skipped", "reason": _SKIP.sub(r"\1", reason).strip()}
        elif g.compile_id in log or base in log:
            g.cudagraphs = dict(log.get(g.compile_id) or log[base])
        elif "" in log and len({x.compile_id for x in bundle.graphs}) == 1:
            g.cudagraphs = dict(log[""])
        elif not uses:
            g.cudagraphs = {"status": "n/a", "reason": f"mode {mode or 'default'} does not use CUDA graphs"}
        elif device == "cpu":
            g.cudagraphs = {"status": "n/a", "reason": "CUDA graphs need a CUDA device"}
        else:
            g.cudagraphs = {"status": "unknown", "reason": UNLOGGED}
