#!/usr/bin/env bash
# models: the bench on real library models: wall time, correctness against float64, the per-launch sum check
# Each bench captures its target first; the summary lines of each are printed.
#   GPT-2 x12 (--no-grad --eval): wall seconds of the bench alone (target <= 30 s), correctness, sum check
#   torchvision ResNet-18 fp32, a 4-layer transformers Llama bf16: correctness (no false MISMATCH)
#   that Llama under --mode reduce-overhead: sum check within 1%, and an independent torch.profiler loop's
#   total over the same compiled call (benchmarks/independent_profile.py; the `sums` check runs several)
# The whole check stays under LIMIT seconds (default 235): a step that would not fit is skipped and says so.
set -uo pipefail
: "${KS:?run through scripts/gpu_verify.sh}"
W=/tmp/ks-models
mkdir -p "$W"
LIMIT=${LIMIT:-235}

summary() {  # the lines a closing note quotes
  grep -E "^(correctness|  compared|  output|  input|  gradient|sum check|per-launch times: not matched|  (eager|compiled|compiled_static) +[0-9]|             launches|  speedup|  end-to-end of|  back to back|note:|saved in|not saved)" "$1" | cut -c1-400
}

bench() {  # NAME NEEDS_S TIMEOUT_S ARGS...: capture + bench one target, print the wall time and summary
  local name=$1 needs=$2 limit=$3; shift 3
  if (( SECONDS + needs > LIMIT )); then echo "== $name: skipped (needs ~${needs} s, ${SECONDS} s of ${LIMIT} used)"; return; fi
  echo "== $name: kernelscope bench $*"
  local t0=$SECONDS
  rm -rf "$W/$name"
  timeout "$limit" $KS bench "$@" -o "$W/$name" > "$OUT/$name.log" 2>&1
  echo "   exit $? after $((SECONDS - t0)) s (capture + bench)"
  summary "$OUT/$name.log"
  grep -E "^  (compile|timing|eager|compiled|correct|static|flushed) " "$OUT/$name.log" | tail -8 | sed 's/^/   progress: /'
}

bench gpt2 90 150 benchmarks/models/hf_gpt2.py::GPT2 --no-grad --eval
grep -m1 -E "^  triton_poi_fused_add_addmm_mul_pow_tanh" "$OUT/gpt2.log" | sed 's/^/   GELU launch (time as in the call, then L2 flushed): /'
grep -m1 -E "^  (L2 flushed|no L2-flushed)" "$OUT/gpt2.log"
# The independent profiler loop (its own compile) runs alone on the GPU: beside another bench its
# kernels ran slower (by 2.6%); the `sums` check interleaves several of each.
IND="benchmarks/models/llama_bf16.py::Llama --mode reduce-overhead"
echo "== independent: python3 benchmarks/independent_profile.py 20 $IND"
timeout 150 python3 benchmarks/independent_profile.py 20 $IND > "$OUT/independent_llama_ro.json" 2> "$OUT/independent_llama_ro.err"
bench resnet18 40 90 benchmarks/models/tv_resnet18.py::ResNet18 --no-grad --eval
bench llama 45 90 benchmarks/models/llama_bf16.py::Llama --no-grad --eval
bench llama_ro 70 120 benchmarks/models/llama_bf16.py::Llama --no-grad --eval --mode reduce-overhead
python3 - "$OUT/independent_llama_ro.json" "$OUT/llama_ro.log" <<'PY'
import json, re, sys
try:
    ind = json.load(open(sys.argv[1]))
except Exception as exc:
    print("   independent profile failed or did not run:", exc); raise SystemExit
print(f"== independent torch.profiler loop (Llama, reduce-overhead): {ind['device_us_per_call']:.1f} µs device time "
      f"per call, {ind['launches_per_call']:g} kernels per call ({ind['calls']} calls)")
try:
    text = open(sys.argv[2]).read()
except OSError:
    raise SystemExit
unit = {"µs": 1.0, "ms": 1000.0}
m = re.search(r"per-launch times add up to ([\d.]+) (µs|ms).*?device total is ([\d.]+) (µs|ms)", text)
if m:
    launches, total = float(m.group(1)) * unit[m.group(2)], float(m.group(3)) * unit[m.group(4)]
    ref = ind["device_us_per_call"]
    print(f"   bench: per-launch sum {launches:.1f} µs ({100 * (launches - ref) / ref:+.2f}% from the independent loop), "
          f"profiler device total {total:.1f} µs ({100 * (total - ref) / ref:+.2f}%)")
PY
