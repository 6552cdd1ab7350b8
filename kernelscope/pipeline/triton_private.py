"""The Triton internals kernelscope drives, in one place: compiling one kernel's IR stage by stage.

Checked against torch 2.11 / 2.13, triton 3.6 / 3.9 (IR written by triton 3.6, compiled on 3.9).
A new Triton: run tests/test_quarantine.py and tests/test_pipeline_retarget.py (CPU), then
tests/gpu/test_pipeline_gpu.py on a GPU box; what breaks is named here, nowhere else.

Internals used (none is a public Triton API):
  triton._C.libtriton.ir: context(), load_dialects(), parse_mlir_module();
  triton.backends.compiler: GPUTarget, Language;
  triton.compiler.compiler.make_backend; a backend's load_dialects / parse_options / add_stages.
Imported only by the compile child (``_compile_child.py``); importing this module imports triton.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

from triton._C.libtriton import ir
from triton.backends.compiler import GPUTarget, Language
from triton.compiler.compiler import make_backend

# Options copied from the recorded metadata; the rest (arch, ptx version, fp8 lists, libdevice path)
# belong to the machine that compiled it and are re-derived for the new target.
CARRIED_OPTIONS = (
    "num_warps",
    "num_ctas",
    "num_stages",
    "maxnreg",
    "enable_fp_fusion",
    "launch_cooperative_grid",
    "launch_pdl",
    "debug",
    "sanitize_overflow",
    "default_dot_input_precision",
)

_OLD_CACHE_ATTRS = re.compile(r"\s+(cacheModifier = (?P<cache>\w+)\s*)?(evictionPolicy = (?P<evict>\w+)\s*)?(?=:)")
_LOAD_STORE = re.compile(r"\btt\.(load|store)\b[^\n]*")


def upgrade_ir(text: str) -> str:
    """Rewrite triton <= 3.6 load/store cache attributes into the ``cachePolicy`` form of 3.9.

    3.6 prints ``tt.load %p, %m evictionPolicy = evict_last : T``; 3.9 parses
    ``tt.load %p, %m {cachePolicy = #tt.cache_policy<cache_modifier = none, eviction_policy = evict_last>} : T``.
    """

    def fix_line(m: re.Match) -> str:
        line = m.group(0)

        def repl(a: re.Match) -> str:
            if not a.group("cache") and not a.group("evict"):
                return a.group(0)
            cache = a.group("cache") or "none"
            evict = a.group("evict") or "normal"
            return f" {{cachePolicy = #tt.cache_policy<cache_modifier = {cache}, eviction_policy = {evict}>}} "

        return _OLD_CACHE_ATTRS.sub(repl, line, count=1)

    return _LOAD_STORE.sub(fix_line, text)


def _parse_module(path: Path, context, ir):
    try:
        return ir.parse_mlir_module(str(path), context), False
    except Exception:  # noqa: BLE001 - an older Triton's syntax; try the upgraded text once
        upgraded = upgrade_ir(path.read_text(encoding="utf-8"))
        tmp = Path(tempfile.mkdtemp(prefix="ks-ir-")) / path.name
        tmp.write_text(upgraded, encoding="utf-8")
        return ir.parse_mlir_module(str(tmp), context), True


class Compiler:
    """One CUDA arch's Triton backend, with an MLIR context that has every dialect loaded."""

    def __init__(self, arch: int):
        self.target = GPUTarget("cuda", int(arch), 32)
        self.backend = make_backend(self.target)
        self.context = ir.context()
        ir.load_dialects(self.context)
        self.backend.load_dialects(self.context)

    def parse(self, path: Path):
        """(module, upgraded): the IR file parsed, upgraded from an older Triton's syntax when it must be."""
        module, upgraded = _parse_module(path, self.context, ir)
        module.context = self.context  # what IRSource.make_ir does; the passes read it
        return module, upgraded

    def options(self, recorded: dict[str, Any]):
        """The backend's options: CARRIED_OPTIONS from the recorded metadata, the rest this machine's."""
        fields = set(getattr(self.backend.parse_options({}), "__dataclass_fields__", {}))
        opts = {k: v for k, v in recorded.items() if k in CARRIED_OPTIONS and k in fields and v is not None}
        return self.backend.parse_options(opts)

    def stages(self, options) -> dict[str, Any]:
        """Stage name (ttir, ttgir, llir, ptx, cubin) -> the function that makes it from the previous one."""
        stages: dict[str, Any] = {}
        self.backend.add_stages(stages, options, Language.TRITON)
        return stages
