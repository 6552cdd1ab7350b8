"""The shape of the bench record a bundle stores (``extra["bench"]``), checked where the bundle is read.

``kernelscope bench`` writes the record, but a bundle is a file anyone can edit or send: a record whose
fields have the wrong types (a string where an object goes, a list for a number) would reach the report,
the diff and the UI's bench pane. ``bench_record_problem`` names the first field that is not shaped as
bench writes it; the reader then leaves the record out with a note, as if the bundle was never benched.
"""

from __future__ import annotations

from operator import methodcaller
from typing import Any

NUM = "number"
STR = "string"
DICT = "object"
LIST = "list"
ANY = "any"

_TIMING = {"*": NUM, "host": DICT}
_SIDE = {"e2e": _TIMING, "loop": _TIMING,
         "kernels": [{"name": STR, "per_call": NUM, "us_per_launch": NUM, "us_per_call": NUM}],
         "launches_per_call": NUM, "kernel_us": NUM, "outside_us": NUM, "profile_calls": NUM}
_COUNTS = {"kernels": NUM, "transfers": NUM, "bytes_read": NUM, "bytes_written": NUM, "sources": LIST,
           "graphs": LIST}
# The ``run`` record as kernelscope/bench writes it (bench/runner.py, bench/child.py); keys not named
# here are not read by anything that trusts their type, so they are left as they are.
RUN_SHAPE: dict[str, Any] = {
    "version": NUM, "ran_at": STR, "device": {"*": ANY, "device": STR, "device_name": STR, "cpu_model": STR},
    "clocks": DICT, "versions": DICT, "settings": DICT, "seconds": NUM,
    "ceilings": {"copy": DICT, "matmul": DICT, "cache": STR, "key": STR},
    "counts": {"eager": _COUNTS, "compiled": _COUNTS}, "inputs": [STR], "compile_s": NUM,
    "correctness": {"ok": ANY, "problems": LIST, "tensors": NUM, "max_abs_err": NUM, "max_rel_err": NUM},
    "rotation": DICT, "pinned_cpu": NUM, "captured_on": STR, "notes": [STR],
    "eager": _SIDE, "compiled": _SIDE,
    "per_kernel": [{"kernel_id": STR, "name": STR, "kind": STR, "measured_as": LIST, "us": NUM,
                    "bytes_read": NUM, "bytes_written": NUM, "gbps": NUM, "pct_copy": NUM, "flops": NUM}],
    "timer": STR, "kernel_source": STR,
}


def _is(value: Any, kind: str) -> bool:
    if value is None or kind == ANY:
        return True
    if kind == NUM:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == STR:
        return isinstance(value, str)
    if kind == DICT:
        return isinstance(value, dict)
    return isinstance(value, list)


def shape_problem(value: Any, shape: Any, where: str) -> str | None:
    """The first place where ``value`` is not shaped as ``shape`` says, as ``where.key is a list, not
    a number``; None when it is."""
    if value is None:
        return None
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return f"{where} is {_kind(value)}, not an object"
        for key, item in value.items():
            sub = shape.get(key, shape.get("*"))
            if sub is not None:
                problem = shape_problem(item, sub, f"{where}.{key}")
                if problem:
                    return problem
        return None
    if isinstance(shape, list):
        if not isinstance(value, list):
            return f"{where} is {_kind(value)}, not a list"
        if isinstance(shape[0], dict) and "*" not in shape[0] and all(type(item) is dict for item in value):
            return _rows_problem(value, shape[0], where)
        for i, item in enumerate(value):
            problem = shape_problem(item, shape[0], f"{where}[{i}]")
            if problem:
                return problem
        return None
    return None if _is(value, shape) else f"{where} is {_kind(value)}, not a {shape}"


_TYPES = {NUM: {int, float, type(None)}, STR: {str, type(None)}, DICT: {dict, type(None)}, LIST: {list, type(None)}}


def _rows_problem(rows: list[dict], shape: dict[str, Any], where: str) -> str | None:
    """A list of objects checked field by field across every row (a compile-time record holds thousands):
    a plain field in one pass at C speed, a nested one row by row; the first bad value is named by the
    one-value check, row by row."""
    for key, sub in shape.items():
        allowed = _TYPES.get(sub) if isinstance(sub, str) else None
        if sub == ANY or (allowed is not None and set(map(type, map(methodcaller("get", key), rows))) <= allowed):
            continue
        for i, row in enumerate(rows):
            if key in row:
                problem = shape_problem(row[key], sub, f"{where}[{i}].{key}")
                if problem:
                    return problem
    return None


def _kind(value: Any) -> str:
    return ("a string" if isinstance(value, str) else "a list" if isinstance(value, list)
            else "an object" if isinstance(value, dict) else "a boolean" if isinstance(value, bool)
            else "a number" if isinstance(value, (int, float)) else type(value).__name__)


def bench_record_problem(record: Any) -> str | None:
    """What is wrong with a bundle's ``extra["bench"]``, or None (also when there is none)."""
    if record is None:
        return None
    if not isinstance(record, dict):
        return f"bench is {_kind(record)}, not an object"
    if "run" in record:
        problem = shape_problem(record["run"], RUN_SHAPE, "bench.run")
        if problem:
            return problem
    for section in ("sweep", "kernel"):
        if section in record and record[section] is not None and not isinstance(record[section], dict):
            return f"bench.{section} is {_kind(record[section])}, not an object"
    if "run" not in record:  # the older flat record report/bench.py still reads
        flat = {"device": STR, "method": STR, "kernels": ANY,
                "eager": {"*": ANY, "kernels": ANY}, "compiled": {"*": ANY, "kernels": ANY}}
        problem = shape_problem({k: v for k, v in record.items() if k in flat}, flat, "bench")
        if problem:
            return problem
        for side in ("eager", "compiled"):
            rows = (record.get(side) or {}).get("kernels") if isinstance(record.get(side), dict) else None
            if rows is not None and not isinstance(rows, (list, dict)):
                return f"bench.{side}.kernels is {_kind(rows)}, not a list"
    return None


def measured_device(device: Any) -> str:
    """The device a bench record's ``device`` facts name, as every view says it: a GPU by its name, a CPU by
    its model (a CPU's ``device_name`` is only its architecture, ``x86_64``); "" when they name neither."""
    dev = device if isinstance(device, dict) else {}
    if dev.get("device") == "cpu":
        return str(dev.get("cpu_model") or dev.get("device_name") or "")
    return str(dev.get("device_name") or "")  # a GPU record without its name is not named after the host CPU
