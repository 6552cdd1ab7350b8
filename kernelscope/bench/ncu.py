"""``kernelscope bench BUNDLE --ncu``: hardware counters of a few Triton kernels from Nsight Compute. No torch.

ncu profiles one call of each graph that holds a chosen kernel (bench/ncu_child.py runs the bundle's
output code; a warm-up call first, so autotuning is not what gets profiled: ``--profile-from-start
off`` and the child's cudaProfilerStart/Stop), with ``--set full --import-source yes`` into a report,
then reads it back twice: ``--page details --csv`` (Speed of Light throughputs, achieved occupancy,
the rules that name the top stall reasons) and ``--page source --csv`` (samples per SASS instruction).
The instructions are carried to the kernel's Triton lines through the SASS line map (nvdisasm
``-gi`` of the bundle's cubin, kernelscope/pipeline/linemap.py), and the kernel's samples to your lines.

Bounded: three kernels by default (the slowest of the last bench, else the first three), ``--ncu-kernels``
to choose, a timeout. A missing ncu, or one that refuses (no permission to the GPU's counters), is said
in one line and nothing is stored.
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kernelscope.units import shorten_middle

DEFAULT_KERNELS = 3
NCU_TIMEOUT_S = 240
_OFFSET = re.compile(r"/\*([0-9a-f]{4,})\*/")


class NcuError(Exception):
    """ncu missing, refusing or failing; the message is one line for the user."""


def find_ncu() -> str | None:
    found = shutil.which("ncu")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"):
        cand = Path(root) / "bin" / "ncu" if root else None
        if cand and cand.is_file():
            return str(cand)
    return None


def _rows(text: str) -> list[list[str]]:
    """CSV rows of ncu's output, its ``==PROF==`` / ``==WARNING==`` lines and blank lines left out."""
    kept = [line for line in text.splitlines() if line.strip() and not line.startswith("==")]
    return list(csv.reader(io.StringIO("\n".join(kept))))


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except (ValueError, AttributeError):
        return None


def _cell(row: list[str], col: dict[str, int], name: str) -> str:
    i = col.get(name)
    return row[i] if i is not None and i < len(row) else ""


def parse_details(text: str) -> dict[str, list[dict[str, Any]]]:
    """``--page details --csv`` (or ``--set basic --csv``): kernel name -> its profiled launches, each
    ``{id, block, grid, metrics: {(section, metric): (value, unit)}, rules: [(section, rule, type, text)]}``."""
    rows = _rows(text)
    if not rows:
        return {}
    head = rows[0]
    col = {name: i for i, name in enumerate(head)}
    need = ("ID", "Kernel Name", "Section Name", "Metric Name", "Metric Unit", "Metric Value")
    if any(n not in col for n in need):
        raise NcuError("ncu's details CSV has none of the columns kernelscope reads (ID, Kernel Name, Metric Name ...)")
    launches: dict[str, dict[str, Any]] = {}
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows[1:]:
        if len(r) < len(need):
            continue

        def get(name: str, r=r) -> str:
            return _cell(r, col, name)

        lid = get("ID")
        launch = launches.get(lid)
        if launch is None:
            launch = launches[lid] = {"id": lid, "name": get("Kernel Name"), "block": get("Block Size"),
                                      "grid": get("Grid Size"), "metrics": {}, "rules": []}
            out.setdefault(launch["name"], []).append(launch)
        if get("Metric Name"):
            launch["metrics"][(get("Section Name"), get("Metric Name"))] = (get("Metric Value"), get("Metric Unit"))
        elif get("Rule Name"):
            launch["rules"].append((get("Section Name"), get("Rule Name"), get("Rule Type"), get("Rule Description")))
    return out


