"""``kernelscope export BUNDLE --trace FILE``: a Chrome trace that Perfetto and chrome://tracing open. Each
compile id of a rank is a named track holding the compile and its phases (the bundle's durations, laid
out one after another and saying so); a bench's compiled call is a device track of its launches in
order, by name, with their measured times, lines and bytes; an existing file is kept without --force;
bad input is one line and exit status 2. Bundles: the H200 GPT-2 training trace opened as `open` does,
and tests/fixtures/gpu bundles with a bench record stored as `kernelscope bench` stores it."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pytest

from kernelscope import __version__
from kernelscope.bench.counts import count_bundle
from kernelscope.bench.record import build_record, store
from kernelscope.bundle.io import read_bundle, save_manifest
from kernelscope.cli import main

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def gpt2_train(tmp_path_factory) -> Path:
    """The GPT-2 training run's TORCH_TRACE (real H200 data, 5 compiles) opened into a bundle: no bench."""
    from kernelscope.report.opener import open_trace

    root = tmp_path_factory.mktemp("gpt2_train")
    (root / "trace").mkdir()
    (root / "trace" / "trace.log").write_bytes(
        gzip.decompress((FIXTURES / "gpu_train_gpt2" / "trace.log.gz").read_bytes()))
    open_trace(root / "trace", root / "bundle")
    return root / "bundle"


def bench(bundle_dir: Path, calls: int = 4) -> None:
    """Store a bench record in ``bundle_dir`` as `kernelscope bench` does (bench/record.py), from a profile
    of ``calls`` compiled calls where launch i ran one device kernel (a Triton kernel under its own name,
    a library call as a GEMM) of 1 + i + 0.5 * call µs."""
    bundle = read_bundle(bundle_dir)
    _, compiled = count_bundle(bundle)
    named = {k.name for k in bundle.kernels if k.lang in ("triton", "cpp")}
    n = len(compiled.launches)
    seq = [[x.name if x.name in named else "sm90_xmma_gemm_bf16bf16_bf16f32", 1.0 + i + 0.5 * c, c * n + i]
           for c in range(calls) for i, x in enumerate(compiled.launches)]
    side = {"e2e": {"median_us": 900.0, "p10_us": 880.0, "p90_us": 950.0, "runs": 100}, "loop": {},
            "profile_calls": calls, "host_launches": {}, "sequence": seq}
    raw = {"device": {"device": "cuda", "device_name": "NVIDIA H200"}, "versions": {},
           "ceilings": {"copy": {"gbps": 4000.0, "method": "copy", "measured_at": "x"}},
           "run": {"inputs": [], "compile_s": 1.0, "correctness": {}, "rotation": {}, "eager": side, "compiled": side,
                   "grad_mode": "grad", "eval": False, "holds_modules": True}}
    store(bundle_dir, build_record(bundle, {"device": "cuda"}, raw))


@pytest.fixture(scope="module")
def gpt2_older(gpt2_train, tmp_path_factory) -> Path:
    """The same bundle as a kernelscope that kept no spans wrote it: phase totals only."""
    out = tmp_path_factory.mktemp("gpt2_older") / "bundle"
    shutil.copytree(gpt2_train, out)
    bundle = read_bundle(out)
    for c in bundle.section("compile_time")["compiles"]:
        c.pop("spans", None)
    save_manifest(bundle, out)
    return out


