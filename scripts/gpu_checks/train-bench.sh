#!/usr/bin/env bash
# train-bench: bench --run-bundle-code of `run` bundles of a transformers Llama training step (bf16, fp32)
#   1. kernelscope run --no-ui of benchmarks/scripts/train_llama.py (--bf16, then fp32): forward, backward and
#      the AdamW step compiled; 2. kernelscope bench BUNDLE --run-bundle-code on each: expect no MISMATCH;
#   3. a copy of the bf16 bundle with one output-code constant changed (the first value a Triton kernel of the
#      forward graph stores, doubled): expect correctness MISMATCH. At most ~5 minutes.
set -uo pipefail
: "${KS:?run through scripts/gpu_verify.sh}"
W=/tmp/ks-train-bench
rm -rf "$W"; mkdir -p "$W"
QUICK=(--reps 20 --budget 0.2 --profile-calls 5)
verdict() {  # the lines a closing note quotes
  grep -E "^(correctness|  compared|  .*(output|gradient|input)|sum check|  speedup|note:)" "$1" | cut -c1-300 | head -14
}
for dtype in bf16 fp32; do
  flag=(); [[ $dtype == bf16 ]] && flag=(--bf16)
  t0=$SECONDS
  timeout 200 $KS run --no-ui -o "$W/$dtype" -- python3 benchmarks/scripts/train_llama.py "${flag[@]}" --steps 2 \
    > "$OUT/run_$dtype.txt" 2> "$OUT/run_$dtype.err"
  echo "== run $dtype: exit $? after $((SECONDS - t0)) s; $(grep -c '' "$OUT/run_$dtype.txt") lines of show"
  sed -n '1,12p' "$OUT/run_$dtype.txt"
  t0=$SECONDS
  timeout 200 $KS bench "$W/$dtype" --run-bundle-code "${QUICK[@]}" > "$OUT/bench_$dtype.txt" 2>&1
  echo "== bench --run-bundle-code $dtype: exit $? after $((SECONDS - t0)) s"
  verdict "$OUT/bench_$dtype.txt"
done
cp -r "$W/bf16" "$W/broken"
python3 - "$W/broken" <<'PY'
import json, re, sys
from pathlib import Path
b = Path(sys.argv[1])
index = json.loads((b / "bundle.json").read_text())
fwd = next(g for g in index["graphs"] if g["kind"] == "forward")
code = b / fwd["files"]["output_code"]
text = code.read_text()
m = re.search(r"tl\.store\(([^,\n]+), (tmp\d+)", text)  # the first value a Triton kernel of the forward stores
if m is None:
    raise SystemExit("no tl.store in the forward output code")
code.write_text(text[:m.end(2)] + " * 2" + text[m.end(2):])
print(f"changed {code.relative_to(b)}: the first kernel stores {m.group(2)} * 2 into {m.group(1).strip()}")
PY
t0=$SECONDS
timeout 200 $KS bench "$W/broken" --run-bundle-code "${QUICK[@]}" --no-save > "$OUT/bench_broken.txt" 2>&1
echo "== bench --run-bundle-code of the broken copy: exit $? after $((SECONDS - t0)) s (expect MISMATCH)"
verdict "$OUT/bench_broken.txt"
tar czf "$OUT/train_bundles.tgz" -C "$W" bf16 fp32 2>/dev/null
