"""Plain-text artifacts of a Triton kernel for ``kernelscope show --artifact NAME [--arch sm_80]``.

One entry point, ``render_artifact``; bad input (a non-Triton kernel, an unknown artifact or arch, a
failed recompile) raises ``BundleError`` with a one-line message.
"""

from __future__ import annotations

from pathlib import Path

from kernelscope.bundle.artifacts import RENDERED_STAGES
from kernelscope.bundle.io import BundleError
from kernelscope.bundle.model import Bundle, Kernel
from kernelscope.pipeline.compile import PipelineError, parse_arch, variant_arch
from kernelscope.pipeline.tools import ToolError, run_tool

# The pipeline stages of kernelscope/bundle/artifacts.py, then what is computed from a compile.
ARTIFACTS: tuple[str, ...] = (*RENDERED_STAGES, "cubin-info", "facts", "passes", "llvm-passes")
_STAGE_OF = RENDERED_STAGES


def render_pass_list(log) -> str:
    """One line per pass: index, changed mark (* changed, . unchanged, ? unknown), IR, name, scope."""
    marks = {True: "*", False: ".", None: "?"}
    head = (
        f"{len(log.passes)} {log.kind.upper()} passes, {len(log.changed_only())} changed"
        f"{' (' + log.label + ')' if log.label else ''}; {log.origin}"
    )
    rows = [f"{p.index:4d} {marks[p.changed]} {p.stage:<9} {p.name:<44} {p.scope}" for p in log.passes]
    return "\n".join([head, *rows])


def render_artifact(bundle: Bundle, kernel: Kernel, artifact: str, arch: str | None = None) -> str:
    """The artifact's text for the kernel's chosen variant, or for ``arch`` (recompiled when it differs)."""
    if artifact not in ARTIFACTS:
        raise BundleError(f"unknown artifact {artifact!r}; choose one of: {', '.join(ARTIFACTS)}")
    if kernel.lang != "triton":
        raise BundleError(f"{kernel.name} is not a Triton kernel ({kernel.lang}); it has no Triton artifacts")
    try:
        return _render(bundle, kernel, artifact, arch)
    except (PipelineError, ToolError, KeyError, ValueError, OSError) as exc:
        msg = str(exc).strip().strip("'\"").splitlines()
        raise BundleError(msg[0] if msg else type(exc).__name__) from exc


def _render(bundle: Bundle, kernel: Kernel, artifact: str, arch: str | None) -> str:
    from kernelscope.pipeline.facts import facts_for, render_facts
    from kernelscope.pipeline.passes import recompute_passes, select_log, stored_passes
    from kernelscope.pipeline.stages import load_stages, pick_variant, variant_files

    variant = pick_variant(kernel)
    own = variant_arch(variant)
    retargeted = None
    if arch is not None and parse_arch(arch) != own and artifact not in ("passes", "llvm-passes"):
        from kernelscope.pipeline.retarget import retarget

        retargeted = retarget(bundle, kernel, arch)
    if artifact in _STAGE_OF:
        stages = retargeted.stages if retargeted else load_stages(bundle, kernel)
        stage = next(s for s in stages if s.stage == _STAGE_OF[artifact])
        if stage.missing:
            raise BundleError(f"{kernel.name}: {stage.title} not available: {stage.missing_reason}")
        return stage.text
    if artifact == "facts":
        return render_facts(retargeted.facts() if retargeted else facts_for(bundle, kernel))
    if artifact == "cubin-info":
        cubin = retargeted.compile.files.get("cubin") if retargeted else variant_files(bundle, variant).get("cubin")
        if cubin is None or not Path(cubin).is_file():
            raise BundleError(f"{kernel.name}: no cubin in this capture")
        return run_tool("cuobjdump", ["-res-usage", "-elf", str(cubin)])
    kind = "mlir" if artifact == "passes" else "llvm"
    logs = [] if arch is not None else stored_passes(bundle, kernel)
    log = select_log(logs, variant, kind)
    if log is None:
        log = select_log(recompute_passes(bundle, kernel, arch=arch), variant, kind)
    if log is None:
        raise BundleError(f"{kernel.name}: the compile printed no {kind.upper()} pass dumps")
    return render_pass_list(log)