@pytest.fixture(scope="module")
def gpt2_benched(gpt2_train, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gpt2_benched") / "bundle"
    shutil.copytree(gpt2_train, out)
    bench(out)
    return out


@pytest.fixture(scope="module")
def tiny_gpt_benched(tmp_path_factory) -> Path:
    """tiny_gpt (a GPU capture: no compile times) with a bench record."""
    out = tmp_path_factory.mktemp("tiny_gpt") / "tiny_gpt"
    shutil.copytree(FIXTURES / "gpu" / "tiny_gpt", out)
    bench(out)
    return out


def export(capsys, bundle: Path, out: Path, *more: str) -> tuple[int, str]:
    capsys.readouterr()
    rc = main(["export", str(bundle), "--trace", str(out), *more])
    return rc, capsys.readouterr().err


def exported(capsys, bundle: Path, out: Path) -> dict:
    rc, err = export(capsys, bundle, out)
    assert rc == 0, err
    return json.loads(out.read_text())


def timed(doc: dict, **match) -> list[dict]:
    return [e for e in doc["traceEvents"] if e["ph"] == "X" and all(e.get(k) == v for k, v in match.items())]


def named(doc: dict, kind: str) -> dict[tuple[int, int], str]:
    return {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == kind}


# ------------------------------------------------------------------------- the file


def test_the_trace_is_json_with_numeric_times_and_says_what_made_it(capsys, gpt2_benched, tmp_path):
    doc = exported(capsys, gpt2_benched, tmp_path / "trace.json")
    assert doc["displayTimeUnit"] == "ms"
    assert doc["otherData"]["bundle"] == str(gpt2_benched) and doc["otherData"]["kernelscope"] == __version__
    events = timed(doc)
    assert len(events) > 80
    for e in events:
        assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float)), e
        assert e["ts"] >= 0 and e["dur"] >= 0, e
        assert e["name"] and e["cat"] and isinstance(e["pid"], int) and isinstance(e["tid"], int)
        # no start time passes for a measured one: torch's recorded times, or laid out and saying so
        assert "laid out" in e["args"]["timing"] or "as torch recorded them" in e["args"]["timing"]


# ------------------------------------------------------------------------- compile phases


def test_each_compile_id_is_a_track_of_its_phases_with_the_bundles_durations(capsys, gpt2_older, tmp_path):
    doc = exported(capsys, gpt2_older, tmp_path / "trace.json")
    compiles = read_bundle(gpt2_older).section("compile_time")["compiles"]
    assert [c["compile_id"] for c in compiles] == ["0/0", "1/0", "2/0", "3/0", "4/0"]
    threads = named(doc, "thread_name")
    end = 0.0
    for c in compiles:
        [frame] = [e for e in timed(doc, cat="compile") if e["args"]["compile_id"] == c["compile_id"]]
        assert threads[(0, frame["tid"])] == frame["name"]
        assert frame["name"].startswith(f"compile {c['compile_id']} {c['function']} (")
        assert frame["dur"] == pytest.approx(c["total_s"] * 1e6, abs=5)
        assert frame["ts"] == pytest.approx(end)  # one after another, in the order they began
        end = frame["ts"] + frame["dur"]
        phases = timed(doc, cat="compile phase", tid=frame["tid"])
        assert [(p["name"], p["dur"]) for p in phases] == [(name, round(s * 1e6, 3)) for name, s in c["phases"].items()]
        t = frame["ts"]
        for p in phases:  # back to back inside the compile
            assert p["ts"] == pytest.approx(t)
            t += p["dur"]
        assert t <= frame["ts"] + frame["dur"] + 1e-6
    forward = timed(doc, cat="compile phase", name="C++/Triton compile")
    kernels = forward[0]["args"]["kernels"]  # compile 1/0's Triton kernels, slowest first
    assert list(kernels.values()) == sorted(kernels.values(), reverse=True) and len(kernels) == 10


def test_one_process_per_rank_named_for_it(capsys, gpt2_older, tmp_path):
    doc = exported(capsys, gpt2_older, tmp_path / "one.json")
    assert named(doc, "process_name") == {(0, 0): "rank 0: compiles"}  # a job with no ranks: rank 0
    assert {e["pid"] for e in timed(doc)} == {0}
    two = tmp_path / "two_ranks"
    shutil.copytree(gpt2_older, two)
    bundle = read_bundle(two)
    bundle.environment["ranks"] = [3]  # `open --rank 3` of a job
    bundle.section("compile_time")["compiles"][1]["compile_id"] = "rank5/1/0"  # a bundle holding two ranks
    save_manifest(bundle, two)
    doc = exported(capsys, two, tmp_path / "two.json")
    assert named(doc, "process_name") == {(3, 0): "rank 3: compiles", (5, 0): "rank 5: compiles"}
    [moved] = [e for e in timed(doc, cat="compile") if e["pid"] == 5]
    assert moved["name"].startswith("compile 1/0 forward") and moved["ts"] == 0  # rank 5's own clock


# ------------------------------------------------------------------------- the device track


