"""The Triton stages a user steps through, described as data, and loading their texts.

Stages: the Triton source (the Inductor kernel file that every ``loc`` points into), TTIR, TTGIR,
LLVM IR, PTX and SASS (disassembled from the cubin). A stage that cannot be shown becomes a
``StageText`` with ``missing_reason``; loading never raises for a missing file or tool.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.bundle.artifacts import CACHE_TEXT_STAGES, COMPILE_FILES, PIPELINE
from kernelscope.bundle.io import bundle_path
from kernelscope.bundle.model import Bundle, Kernel, TritonVariant
from kernelscope.pipeline.tools import ToolError, run_tool


@dataclass(frozen=True)
class StageSpec:
    """One pipeline stage: its key, what the user reads, Triton's cache suffix, and its lexer."""

    name: str
    title: str
    suffix: str  # file suffix in Triton's cache ("" for the Inductor kernel file)
    lexer: str  # a key for kernelscope.ui.lexers.lexer_for_stage
    order: int


# The pipeline stages of the artifact registry (kernelscope/bundle/artifacts.py). The first is the
# Inductor kernel file (suffix "py"); SASS is disassembled from the cubin.
STAGES: tuple[StageSpec, ...] = tuple(
    StageSpec(a.name, a.title, "py" if a.stage == 0 else a.suffix or a.name, a.name, a.stage) for a in PIPELINE)
STAGE_NAMES: tuple[str, ...] = tuple(s.name for s in STAGES)
# Stages whose text lives in Triton's cache folder under the same suffix.
CACHE_STAGES = CACHE_TEXT_STAGES


def stage_spec(name: str) -> StageSpec:
    for spec in STAGES:
        if spec.name == name:
            return spec
    raise KeyError(f"no stage {name!r}; stages: {', '.join(STAGE_NAMES)}")


@dataclass
class StageText:
    """The text of one stage of one kernel, or why it is missing."""

    stage: str
    title: str
    text: str = ""
    path: str = ""  # the file it was read from ("" when computed or missing)
    missing_reason: str = ""
    # Source frames per line, when known up front: a listing rewritten for display (kernelscope.pipeline.listing)
    # keeps the line map of the text it came from. None: parse them from ``text``.
    frames: dict[int, frozenset[tuple[str, int]]] | None = field(default=None, repr=False, compare=False)
    _lines: list[str] | None = field(default=None, repr=False, compare=False)

    @property
    def missing(self) -> bool:
        return bool(self.missing_reason)

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = self.text.splitlines()
        return self._lines

    def display_text(self) -> str:
        """What a viewer shows: the text, or a one-paragraph placeholder."""
        return self.text if not self.missing else f"[{self.title} not available: {self.missing_reason}]"


def _placeholder(name: str, reason: str) -> StageText:
    return StageText(stage=name, title=stage_spec(name).title, missing_reason=reason)


def _read(name: str, path: Path | None, what: str) -> StageText:
    if path is None:
        return _placeholder(name, f"no {what} in this capture")
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return _placeholder(name, f"cannot read {path.name}: {exc.strerror or exc}")
    return StageText(stage=name, title=stage_spec(name).title, text=text, path=str(path))


def pick_variant(kernel: Kernel, variant: TritonVariant | str | int | None = None) -> TritonVariant | None:
    """The variant asked for (object, cache key, or index), else the chosen one, else the first."""
    if isinstance(variant, TritonVariant):
        return variant
    if not kernel.triton:
        return None
    if isinstance(variant, int):
        return kernel.triton[variant]
    if isinstance(variant, str):
        for v in kernel.triton:
            if v.cache_key == variant or v.cache_key.startswith(variant):
                return v
        raise KeyError(f"kernel {kernel.name} has no Triton variant {variant!r}")
    for v in kernel.triton:
        if v.chosen:
            return v
    return kernel.triton[0]


