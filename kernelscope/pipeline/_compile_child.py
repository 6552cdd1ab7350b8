"""Child-process entry point that compiles one Triton kernel from its MLIR and writes every stage.

Run as ``python -m kernelscope.pipeline._compile_child REQUEST.json``; the parent (``compile.py``)
sets MLIR_ENABLE_DUMP / MLIR_DUMP_PATH / LLVM_IR_ENABLE_DUMP in the environment when passes are
wanted. This is the only module of the pipeline package that imports triton. It drives the backend's
stages itself (what ``triton.compile`` does) so that an initial ``.source`` module runs the TTIR passes
too. Checked against triton 3.6 IR inputs on triton 3.9.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from pathlib import Path

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


def compile_request(req: dict) -> dict:
    import triton
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    out = Path(req["out_dir"])
    out.mkdir(parents=True, exist_ok=True)
    target = GPUTarget("cuda", int(req["arch"]), 32)
    backend = make_backend(target)
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    started = time.perf_counter()
    module, upgraded = _parse_module(Path(req["ir_path"]), context, ir)
    module.context = context  # what IRSource.make_ir does; the passes read it
    fields = set(getattr(backend.parse_options({}), "__dataclass_fields__", {}))
    opts = {k: v for k, v in req.get("options", {}).items() if k in CARRIED_OPTIONS and k in fields and v is not None}
    options = backend.parse_options(opts)
    metadata = {"target": target, **options.__dict__, "triton_version": triton.__version__}
    stages: dict = {}
    from triton.backends.compiler import Language

    backend.add_stages(stages, options, Language.TRITON)
    names = list(stages)
    start = req.get("start", "source")
    # A ".source" module still needs the TTIR passes; a ".ttir" file starts after them.
    first = 0 if start == "source" else names.index(start) + 1
    name = req["name"]
    (out / f"{name}.source").write_text(Path(req["ir_path"]).read_text(encoding="utf-8"), encoding="utf-8")
    if start != "source":
        (out / f"{name}.{start}").write_text(str(module), encoding="utf-8")
    times = {"parse": time.perf_counter() - started}
    for ext in names[first:]:
        t0 = time.perf_counter()
        module = stages[ext](module, metadata)
        times[ext] = time.perf_counter() - t0
        data = module if isinstance(module, (bytes, str)) else str(module)
        path = out / f"{name}.{ext}"
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data, encoding="utf-8")
    meta = {k: v for k, v in metadata.items() if k != "target"}
    meta["target"] = {"backend": target.backend, "arch": target.arch, "warp_size": target.warp_size}
    (out / f"{name}.json").write_text(json.dumps(meta, default=str), encoding="utf-8")
    return {"ok": True, "times": times, "upgraded_ir": upgraded, "triton_version": triton.__version__}


def main(argv: list[str]) -> int:
    req = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    result_path = Path(req["out_dir"]) / "result.json"
    try:
        result = compile_request(req)
    except Exception as exc:  # noqa: BLE001 - reported to the parent as one line
        Path(req["out_dir"]).mkdir(parents=True, exist_ok=True)
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        result = {"ok": False, "error": f"{type(exc).__name__}: {first}"}
    result_path.write_text(json.dumps(result), encoding="utf-8")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
