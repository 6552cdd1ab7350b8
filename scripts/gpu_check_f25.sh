#!/usr/bin/env bash
# GPU check for issue 25 (why not fused, device time per line, compile time, ncu), <= 4 minutes:
# a 4-layer transformers GPT-2 (no_grad, eval) captured on CUDA, then
#   show --fusion, bench, show --lines, show --compile, bench --ncu --ncu-kernels (three Triton kernels).
# Prints each command and what it printed; copies the bundle's manifest and the outputs to $OUT.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD
set -uo pipefail
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
KS="python3 -m kernelscope"
B=/tmp/f25-gpt2x4
step() {  # step LIMIT_S LOG COMMAND...: run, keep the last lines in the log, say how it ended
  local limit=$1 log=$2; shift 2
  echo; echo "\$ kernelscope ${*:4}"
  local t0=$(date +%s)
  timeout "$limit" "$@" > "$OUT/$log" 2>&1; local rc=$?
  head -c 6000 "$OUT/$log"
  echo "[exit $rc, $(( $(date +%s) - t0 )) s]"
}
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
step 120 capture.txt $KS capture benchmarks/models/f25_models.py::GPT2x4 --no-grad --eval \
  --args "i64[4, 256] 0..50257" -o $B --force -q
step 20 fusion.txt $KS show $B --fusion
step 90 bench.txt $KS bench $B -q --reps 20 --warmup 3 --budget 0.5 --profile-calls 3
step 20 lines.txt $KS show $B --lines
step 20 compile.txt $KS show $B --compile
K=$(python3 - "$B" <<'PY'
import json, sys
b = json.load(open(sys.argv[1] + "/bundle.json"))
run = (b.get("extra", {}).get("bench") or {}).get("run") or {}
t = {}
for r in run.get("per_kernel") or []:
    if r.get("us") is not None and "triton" in r.get("name", ""):
        t[r["name"]] = t.get(r["name"], 0) + r["us"]
names = sorted(t, key=lambda n: -t[n])[:3] or [k["name"] for k in b["kernels"] if k["lang"] == "triton"][:3]
print(",".join(names))
PY
)
step 150 ncu.txt $KS bench $B --ncu --ncu-kernels "$K"
cp $B/bundle.json "$OUT/gpt2x4_bundle.json" 2>/dev/null
cp $B/logs/fusion.txt "$OUT/gpt2x4_fusion_log.txt" 2>/dev/null
echo; echo "outputs in \$OUT: capture.txt fusion.txt bench.txt lines.txt compile.txt ncu.txt gpt2x4_bundle.json gpt2x4_fusion_log.txt"
