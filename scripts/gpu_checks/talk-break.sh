#!/usr/bin/env bash
# talk-break: the talk's graph-break step captured at a bandwidth-bound size (f32[16777216]) and benched,
#   normalised and packed as $OUT/graph_break.tgz (unpack over samples/talk/). About 1 minute.
set -uo pipefail
: "${KS:?run through scripts/gpu_verify.sh}"
W=/tmp/ks-talk-break
rm -rf "$W"; mkdir -p "$W/bundles"
timeout 60 $KS capture graph_break --args "f32[16777216]" --device cuda -q -o "$W/bundles/graph_break" > "$OUT/capture.txt" 2>&1
echo "capture: exit $?"
timeout 50 $KS bench "$W/bundles/graph_break" > "$OUT/bench.txt" 2>&1
echo "bench: exit $?"; grep -E "^(correctness|sum check|  speedup)" "$OUT/bench.txt" | cut -c1-200
python3 scripts/normalise_bundles.py "$W/bundles" "$W/talk" && tar czf "$OUT/graph_break.tgz" -C "$W/talk" graph_break
ls -la "$OUT"