def disassemble(cubin: Path, cache_dir: Path | None = None) -> StageText:
    """SASS of a cubin with line info (nvdisasm -c -gi), else cuobjdump -sass; a placeholder on failure."""
    if not cubin.is_file():
        return _placeholder("sass", f"no cubin at {cubin.name}")
    data = cubin.read_bytes()
    cached = None
    if cache_dir is not None:
        cached = Path(cache_dir) / (hashlib.sha256(data).hexdigest()[:24] + ".sass")
        if cached.is_file():
            return StageText("sass", "SASS", cached.read_text(encoding="utf-8"), path=str(cached))
    reasons = []
    for tool, args in (("nvdisasm", ["-c", "-gi", str(cubin)]), ("cuobjdump", ["-sass", str(cubin)])):
        try:
            text = run_tool(tool, args)
        except ToolError as exc:
            reasons.append(str(exc))
            continue
        if cached is not None:
            cached.parent.mkdir(parents=True, exist_ok=True)
            cached.write_text(text, encoding="utf-8")
        return StageText("sass", "SASS", text, path=str(cached or ""))
    return _placeholder("sass", "; ".join(reasons))


def load_stage_files(
    files: dict[str, Path | None], source: Path | None, cache_dir: Path | None = None
) -> list[StageText]:
    """Stages from plain paths: ``files`` maps "ttir".."cubin" to a file, ``source`` is the kernel file."""
    out = [_read("source", source, "Triton kernel source")]
    for name in CACHE_STAGES:
        out.append(_read(name, files.get(name), f".{name} file"))
    cubin = files.get("cubin")
    out.append(disassemble(cubin, cache_dir) if cubin else _placeholder("sass", "no cubin in this capture"))
    return out


def stage_files_in_folder(folder: Path, name: str | None = None) -> dict[str, Path]:
    """Triton-cache style files ``<name>.<suffix>`` in a folder (the kernel name is guessed when unique)."""
    folder = Path(folder)
    if name is None:
        names = {p.stem for p in folder.glob("*.ttir")} or {p.stem for p in folder.glob("*.cubin")}
        if len(names) != 1:
            raise KeyError(f"{folder}: expected one kernel's stage files, found {sorted(names) or 'none'}")
        name = names.pop()
    found = {}
    for suffix in COMPILE_FILES:
        path = folder / f"{name}.{suffix}"
        if path.is_file():
            found[suffix] = path
    return found


def load_stage_folder(
    folder: str | Path, name: str | None = None, source: str | Path | None = None, cache_dir: Path | None = None
) -> list[StageText]:
    """Stages from a folder of Triton cache files (a cache entry or a retarget output)."""
    files = stage_files_in_folder(Path(folder), name)
    return load_stage_files(files, Path(source) if source else None, cache_dir)


def variant_files(bundle: Bundle, variant: TritonVariant | None) -> dict[str, Path]:
    if variant is None:
        return {}
    return {stage: bundle_path(bundle, rel) for stage, rel in variant.files.items() if rel}


def kernel_source_path(bundle: Bundle, kernel: Kernel) -> Path | None:
    return bundle_path(bundle, kernel.source) if kernel.source else None


def load_stages(
    bundle: Bundle, kernel: Kernel, variant: TritonVariant | str | int | None = None, cache_dir: Path | None = None
) -> list[StageText]:
    """Every stage of a Triton kernel of a bundle, in display order, with placeholders where missing."""
    if kernel.lang != "triton":
        reason = f"{kernel.name} is not a Triton kernel ({kernel.lang})"
        return [_placeholder(s.name, reason) for s in STAGES]
    chosen = pick_variant(kernel, variant)
    files = variant_files(bundle, chosen)
    stages = load_stage_files(files, kernel_source_path(bundle, kernel), cache_dir)
    if chosen is None:
        for st in stages[1:]:
            st.missing_reason = "Triton's cache files were not captured for this kernel"
    return stages
