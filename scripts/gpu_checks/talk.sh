#!/usr/bin/env bash
# talk: the talk's captures (samples/talk/*) benched on this GPU, their bundles back in $OUT/talk
# Copy $OUT/talk/*/bundle.json back into samples/talk/: their extra.bench is the measured result the talk
# then shows offline. About 3 minutes.
set -uo pipefail
: "${KS:?run through scripts/gpu_verify.sh}"
mkdir -p "$OUT/talk"
cp -r samples/talk/* "$OUT/talk/"
for b in add_relu mul_add_sigmoid graph_break softmax linear_relu; do
  t0=$SECONDS
  timeout 80 $KS bench "$OUT/talk/$b" > "$OUT/talk_$b.txt" 2> "$OUT/talk_$b.err"; echo "talk $b: exit $? ($((SECONDS-t0)) s)"
  grep -E "^(correctness|sum check|  speedup)" "$OUT/talk_$b.txt" | cut -c1-200
done
