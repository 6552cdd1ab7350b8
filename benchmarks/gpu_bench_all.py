"""Bench every sample on the GPU box and print its tables.

    python benchmarks/gpu_bench_all.py OUTDIR

Per sample: capture, then `kernelscope bench` (eager vs compiled). Then add_relu, softmax and
linear_relu benched a second time (reproducibility: medians within 3%), an independent
torch.profiler run of compiled add_relu (per-kernel time within 5% of the bench's), the add_relu
size sweep and the one-kernel rerun with a changed XBLOCK. One failure never stops the rest; the
whole script keeps to a time budget (KERNELSCOPE_BENCH_BUDGET_S, default 330 s) and skips what
does not fit. Writes OUTDIR/results.json and OUTDIR/bundles/<sample>.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUDGET_S = float(os.environ.get("KERNELSCOPE_BENCH_BUDGET_S", "330"))
T0 = time.time()
REPEAT = ("add_relu", "softmax", "linear_relu")
BENCH_FLAGS = ("--reps", "100", "--budget", "0.5", "--profile-calls", "10")

INDEPENDENT = REPO / "benchmarks" / "independent_profile.py"


def left() -> float:
    return BUDGET_S - (time.time() - T0)


def ks(*args: str, timeout: float) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    try:
        return subprocess.run([sys.executable, "-m", "kernelscope", *args], capture_output=True, text=True,
                              timeout=max(5.0, timeout), env=env, cwd=str(REPO))
    except subprocess.TimeoutExpired as exc:
        return subprocess.CompletedProcess(exc.cmd, 124, exc.stdout or "", f"timed out after {timeout:.0f} s")


def section(title: str) -> None:
    print(f"\n{'=' * 100}\n{title}  (t={time.time() - T0:.0f} s)\n{'=' * 100}", flush=True)


def bench_json(bundle: Path, *extra: str, timeout: float = 90) -> tuple[dict | None, str]:
    proc = ks("bench", str(bundle), *BENCH_FLAGS, *extra, "--json", "-q", timeout=min(timeout, left()))
    if proc.returncode != 0:
        return None, (proc.stderr.strip().splitlines() or ["?"])[-1]
    return json.loads(proc.stdout), ""


def tables_of(record: dict) -> str:
    sys.path.insert(0, str(REPO))
    from kernelscope.bench import tables

    return tables.bench_text(record).lstrip("\n")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    out = Path(argv[0]).resolve()
    (out / "bundles").mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("KERNELSCOPE_CACHE_DIR", str(out / "cache"))
    samples = sorted(p.stem for p in (REPO / "samples").glob("*.py") if not p.name.startswith("_"))
    if os.environ.get("KERNELSCOPE_BENCH_SAMPLES"):  # a subset, e.g. for the reproducibility check alone
        samples = [s for s in samples if s in os.environ["KERNELSCOPE_BENCH_SAMPLES"].split(",")]
    samples.sort(key=lambda s: (s not in REPEAT, s))  # the ones the closing note needs first
    results: dict = {"samples": {}, "repeat": {}, "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
    bundles: dict[str, Path] = {}

    for name in samples:
        section(f"{name}: capture + bench")
        if left() < 30:
            results["samples"][name] = {"error": "skipped: out of time"}
            print("skipped: out of time")
            continue
        bundle = out / "bundles" / name
        recorded = Path(os.environ.get("KERNELSCOPE_GPU_BUNDLES", "/nonexistent")) / name
        if (recorded / "bundle.json").is_file():  # captured earlier in this session: bench a copy of it
            shutil.copytree(recorded, bundle, dirs_exist_ok=True)
            cap = subprocess.CompletedProcess([], 0, "", "")
        else:
            cap = ks("capture", name, "-o", str(bundle), "--force", "-q", timeout=min(120, left()))
        if cap.returncode != 0:
            err = (cap.stderr.strip().splitlines() or ["?"])[-1]
            results["samples"][name] = {"error": f"capture: {err}"}
            print(f"capture failed: {err}")
            continue
        bundles[name] = bundle
        record, err = bench_json(bundle)
        if record is None:
            results["samples"][name] = {"error": f"bench: {err}"}
            print(f"bench failed: {err}")
            continue
        results["samples"][name] = record
        print(tables_of(record), flush=True)

    section("reproducibility: a second run of add_relu, softmax, linear_relu (medians within 3%)")
    for name in REPEAT:
        first = (results["samples"].get(name) or {}).get("run")
        if not first or left() < 20:
            print(f"{name}: skipped ({'no first run' if not first else 'out of time'})")
            continue
        record, err = bench_json(bundles[name])
        if record is None:
            print(f"{name}: second run failed: {err}")
            results["repeat"][name] = {"error": err}
            continue
        second = record["run"]
        rows = []
        for side in ("eager", "compiled"):
            a, b = first[side]["e2e"]["median_us"], second[side]["e2e"]["median_us"]
            rows.append((f"{side} end-to-end", a, b))
            a, b = first[side]["kernel_us"], second[side]["kernel_us"]
            rows.append((f"{side} in kernels", a, b))
            if first[side].get("loop") and second[side].get("loop"):
                rows.append((f"{side} back to back", first[side]["loop"]["median_us"],
                             second[side]["loop"]["median_us"]))
        print(f"{name}:  {'':<22}{'run 1':>12}{'run 2':>12}{'diff':>9}")
        worst = 0.0
        for label, a, b in rows:
            diff = 100.0 * (b - a) / a if a else float("nan")
            worst = max(worst, abs(diff))
            print(f"  {label:<28}{a:>10.2f}µs{b:>10.2f}µs{diff:>8.1f}%")
        for i, run in enumerate((first, second), 1):
            hosts = [(side, run[side]["e2e"].get("host") or {}) for side in ("eager", "compiled")]
            print(f"  run {i} host at full speed: " + ", ".join(
                f"{side} {h.get('full_speed_blocks')}/{h.get('blocks')} blocks (all blocks {h.get('all_median_us')} µs)"
                for side, h in hosts) + f"; probe reference {hosts[0][1].get('probe_reference_us')} µs")
        verdict = "within 3%" if worst <= 3.0 else "NOT within 3%"
        print(f"  worst difference {worst:.1f}%: {verdict}")
        results["repeat"][name] = {"second": record, "worst_pct": round(worst, 2)}

    if "add_relu" in bundles and left() > 20:
        section("independent torch.profiler run of compiled add_relu vs the bench's per-kernel time (within 5%)")
        try:
            proc = subprocess.run([sys.executable, str(INDEPENDENT)], capture_output=True,
                                  text=True, timeout=min(90, left()))
            independent = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else {}
            if proc.returncode != 0:
                print("independent run failed:", (proc.stderr.strip().splitlines() or ["?"])[-1])
        except (subprocess.TimeoutExpired, ValueError, IndexError) as exc:
            independent = {}
            print(f"independent run failed: {exc}")
        run = (results["samples"].get("add_relu") or {}).get("run") or {}
        for row in run.get("per_kernel", []):
            ind = independent.get(row["name"])
            if ind and row.get("us"):
                diff = 100.0 * (row["us"] - ind) / ind
                print(f"  {row['name']}: bench {row['us']:.2f} µs, independent profiler {ind:.2f} µs, "
                      f"diff {diff:+.1f}% ({'within' if abs(diff) <= 5 else 'NOT within'} 5%)")
        results["independent_profile"] = independent

    if "add_relu" in bundles and left() > 40:
        section("add_relu: sweep over sizes")
        record, err = bench_json(bundles["add_relu"], "--sweep", timeout=min(150, left() - 20))
        print(tables_of(record) if record else f"sweep failed: {err}")
        results["sweep"] = record or {"error": err}

    if "add_relu" in bundles and left() > 15:
        section("add_relu: one kernel, recorded config vs XBLOCK=256")
        record, err = bench_json(bundles["add_relu"], "--kernel", "triton_poi_fused_add_relu_0", "--set",
                                 "XBLOCK=256", timeout=min(90, left()))
        print(tables_of(record) if record else f"kernel rerun failed: {err}")
        results["kernel"] = record or {"error": err}

    section("summary")
    for name, rec in results["samples"].items():
        if "error" in rec:
            print(f"  {name:<18} ERROR {rec['error']}")
            continue
        r = rec["run"]
        c = r["counts"]
        print(f"  {name:<18} kernels {c['eager']['kernels']}->{c['compiled']['kernels']} (measured "
              f"{r['eager']['launches_per_call']:g}->{r['compiled']['launches_per_call']:g})  transfers "
              f"{c['eager']['transfers']}->{c['compiled']['transfers']}  e2e {r['eager']['e2e']['median_us']:.1f}->"
              f"{r['compiled']['e2e']['median_us']:.1f} µs  correct {r['correctness']['ok']}")
    results["seconds"] = round(time.time() - T0, 1)
    (out / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    print(f"\nwrote {out / 'results.json'} in {results['seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
