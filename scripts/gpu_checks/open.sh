#!/usr/bin/env bash
# open: real H200 TORCH_TRACE logs opened into bundles, each benched from the bundle alone
# The traces: tests/fixtures/reference/mlp_train and linear_relu, with their Triton caches, and the GPT-2
# 2-layer + AdamW training trace in .gpu/train_gpt2_trace.tgz where it was carried. For each,
# `kernelscope bench BUNDLE` without and with --run-bundle-code. Expect: without the flag one line naming
# the files it would run (exit 2); with it every launch timed, "sum check OK" (within 1%), computed vs
# measured counts, and a correctness line. About 2-3 minutes.
set -u
: "${KS:?run through scripts/gpu_verify.sh}"
W=$(mktemp -d)
export KERNELSCOPE_CACHE_DIR="$W/cache" KERNELSCOPE_CACHE="$W/cache"

bench_one() {  # NAME TRACE_DIR TRITON_DIR
    local name=$1 trace=$2 triton=$3 bundle=$W/$1
    echo "================ $name"
    echo "\$ kernelscope open $trace --triton-cache $triton -o BUNDLE --no-ui"
    $KS open "$trace" --triton-cache "$triton" -o "$bundle" --no-ui >/dev/null 2>"$W/$name.open.txt"
    echo "  exit $? : $(tail -1 "$W/$name.open.txt")"
    echo "\$ kernelscope bench BUNDLE            (no flag: must ask first)"
    $KS bench "$bundle" -q >/dev/null 2>"$W/$name.ask.txt"
    echo "  exit $? : $(tail -1 "$W/$name.ask.txt" | cut -c1-300)"
    echo "\$ kernelscope bench BUNDLE --run-bundle-code --budget 0.5"
    local t0=$SECONDS
    $KS bench "$bundle" --run-bundle-code --budget 0.5 -q >"$W/$name.bench.txt" 2>"$W/$name.bench.err"
    echo "  exit $? in $((SECONDS - t0)) s"
    tail -3 "$W/$name.bench.err" | sed 's/^/  stderr: /'
    grep -E "^(GPU:|bench of the bundle alone|  synthetic|sum check|correctness)" "$W/$name.bench.txt" | cut -c1-400
    grep -E "^  [0-9-]+-(forward|backward|inference)" "$W/$name.bench.txt" | cut -c1-300
    sed -n '/^Measured per call/,/^  speedup/p' "$W/$name.bench.txt"
    sed -n '/^Kernel counts per call/,/^$/p' "$W/$name.bench.txt"
    grep -E "^note:" "$W/$name.bench.txt" | cut -c1-300
    cp "$W/$name.bench.txt" "$OUT/$name.bench.txt" 2>/dev/null
    python3 - "$bundle" <<'PY'
import json, sys
run = json.load(open(sys.argv[1] + "/bundle.json"))["extra"].get("bench", {}).get("run", {})
rows = run.get("per_kernel") or []
untimed = [r["name"] for r in rows if r.get("us") is None]
sc = run.get("sum_check") or {}
print(f"  check: {len(rows) - len(untimed)}/{len(rows)} launches timed{(' (untimed: ' + ', '.join(untimed[:5]) + ')') if untimed else ''}; "
      f"sum check diff {sc.get('diff_pct')}% ok={sc.get('ok')}; correctness ok={(run.get('correctness') or {}).get('ok')}")
PY
}

R=tests/fixtures/reference
bench_one mlp_train "$R/mlp_train/trace" "$R/mlp_train/triton"
bench_one linear_relu "$R/linear_relu/trace" "$R/linear_relu/triton"
if [ -f .gpu/train_gpt2_trace.tgz ]; then
    mkdir -p "$W/gpt2src" && tar xzf .gpu/train_gpt2_trace.tgz -C "$W/gpt2src"
    bench_one gpt2_train "$W/gpt2src/trace" "$W/gpt2src/triton"
else
    echo "================ gpt2_train: .gpu/train_gpt2_trace.tgz not here, skipped"
fi
rm -rf "$W"