def test_the_device_track_is_the_bench_launches_in_order_with_their_times(capsys, gpt2_benched, tmp_path):
    doc = exported(capsys, gpt2_benched, tmp_path / "trace.json")
    bundle = read_bundle(gpt2_benched)
    rows = bundle.extra["bench"]["run"]["per_kernel"]
    assert len(rows) == 88 and all(r["us"] for r in rows)
    assert named(doc, "process_name")[(1, 0)] == "device: NVIDIA H200 (bench)"  # after rank 0
    assert named(doc, "thread_name")[(1, 1)] == "one compiled call: 88 launches"
    launches = timed(doc, pid=1)
    assert [(e["name"], e["dur"]) for e in launches] == [(r["name"], round(r["us"], 3)) for r in rows]
    t = 0.0
    for e in launches:
        assert e["ts"] == pytest.approx(t) and e["cat"] == "launch"
        t += e["dur"]
    kernels = {k.id: k for k in bundle.kernels}
    for e, row in zip(launches, rows):
        k = kernels[row["kernel_id"]]
        info = k.launch_info[e["args"]["launch"]] if e["args"]["launch"] < len(k.launch_info) else None
        lines = info.user_lines if info and info.user_lines else k.user_lines
        library = info.library_lines if info and info.library_lines else k.library_lines
        assert e["args"]["lines"] == [f"{u.file}:{u.line}" for u in lines]
        assert e["args"].get("library_lines", []) == [f"{u.file}:{u.line}" for u in library]
        assert (e["args"].get("bytes_read"), e["args"].get("bytes_written")) == (row["bytes_read"], row["bytes_written"])
        assert e["args"].get("pct_copy") == row["pct_copy"]
    fused = next(e for e in launches if e["name"].startswith("triton_"))
    assert fused["args"]["pct_copy"] is not None and "4000.0 GB/s" in fused["args"]["pct_copy_of"]
    # a training job's kernels come from transformers' lines: library lines, none of the user's own
    assert launches[0]["args"]["library_lines"] == [
        "/opt/torch/.venv/lib/python3.12/site-packages/transformers/models/gpt2/modeling_gpt2.py:573"]


def test_a_bench_without_compile_times_still_exports_its_launches(capsys, tiny_gpt_benched, tmp_path):
    out = tmp_path / "tiny.json"
    rc, err = export(capsys, tiny_gpt_benched, out)
    rows = read_bundle(tiny_gpt_benched).extra["bench"]["run"]["per_kernel"]
    assert rc == 0
    assert err == (f"wrote {len(rows)} events (no compile times, {len(rows)} launches of one compiled call) to {out}; "
                   "open it in ui.perfetto.dev or chrome://tracing\n")
    doc = json.loads(out.read_text())
    assert named(doc, "process_name") == {(0, 0): "device: NVIDIA H200 (bench)"}
    assert [e["name"] for e in timed(doc)] == [r["name"] for r in rows]
    kernel = next(e for e in timed(doc) if e["name"] == "triton_poi_fused_addmm_gelu_view_2")
    assert "/repo/samples/tiny_gpt/blocks.py:" in kernel["args"]["lines"][0]


def test_a_launch_the_bench_did_not_time_is_a_mark_without_a_duration(capsys, tiny_gpt_benched, tmp_path):
    bundle_dir = tmp_path / "tiny_gpt"
    shutil.copytree(tiny_gpt_benched, bundle_dir)
    bundle = read_bundle(bundle_dir)
    rows = bundle.extra["bench"]["run"]["per_kernel"]
    rows[1]["us"] = None  # as bench stores a launch no device kernel matched
    save_manifest(bundle, bundle_dir)
    out = tmp_path / "t.json"
    rc, err = export(capsys, bundle_dir, out)
    assert rc == 0 and f"{len(rows) - 1} launches of one compiled call, 1 not timed, marked without a duration" in err
    doc = json.loads(out.read_text())
    marks = [e for e in doc["traceEvents"] if e["ph"] == "i"]
    assert [m["name"] for m in marks] == [rows[1]["name"]] and "dur" not in marks[0]
    assert marks[0]["args"]["timing"].startswith("not timed: ") and marks[0]["ts"] == round(rows[0]["us"], 3)
    assert doc["otherData"]["untimed_launches"] == 1


def test_compile_times_without_a_bench_say_so(capsys, gpt2_train, tmp_path):
    out = tmp_path / "t.json"
    rc, err = export(capsys, gpt2_train, out)
    assert rc == 0 and err.startswith("wrote 130 events (compile phases of 5 frames, no bench) to ")


# ------------------------------------------------------------------------- refusals


