#!/usr/bin/env bash
# bench-all: benchmarks/gpu_bench_all.py: every sample benched, repeats, an independent profile, a sweep, a rerun
# Uses the bundles `record` made where it ran first; BENCH_BUDGET (default 330) seconds in all.
set -uo pipefail
: "${KS:?run through scripts/gpu_verify.sh}"
KERNELSCOPE_GPU_BUNDLES="$REC/bundles" KERNELSCOPE_BENCH_BUDGET_S=${BENCH_BUDGET:-330} \
  timeout 560 python3 benchmarks/gpu_bench_all.py /tmp/ks-bench > "$OUT/bench.log" 2>&1
cp /tmp/ks-bench/results.json "$OUT/bench_results.json" 2>/dev/null
tail -60 "$OUT/bench.log"
