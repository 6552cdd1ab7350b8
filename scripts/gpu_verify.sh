#!/usr/bin/env bash
# On a GPU box, from any folder: the checks only a real GPU can answer, each named for what it verifies.
#   bash scripts/gpu_verify.sh CHECK...      e.g. record tests preview   (no CHECK: the list below)
# Each check is scripts/gpu_checks/CHECK.sh; it writes its logs to $OUT/CHECK/ (OUT defaults to ./gpu-out)
# and what it prints to $OUT/CHECK/output.txt as well. Carried wheels in .whl/ are installed first.
# Checks that need a recording (tests, preview) use $REC/bundles when `record` ran before them in the
# same call, so the GPU compiles every sample once.
set -uo pipefail
cd "$(dirname "$0")/.."
CHECKS=scripts/gpu_checks

usage() {
  echo "usage: bash scripts/gpu_verify.sh CHECK...   (checks run in the order given)"
  for f in "$CHECKS"/*.sh; do
    printf '  %-15s %s\n' "$(basename "$f" .sh)" "$(sed -n '2s/^# [a-z-]*: //p' "$f")"
  done
}
if [ $# -eq 0 ]; then usage; exit 2; fi
for check in "$@"; do
  [ -f "$CHECKS/$check.sh" ] || { echo "no check named '$check'"; usage; exit 2; }
done

OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1
export KS="python3 -m kernelscope"
export REC=${REC:-/tmp/ks-rec}  # the recording `record` makes and `tests` and `preview` read
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/gpu.txt"
python3 -c "import transformers, torchvision; print('transformers', transformers.__version__, 'torchvision', torchvision.__version__)" \
  2>/dev/null | tee -a "$OUT/gpu.txt"

status=0
for check in "$@"; do
  echo "======== $check"
  mkdir -p "$OUT/$check"
  t0=$SECONDS
  OUT="$OUT/$check" bash "$CHECKS/$check.sh" 2>&1 | tee "$OUT/$check/output.txt"
  rc=${PIPESTATUS[0]}
  (( rc == 0 )) || status=$rc
  echo "======== $check: exit $rc after $((SECONDS - t0)) s"
done
exit "$status"
