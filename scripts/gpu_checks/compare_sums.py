"""Compare the bench's per-launch sums and kernel times with independent torch.profiler loops
(the `sums` check, scripts/gpu_checks/sums.sh, writes what this reads: OUT/benchN.json, the bench's run
record after bench N, and OUT/loopN.json, benchmarks/independent_profile.py's figures).

    python3 scripts/gpu_checks/compare_sums.py OUT_DIR
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def pct(a: float, b: float) -> str:
    return f"{100 * (a - b) / b:+.2f}%"


def load(paths: list[Path]) -> list[tuple[str, dict]]:
    out = []
    for p in paths:
        try:
            out.append((p.stem, json.loads(p.read_text())))
        except (OSError, ValueError) as exc:
            print(f"   {p.name}: unreadable ({exc!r})")
    return out


def main() -> int:
    out = Path(sys.argv[1])
    benches = load(sorted(out.glob("bench*.json")))
    loops = load(sorted(out.glob("loop*.json")))
    if not benches or not loops:
        print("nothing to compare")
        return 1
    per_call = [d["device_us_per_call"] for _, d in loops]
    ref = statistics.mean(per_call)
    print(f"== independent loops: {', '.join(f'{x:.1f}' for x in per_call)} µs device time per call "
          f"(mean {ref:.1f}; spread {pct(max(per_call), min(per_call))} max over min; "
          f"{loops[0][1]['launches_per_call']:g} kernels per call)")
    for name, rec in benches:
        c = rec.get("sum_check") or {}
        if not c:
            print(f"== {name}: no sum check")
            continue
        unclaimed = sum(u["us"] for u in rec.get("unclaimed") or [])
        summed = c["launches_us"] + c.get("copies_us", 0.0)
        print(f"== {name}: per-launch sum {summed:.1f} µs ({pct(summed, ref)} from the loops' mean; "
              f"{' '.join(pct(summed, x) for x in per_call)} from each); + {unclaimed:.1f} µs of kernels that are "
              f"no launch = {summed + unclaimed:.1f} µs; the bench's device total {c['total_us']:.1f} µs "
              f"({pct(c['total_us'], ref)})")
    names = {}
    for _, d in loops:
        for k, v in d["kernels"].items():
            names.setdefault(k, []).append(v)
    _, last = benches[-1]
    shown = 0
    for r in sorted(last.get("per_kernel", []), key=lambda r: -(r.get("us") or 0)):
        ind = names.get(r["name"])
        if not ind or r.get("us") is None or not r["name"].startswith("triton_"):
            continue
        flushed = f", L2 flushed {r['us_flushed']:.2f} µs" if r.get("us_flushed") is not None else ""
        print(f"   {r['name'][:64]}: bench {r['us']:.2f} µs{flushed}; loops' median {statistics.mean(ind):.2f} µs "
              f"({pct(r['us'], statistics.mean(ind))})")
        shown += 1
        if shown == 5:
            break
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
