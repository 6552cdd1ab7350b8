"""Reading bench results (``Bundle.extra["bench"]``) for reports and diffs, tolerating their absence.

Accepted shape (fields optional)::

    {"device": "NVIDIA H200", "method": "torch.profiler + do_bench",
     "eager":    {"launches": 2, "ms": 0.023 | {"median": 0.023}, "kernels": [KERNEL, ...]},
     "compiled": {"launches": 1, "ms": 0.089, "kernels": [KERNEL, ...]},
     "kernels":  {"<kernel id or name>": {"time_ms": 0.0027, "gbps": 3900, "pct_peak": 91}, ...}}

A KERNEL is ``{"name", "count", "time_ms" | "time_us"}`` or ``[name, count, time_us]`` (the
profiler probe's form); ``eager_kernels``/``compiled_kernels``/``eager_ms``/``compiled_ms`` at the
top level are read too. Times are per call: a kernel's total device time per call, summed over its
launches. Nothing is invented: a field that is missing stays None.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernelscope.bundle.bench_record import measured_device
from kernelscope.bundle.model import Bundle, Kernel


@dataclass
class SideFacts:
    """Eager or compiled: launches per call, end-to-end time, device time per kernel name."""

    launches: int | None = None
    ms: float | None = None
    kernels: dict[str, tuple[int, float | None]] = field(default_factory=dict)  # name -> (count, total ms)

    @property
    def kernel_ms(self) -> float | None:
        times = [t for _, t in self.kernels.values()]
        return sum(times) if times and None not in times else None


@dataclass
class BenchFacts:
    device: str = ""
    method: str = ""
    eager: SideFacts = field(default_factory=SideFacts)
    compiled: SideFacts = field(default_factory=SideFacts)
    per_kernel: dict[str, dict[str, Any]] = field(default_factory=dict)  # kernel id or name -> facts
    run: dict[str, Any] = field(default_factory=dict)  # a `kernelscope bench` record: where the time goes ...

    def kernel_time_ms(self, k: Kernel) -> float | None:
        """Device time per call of one bundle kernel, when it was measured."""
        for key in (k.id, k.name):
            facts = self.per_kernel.get(key)
            if facts and _ms(facts) is not None:
                return _ms(facts)
        if k.lang != "extern" and k.name in self.compiled.kernels:
            return self.compiled.kernels[k.name][1]
        return None

    def kernel_facts(self, k: Kernel) -> dict[str, Any]:
        return dict(self.per_kernel.get(k.id) or self.per_kernel.get(k.name) or {})


def _num(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, dict):
        for key in ("median", "median_ms", "ms", "mean"):
            if key in value:
                return _num(value[key])
    return None


def _ms(facts: dict[str, Any]) -> float | None:
    for key, scale in (("time_ms", 1.0), ("median_ms", 1.0), ("ms", 1.0), ("device_ms", 1.0),
                       ("time_us", 1e-3), ("device_us", 1e-3), ("us", 1e-3)):
        if key in facts and _num(facts[key]) is not None:
            return _num(facts[key]) * scale
    return None


def _kernel_rows(rows: Any) -> dict[str, tuple[int, float | None]]:
    out: dict[str, tuple[int, float | None]] = {}
    for row in rows or []:
        if isinstance(row, (list, tuple)) and row:
            name, count = str(row[0]), int(row[1]) if len(row) > 1 and _num(row[1]) is not None else 1
            ms = _num(row[2]) * 1e-3 if len(row) > 2 and _num(row[2]) is not None else None
        elif isinstance(row, dict) and row.get("name"):
            name = str(row["name"])
            count = int(_num(row.get("count", row.get("launches", row.get("calls", 1)))) or 1)
            ms = _ms(row)
        else:
            continue
        prev_count, prev_ms = out.get(name, (0, 0.0))
        out[name] = (prev_count + count, None if ms is None or prev_ms is None else prev_ms + ms)
    return out


def _side(data: dict[str, Any], name: str) -> SideFacts:
    side = data.get(name) if isinstance(data.get(name), dict) else {}
    facts = SideFacts()
    facts.kernels = _kernel_rows(side.get("kernels", data.get(f"{name}_kernels")))
    facts.ms = _num(side.get("ms", side.get("e2e_ms", side.get("time_ms", data.get(f"{name}_ms")))))
    launches = _num(side.get("launches", data.get(f"{name}_launches")))
    if launches is None and facts.kernels:
        launches = sum(c for c, _ in facts.kernels.values())
    facts.launches = int(launches) if launches is not None else None
    return facts


def read_bench(bundle: Bundle) -> BenchFacts | None:
    """The bundle's bench results, or None when it was never benchmarked."""
    data = bundle.extra.get("bench") if isinstance(bundle.extra, dict) else None
    if not isinstance(data, dict) or not data:
        return None
    if isinstance(data.get("run"), dict):
        return _from_run(data["run"])
    facts = BenchFacts(device=str(data.get("device", "") or ""), method=str(data.get("method", "") or ""))
    facts.eager = _side(data, "eager")
    facts.compiled = _side(data, "compiled")
    per = data.get("kernels")
    if isinstance(per, dict):
        facts.per_kernel = {str(k): v for k, v in per.items() if isinstance(v, dict)}
    elif isinstance(per, list):
        for row in per:
            if isinstance(row, dict):
                for key in ("id", "name"):
                    if row.get(key):
                        facts.per_kernel[str(row[key])] = row
    return facts


def _from_run(run: dict[str, Any]) -> BenchFacts:
    """The record `kernelscope bench` stores (``extra["bench"]["run"]``)."""
    dev = run.get("device") or {}
    facts = BenchFacts(device=measured_device(dev),
                       method=str(run.get("kernel_source") or ""), run=run)
    for name in ("eager", "compiled"):
        side = run.get(name) or {}
        s = SideFacts()
        s.ms = _num((side.get("e2e") or {}).get("median_us"))
        s.ms = s.ms * 1e-3 if s.ms is not None else None
        s.kernels = _kernel_rows([[k["name"], k.get("per_call", 1), k.get("us_per_call")] for k in side.get("kernels", [])])
        launches = _num(side.get("launches_per_call"))
        s.launches = int(round(launches)) if launches is not None else None
        setattr(facts, name, s)
    for row in run.get("per_kernel") or []:
        key = row.get("kernel_id") or row.get("name")
        if not key:
            continue
        prev = facts.per_kernel.setdefault(key, {"time_us": 0.0})
        if row.get("us") is None or prev.get("time_us") is None:
            prev["time_us"] = None
        else:
            prev["time_us"] += row["us"]
    return facts
