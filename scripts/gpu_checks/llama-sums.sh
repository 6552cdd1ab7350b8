#!/usr/bin/env bash
# llama-sums: a 4-layer transformers Llama bf16 inference benched plain, under reduce-overhead and from its opened trace: the sum check of each
# Each bench prints its correctness and sum check lines (within 1% is OK) and what no launch of the bundle
# claims. The trace is the same model compiled under TORCH_TRACE (with its Triton cache), opened by
# `kernelscope open` and benched from the bundle alone (--run-bundle-code). About 4-5 minutes.
set -uo pipefail
: "${KS:?run through scripts/gpu_verify.sh}"
W=$(mktemp -d)
TARGET=benchmarks/models/llama_bf16.py::Llama

show() {  # NAME LOG BUNDLE
  grep -E "^(GPU:|correctness|sum check|  not a launch)" "$2" | cut -c1-400
  python3 - "$3" <<'PY'
import json, sys
run = json.load(open(sys.argv[1] + "/bundle.json"))["extra"].get("bench", {}).get("run", {})
sc = run.get("sum_check") or {}
print(f"  check: sum check diff {sc.get('diff_pct')}% ok={sc.get('ok')}; launches {sc.get('launches')} untimed {sc.get('untimed')}; "
      f"correctness ok={(run.get('correctness') or {}).get('ok')}")
PY
}

bench() {  # NAME ARGS...
  local name=$1; shift
  local t0=$SECONDS
  echo "================ $name: kernelscope bench $*"
  timeout 240 $KS bench "$@" -o "$W/$name" > "$OUT/$name.log" 2>&1
  echo "  exit $? after $((SECONDS - t0)) s"
  show "$name" "$OUT/$name.log" "$W/$name"
}

bench plain $TARGET --no-grad --eval
bench reduce-overhead $TARGET --no-grad --eval --mode reduce-overhead

echo "================ trace: TORCH_TRACE of the same model, opened and benched from the bundle"
t0=$SECONDS
TORCH_TRACE="$W/trace" TRITON_CACHE_DIR="$W/triton" TORCHINDUCTOR_CACHE_DIR="$W/inductor" timeout 240 python3 - <<'PY' > "$OUT/trace_run.log" 2>&1
import sys, torch
sys.path.insert(0, "benchmarks/models")
from llama_bf16 import Llama, example_inputs
m = Llama().cuda()
f = torch.compile(m)
with torch.no_grad():
    for _ in range(2):
        f(*example_inputs("cuda"))
torch.cuda.synchronize()
print("traced")
PY
echo "  traced: exit $? after $((SECONDS - t0)) s; $(tail -1 "$OUT/trace_run.log")"
$KS open "$W/trace" --triton-cache "$W/triton" -o "$W/opened" --no-ui > /dev/null 2> "$OUT/open.err"
echo "  open: exit $? : $(tail -1 "$OUT/open.err")"
t0=$SECONDS
timeout 240 $KS bench "$W/opened" --run-bundle-code --budget 0.5 > "$OUT/opened.log" 2>&1
echo "  bench --run-bundle-code: exit $? after $((SECONDS - t0)) s"
show opened "$OUT/opened.log" "$W/opened"
rm -rf "$W"
