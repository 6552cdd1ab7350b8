#!/usr/bin/env bash
# sums: the bench's per-launch sums and single kernels against independent torch.profiler loops
# Each loop (benchmarks/independent_profile.py over the same compiled call) runs alone on the GPU (beside
# another bench its kernels ran slower), loops and benches interleaved, so the loop-to-loop spread is
# printed next to the bench's differences (scripts/gpu_checks/compare_sums.py).
#   MODEL=llama (default): a 4-layer transformers Llama bf16 under --mode reduce-overhead (CUDA graphs)
#   MODEL=gpt2: a 12-layer transformers GPT-2 (no_grad, eval): the sum and the GELU kernel per launch
# ROUNDS (default 2): benches after the first (each `kernelscope bench BUNDLE`, the capture reused).
set -uo pipefail
: "${KS:?run through scripts/gpu_verify.sh}"
MODEL=${MODEL:-llama}
ROUNDS=${ROUNDS:-2}
mkdir -p /tmp/ks-sums
if [[ $MODEL == llama ]]; then
  TARGET="benchmarks/models/llama_bf16.py::Llama"; MODE=(--mode reduce-overhead)
else
  TARGET="benchmarks/models/hf_gpt2.py::GPT2"; MODE=()
fi
BUNDLE=/tmp/ks-sums/$MODEL

independent() {  # N
  local t0=$SECONDS
  timeout 200 python3 benchmarks/independent_profile.py 30 $TARGET "${MODE[@]}" > "$OUT/loop$1.json" 2> "$OUT/loop$1.err"
  echo "== loop $1: independent_profile.py 30 $TARGET ${MODE[*]} -> exit $? after $((SECONDS - t0)) s"
}

bench() {  # N ARGS...
  local n=$1; shift
  local t0=$SECONDS
  timeout 200 $KS bench "$@" > "$OUT/bench$n.log" 2>&1
  echo "== bench $n: kernelscope bench $* -> exit $? after $((SECONDS - t0)) s"
  grep -E "^(correctness|sum check)" "$OUT/bench$n.log" | cut -c1-300
  python3 -c "import json,sys; print(json.dumps(json.load(open('$BUNDLE/bundle.json'))['extra']['bench']['run']))" > "$OUT/bench$n.json"
}

rm -rf "$BUNDLE"
bench 0 $TARGET --no-grad --eval "${MODE[@]}" -o "$BUNDLE"
for i in $(seq 1 "$ROUNDS"); do
  independent "$i"
  bench "$i" "$BUNDLE"  # the bundle keeps its compile options (the mode too)
done
independent $((ROUNDS + 1))
python3 scripts/gpu_checks/compare_sums.py "$OUT"
