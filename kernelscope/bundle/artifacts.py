"""The one registry of a Triton kernel's artifacts: plain data, next to the bundle format.

Every artifact type a kernel variant can carry is one ``Artifact`` entry below: its key, the file
suffix it has in Triton's cache (and in the bundle), its title and place in the pipeline view,
its lexer, how its lines map back to the kernel source, whether it diffs, and its
``kernelscope show --artifact`` name. Ingest (which cache files to keep), pipeline/ (the stages a
user steps through, their line maps), report/ (which stages diff), ``show`` and the UI (lexers)
all read these tuples. Adding an artifact type = one entry here (and, when Triton's cache does not
hold it, the line of ingest that writes it).
"""

from __future__ import annotations

from dataclasses import dataclass

# How the lines of an artifact lead back to the kernel source.
LINES_NONE = "none"  # no map (the source itself, a binary, a config)
LINES_MLIR_LOC = "mlir-loc"  # MLIR ``loc(...)`` attributes (TTIR, TTGIR)
LINES_LLVM_DBG = "llvm-dbg"  # LLVM ``!dbg`` / ``DILocation`` metadata
LINES_PTX_LOC = "ptx-loc"  # PTX ``.file`` / ``.loc`` directives
LINES_SASS_LINE = "sass-line"  # nvdisasm ``//## File ..., line N`` comments

DIFF_NONE, DIFF_TEXT, DIFF_BINARY = "none", "text", "binary"


@dataclass(frozen=True)
class Artifact:
    """One artifact type of a Triton kernel variant."""

    name: str  # the key in ``TritonVariant.files`` and in the pipeline ("source", "ttir", ...)
    title: str  # what the user reads
    suffix: str = ""  # ``<kernel>.<suffix>`` in Triton's cache and the bundle ("" when not a cache file)
    stage: int | None = None  # place in the pipeline view (None: not a pipeline stage)
    lexer: str = "text"  # its language, for kernelscope.ui.lexers: python, mlir, llvm, ptx, sass, json, text
    lines: str = LINES_NONE  # how its lines map to the kernel source (LINES_*)
    diff: str = DIFF_NONE  # DIFF_TEXT: worth a text diff between two captures
    cli: str | None = None  # its ``kernelscope show --artifact`` name, read from the bundle (None: not by name)
    render_cli: str | None = None  # its name for ``show --artifact NAME [--arch]``, rendered by the pipeline
    cached: bool = True  # kept from Triton's cache entry (else ingest writes it beside them)


ARTIFACTS: tuple[Artifact, ...] = (
    # The cache's ``<name>.source`` is the MLIR module Triton starts from; the pipeline's "source"
    # stage shows the Inductor kernel file that module's ``loc()`` point into.
    Artifact("source", "Triton source", "source", 0, "python", LINES_NONE, DIFF_NONE, "source", "triton-source"),
    Artifact("ttir", "TTIR", "ttir", 1, "mlir", LINES_MLIR_LOC, DIFF_TEXT, "ttir", "ttir"),
    Artifact("ttgir", "TTGIR", "ttgir", 2, "mlir", LINES_MLIR_LOC, DIFF_TEXT, "ttgir", "ttgir"),
    Artifact("llir", "LLVM IR", "llir", 3, "llvm", LINES_LLVM_DBG, DIFF_TEXT, "llir", "llir"),
    Artifact("ptx", "PTX", "ptx", 4, "ptx", LINES_PTX_LOC, DIFF_TEXT, "ptx", "ptx"),
    Artifact("cubin", "cubin", "cubin", None, "text", LINES_NONE, DIFF_BINARY),
    # SASS is no cache file: the pipeline disassembles it from the cubin.
    Artifact("sass", "SASS", "", 5, "sass", LINES_SASS_LINE, DIFF_NONE, None, "sass", cached=False),
    # The config Inductor's autotuning picked (its ``.best_config`` JSON), kept beside the variant it names.
    Artifact("best_config", "Best config", "best_config", None, "json", LINES_NONE, DIFF_TEXT, "best_config",
             cached=False),
)

BY_NAME: dict[str, Artifact] = {a.name: a for a in ARTIFACTS}


def artifact(name: str) -> Artifact:
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"no artifact {name!r}; artifacts: {', '.join(BY_NAME)}") from None


# Derived views, in registry order.
# Files kept from a Triton cache entry, in display order.
TRITON_STAGES: tuple[str, ...] = tuple(a.name for a in ARTIFACTS if a.cached and a.suffix)
# The same, plus the entry's metadata JSON: what a (re)compile leaves in its output folder.
METADATA_SUFFIX = "json"
COMPILE_FILES: tuple[str, ...] = (*TRITON_STAGES, METADATA_SUFFIX)
# The stages a user steps through in the pipeline view, in order.
PIPELINE: tuple[Artifact, ...] = tuple(sorted((a for a in ARTIFACTS if a.stage is not None), key=lambda a: a.stage))
# Pipeline stages read from the cache file of the same suffix (stage 0 is the kernel file, SASS is computed).
CACHE_TEXT_STAGES: tuple[str, ...] = tuple(a.name for a in PIPELINE if a.cached and a.stage and a.suffix)
# Text stages worth a diff between two captures (a cubin is binary).
DIFF_STAGES: tuple[str, ...] = tuple(a.name for a in ARTIFACTS if a.diff == DIFF_TEXT)
# ``show --artifact NAME``: files of the chosen variant read from the bundle as they are.
STORED_TEXT: dict[str, str] = {a.cli: a.name for a in ARTIFACTS if a.cli}
# ``show --artifact NAME [--arch]``: stages the pipeline renders (recompiled for another arch), NAME -> stage.
RENDERED_STAGES: dict[str, str] = {a.render_cli: a.name for a in PIPELINE if a.render_cli}


def stage_order(name: str) -> tuple[int, str]:
    """A sort key: registry order first, anything unknown after, by name."""
    names = [a.name for a in ARTIFACTS]
    return (names.index(name) if name in names else len(names), name)
