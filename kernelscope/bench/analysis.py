"""Pure arithmetic on measured numbers: run statistics, profiler kernels matched to the bundle's
launches, achieved bandwidth and FLOP rate against measured ceilings, and where a sweep crosses over.

No torch: the child measures, these functions interpret, the CLI and the UI print.
"""

from __future__ import annotations

import statistics
from typing import Any

from kernelscope.bench.counts import Launch


def run_stats(samples_us: list[float]) -> dict[str, Any]:
    """Median and spread of per-call times (microseconds)."""
    xs = sorted(samples_us)
    n = len(xs)
    if not n:
        return {"runs": 0}

    def pct(p: float) -> float:
        k = (n - 1) * p
        lo, hi = int(k), min(int(k) + 1, n - 1)
        return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)

    med = statistics.median(xs)
    return {"runs": n, "median_us": round(med, 3), "p10_us": round(pct(0.10), 3), "p90_us": round(pct(0.90), 3),
            "min_us": round(xs[0], 3), "mean_us": round(statistics.fmean(xs), 3),
            "spread_pct": round(100.0 * (pct(0.90) - pct(0.10)) / med, 1) if med > 0 else None}


def per_call_kernels(events: list[tuple[str, float]], calls: int) -> list[dict[str, Any]]:
    """Aggregate (name, µs) profiler events over ``calls`` calls, by name in first-seen order: launches
    per call and the median time of one launch (robust to a slow first launch)."""
    table: dict[str, list[float]] = {}
    for name, us in events:
        table.setdefault(name, []).append(us)
    out = []
    for name, times in table.items():
        per_call = len(times) / calls
        med = statistics.median(times)
        out.append({"name": name, "per_call": round(per_call, 3), "us_per_launch": round(med, 3),
                    "us_per_call": round(med * per_call, 3)})
    return out


def split_calls(sequence: list[tuple[str, float]], calls: int) -> list[list[tuple[str, float]]] | None:
    """The device events of ``calls`` identical calls, one list per call; None when they do not divide evenly."""
    if calls <= 0 or len(sequence) % calls:
        return None
    n = len(sequence) // calls
    chunks = [sequence[i * n:(i + 1) * n] for i in range(calls)]
    names = [name for name, _ in chunks[0]]
    if any([name for name, _ in c] != names for c in chunks[1:]):
        return None
    return chunks


def attribute(launches: list[Launch], call: list[tuple[str, float]], named: set[str]) -> list[list[int]]:
    """For each launch of the bundle, the indices of the profiled kernels of one call that ran it.

    A Triton (or C++) kernel matches its own name; a run of extern launches (cuBLAS, ATen) takes the
    kernels up to the next named kernel, one each, the last taking the rest (a split-K GEMM is two
    kernels). A launch nothing matched gets [].
    """
    out: list[list[int]] = []
    i = j = 0
    while j < len(launches):
        if launches[j].name in named:
            k = _find(call, launches[j].name, i)
            out.append([] if k is None else [k])
            i = i if k is None else k + 1
            j += 1
            continue
        e = j
        while e < len(launches) and launches[e].name not in named:
            e += 1
        stop = _find(call, launches[e].name, i) if e < len(launches) else None
        stop = len(call) if stop is None else stop
        run = list(range(i, stop))
        m = e - j
        for x in range(m):
            out.append(run[x:x + 1] if x < m - 1 else run[m - 1:])
        i, j = stop, e
    return out


def _find(call: list[tuple[str, float]], name: str, start: int) -> int | None:
    return next((x for x in range(start, len(call)) if call[x][0] == name), None)


def rate(bytes_moved: int | None, us: float | None) -> float | None:
    """GB/s (10^9 bytes per second)."""
    if not bytes_moved or not us or us <= 0:
        return None
    return bytes_moved / (us * 1e-6) / 1e9


def percent(value: float | None, ceiling: float | None) -> float | None:
    if value is None or not ceiling:
        return None
    return 100.0 * value / ceiling


def crossover(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The smallest size from which compiled is faster end to end at every larger size measured."""
    ok = [r for r in rows if r.get("eager_us") and r.get("compiled_us")]
    ok.sort(key=lambda r: r["elements"])
    found = None
    for r in reversed(ok):
        if r["compiled_us"] < r["eager_us"]:
            found = r
        else:
            break
    return found


SPARK = " ▁▂▃▄▅▆▇█"


def bar(value: float, top: float, width: int) -> str:
    """A horizontal bar of eighth-blocks, ``value`` out of ``top`` over ``width`` cells."""
    if top <= 0 or value <= 0:
        return ""
    eighths = int(round(8 * width * min(value, top) / top))
    full, rest = divmod(eighths, 8)
    return "█" * full + ("▏▎▍▌▋▊▉"[rest - 1] if rest else "")


def short_name(name: str, width: int = 48) -> str:
    """A kernel or op name cut to ``width`` characters, an ellipsis where it was cut."""
    return name if len(name) <= width else name[: width - 1] + "…"


def fmt_rate(x: float | None) -> str:
    """A GB/s or TFLOP/s figure with the digits that say something: ``3350``, ``25``, ``2.4``, ``0.081``
    (a CPU's 0.08 GB/s printed as ``0`` beside its 1% of copy read as nothing moved); ``-`` for none."""
    if x is None or x <= 0:
        return "-"
    if x >= 10:
        return f"{x:.0f}"
    if x >= 1:
        return f"{x:.1f}"
    return f"{x:.2g}"


def fmt_us(us: float | None) -> str:
    if us is None:
        return "-"
    if us >= 10000:
        return f"{us / 1000:.1f} ms"
    if us >= 1000:
        return f"{us / 1000:.2f} ms"
    if us >= 100:
        return f"{us:.0f} µs"
    return f"{us:.1f} µs"