def parse_source(text: str) -> dict[str, list[list[dict[str, Any]]]]:
    """``--page source --csv``: kernel name -> per profiled launch, its SASS instructions
    ``{address, sass, samples, not_issued, executed}`` in address order."""
    out: dict[str, list[list[dict[str, Any]]]] = {}
    rows = _rows(text)
    i = 0
    while i < len(rows):
        r = rows[i]
        if len(r) >= 2 and r[0] == "Kernel Name":
            name = r[1]
            head = rows[i + 1] if i + 1 < len(rows) else []
            col = {n: j for j, n in enumerate(head)}
            block: list[dict[str, Any]] = []
            i += 2
            while i < len(rows) and not (rows[i] and rows[i][0] == "Kernel Name"):
                row = rows[i]

                def get(n: str, row=row, col=col) -> str:
                    return _cell(row, col, n)

                addr = get("Address")
                if addr.startswith("0x"):
                    block.append({"address": int(addr, 16), "sass": get("Source").strip(),
                                  "samples": int(_number(get("Warp Stall Sampling (All Samples)")) or 0),
                                  "not_issued": int(_number(get("Warp Stall Sampling (Not-issued Samples)")) or 0),
                                  "executed": int(_number(get("Instructions Executed")) or 0)})
                i += 1
            out.setdefault(name, []).append(block)
            continue
        i += 1
    return out


# (what kernelscope shows, the ncu section and metric it comes from)
COUNTERS = (
    ("memory_pct", "GPU Speed Of Light Throughput", "Memory Throughput"),
    ("dram_pct", "GPU Speed Of Light Throughput", "DRAM Throughput"),
    ("compute_pct", "GPU Speed Of Light Throughput", "Compute (SM) Throughput"),
    ("duration_ns", "GPU Speed Of Light Throughput", "Duration"),
    ("achieved_occupancy_pct", "Occupancy", "Achieved Occupancy"),
    ("theoretical_occupancy_pct", "Occupancy", "Theoretical Occupancy"),
    ("registers", "Launch Statistics", "Registers Per Thread"),
)


_NS_PER = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "µs": 1e3, "ms": 1e6, "msecond": 1e6,
           "s": 1e9, "second": 1e9}


def kernel_counters(launch: dict[str, Any]) -> dict[str, Any]:
    """Speed of Light, occupancy and the stall reasons ncu's rules name, for one profiled launch."""
    out: dict[str, Any] = {"block": launch["block"], "grid": launch["grid"]}
    for key, section, metric in COUNTERS:
        value = launch["metrics"].get((section, metric))
        out[key] = _number(value[0]) if value else None
        if key == "duration_ns" and value and out[key] is not None:
            # ncu scales a duration's unit to its size (ns, us, ms; "usecond" in older releases)
            out[key] *= _NS_PER.get(str(value[1]).strip().lower(), 1.0)
    stalls = []
    for _section, _rule, _type, text in launch["rules"]:
        m = re.search(r"spends ([\d.]+) cycles being stalled (.+?)(?: \(|\.\s|\.$)", text)
        if m and _type != "INF":
            stalls.append(f"{m.group(2)} ({m.group(1)} cycles per warp)")
    out["stalls"] = list(dict.fromkeys(stalls))[:3]
    return out


def sass_offsets(sass_text: str) -> dict[int, frozenset[tuple[str, int]]]:
    """SASS offset -> the source frames of that instruction (nvdisasm -gi line info)."""
    from kernelscope.pipeline.linemap import sass_frames

    frames = sass_frames(sass_text)
    out: dict[int, frozenset[tuple[str, int]]] = {}
    for n, line in enumerate(sass_text.splitlines(), 1):
        m = _OFFSET.search(line)
        if m and n in frames:
            out[int(m.group(1), 16)] = frames[n]
    return out


def samples_per_line(block: list[dict[str, Any]], offsets: dict[int, frozenset[tuple[str, int]]],
                     kernel_file: str) -> dict[int, int]:
    """Triton source line -> the stall samples of its instructions (one launch)."""
    if not block:
        return {}
    base = block[0]["address"]
    out: dict[int, int] = {}
    for ins in block:
        for file, line in offsets.get(ins["address"] - base, ()):
            if os.path.basename(file) == kernel_file and line > 0:
                out[line] = out.get(line, 0) + ins["samples"]
    return out


