"""Compiling a bundle's Triton kernel again, in a child process, for its own or another GPU arch.

The child (``_compile_child``) imports triton; this module only builds the request, sets the dump
environment (MLIR_ENABLE_DUMP + MLIR_DUMP_PATH for MLIR passes, LLVM_IR_ENABLE_DUMP for LLVM's,
whose output goes to stderr) and collects the files. The input is the variant's initial MLIR
(``.source``), so the TTIR passes run too; the ``.ttir`` is the fallback.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.bundle.artifacts import COMPILE_FILES
from kernelscope.bundle.model import Bundle, Kernel, TritonVariant
from kernelscope.pipeline.stages import pick_variant, variant_files

# Arches a user can ask for by name; any sm_NN with a number works too.
KNOWN_ARCHES = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")  # the ones a user is pointed at
# Every NVIDIA compute capability Triton's CUDA backend targets; another number aborts the compiler.
VALID_ARCHES = (70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 110, 120, 121)
COMPILE_TIMEOUT_S = 600
MLIR_DUMP_NAME = "mlir_passes.txt"
LLVM_DUMP_NAME = "llvm_passes.txt"


class PipelineError(Exception):
    """A recompile that cannot be done or failed; the message is one line for the user."""


def parse_arch(arch: str | int) -> int:
    """80 from "sm_80", "sm80", "sm_90a", "80" or 80."""
    if isinstance(arch, int):
        cc = arch
    else:
        m = re.fullmatch(r"(?:sm_?)?(\d{2,3})a?", str(arch).strip().lower())
        if not m:
            raise PipelineError(f"unknown GPU arch {arch!r}; use one of {', '.join(KNOWN_ARCHES)} (or sm_NN)")
        cc = int(m.group(1))
    if cc not in VALID_ARCHES:
        raise PipelineError(f"no NVIDIA GPU arch sm_{cc}; use one of "
                            f"{', '.join(f'sm_{x}' for x in VALID_ARCHES)}")
    return cc


def variant_arch(variant: TritonVariant | None) -> int | None:
    target = (variant.metadata or {}).get("target") if variant else None
    if isinstance(target, dict) and isinstance(target.get("arch"), int):
        return target["arch"]
    return None


@dataclass
class CompileResult:
    """What one child compile wrote."""

    out_dir: Path
    name: str
    arch: int
    files: dict[str, Path] = field(default_factory=dict)  # "source", "ttir" .. "cubin", "json"
    times: dict[str, float] = field(default_factory=dict)  # per stage, seconds, measured in the child
    wall_s: float = 0.0  # the whole child process, start-up included
    mlir_dump: Path | None = None
    llvm_dump: Path | None = None
    upgraded_ir: bool = False  # the input was in an older Triton's syntax and was rewritten
    triton_version: str = ""


def cache_root() -> Path:
    from kernelscope.environment import cache_dir

    return cache_dir()


def work_dir_for(bundle: Bundle, kernel: Kernel, variant: TritonVariant | None, arch: int, what: str) -> Path:
    """A stable folder outside the bundle (bundles may be read-only) for one recompute."""
    key = "|".join([str(Path(bundle.root).resolve()), kernel.id, variant.cache_key if variant else "", str(arch), what])
    return cache_root() / "pipeline" / hashlib.sha256(key.encode()).hexdigest()[:20]


def compile_ir(
    ir_path: Path,
    name: str,
    arch: int,
    options: dict,
    out_dir: Path,
    start: str = "source",
    dump_passes: bool = False,
    timeout: float = COMPILE_TIMEOUT_S,
) -> CompileResult:
    """Compile one MLIR file through every later stage in a child process; PipelineError on failure."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in (out_dir / "result.json", out_dir / MLIR_DUMP_NAME, out_dir / LLVM_DUMP_NAME):
        stale.unlink(missing_ok=True)
    request = {
        "ir_path": str(ir_path),
        "start": start,
        "arch": arch,
        "name": name,
        "out_dir": str(out_dir),
        "options": options,
    }
    req_path = out_dir / "request.json"
    req_path.write_text(json.dumps(request, default=str), encoding="utf-8")
    env = dict(os.environ)
    # The recorded kernel says whether FP fusion was on; say it explicitly (triton 3.9 warns otherwise).
    env["TRITON_DEFAULT_FP_FUSION"] = "1" if options.get("enable_fp_fusion", True) else "0"
    for var in ("MLIR_ENABLE_DUMP", "MLIR_DUMP_PATH", "LLVM_IR_ENABLE_DUMP", "TRITON_KERNEL_DUMP"):
        env.pop(var, None)
    if dump_passes:
        env["MLIR_ENABLE_DUMP"] = "1"
        env["MLIR_DUMP_PATH"] = str(out_dir / MLIR_DUMP_NAME)
        env["LLVM_IR_ENABLE_DUMP"] = "1"
    started = time.perf_counter()
    try:
        with open(out_dir / LLVM_DUMP_NAME if dump_passes else os.devnull, "w", encoding="utf-8") as err:
            proc = subprocess.run(
                [sys.executable, "-m", "kernelscope.pipeline._compile_child", str(req_path)],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=err,
                timeout=timeout,
                check=False,
            )
    except subprocess.TimeoutExpired as exc:
        raise PipelineError(f"compiling {name} for sm_{arch} took over {timeout:.0f} s; stopped") from exc
    wall = time.perf_counter() - started
    result_path = out_dir / "result.json"
    if not result_path.is_file():
        if proc.returncode < 0:
            raise PipelineError(f"compiling {name} for sm_{arch}: the compiler aborted (signal {-proc.returncode}); "
                                f"this Triton probably does not support sm_{arch}")
        raise PipelineError(f"compiling {name} for sm_{arch}: the compiler process died (exit {proc.returncode})")
    result = json.loads(result_path.read_text(encoding="utf-8"))
    if not result.get("ok"):
        raise PipelineError(f"compiling {name} for sm_{arch} failed: {result.get('error', 'unknown error')}")
    files = {}
    for suffix in COMPILE_FILES:
        path = out_dir / f"{name}.{suffix}"
        if path.is_file():
            files[suffix] = path
    mlir = out_dir / MLIR_DUMP_NAME
    llvm = out_dir / LLVM_DUMP_NAME
    return CompileResult(
        out_dir=out_dir,
        name=name,
        arch=arch,
        files=files,
        times=result.get("times", {}),
        wall_s=wall,
        mlir_dump=mlir if mlir.is_file() else None,
        llvm_dump=llvm if dump_passes and llvm.is_file() else None,
        upgraded_ir=bool(result.get("upgraded_ir")),
        triton_version=result.get("triton_version", ""),
    )


