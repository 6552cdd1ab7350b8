#!/usr/bin/env bash
# talk-capture: the talk's steps whose shipped sizes were host-bound captured again where the seeds' story holds
#   graph_break at f32[16777216] (bandwidth-bound, like add_relu's 2**24), softmax at f32[65536, 1024],
#   linear_relu at f32[4096, 1024] x f32[1024, 1024]; each benched, normalised (scripts/normalise_bundles.py)
#   into $OUT/talk/NAME: copy those folders over samples/talk/NAME. About 3 minutes.
set -uo pipefail
: "${KS:?run through scripts/gpu_verify.sh}"
W=/tmp/ks-talk
rm -rf "$W"; mkdir -p "$W/bundles"
capture() {  # NAME ARGS
  local name=$1 args=$2 t0=$SECONDS
  timeout 120 $KS capture "$name" --args "$args" --device cuda -q -o "$W/bundles/$name" > "$OUT/capture_$name.txt" 2>&1
  echo "capture $name $args: exit $? ($((SECONDS - t0)) s)"
  t0=$SECONDS
  timeout 120 $KS bench "$W/bundles/$name" > "$OUT/bench_$name.txt" 2>&1
  echo "bench $name: exit $? ($((SECONDS - t0)) s)"
  grep -E "^(correctness|sum check|  speedup|  (eager|compiled) +[0-9])" "$OUT/bench_$name.txt" | cut -c1-220
  python3 -c "
import json; r = json.load(open('$W/bundles/$name/bundle.json'))['extra']['bench']['run']
print('  e2e median us: eager', r['eager']['e2e']['median_us'], 'compiled', r['compiled']['e2e']['median_us'],
      '| kernels us: eager', r['eager'].get('kernel_us'), 'compiled', r['compiled'].get('kernel_us'),
      '| counts', {k: (v['kernels'], v['transfers']) for k, v in r['counts'].items()})"
}
capture graph_break "f32[16777216]"
capture softmax "f32[65536, 1024]"
capture linear_relu "f32[4096, 1024], f32[1024, 1024], f32[1024]"
python3 scripts/normalise_bundles.py "$W/bundles" "$OUT/talk"
du -sh "$OUT/talk"/*