def choose_kernels(bundle: Any, names: list[str] | None) -> list[Any]:
    """The Triton kernels to profile: those named, else the slowest of the last bench, else the first."""
    triton = [k for k in bundle.kernels if k.lang == "triton"]
    if names:
        chosen = []
        for name in names:
            hits = [k for k in triton if k.name == name or k.id == name] or [k for k in triton if name in k.name]
            if not hits:
                raise NcuError(f"--ncu-kernels {name}: no Triton kernel of that name in this bundle; "
                               "see `kernelscope show BUNDLE` for the names")
            chosen.extend(h for h in hits[:1] if h not in chosen)
        return chosen
    run = ((bundle.extra.get("bench") or {}).get("run") or {}) if isinstance(bundle.extra, dict) else {}
    times: dict[str, float] = {}
    for row in run.get("per_kernel") or []:
        if row.get("us") is not None:
            times[row.get("kernel_id", "")] = times.get(row.get("kernel_id", ""), 0.0) + row["us"]
    ranked = sorted(triton, key=lambda k: -times.get(k.id, 0.0)) if times else triton
    return ranked[:DEFAULT_KERNELS]


def _ncu(ncu: str, args: list[str], timeout: float) -> str:
    try:
        proc = subprocess.run([ncu, *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise NcuError(f"ncu ran past {timeout:.0f} s and was stopped; choose fewer kernels with --ncu-kernels") from exc
    text = proc.stdout + proc.stderr
    if "ERR_NVGPUCTRPERM" in text:
        raise NcuError("ncu may not read this GPU's performance counters (ERR_NVGPUCTRPERM): run as root or allow "
                       "profiling (NVreg_RestrictProfilingToAdminUsers=0); nothing was measured")
    if proc.returncode != 0:
        last = next((ln for ln in reversed(text.splitlines()) if ln.strip()), "no output")
        raise NcuError(f"ncu failed (exit {proc.returncode}): {last[:200]}")
    return proc.stdout


def profile(bundle_path: Path, names: list[str] | None, *, python: str | None = None,
            on_progress=None) -> dict[str, Any]:
    """Run ncu on the chosen kernels of a bundle; returns the record stored as ``extra["bench"]["ncu"]``."""
    from kernelscope.bundle.io import read_bundle

    say = on_progress or (lambda message: None)
    bundle = read_bundle(bundle_path)
    ncu = find_ncu()
    if ncu is None:
        raise NcuError("ncu (Nsight Compute) is not on PATH: bench --ncu needs it (CUDA toolkit, GPU box); "
                       "nothing was measured")
    kernels = choose_kernels(bundle, names)
    if not kernels:
        raise NcuError("this bundle has no Triton kernels for ncu to profile")
    graphs = sorted({k.graph for k in kernels})
    regex = "regex:^(" + "|".join(re.escape(k.name) for k in kernels) + ")$"
    launches = sum(max(1, k.launches) for k in kernels)
    work = Path(tempfile.mkdtemp(prefix="kernelscope-ncu-"))  # the report: read back, then removed
    try:
        rep = work / "profile"
        child = [python or sys.executable, "-m", "kernelscope.bench.ncu_child", str(Path(bundle_path).resolve()),
                 *graphs]
        say(f"ncu: {len(kernels)} kernels ({', '.join(k.name for k in kernels)}), {launches} launches, --set full")
        t = time.time()
        _ncu(ncu, ["--set", "full", "--import-source", "yes", "--profile-from-start", "off",
                   "--kernel-name", regex, "--launch-count", str(launches), "-f", "-o", str(rep), *child],
             NCU_TIMEOUT_S)
        report = rep.with_suffix(".ncu-rep")
        if not report.is_file():
            raise NcuError("ncu wrote no report: the kernels were not launched under the profiler")
        details = parse_details(_ncu(ncu, ["-i", str(report), "--page", "details", "--csv"], 120))
        try:
            source = parse_source(_ncu(ncu, ["-i", str(report), "--page", "source", "--csv"], 120))
        except NcuError as exc:
            source, source_note = {}, str(exc)
        else:
            source_note = ""
        seconds = time.time() - t
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows = [kernel_row(bundle, k, details.get(k.name, []), source.get(k.name, [])) for k in kernels]
    return {"ran_at": time.strftime("%Y-%m-%dT%H:%M:%S"), "seconds": round(seconds, 1),
            "tool": "Nsight Compute (ncu --set full --import-source yes)", "kernels": rows,
            "notes": [source_note] if source_note else []}


def kernel_row(bundle: Any, kernel: Any, launches: list[dict[str, Any]], blocks: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """One kernel's counters (its first profiled launch) and its samples per Triton line and per your line."""
    row: dict[str, Any] = {"name": kernel.name, "kernel_id": kernel.id, "profiled": len(launches)}
    if not launches:
        row["missing"] = "ncu profiled no launch of it"
        return row
    row.update(kernel_counters(launches[0]))
    block = blocks[0] if blocks else []
    row["samples"] = sum(i["samples"] for i in block)
    per_line: dict[int, int] = {}
    note = ""
    if block:
        offsets, kernel_file, source_lines = _sass_map(bundle, kernel)
        if offsets:
            per_line = samples_per_line(block, offsets, kernel_file)
        else:
            note = "no SASS line map (nvdisasm or the cubin missing): samples per instruction only"
        row["triton_lines"] = [{"line": ln, "samples": s, "code": source_lines[ln - 1].strip()
                                if 0 < ln <= len(source_lines) else ""}
                               for ln, s in sorted(per_line.items(), key=lambda x: -x[1])[:8]]
    row["user_lines"] = [{"file": u.file, "line": u.line, "code": u.code, "samples": row.get("samples", 0),
                          "shared": len(kernel.user_lines) > 1} for u in kernel.user_lines]
    if note:
        row["note"] = note
    return row


def _sass_map(bundle: Any, kernel: Any) -> tuple[dict[int, frozenset[tuple[str, int]]], str, list[str]]:
    from kernelscope.bundle.io import bundle_path
    from kernelscope.pipeline.stages import disassemble, pick_variant

    variant = pick_variant(kernel)
    source = bundle_path(bundle, kernel.source).read_text(encoding="utf-8").splitlines() if kernel.source else []
    if variant is None or not variant.files.get("cubin"):
        return {}, "", source
    sass = disassemble(bundle_path(bundle, variant.files["cubin"]))
    if sass.missing:
        return {}, "", source
    from kernelscope.pipeline.linemap import line_map

    kernel_file = line_map(sass).kernel_file
    return sass_offsets(sass.text), kernel_file, source


def ncu_text(record: dict[str, Any]) -> str:
    """The counters as `bench --ncu` prints them."""
    out = [f"Nsight Compute, {len(record['kernels'])} kernels ({record.get('seconds', '?')} s): Speed of Light %, "
           "achieved occupancy, top stalls, sampled instructions per line"]
    out.append(f"  {'kernel':<44} {'mem%':>6} {'dram%':>6} {'sm%':>6} {'occ%':>6} {'µs':>8}")
    for k in record["kernels"]:
        if k.get("missing"):
            out.append(f"  {shorten_middle(k['name'], 44):<44} {k['missing']}")
            continue

        def f(x: Any) -> str:
            return f"{x:.1f}" if isinstance(x, (int, float)) else "-"

        dur = k.get("duration_ns")
        out.append(f"  {shorten_middle(k['name'], 44):<44} {f(k.get('memory_pct')):>6} {f(k.get('dram_pct')):>6} "
                   f"{f(k.get('compute_pct')):>6} {f(k.get('achieved_occupancy_pct')):>6} "
                   f"{f(dur / 1000 if dur else None):>8}")
        for s in k.get("stalls", []):
            out.append(f"      stall: {s}")
        for ln in k.get("triton_lines", [])[:3]:
            share = 100 * ln["samples"] / k["samples"] if k.get("samples") else 0
            out.append(f"      line {ln['line']:>4} {share:4.0f}% of samples  {ln['code'][:60]}")
        for u in k.get("user_lines", [])[:2]:
            out.append(f"      your line {os.path.basename(u['file'])}:{u['line']}  {u['code'].strip()[:50]}"
                       + ("  (shared)" if u.get("shared") else ""))
        if k.get("note"):
            out.append(f"      note: {k['note']}")
    out += [f"note: {n}" for n in record.get("notes", [])]
    return "\n".join(out)