def test_an_existing_file_is_kept_unless_force(capsys, gpt2_train, tmp_path):
    out = tmp_path / "trace.json"
    out.write_text("mine")
    rc, err = export(capsys, gpt2_train, out)
    assert rc == 2 and err == f"kernelscope: {out} exists; pass --force to replace it\n"
    assert out.read_text() == "mine"
    rc, err = export(capsys, gpt2_train, out, "--force")
    assert rc == 0 and json.loads(out.read_text())["traceEvents"]
    link = tmp_path / "link.json"
    os.symlink(tmp_path / "elsewhere.json", link)  # a dangling link: refused, its target never made
    rc, err = export(capsys, gpt2_train, link)
    assert rc == 2 and "exists; pass --force" in err and not (tmp_path / "elsewhere.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "trace.json"]  # no temporaries left


@pytest.mark.parametrize("case", ["no bundle", "neither", "untimed bench", "folder", "manifest", "no folder"])
def test_bad_input_is_one_line_and_status_2(capsys, gpt2_train, tmp_path, case):
    bundle, out = gpt2_train, tmp_path / "trace.json"
    if case == "no bundle":
        bundle = tmp_path / "nope"
    elif case == "neither":
        bundle = FIXTURES / "gpu" / "add_relu"  # a capture from before compile times, never benched
    elif case == "untimed bench":
        bundle = tmp_path / "softmax_bench_cpu"  # benched on a CPU: none of its GPU launches matched
        shutil.copytree(FIXTURES / "gpu" / "softmax_bench_cpu", bundle)
    elif case == "folder":
        out = tmp_path
    elif case == "manifest":
        out = gpt2_train / "bundle.json"
    else:
        out = tmp_path / "missing" / "trace.json"
    before = (gpt2_train / "bundle.json").read_bytes()
    rc, err = export(capsys, bundle, out, "--force")
    assert rc == 2 and err.startswith("kernelscope: ") and err.count("\n") == 1, err
    expected = {"no bundle": "no such bundle folder",
                "neither": "nothing to export: no compile times (chromium_event phases) and no bench record",
                "untimed bench": "and no launch times in its bench (1 launch: ",
                "folder": "is a folder; give --trace a file name", "manifest": "the bundle's own manifest",
                "no folder": "no such folder for --trace"}[case]
    assert expected in err
    assert not (tmp_path / "trace.json").exists() and (gpt2_train / "bundle.json").read_bytes() == before


def test_compiles_are_placed_where_torch_recorded_them_under_torchs_names(capsys, gpt2_train, tmp_path):
    doc = exported(capsys, gpt2_train, tmp_path / "t.json")
    compiles = read_bundle(gpt2_train).section("compile_time")["compiles"]
    t0 = min(b for c in compiles for _, b, _ in c["spans"])
    for c in compiles:
        [frame] = [e for e in timed(doc, cat="compile") if e["args"]["compile_id"] == c["compile_id"]]
        spans = timed(doc, cat="compile phase", tid=frame["tid"])
        assert [(e["name"], e["ts"], e["dur"]) for e in spans] == [
            (name, round(b - t0, 3), round(e - b, 3)) for name, b, e in c["spans"]]
        assert all(frame["ts"] <= e["ts"] and e["ts"] + e["dur"] <= frame["ts"] + frame["dur"] + 1e-6 for e in spans)
    names = {e["name"] for e in timed(doc, cat="compile phase")}
    assert {"dynamo", "entire_frame_compile", "inductor_compile"} <= names  # as torch names them


def test_a_torchrun_jobs_ranks_are_processes_on_one_clock(capsys, tmp_path):
    from kernelscope.report.opener import open_trace

    trace = tmp_path / "trace"
    trace.mkdir()
    for gz in (FIXTURES / "traces" / "ddp_gloo_cpu").glob("*.log.gz"):
        (trace / gz.name[:-3]).write_bytes(gzip.decompress(gz.read_bytes()))
    open_trace(trace, tmp_path / "bundle")
    doc = exported(capsys, tmp_path / "bundle", tmp_path / "t.json")
    assert named(doc, "process_name") == {(0, 0): "rank 0: compiles", (1, 0): "rank 1: compiles"}
    frames = {(e["pid"], e["name"].split(" (")[0]) for e in timed(doc, cat="compile")}
    assert frames == {(0, "compile 0/0 forward"), (1, "compile 0/0 forward"), (1, "compile 1/0 rank_only")}
    starts = [e["ts"] for e in timed(doc, cat="compile") if e["name"].startswith("compile 0/0")]
    assert min(starts) == 0 and max(starts) < 5e6  # both ranks started compiling within seconds of each other
