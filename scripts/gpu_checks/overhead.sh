#!/usr/bin/env bash
# overhead: benchmarks/capture_overhead.py on CUDA: what a capture costs over a plain torch.compile
set -uo pipefail
: "${KS:?run through scripts/gpu_verify.sh}"
timeout 300 python3 benchmarks/capture_overhead.py --samples add_relu softmax linear_relu --repeat 1 \
  --device cuda > "$OUT/overhead.log" 2>&1
cat "$OUT/overhead.log"
