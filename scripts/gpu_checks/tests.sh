#!/usr/bin/env bash
# tests: the GPU test suite (tests/gpu), on the bundles `record` made (what is missing is captured)
# GPU_TESTS adds pytest arguments (a -k expression, a file). About 3-5 minutes after `record`.
set -uo pipefail
: "${KS:?run through scripts/gpu_verify.sh}"
mkdir -p "$REC/bundles"
KERNELSCOPE_GPU_BUNDLES="$REC/bundles" timeout 420 python3 -m pytest -q tests/gpu ${GPU_TESTS:-} -p no:cacheprovider \
  > "$OUT/gpu_tests.log" 2>&1
rc=$?
tail -15 "$OUT/gpu_tests.log"
exit $rc
