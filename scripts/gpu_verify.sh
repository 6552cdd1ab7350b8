#!/usr/bin/env bash
# On the GPU box: the checks the real-model, preview and CUDA-graph issues ask for. Writes logs to $OUT.
#   a: record every sample (+ tiny_gpt) on CUDA, GPU tests, preview (GPU hidden) vs real, diff per sample
#   b: tiny_gpt on CUDA, then p
#   p: preview (GPU hidden) vs real per sample
#   r: reduce-overhead benches, a CUDA-graph skip
#   t: record the samples, the GPU tests, then r
#   s: CUDA graph skips (a mutated input, torch.cond, a CPU scalar): capture + show, bench
#   q: p, a training-step probe, and a GPT-2 preview (GPU hidden) vs a real GPT-2 capture
#   c: a 12-layer transformers GPT-2 (--no-grad --eval): show, bench (per-launch sum check, where the
#      time goes, counts explained), report
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1
KS="python3 -m kernelscope"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
case "${1:-a}" in
a)
  bash scripts/gpu_record.sh /tmp/ks-rec > "$OUT/record.log" 2>&1; cat "$OUT/record.log"
  cp /tmp/ks-rec/fixtures.tgz "$OUT/" 2>/dev/null
  echo "== preview (CUDA_VISIBLE_DEVICES=) vs real, torch 2.11"
  prev() { CUDA_VISIBLE_DEVICES= $KS capture "$1" --preview sm_90 -o "/tmp/ks-prev/$1" -q > "/tmp/ks-prev/$1.log" 2>&1
           echo "$1 preview rc=$? $(tail -1 /tmp/ks-prev/$1.log)"; }
  mkdir -p /tmp/ks-prev
  for s in add_relu mul_add_sigmoid softmax layer_norm sin_cos graph_break linear_relu attention tiny_gpt; do
    prev "$s" & while [ "$(jobs -r | wc -l)" -ge 6 ]; do sleep 1; done
  done; wait
  for s in add_relu mul_add_sigmoid softmax layer_norm sin_cos graph_break linear_relu attention tiny_gpt; do
    [ -f "/tmp/ks-prev/$s/bundle.json" ] || continue
    echo "---- diff $s: preview sm_90 -> real H200"; $KS diff "/tmp/ks-prev/$s" "/tmp/ks-rec/bundles/$s" 2>&1 | head -25
  done > "$OUT/preview_diff.log"; cat "$OUT/preview_diff.log" | grep -E "^----|kernels|same|changed|added|removed|replaced" | head -80
  KERNELSCOPE_GPU_BUNDLES=/tmp/ks-rec/bundles timeout 300 python3 -m pytest -q tests/gpu -p no:cacheprovider -x \
    > "$OUT/gpu_tests.log" 2>&1; tail -8 "$OUT/gpu_tests.log"
  ;;
b)
  echo "== tiny_gpt on CUDA (a GPU fixture)"
  mkdir -p /tmp/ks-rec/bundles
  timeout 200 $KS capture tiny_gpt -o /tmp/ks-rec/bundles/tiny_gpt -q 2>&1 | tail -2
  python3 scripts/normalise_bundles.py /tmp/ks-rec/bundles /tmp/ks-rec/fixtures > /dev/null && \
    tar -C /tmp/ks-rec -czf "$OUT/tiny_gpt_fixture.tgz" fixtures/tiny_gpt
  $KS show /tmp/ks-rec/bundles/tiny_gpt 2>&1 | head -30
  bash "$0" p
  ;;
p)
  echo "== preview (CUDA_VISIBLE_DEVICES=) vs real, torch 2.11 (real: tests/fixtures/gpu, recorded on this H200)"
  prev() { CUDA_VISIBLE_DEVICES= $KS capture "$1" --preview sm_90 -o "/tmp/ks-prev/$1" -q > "/tmp/ks-prev/$1.log" 2>&1
           echo "$1 preview rc=$? $(tail -1 /tmp/ks-prev/$1.log)"; }
  mkdir -p /tmp/ks-prev
  for s in add_relu mul_add_sigmoid softmax layer_norm sin_cos graph_break linear_relu attention tiny_gpt; do
    prev "$s" & while [ "$(jobs -r | wc -l)" -ge 8 ]; do sleep 1; done
  done; wait
  for s in add_relu mul_add_sigmoid softmax layer_norm sin_cos graph_break linear_relu attention tiny_gpt; do
    real=tests/fixtures/gpu/$s; [ -d "$real" ] || real=/tmp/ks-rec/bundles/$s
    [ -f "/tmp/ks-prev/$s/bundle.json" ] || continue
    echo "---- diff $s: preview sm_90 -> real H200"; $KS diff "/tmp/ks-prev/$s" "$real" 2>&1 | head -30
  done > "$OUT/preview_diff.log"; grep -E "^----|^kernels:|^graphs|^  kernels|rc=" "$OUT/preview_diff.log"
  ;;
r)
  echo "== reduce-overhead"
  for s in add_relu linear_relu; do
    KERNELSCOPE_BENCH_BUDGET_S=30 timeout 100 $KS bench $s --mode reduce-overhead --no-save 2>&1 > "$OUT/ro_$s.txt"
    head -50 "$OUT/ro_$s.txt"
  done
  bash "$0" s
  ;;
s)
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
  ;;
