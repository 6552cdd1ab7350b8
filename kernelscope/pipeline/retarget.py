"""Recompiling a bundle's Triton kernel for another GPU arch, on any machine, and comparing archs.

The compile runs in a child process (``compile.py``) from the kernel's recorded MLIR, so no GPU and
no torch are needed; the stage files land in a folder and load like a captured kernel's.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from kernelscope.bundle.model import Bundle, Kernel, TritonVariant
from kernelscope.pipeline.compile import CompileResult, compile_folder, compile_kernel, parse_arch
from kernelscope.pipeline.facts import Fact, kernel_facts
from kernelscope.pipeline.stages import STAGES, StageText, kernel_source_path, load_stage_files


@dataclass
class Retarget:
    """A kernel compiled for one arch: its stages and facts."""

    arch: int
    compile: CompileResult
    stages: list[StageText]

    def stage(self, name: str) -> StageText:
        return next(s for s in self.stages if s.stage == name)

    def facts(self) -> list[Fact]:
        import json

        meta_path = self.compile.files.get("json")
        meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path else {}
        return kernel_facts(meta, self.compile.files.get("cubin"), self.stage("sass"))


def retarget(
    bundle: Bundle,
    kernel: Kernel,
    arch: str | int,
    out_dir: Path | None = None,
    variant: TritonVariant | str | int | None = None,
) -> Retarget:
    """Compile the kernel for ``arch`` (e.g. "sm_80") and load every stage; PipelineError on failure."""
    cc = parse_arch(arch)
    result = compile_kernel(bundle, kernel, arch=cc, variant=variant, out_dir=out_dir)
    stages = load_stage_files(result.files, kernel_source_path(bundle, kernel), cache_dir=result.out_dir)
    return Retarget(cc, result, stages)


def diff_stages(a: StageText, b: StageText, label_a: str, label_b: str, context: int = 3) -> str:
    """Unified diff of two texts of the same stage (e.g. PTX for sm_80 vs sm_90)."""
    if a.missing or b.missing:
        return f"({a.title}: {a.missing_reason or b.missing_reason})"
    return "\n".join(
        difflib.unified_diff(a.lines, b.lines, f"{a.title} {label_a}", f"{b.title} {label_b}", n=context, lineterm="")
    )


def compare_archs(a: Retarget, b: Retarget) -> dict[str, str]:
    """Stage name -> unified diff, for every stage after the source."""
    return {
        spec.name: diff_stages(a.stage(spec.name), b.stage(spec.name), f"sm_{a.arch}", f"sm_{b.arch}")
        for spec in STAGES
        if spec.name != "source"
    }


def retarget_folder(
    folder: Path, arch: str | int, out_dir: Path, source: Path | None = None, name: str | None = None
) -> Retarget:
    """``retarget`` for a plain Triton cache folder (e.g. an autotune candidate not in the bundle)."""
    result = compile_folder(Path(folder), arch, Path(out_dir), name=name)
    stages = load_stage_files(result.files, Path(source) if source else None, cache_dir=result.out_dir)
    return Retarget(result.arch, result, stages)
