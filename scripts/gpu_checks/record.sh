#!/usr/bin/env bash
# record: every sample captured on CUDA, normalised into tests/fixtures/gpu form ($OUT/fixtures.tgz)
# Also linear_relu under --mode max-autotune and add_relu with --passes. The bundles stay in $REC/bundles
# for the checks after it; unpack fixtures.tgz over tests/ to refresh tests/fixtures/gpu. About 2 minutes.
set -uo pipefail
: "${KS:?run through scripts/gpu_verify.sh}"
rm -rf "$REC"; mkdir -p "$REC/bundles"
run() {
  local name=$1; shift
  $KS capture "$@" -o "$REC/bundles/$name" --device cuda -q > "$REC/bundles/$name.log" 2>&1
  echo "$name rc=$? $(tail -1 "$REC/bundles/$name.log")"
}
for s in add_relu mul_add_sigmoid softmax layer_norm sin_cos graph_break mlp_train attention linear_relu tiny_gpt; do
  run "$s" "$s" &
  while [ "$(jobs -r | wc -l)" -ge 4 ]; do sleep 1; done
done
run linear_relu_autotune linear_relu --mode max-autotune &
run add_relu_passes add_relu --passes &
wait
python3 scripts/normalise_bundles.py "$REC/bundles" "$REC/fixtures"
tar -C "$REC" -czf "$OUT/fixtures.tgz" fixtures
ls -la "$OUT/fixtures.tgz"