def kernel_ir_input(bundle: Bundle, kernel: Kernel, variant: TritonVariant | None) -> tuple[Path, str]:
    """The MLIR to start from: the initial module (``.source``) if captured, else the TTIR."""
    if kernel.lang != "triton":
        raise PipelineError(f"{kernel.name} is not a Triton kernel ({kernel.lang}); it has no Triton pipeline")
    if variant is None:
        raise PipelineError(f"{kernel.name}: Triton's cache files were not captured, nothing to recompile")
    files = variant_files(bundle, variant)
    for stage in ("source", "ttir"):
        path = files.get(stage)
        if path is not None and path.is_file():
            return path, stage
    raise PipelineError(f"{kernel.name}: neither the .source nor the .ttir MLIR is in this capture")


def compile_kernel(
    bundle: Bundle,
    kernel: Kernel,
    arch: str | int | None = None,
    variant: TritonVariant | str | int | None = None,
    out_dir: Path | None = None,
    dump_passes: bool = False,
) -> CompileResult:
    """Recompile a bundle kernel (its chosen variant by default) for ``arch`` (default: its own)."""
    chosen = pick_variant(kernel, variant)
    ir_path, start = kernel_ir_input(bundle, kernel, chosen)
    cc = parse_arch(arch) if arch is not None else variant_arch(chosen)
    if cc is None:
        raise PipelineError(f"{kernel.name}: the capture does not say which arch it was built for; pass --arch")
    what = "passes" if dump_passes else "stages"
    out = Path(out_dir) if out_dir is not None else work_dir_for(bundle, kernel, chosen, cc, what)
    name = ir_path.stem
    return compile_ir(ir_path, name, cc, dict(chosen.metadata or {}), out, start=start, dump_passes=dump_passes)


def compile_folder(
    folder: Path, arch: str | int, out_dir: Path, name: str | None = None, dump_passes: bool = False
) -> CompileResult:
    """Recompile a Triton cache entry (a folder of ``<name>.source/.ttir/.json``) for ``arch``."""
    from kernelscope.pipeline.stages import stage_files_in_folder

    try:
        files = stage_files_in_folder(Path(folder), name)
    except KeyError as exc:
        raise PipelineError(str(exc).strip("'\"")) from exc
    start = "source" if "source" in files else "ttir" if "ttir" in files else None
    if start is None:
        raise PipelineError(f"{folder}: no .source or .ttir MLIR to compile from")
    options = json.loads(files["json"].read_text(encoding="utf-8")) if "json" in files else {}
    ir_path = files[start]
    return compile_ir(
        ir_path, ir_path.stem, parse_arch(arch), options, Path(out_dir), start=start, dump_passes=dump_passes
    )
