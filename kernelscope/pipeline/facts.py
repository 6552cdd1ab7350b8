"""Kernel facts, each with where it was read from: launch shape, resources, and what the SASS does.

num_warps / num_stages / shared memory come from Triton's metadata json; registers, stack and local
memory from ``cuobjdump -res-usage`` on the cubin; instruction counts from the SASS text (global
loads/stores by vector width, FFMA, tensor-core HMMA/HGMMA/UTC*MMA, barriers). The grid is only
known when the capture recorded it.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from kernelscope.bundle.model import Bundle, Kernel, TritonVariant
from kernelscope.pipeline.stages import StageText, disassemble, pick_variant, variant_files
from kernelscope.pipeline.tools import ToolError, run_tool


@dataclass
class Fact:
    name: str
    value: object
    source: str  # where it was read from, e.g. "metadata json", "cuobjdump -res-usage", "SASS"

    def line(self) -> str:
        return f"{self.name:<36} {self.value!s:<14} ({self.source})"


_RES_USAGE = re.compile(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)")
_SASS_INSN = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)((?:\.[A-Z0-9_]+)*)", re.M)
# opcode family -> what a user calls it
_TENSOR_CORE = ("HMMA", "HGMMA", "IMMA", "IGMMA", "QGMMA", "DMMA", "BMMA", "UTCHMMA", "UTCQMMA", "UTCIMMA", "UTCOMMA")


def resource_usage(cubin: Path) -> dict[str, int]:
    """REG/STACK/SHARED/LOCAL of the cubin's (first) function, via cuobjdump -res-usage."""
    out = run_tool("cuobjdump", ["-res-usage", str(cubin)])
    m = _RES_USAGE.search(out)
    if not m:
        raise ToolError("cuobjdump -res-usage printed no resource line")
    return {"registers": int(m.group(1)), "stack": int(m.group(2)), "shared": int(m.group(3)), "local": int(m.group(4))}


def _width(mods: str, default: int = 32) -> int:
    for w in (128, 64, 32, 16, 8):
        if f".{w}" in mods or f".U{w}" in mods or f".S{w}" in mods:
            return w
    return default


def sass_counts(sass: str) -> dict[str, int]:
    """Counts of the instructions a user asks about, keyed by a readable name."""
    counts: Counter[str] = Counter()
    for op, mods in _SASS_INSN.findall(sass):
        counts["instructions"] += 1
        if op in ("LDG", "STG"):
            kind = "global loads" if op == "LDG" else "global stores"
            counts[f"{kind} {op}{mods} ({_width(mods)}-bit)"] += 1
            counts[kind] += 1
        elif op in ("LDS", "STS", "LDSM"):
            counts["shared loads" if op != "STS" else "shared stores"] += 1
        elif op in ("FFMA", "HFMA2", "DFMA"):
            counts[f"FMAs ({op})"] += 1
        elif op in _TENSOR_CORE:
            counts[f"tensor-core ({op})"] += 1
        elif op in ("BAR", "BSYNC", "WARPSYNC", "SYNCS"):
            counts[f"barriers ({op})" if op != "BAR" else "barriers (BAR)"] += 1
        elif op in ("LDGSTS", "UBLKCP", "UTMALDG", "UTMASTG"):
            counts[f"async copies ({op})"] += 1
        elif op == "LDL" or op == "STL":
            counts[f"local memory ({op})"] += 1
    return dict(counts)


def kernel_facts(
    metadata: dict, cubin: Path | None, sass: StageText | None = None, grid: object | None = None
) -> list[Fact]:
    """Facts about one compiled kernel; a fact that cannot be read is listed with the reason."""
    facts: list[Fact] = []
    src = "Triton metadata json"
    target = metadata.get("target") or {}
    if isinstance(target, dict) and target.get("arch"):
        facts.append(Fact("target", f"sm_{target['arch']}", src))
    for key, label in (
        ("num_warps", "num_warps"),
        ("num_stages", "num_stages"),
        ("num_ctas", "num_ctas"),
        ("shared", "shared memory (bytes)"),
    ):
        if metadata.get(key) is not None:
            facts.append(Fact(label, metadata[key], src))
    if metadata.get("maxnreg"):
        facts.append(Fact("maxnreg", metadata["maxnreg"], src))
    facts.append(Fact("grid", grid if grid is not None else "not recorded", "capture" if grid else "-"))
    if cubin is not None and cubin.is_file():
        try:
            res = resource_usage(cubin)
            for key, label in (
                ("registers", "registers per thread"),
                ("stack", "stack (bytes)"),
                ("local", "local memory / spills (bytes)"),
                ("shared", "static shared (bytes)"),
            ):
                facts.append(Fact(label, res[key], "cuobjdump -res-usage"))
        except ToolError as exc:
            facts.append(Fact("registers per thread", "unknown", str(exc)))
        if sass is None:
            sass = disassemble(cubin)
    if sass is not None and not sass.missing:
        tool = "SASS (nvdisasm)" if "//##" in sass.text or ".text." in sass.text else "SASS"
        for name, n in sorted(sass_counts(sass.text).items(), key=lambda kv: (kv[0] != "instructions", kv[0])):
            facts.append(Fact(name, n, tool))
    elif sass is not None:
        facts.append(Fact("SASS", "unavailable", sass.missing_reason))
    return facts


def facts_for(
    bundle: Bundle, kernel: Kernel, variant: TritonVariant | str | int | None = None, sass: StageText | None = None
) -> list[Fact]:
    """Facts about a bundle kernel's chosen (or given) Triton variant."""
    chosen = pick_variant(kernel, variant)
    if chosen is None:
        return [Fact("Triton variant", "none", "Triton's cache files were not captured")]
    files = variant_files(bundle, chosen)
    grid = (bundle.extra.get("grids") or {}).get(kernel.id) if isinstance(bundle.extra, dict) else None
    return kernel_facts(chosen.metadata or {}, files.get("cubin"), sass, grid)


def render_facts(facts: list[Fact]) -> str:
    return "\n".join(f.line() for f in facts)
