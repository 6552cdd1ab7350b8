#!/usr/bin/env bash
# On the GPU box: capture every sample on CUDA, normalise the bundles into tests/fixtures/gpu form,
# and run the GPU tests. Writes into $1 (default: ./gpu-out): bundles.tgz, logs.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-gpu-out}
mkdir -p "$OUT/bundles"
PY=${PYTHON:-python3}
run() { local name=$1; shift; $PY -m kernelscope capture "$@" -o "$OUT/bundles/$name" --device cuda -q \
          > "$OUT/bundles/$name.log" 2>&1; echo "$name rc=$? $(tail -1 "$OUT/bundles/$name.log")"; }
for s in add_relu mul_add_sigmoid softmax layer_norm sin_cos graph_break mlp_train attention linear_relu tiny_gpt; do
  run "$s" "$s" &
  while [ "$(jobs -r | wc -l)" -ge 4 ]; do sleep 1; done
done
run linear_relu_autotune linear_relu --mode max-autotune &
run add_relu_passes add_relu --passes &
wait
$PY scripts/normalise_bundles.py "$OUT/bundles" "$OUT/fixtures"
tar -C "$OUT" -czf "$OUT/fixtures.tgz" fixtures
