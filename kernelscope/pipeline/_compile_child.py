"""Child-process entry point that compiles one Triton kernel from its MLIR and writes every stage.

Run as ``python -m kernelscope.pipeline._compile_child REQUEST.json``; the parent (``compile.py``)
sets MLIR_ENABLE_DUMP / MLIR_DUMP_PATH / LLVM_IR_ENABLE_DUMP in the environment when passes are
wanted. It drives the backend's stages itself (what ``triton.compile`` does) so that an initial ``.source``
module runs the TTIR passes too; the Triton internals that takes are in ``triton_private.py``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def compile_request(req: dict) -> dict:
    import triton

    from kernelscope.pipeline import triton_private as tp

    out = Path(req["out_dir"])
    out.mkdir(parents=True, exist_ok=True)
    compiler = tp.Compiler(int(req["arch"]))
    started = time.perf_counter()
    module, upgraded = compiler.parse(Path(req["ir_path"]))
    options = compiler.options(req.get("options", {}))
    target = compiler.target
    metadata = {"target": target, **options.__dict__, "triton_version": triton.__version__}
    stages = compiler.stages(options)
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
