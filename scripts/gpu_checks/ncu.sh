#!/usr/bin/env bash
# ncu: why kernels were not fused, device time per line, compile time, and Nsight Compute on three kernels
# A 4-layer transformers GPT-2 (no_grad, eval; benchmarks/models/fusion_models.py::GPT2x4) captured on
# CUDA, then show --fusion, bench, show --lines, show --compile, and bench --ncu --ncu-kernels on the three
# Triton kernels with the most device time. Prints each command and what it printed; copies the bundle's
# manifest and fusion log to $OUT. At most 4 minutes.
set -uo pipefail
: "${KS:?run through scripts/gpu_verify.sh}"
B=/tmp/ks-ncu-gpt2x4
step() {  # step LIMIT_S LOG COMMAND...: run, keep the output in the log, say how it ended
  local limit=$1 log=$2; shift 2
  echo; echo "\$ kernelscope ${*:4}"
  local t0=$(date +%s)
  timeout "$limit" "$@" > "$OUT/$log" 2>&1; local rc=$?
  head -c 6000 "$OUT/$log"
  echo "[exit $rc, $(( $(date +%s) - t0 )) s]"
}
step 120 capture.txt $KS capture benchmarks/models/fusion_models.py::GPT2x4 --no-grad --eval \
  --args "i64[4, 256] 0..50257" -o $B --force -q
step 20 fusion.txt $KS show $B --fusion
step 90 bench.txt $KS bench $B -q --reps 20 --warmup 3 --budget 0.5 --profile-calls 3
step 20 lines.txt $KS show $B --lines
step 20 compile.txt $KS show $B --compile
K=$(python3 - "$B" <<'PY'
import json, sys
from kernelscope.bundle.kernel_rows import kernel_entries  # bundle.json's kernels in any format
b = json.load(open(sys.argv[1] + "/bundle.json"))
run = (b.get("extra", {}).get("bench") or {}).get("run") or {}
t = {}
for r in run.get("per_kernel") or []:
    if r.get("us") is not None and "triton" in r.get("name", ""):
        t[r["name"]] = t.get(r["name"], 0) + r["us"]
names = sorted(t, key=lambda n: -t[n])[:3] or [k["name"] for k in kernel_entries(b, sys.argv[1]) if k["lang"] == "triton"][:3]
print(",".join(names))
PY
)
step 150 ncu.txt $KS bench $B --ncu --ncu-kernels "$K"
cp $B/bundle.json "$OUT/gpt2x4_bundle.json" 2>/dev/null
cp $B/logs/fusion.txt "$OUT/gpt2x4_fusion_log.txt" 2>/dev/null
echo; echo "outputs in \$OUT: capture.txt fusion.txt bench.txt lines.txt compile.txt ncu.txt gpt2x4_bundle.json gpt2x4_fusion_log.txt"
