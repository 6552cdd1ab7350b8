#!/usr/bin/env bash
# One GPU call for what the open issues still need from an H200 (run from the repo root, <= 9 minutes;
# one tgz comes back, so the device tool's file limit is never hit):
#   23: the talk's captures (samples/talk/*) benched on this GPU: copy the bundle.json files back into
#       samples/talk/ (their extra.bench is the measured result the talk then shows offline)
#   25: scripts/gpu_check_f25.sh (a 4-layer GPT-2: --fusion, bench, --lines, --compile, --ncu on 3 kernels)
#   21: the 12-layer GPT-2 bench (wall and per-phase seconds, target <= 30 s)
# 21's previews (scripts/gpu_check_h21p.sh, BERT) need a second call.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD
set -uo pipefail
export PYTHONUNBUFFERED=1
KS="python3 -m kernelscope"
R=/tmp/open-out; rm -rf $R; mkdir -p $R/talk $R/logs
echo "== 23: the talk's captures benched"
cp -r samples/talk/* $R/talk/
for b in add_relu mul_add_sigmoid graph_break softmax linear_relu; do
  t0=$SECONDS
  timeout 80 $KS bench $R/talk/$b > $R/logs/talk_$b.txt 2> $R/logs/talk_$b.err; echo "talk $b: exit $? ($((SECONDS-t0)) s)"
  grep -E "^(correctness|sum check|  speedup)" $R/logs/talk_$b.txt | cut -c1-200
done
echo "== 25"
OUT=$R/f25 timeout 250 bash scripts/gpu_check_f25.sh > $R/logs/f25.txt 2>&1; echo "f25 exit $?"; tail -60 $R/logs/f25.txt | cut -c1-250
echo "== 21: GPT-2 x12 bench"
t0=$SECONDS
timeout 120 $KS capture benchmarks/models/hf_gpt2.py::GPT2 --no-grad --eval -o $R/gpt2 > $R/logs/gpt2_capture.txt 2>&1; echo "capture exit $? ($((SECONDS-t0)) s)"
t0=$SECONDS
timeout 120 $KS bench $R/gpt2 > $R/logs/gpt2_bench.txt 2> $R/logs/gpt2_bench.err; echo "bench exit $? ($((SECONDS-t0)) s wall)"
tail -14 $R/logs/gpt2_bench.err
grep -E "^(correctness|sum check)" $R/logs/gpt2_bench.txt | cut -c1-250
rm -rf $R/gpt2
tar czf $OUT/open.tgz -C $R talk logs f25 2>/dev/null; ls -la $OUT
