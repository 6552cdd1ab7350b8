"""The process ncu profiles (bench/ncu.py): runs the bundle's output code of the named graphs. Imports torch.

``python -m kernelscope.bench.ncu_child BUNDLE GRAPH_ID...``: each graph's output code is loaded as a
module (Inductor's own runnable file: ``get_args()`` builds inputs of the recorded shapes, ``call()``
launches its kernels), called once to compile and autotune, then once between cudaProfilerStart and
cudaProfilerStop (``torch.cuda.profiler``), which is all ncu profiles (``--profile-from-start off``).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    import torch

    from kernelscope.bundle.io import bundle_path, read_bundle

    bundle = read_bundle(argv[0])
    if not torch.cuda.is_available():
        print("kernelscope ncu: no CUDA device", file=sys.stderr)
        return 2
    modules = []
    for n, gid in enumerate(argv[1:]):
        graph = bundle.graph(gid)
        path = bundle_path(bundle, graph.files["output_code"])
        spec = importlib.util.spec_from_file_location(f"kernelscope_ncu_graph_{n}", Path(path))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.call(list(module.get_args()))  # compile and autotune outside the profiled range
        modules.append(module)
    torch.cuda.synchronize()
    for module in modules:
        args = list(module.get_args())
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        module.call(args)
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
