#!/usr/bin/env bash
# preview: each sample previewed for sm_90 with the GPU hidden, diffed against its real capture
# Real: $REC/bundles when `record` ran first in this call, else tests/fixtures/gpu (recorded on an H200).
# Then a training step (mlp_train: forward and backward graphs) the same way. Wanted in each diff:
# "kernels: 0 replaced, 0 changed, 0 added, 0 removed, N same". About 2 minutes.
set -uo pipefail
: "${KS:?run through scripts/gpu_verify.sh}"
P=/tmp/ks-prev
rm -rf "$P"; mkdir -p "$P"
SAMPLES="add_relu mul_add_sigmoid softmax layer_norm sin_cos graph_break linear_relu attention tiny_gpt mlp_train"
real_of() { if [ -f "$REC/bundles/$1/bundle.json" ]; then echo "$REC/bundles/$1"; else echo "tests/fixtures/gpu/$1"; fi; }
prev() {
  CUDA_VISIBLE_DEVICES= timeout 200 $KS capture "$1" --preview sm_90 -o "$P/$1" -q > "$P/$1.log" 2>&1
  echo "$1 preview rc=$? $(tail -1 "$P/$1.log")"
}
for s in $SAMPLES; do
  prev "$s" & while [ "$(jobs -r | wc -l)" -ge 8 ]; do sleep 1; done
done; wait
for s in $SAMPLES; do
  [ -f "$P/$s/bundle.json" ] || continue
  echo "---- diff $s: preview sm_90 -> real $(real_of "$s")"; $KS diff "$P/$s" "$(real_of "$s")" 2>&1 | head -30
done > "$OUT/preview_diff.log"
grep -E "^----|^kernels:|^graphs|^  kernels|^CHANGED|^REPLACED|^ADDED|^REMOVED|^    (source|ttir|ptx)" "$OUT/preview_diff.log" | head -80
