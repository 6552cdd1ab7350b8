#!/usr/bin/env bash
# preview-models: whole transformers models previewed with the GPU hidden, diffed against real captures
# Models: benchmarks/models/preview_models.py (Llama4: 4-layer LlamaForCausalLM converted to bf16 in
# __init__; Bert: 4-layer BertModel, sliced position-id / token-type buffers; GPT2Small: 4-layer
# GPT2LMHeadModel, tied head) and benchmarks/models/hf_gpt2.py's 12-layer GPT-2. Each real capture and
# preview runs at once. Wanted: "kernels: 0 replaced, 0 changed, 0 added, 0 removed, N same". About 3-5 minutes.
set -uo pipefail
: "${KS:?run through scripts/gpu_verify.sh}"
W=/tmp/ks-prev-models
rm -rf "$W"; mkdir -p "$W"
M=benchmarks/models/preview_models.py
TARGETS="$M::Llama4 $M::Bert $M::GPT2Small benchmarks/models/hf_gpt2.py::GPT2"
for t in $TARGETS; do
  m=${t##*::}
  ( timeout 300 $KS capture "$t" -o "$W/real_$m" -q > "$W/real_$m.log" 2>&1; echo "rc=$?" >> "$W/real_$m.log" ) &
  ( CUDA_VISIBLE_DEVICES= timeout 300 $KS capture "$t" --preview sm_90 -o "$W/prev_$m" -q > "$W/prev_$m.log" 2>&1
    echo "rc=$?" >> "$W/prev_$m.log" ) &
done
wait
for t in $TARGETS; do
  m=${t##*::}
  echo "== $m"
  echo "\$ kernelscope capture $t                              -> $(tail -2 "$W/real_$m.log" | tr '\n' ' ')"
  echo "\$ CUDA_VISIBLE_DEVICES= kernelscope capture $t --preview sm_90 -> $(tail -2 "$W/prev_$m.log" | tr '\n' ' ')"
  $KS diff "$W/prev_$m" "$W/real_$m" > "$OUT/diff_$m.txt" 2>&1
  echo "\$ kernelscope diff PREVIEW REAL"
  grep -E "^kernels:|^(kernels|Triton kernels|extern calls) " "$OUT/diff_$m.txt"
  grep -E "^(CHANGED|REPLACED|ADDED|REMOVED)" -A6 "$OUT/diff_$m.txt" | head -30
  cat "$W/prev_$m.log" "$W/real_$m.log" > "$OUT/logs_$m.txt"
done
