#!/usr/bin/env bash
# One device call on the GPU box: install the carried wheels, record fixtures, run GPU tests and
# the capture benchmark. Output lands in $OUT (the device tool's folder) or ./gpu-out.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> "$OUT/gpu.txt" 2>&1
case "${1:-all}" in
  record|all|record-tests)
    bash scripts/gpu_record.sh /tmp/ks-rec > "$OUT/record.log" 2>&1
    cp /tmp/ks-rec/fixtures.tgz "$OUT/" 2>/dev/null
    cat "$OUT/record.log" ;;
esac
case "${1:-all}" in
  tests|all|record-tests)
    KERNELSCOPE_GPU_BUNDLES=/tmp/ks-rec/bundles timeout 420 python3 -m pytest -q tests/gpu ${GPU_TESTS:-} \
      -p no:cacheprovider > "$OUT/gpu_tests.log" 2>&1
    tail -15 "$OUT/gpu_tests.log" ;;
esac
case "${1:-all}" in
  bench|all)
    KERNELSCOPE_GPU_BUNDLES=/tmp/ks-rec/bundles KERNELSCOPE_BENCH_BUDGET_S=${BENCH_BUDGET:-330} \
      timeout 560 python3 benchmarks/gpu_bench_all.py /tmp/ks-bench > "$OUT/bench.log" 2>&1
    cp /tmp/ks-bench/results.json "$OUT/bench_results.json" 2>/dev/null
    tail -60 "$OUT/bench.log" ;;
esac
case "${1:-all}" in
  overhead)
    timeout 300 python3 benchmarks/capture_overhead.py --samples add_relu softmax linear_relu --repeat 1 \
      --device cuda > "$OUT/overhead.log" 2>&1
    cat "$OUT/overhead.log" ;;
esac
