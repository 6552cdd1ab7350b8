#!/usr/bin/env bash
# report: a 12-layer transformers GPT-2 captured, shown, benched and reported, the bundle kept
# --no-grad --eval; the bench's per-launch sum check, where the time goes and the counts explained;
# `kernelscope report --format md` to $OUT/gpt2_report.md; the bundle (no Triton stages) to
# $OUT/gpt2_bundle.tgz. About 5 minutes.
set -uo pipefail
: "${KS:?run through scripts/gpu_verify.sh}"
T=benchmarks/models/hf_gpt2.py::GPT2
B=/tmp/ks-report-gpt2
rm -rf "$B"
timeout 300 $KS capture $T --no-grad --eval -o "$B" > "$OUT/gpt2_capture.log" 2>&1; tail -3 "$OUT/gpt2_capture.log"
$KS show "$B" > "$OUT/gpt2_show.txt" 2>&1; head -60 "$OUT/gpt2_show.txt"
KERNELSCOPE_BENCH_BUDGET_S=120 timeout 240 $KS bench "$B" --no-save > "$OUT/gpt2_bench.txt" 2>&1; head -120 "$OUT/gpt2_bench.txt"
$KS report "$B" --format md -o "$OUT/gpt2_report.md" > /dev/null 2>&1; echo "report exit $?"
tar -C "$(dirname "$B")" -czf "$OUT/gpt2_bundle.tgz" --exclude='triton' "$(basename "$B")" 2>/dev/null
