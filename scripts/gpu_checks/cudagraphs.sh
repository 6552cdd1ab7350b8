#!/usr/bin/env bash
# cudagraphs: reduce-overhead benches, and the CUDA-graph skips with their reasons in capture, show and bench
# 1. add_relu and linear_relu benched under reduce-overhead (CUDA graphs replayed).
# 2. benchmarks/models/cudagraph_skip.py (a mutated input, torch.cond, a CPU scalar): each captured and
#    shown (the skip and its reason per graph), the first two benched (the skip said there too). About 4 minutes.
set -uo pipefail
: "${KS:?run through scripts/gpu_verify.sh}"
echo "== reduce-overhead benches"
for s in add_relu linear_relu; do
  KERNELSCOPE_BENCH_BUDGET_S=30 timeout 100 $KS bench $s --mode reduce-overhead --no-save > "$OUT/ro_$s.txt" 2>&1
  head -50 "$OUT/ro_$s.txt"
done
echo "== CUDA graph skips: capture + show, then bench"
T=benchmarks/models/cudagraph_skip.py
for f in mutate_input branch scale_add; do
  timeout 240 $KS capture $T::$f --mode reduce-overhead -o /tmp/skip_$f -q > "$OUT/skip_$f.log" 2>&1 &
done; wait
for f in mutate_input branch scale_add; do
  echo "---- $f"; tail -2 "$OUT/skip_$f.log"
  $KS show /tmp/skip_$f > "$OUT/skip_${f}_show.txt" 2>&1; grep -i -E -A2 "cuda graph|skip" "$OUT/skip_${f}_show.txt" | head -12
  $KS show /tmp/skip_$f --json 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); print([g.get('cudagraphs') for g in d.get('graphs',[])])"
  grep -i "cudagraph" /tmp/skip_$f/*.txt 2>/dev/null | head -5
done
for f in mutate_input branch; do
  KERNELSCOPE_BENCH_BUDGET_S=30 timeout 150 $KS bench $T::$f --mode reduce-overhead --no-save > "$OUT/skip_${f}_bench.txt" 2>&1
  echo "---- bench $f rc=$?"; grep -i -E -A3 "cuda graph" "$OUT/skip_${f}_bench.txt" | head -14
done
