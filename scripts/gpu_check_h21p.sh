#!/usr/bin/env bash
# Issue 21, item 2, on the GPU box (CUDA build of torch): previews of whole transformers models, made
# with the GPU hidden (CUDA_VISIBLE_DEVICES=), diffed against real captures of the same models.
# Models: benchmarks/models/preview_models.py (Llama4: 4-layer LlamaForCausalLM converted to bf16 in
# __init__; Bert: 4-layer BertModel, sliced position-id / token-type buffers; GPT2Small: 4-layer
# GPT2LMHeadModel, tied head). Wanted: "kernels: 0 replaced, 0 changed, 0 added, 0 removed, N same".
# Run from the repo root; writes logs to $OUT; about 2-3 minutes.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD
set -uo pipefail
OUT=${OUT:-/tmp/gpu-out-h21p}
mkdir -p "$OUT" /tmp/h21p
export PYTHONUNBUFFERED=1
KS="python3 -m kernelscope"
M=benchmarks/models/preview_models.py
python3 -c "import torch, triton, transformers; print('torch', torch.__version__, 'triton', triton.__version__, 'transformers', transformers.__version__)"
for m in Llama4 Bert GPT2Small; do
  # The real capture and the preview (GPU hidden) of each model, the three models at once.
  ( timeout 200 $KS capture $M::$m -o /tmp/h21p/real_$m -q > /tmp/h21p/real_$m.log 2>&1; echo "rc=$?" >> /tmp/h21p/real_$m.log ) &
  ( CUDA_VISIBLE_DEVICES= timeout 200 $KS capture $M::$m --preview sm_90 -o /tmp/h21p/prev_$m -q > /tmp/h21p/prev_$m.log 2>&1
    echo "rc=$?" >> /tmp/h21p/prev_$m.log ) &
done
wait
for m in Llama4 Bert GPT2Small; do
  echo "== $m"
  echo "\$ kernelscope capture $M::$m                              -> $(tail -2 /tmp/h21p/real_$m.log | tr '\n' ' ')"
  echo "\$ CUDA_VISIBLE_DEVICES= kernelscope capture $M::$m --preview sm_90 -> $(tail -2 /tmp/h21p/prev_$m.log | tr '\n' ' ')"
  $KS diff /tmp/h21p/prev_$m /tmp/h21p/real_$m > "$OUT/diff_$m.txt" 2>&1
  echo "\$ kernelscope diff PREVIEW REAL"
  grep -E "^kernels:|^(kernels|Triton kernels|extern calls) " "$OUT/diff_$m.txt"
  grep -E "^(CHANGED|REPLACED|ADDED|REMOVED)" -A6 "$OUT/diff_$m.txt" | head -30
  cat /tmp/h21p/real_$m.log >> /tmp/h21p/prev_$m.log; cp /tmp/h21p/prev_$m.log "$OUT/logs_$m.txt"  # 6 files in all
done
