"""Record tests/fixtures/traces/mlp_train_cpu_avx2: a TORCH_TRACE of samples/mlp_train.py (forward and
backward) compiled by Inductor on the CPU for 256-bit vectors (AVX2), the environment a capture child
sets (private caches, INDUCTOR_PROVENANCE=1), paths of this checkout written as /repo.

    python scripts/record_cpu_trace.py OUT_DIR

Its C++ kernels are written for AVX2, which every x86-64 CPU the tests run on has: a bench of the
opened trace runs them as they are on an AVX2 CPU and compiles them for 256-bit vectors on an AVX512
one (bench/cpu_vectors.py). The older tests/fixtures/traces/mlp_train_cpu was recorded on an AVX512 CPU.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHILD = """
import torch, torch._inductor.config as c
c.cpp.simdlen = 256
from samples.mlp_train import mlp_train, mlp_train_inputs
torch.manual_seed(0)
x, w1, w2 = mlp_train_inputs("cpu")
torch.compile(mlp_train)(x, w1, w2).backward()
"""


def main(out: Path) -> int:
    work = Path(tempfile.mkdtemp(prefix="ks-record-"))
    env = dict(os.environ, TORCH_TRACE=str(work / "trace"), TRITON_CACHE_DIR=str(work / "triton"),
               TORCHINDUCTOR_CACHE_DIR=str(work / "inductor"), TORCHINDUCTOR_FX_GRAPH_CACHE="0",
               TORCHINDUCTOR_AUTOGRAD_CACHE="0", INDUCTOR_PROVENANCE="1", PYTHONPATH=str(REPO))
    subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=str(REPO), check=True)
    out.mkdir(parents=True, exist_ok=True)
    for log in (work / "trace").glob("*.log"):
        text = log.read_text(encoding="utf-8")
        text = re.sub(re.escape(str(REPO)) + r"/(?!\.venv)", "/repo/", text)
        text = text.replace(str(work), "/tmp/ks-record")
        (out / log.name).write_text(text, encoding="utf-8")
    shutil.rmtree(work, ignore_errors=True)
    print(f"recorded {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1])))