d)
  echo "== preview failures, with their tracebacks (GPU hidden)"
  CUDA_VISIBLE_DEVICES= timeout 120 $KS capture add_relu --preview sm_90 -o /tmp/dprev/add_relu -q 2>&1 | tail -1
  tar -C /tmp/dprev -czf "$OUT/add_relu_preview.tgz" add_relu
  CUDA_VISIBLE_DEVICES= timeout 200 $KS capture mlp_train --preview sm_90 -o /tmp/dprev/mlp_train -q 2>&1 | tail -2
  grep -v "^    " /tmp/dprev/mlp_train/logs/stderr.txt | tail -25
  CUDA_VISIBLE_DEVICES= timeout 300 $KS capture benchmarks/models/hf_gpt2.py::GPT2 --preview sm_90 -o /tmp/dprev/gpt2 -q 2>&1 | tail -2
  grep -v "^    " /tmp/dprev/gpt2/logs/stderr.txt | tail -25
  ;;
e)
  echo "== tiny_gpt preview vs real: the stage lines that differ; GPT-2 preview's traceback"
  CUDA_VISIBLE_DEVICES= timeout 200 $KS capture tiny_gpt --preview sm_90 -o /tmp/eprev/tiny_gpt -q 2>&1 | tail -1
  $KS diff /tmp/eprev/tiny_gpt tests/fixtures/gpu/tiny_gpt --stages 2>&1 | grep -E "^CHANGED|^    [-+][^-+]" | head -20
  CUDA_VISIBLE_DEVICES= timeout 300 $KS capture benchmarks/models/hf_gpt2.py::GPT2 --preview sm_90 -o /tmp/eprev/gpt2 -q 2>&1 | tail -1
  grep -E "^  File|Error|While executing" /tmp/eprev/gpt2/logs/stderr.txt | grep -v "_dynamo/\(symbolic_convert\|variables\)" | tail -40
  ;;
q)
  echo "== preview (GPU hidden) of every sample vs the H200 fixtures, mlp_train probe, GPT-2 preview vs real"
  bash "$0" p
  grep -E "^----|^kernels:|^  (source|ttir)" "$OUT/preview_diff.log" | head -60
  echo "== mlp_train (a training step: forward + backward graphs), GPU hidden"
  CUDA_VISIBLE_DEVICES= timeout 200 $KS capture mlp_train --preview sm_90 -o /tmp/ks-prev/mlp_train -q 2>&1 | tail -2
  $KS diff /tmp/ks-prev/mlp_train tests/fixtures/gpu/mlp_train 2>&1 | grep -E "^graphs|^kernels|^CHANGED|^REPLACED|^ADDED|^REMOVED|^  [-+]|^    (source|ptx|ttir)" | head -20
  echo "== GPT-2: real capture, then preview with the GPU hidden"
  T=benchmarks/models/hf_gpt2.py::GPT2
  timeout 240 $KS capture $T -o /tmp/gpt2 -q > "$OUT/gpt2_capture.log" 2>&1 &
  CUDA_VISIBLE_DEVICES= timeout 300 $KS capture $T --preview sm_90 -o /tmp/gpt2_prev -q > "$OUT/gpt2_prev.log" 2>&1; echo "preview rc=$?"; tail -2 "$OUT/gpt2_prev.log"
  wait; tail -2 "$OUT/gpt2_capture.log"
  $KS diff /tmp/gpt2_prev /tmp/gpt2 > "$OUT/gpt2_diff.txt" 2>&1; head -16 "$OUT/gpt2_diff.txt"
  grep -E "^(SAME|CHANGED|REPLACED|ADDED|REMOVED)|^    (source|ttir|ptx)" "$OUT/gpt2_diff.txt" | sort | uniq -c | sort -rn | head -20
  $KS show /tmp/gpt2_prev > "$OUT/gpt2_prev_show.txt" 2>&1; head -12 "$OUT/gpt2_prev_show.txt"
  ;;
t)
  bash scripts/gpu_record.sh /tmp/ks-rec > "$OUT/record.log" 2>&1; grep rc= "$OUT/record.log"
  KERNELSCOPE_GPU_BUNDLES=/tmp/ks-rec/bundles timeout 330 python3 -m pytest -q tests/gpu -p no:cacheprovider \
    > "$OUT/gpu_tests.log" 2>&1; tail -8 "$OUT/gpu_tests.log"
  bash "$0" r
  ;;
c)
  T=benchmarks/models/hf_gpt2.py::GPT2
  timeout 300 $KS capture $T --no-grad --eval -o /tmp/gpt2 > "$OUT/gpt2_capture.log" 2>&1; tail -3 "$OUT/gpt2_capture.log"
  $KS show /tmp/gpt2 > "$OUT/gpt2_show.txt" 2>&1; head -60 "$OUT/gpt2_show.txt"
  KERNELSCOPE_BENCH_BUDGET_S=120 timeout 240 $KS bench /tmp/gpt2 --no-save > "$OUT/gpt2_bench.txt" 2>&1; cat "$OUT/gpt2_bench.txt" | head -120
  $KS report /tmp/gpt2 --format md -o "$OUT/gpt2_report.md" > /dev/null 2>&1
  tar -C /tmp -czf "$OUT/gpt2_bundle.tgz" --exclude='triton' gpt2 2>/dev/null
  echo "== preview traceback (GPU hidden)"
  CUDA_VISIBLE_DEVICES= timeout 120 python3 -c "
import torch, traceback
from kernelscope.capture import preview_patches as pp
with pp.preview_device('sm_90'):
    with pp.fake_mode():
        try:
            print(torch.randn(8, device='cuda'))
        except Exception:
            traceback.print_exc()
" 2>&1 | tail -30
  ;;
esac
