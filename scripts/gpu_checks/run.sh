#!/usr/bin/env bash
# run: `kernelscope run` on a real training script, its bundle against a plain TORCH_TRACE run's, benched
#   1. kernelscope run --graphs 2 --no-ui -- python3 benchmarks/scripts/train_hf.py (transformers GPT-2 from a
#      config, AdamW, torch.compile, an endless loop): expect a forward and a backward graph, Triton kernels
#      on modeling_gpt2.py's and train_hf.py's lines, "stopped after 2 graphs ...", nothing left running.
#   2. kernelscope show on it (the summary, "made by: run of ...").
#   3. the same script run plainly with TORCH_TRACE for one step, then `kernelscope open` of that trace and
#      `kernelscope diff OPEN RUN`: run's bundle should hold the same kernels as open's.
#   4. kernelscope bench on the run bundle (from the bundle alone: its own output code and FX graphs).
# Artifacts in $OUT: the logs of each step and the run bundle (tgz). At most 4 minutes.
set -uo pipefail
: "${KS:?run through scripts/gpu_verify.sh}"
W=/tmp/ks-run
rm -rf "$W"; mkdir -p "$W"
t0=$(date +%s)

echo; echo "== 1. \$ kernelscope run --graphs 2 --no-ui -o $W/run -- python3 benchmarks/scripts/train_hf.py --layers 2"
timeout 150 $KS run --graphs 2 --no-ui -o "$W/run" -- python3 benchmarks/scripts/train_hf.py --layers 2 \
  > "$OUT/run.txt" 2> "$OUT/run.err"; echo "exit $?  ($(( $(date +%s) - t0 )) s)"
grep -v "^  compile " "$OUT/run.err" | tail -3
head -1 "$OUT/run.txt"
echo "left running: $(pgrep -f benchmarks/scripts/train_hf.py | wc -l) process(es)"

echo; echo "== 2. \$ kernelscope show $W/run --all   (first 45 lines; graph list and where the kernels are)"
$KS show "$W/run" --all > "$OUT/show.txt" 2>&1
head -45 "$OUT/show.txt"
echo "...  Triton kernels: $(grep -c '^    triton_' "$OUT/show.txt"); kernels on train_hf.py lines: $(grep -c 'line train_hf.py' "$OUT/show.txt"); on library lines: $(grep -c 'library transformers/' "$OUT/show.txt")"

echo; echo "== 3. plain TORCH_TRACE run of one step, kernelscope open, diff against the run bundle"
t1=$(date +%s)
mkdir -p "$W/plain"
( cd "$W/plain" && TORCH_TRACE="$W/plain/trace" TRITON_CACHE_DIR="$W/plain/triton" TORCHINDUCTOR_CACHE_DIR="$W/plain/inductor" \
  TORCHINDUCTOR_FX_GRAPH_CACHE=0 TORCHINDUCTOR_AUTOGRAD_CACHE=0 INDUCTOR_PROVENANCE=1 \
  timeout 150 python3 "$OLDPWD/benchmarks/scripts/train_hf.py" --layers 2 --steps 1 > stdout.txt 2> stderr.txt ); echo "plain run exit $? ($(( $(date +%s) - t1 )) s)"
$KS open "$W/plain/trace" --triton-cache "$W/plain/triton" -o "$W/open" --no-ui > "$OUT/open.txt" 2> "$OUT/open.err"; echo "open exit $?"; tail -2 "$OUT/open.err"
echo "\$ kernelscope diff $W/open $W/run"
$KS diff "$W/open" "$W/run" > "$OUT/diff.txt" 2>&1; echo "diff exit $?"; head -25 "$OUT/diff.txt"

echo; echo "== 4. \$ kernelscope bench $W/run --run-bundle-code   (bench from the bundle alone)"
if [ $(( $(date +%s) - t0 )) -lt 170 ]; then
  timeout 90 $KS bench "$W/run" --run-bundle-code > "$OUT/bench.txt" 2>&1
  echo "bench exit $?"; tail -30 "$OUT/bench.txt"
else
  echo "skipped: $(( $(date +%s) - t0 )) s used already (the check keeps to 4 minutes)"
fi
tar czf "$OUT/run_bundle.tgz" -C "$W" run 2>/dev/null
ls -la "$OUT" | tail -n +2 | awk '{print $5, $9}'
echo "total $(( $(date +%s) - t0 )) s"
