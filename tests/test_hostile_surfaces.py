"""Every surface against hostile input (first tried in issue 22): escape sequences from each entry point,
loaders that check types, depth, file kinds and sizes, serve's log, a replace killed half way, full disks,
SIGTERM, the user's leftover processes, received bundles and the environment. Fast: no compile
(scripts/hostile_run.py runs the slow ones against the real CLI)."""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kernelscope.bundle.io import BundleError, check_out, read_bundle, read_text, save_manifest
from kernelscope.cli import main
from kernelscope.textsafe import one_line, printable

REPO = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).parent / "fixtures" / "gpu" / "add_relu"
BENCHED = Path(__file__).parent / "fixtures" / "gpu" / "softmax_bench_cpu"
TRACE = Path(__file__).parent / "fixtures" / "traces" / "mlp_train_cpu"
# Every kind of sequence a terminal acts on: OSC title, OSC 52 clipboard, OSC 8 link, CSI, 8-bit CSI/OSC.
EVIL = "\x1b]0;PWN\x07\x1b]52;c;cHdubmVk\x07\x1b]8;;http://e.example\x1b\\l\x1b]8;;\x1b\\\x1b[2J\x9b31m\x9d0;t\x07"
RAW = ("\x1b", "\x07", "\x9b", "\x9d")


def _raw(text: str) -> list[str]:
    return [c for c in RAW if c in text]


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))


def _copy(tmp_path: Path, src: Path = FIXTURE, name: str = "b") -> Path:
    out = tmp_path / name
    shutil.copytree(src, out, symlinks=True)
    return out


def _edit(b: Path, change) -> Path:
    m = json.loads((b / "bundle.json").read_text())
    change(m)
    (b / "bundle.json").write_text(json.dumps(m))
    return b


def _cli(*argv: str, env: dict | None = None, cwd: str | None = None, timeout: float = 60, **kw):
    return subprocess.run([sys.executable, "-m", "kernelscope", *argv], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})}, cwd=cwd, **kw)


# -- 1. one sanitiser ----------------------------------------------------------------------------------

def test_printable_removes_every_escape_kind_and_keeps_the_words():
    assert _raw(printable(EVIL + "kernel")) == []
    assert printable(EVIL + "kernel").endswith("lkernel")  # the link's text stays, its target goes
    assert printable("a\tb\nc\r\n") == "a\tb\nc\n"
    assert one_line("one\ntwo\x1b[31m three") == "one two three"


def test_symlink_target_with_escapes_is_printed_clean(tmp_path, capsys):
    b = _copy(tmp_path)
    outside = tmp_path / ("out" + EVIL.replace("/", "") + "side")  # a file name holds no slash
    outside.mkdir()
    (outside / "k.py").write_text("x = 1\n")
    rel = json.loads((b / "bundle.json").read_text())["kernels"][0]["source"]
    (b / rel).unlink()
    (b / rel).symlink_to(outside / "k.py")
    for argv in (["show", str(b)], ["report", str(b), "--format", "md"], ["report", str(b), "--format", "html"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "symlink" in err and _raw(err) == [], argv


def test_forged_event_lines_are_cleaned_where_they_enter():
    from kernelscope.capture.spec import decode_event

    event = decode_event(json.dumps({"phase": "error" + EVIL, "message": EVIL + "boom", "kind": "user"}))
    assert event["phase"] == "errorl" and _raw(event["message"]) == [] and event["message"].endswith("boom")
    assert decode_event("[" * 100_000) is None  # nested past the parser: dropped, not a crash


def test_talk_title_and_note_reach_the_audience_clean(tmp_path):
    from kernelscope.ui.talk import load_talk

    _copy(tmp_path)
    (tmp_path / "t.json").write_text(json.dumps({"title": EVIL + "T", "step": [
        {"bundle": "b", "title": EVIL + "s", "note": "line one\n" + EVIL + "two", "kernel": EVIL}]}))
    talk = load_talk(tmp_path / "t.json")
    step = talk.steps[0]
    assert _raw(talk.title + step.title + step.note + step.kernel) == []
    assert step.note.startswith("line one\n") and step.note.endswith("two")  # a note keeps its lines


def test_import_time_exception_is_one_clean_line():
    pytest.importorskip("torch")
    from kernelscope.capture.failures import CaptureFailure

    failure = CaptureFailure("target", f"importing t.py raised RuntimeError: {EVIL}PWN\nsecond line")
    assert _raw(str(failure)) == [] and "\n" not in failure.message and "PWN" in failure.message


# -- 2. loaders ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("script, words", [
    ({"step": [{"bundle": "b\0x"}]}, "null byte"),
    ('{"step": ' + "[" * 3000 + "]" * 3000 + "}", "nested too deeply"),
])
def test_talk_loader_one_line(tmp_path, script, words):
    from kernelscope.ui.talk import TalkError, load_talk

    _copy(tmp_path)
    (tmp_path / "t.json").write_text(script if isinstance(script, str) else json.dumps(script))
    with pytest.raises(TalkError, match=words):
        load_talk(tmp_path / "t.json")


def test_talk_toml_nested_deep_and_a_fifo(tmp_path):
    from kernelscope.ui.talk import TalkError, load_talk

    (tmp_path / "t.toml").write_text("a = " + "[" * 3000 + "]" * 3000 + "\n")
    with pytest.raises(TalkError, match="nested too deeply"):
        load_talk(tmp_path / "t.toml")
    os.mkfifo(tmp_path / "f.toml")
    with pytest.raises(TalkError, match="FIFO"):
        load_talk(tmp_path / "f.toml")


def test_a_fifo_in_a_bundle_is_refused_at_once(tmp_path, capsys):
    b = _copy(tmp_path)
    rel = json.loads((b / "bundle.json").read_text())["kernels"][0]["source"]
    (b / rel).unlink()
    os.mkfifo(b / rel)
    t = time.monotonic()
    for argv in (["show", str(b), "--kernel", "triton_poi_fused_add_relu_0", "--artifact", "source"],
                 ["report", str(b), "--format", "html"]):
        assert main(argv) == 2
        assert "not a regular file" in capsys.readouterr().err
    assert time.monotonic() - t < 10  # refused, not blocked waiting for a writer


def test_a_fifo_as_the_manifest(tmp_path):
    b = _copy(tmp_path)
    (b / "bundle.json").unlink()
    os.mkfifo(b / "bundle.json")
    with pytest.raises(BundleError, match="FIFO"):
        read_bundle(b)


BENCH_VARIANTS = [
    ("run", "x"), ("run.device", "b"), ("run.eager", [1]), ("run.eager.e2e", "s"), ("run.eager.e2e.median_us", [1]),
    ("run.eager.kernels", "k"), ("run.compiled.kernels", [5]), ("run.per_kernel", {"a": 1}),
    ("run.per_kernel.0.us", "fast"), ("run.counts", [1]), ("run.compiled.launches_per_call", []),
]


@pytest.mark.parametrize("path, value", BENCH_VARIANTS, ids=[p for p, _ in BENCH_VARIANTS])
def test_a_damaged_bench_record_is_left_out_with_a_note(tmp_path, capsys, path, value):
    def change(m):
        node = m["extra"]["bench"]
        keys = path.split(".")
        for k in keys[:-1]:
            node = node[int(k)] if isinstance(node, list) else node[k]
        node[keys[-1]] = value

    b = _edit(_copy(tmp_path, BENCHED), change)
    bundle = read_bundle(b)
    assert "bench" not in bundle.extra
    assert any("bench record" in n and "damaged" in n for n in bundle.notes)
    assert main(["report", str(b), "--format", "md"]) == 0
    assert main(["diff", str(BENCHED), str(b)]) == 0
    assert "internal error" not in capsys.readouterr().err


def test_the_benched_fixture_keeps_its_record():
    bundle = read_bundle(BENCHED)
    assert bundle.extra["bench"]["run"]["device"]["device"] == "cpu"
    assert not any("damaged" in n for n in bundle.notes)


@pytest.mark.parametrize("change, words", [
    (lambda m: m.__setitem__("graphs", []), "not one of the bundle's 0 graph"),
    (lambda m: [k.__setitem__("graph", "nope") for k in m["kernels"]], "names graph 'nope'"),
])
def test_a_kernel_naming_a_missing_graph_is_one_line(tmp_path, change, words):
    b = _edit(_copy(tmp_path), change)
    with pytest.raises(BundleError, match=words):
        read_bundle(b)


def test_trace_lines_over_the_cap_stream_past(tmp_path):
    import io

    from kernelscope.ingest.tracelog import bounded_lines

    data = b"short\n" + b"x" * 5000 + b"\nafter\n" + b"y" * 3000
    assert list(bounded_lines(io.BytesIO(data), limit=1000)) == ["short\n", "after\n"]


# -- 3. serve's log ---------------------------------------------------------------------------------------

def test_serve_logs_nothing_per_request_and_redacts_the_token_in_its_debug_log(tmp_path):
    pytest.importorskip("aiohttp")
    from kernelscope.ui.serve import quiet_logging

    token = "s3cr3t-token-value"
    quiet_logging(token, None)
    access = logging.getLogger("aiohttp.access")
    assert access.handlers == [] and not access.propagate and not access.isEnabledFor(logging.CRITICAL)
    log = tmp_path / "serve.log"
    quiet_logging(token, str(log))
    access.info('"GET /?token=%s HTTP/1.1" 200 "http://x/?token=%s"', token, "other-one")
    for h in access.handlers:
        h.flush()
    text = log.read_text()
    assert "GET /?token=<token>" in text and token not in text and "other-one" not in text
    assert oct(log.stat().st_mode & 0o777) == "0o600"
    quiet_logging(token, None)


# -- 4. replace, full disks ----------------------------------------------------------------------------------

KILL_MID_REPLACE = textwrap.dedent("""
    import os, sys
    from kernelscope.bundle import io
    calls = [0]
    real = os.replace
    def dying(a, b):
        calls[0] += 1
        if calls[0] == int(sys.argv[3]):
            os._exit(9)  # as SIGKILL would, between two renames
        real(a, b)
    os.replace = dying
    io.commit_staging_dir(sys.argv[1], sys.argv[2], replace=True)
""")


@pytest.mark.parametrize("when", [1, 2, 3, 5, 7])
def test_a_replace_killed_between_renames_is_restored_at_the_next_start(tmp_path, when):
    old = _copy(tmp_path, FIXTURE, "B")
    new = _copy(tmp_path, BENCHED, ".kernelscope-tmp-B-p999999-abc")
    old_manifest = (old / "bundle.json").read_bytes()
    proc = subprocess.run([sys.executable, "-c", KILL_MID_REPLACE, str(new), str(old), str(when)],
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=60)
    assert proc.returncode in (0, 9), proc.stderr
    bundle = read_bundle(old)  # the next start: the old bundle whole again, or the new one whole
    manifest = (old / "bundle.json").read_bytes()
    assert manifest in (old_manifest, (BENCHED / "bundle.json").read_bytes())
    for relpath in [k.source for k in bundle.kernels]:
        assert read_text(bundle, relpath, required=True)
    check_out(old, replace=True)  # what the next `--force` does first: the old pieces are gone then
    assert not list(tmp_path.glob(".kernelscope-tmp-old-*"))


def test_a_full_disk_on_the_manifest_is_one_line_and_leaves_no_tmp(tmp_path, monkeypatch):
    b = _copy(tmp_path)
    bundle = read_bundle(b)
    before = (b / "bundle.json").read_bytes()

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(BundleError, match="no space left on the device"):
        save_manifest(bundle, b)
    assert not (b / "bundle.json.tmp").exists() and (b / "bundle.json").read_bytes() == before


def test_write_atomic_keeps_the_old_file_on_a_full_disk(tmp_path, monkeypatch):
    from kernelscope.safefile import FileProblem, write_atomic

    target = tmp_path / "r.html"
    target.write_text("old report")

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(FileProblem, match="no space left"):
        write_atomic(target, "new report")
    assert target.read_text() == "old report" and [p.name for p in tmp_path.iterdir()] == ["r.html"]


# -- 5. signals and leftover processes -------------------------------------------------------------------

SIGTERM_CLEANS = textwrap.dedent("""
    import os, shutil, sys, tempfile, time
    from kernelscope.capture.lifeline import end_by_signal, install_parent_signal_handlers
    install_parent_signal_handlers()
    work = tempfile.mkdtemp(dir=sys.argv[1])
    try:
        try:
            print("ready", flush=True)
            time.sleep(60)
        finally:
            shutil.rmtree(work)
    except KeyboardInterrupt:
        pass
    finally:
        end_by_signal()
""")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_unwind_like_ctrl_c(tmp_path, sig):
    proc = subprocess.Popen([sys.executable, "-c", SIGTERM_CLEANS, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(sig)
    assert proc.wait(timeout=30) == -sig  # ended by the signal, as its sender expects ...
    assert list(tmp_path.iterdir()) == []  # ... after the finally blocks ran


DAEMONS = textwrap.dedent("""
    import os, time
    if os.fork() == 0:
        time.sleep(120); os._exit(0)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(120); os._exit(0)
        os._exit(0)
    time.sleep(0.5)
""")


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_what_the_users_code_started_is_gone_after_the_job(tmp_path):
    from kernelscope.capture.lifeline import JOB_MARKER, kill_job_leftovers, processes_marked

    marker = f"test-{os.getpid()}"
    proc = subprocess.Popen([sys.executable, "-c", DAEMONS], env={**os.environ, JOB_MARKER: marker},
                            start_new_session=True)
    proc.wait(timeout=30)
    assert len(processes_marked(marker)) == 2  # a forked child and a daemon in its own session
    kill_job_leftovers(proc, marker)
    deadline = time.time() + 10
    while processes_marked(marker) and time.time() < deadline:
        time.sleep(0.1)
    assert processes_marked(marker) == []


# -- 6. received bundles -----------------------------------------------------------------------------------

def test_bench_never_runs_a_received_bundles_source_unasked(tmp_path):
    from kernelscope.bench.runner import BenchError, _target_request

    b = _edit(_copy(tmp_path), lambda m: m["target"].__setitem__("file", str(tmp_path / "gone.py")))
    bundle = read_bundle(b)
    with pytest.raises(BenchError, match="--run-bundled-source") as info:
        _target_request(bundle)
    assert str(b / "source" / "add_relu.py") in str(info.value)
    assert _target_request(bundle, run_bundled_source=True)["target"]["file"] == str(b / "source" / "add_relu.py")


# -- 7. the environment ----------------------------------------------------------------------------------

def test_one_cache_setting_for_every_command(tmp_path, monkeypatch):
    from kernelscope.bench.runner import ceilings_cache_path
    from kernelscope.pipeline.compile import cache_root as pipeline_cache
    from kernelscope.report.opener import cache_root as opened_cache
    from kernelscope.ui.paths import cache_dir

    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "c"))
    assert opened_cache() == tmp_path / "c" / "opened"
    assert ceilings_cache_path() == tmp_path / "c" / "ceilings.json"
    assert pipeline_cache() == tmp_path / "c" and cache_dir() == tmp_path / "c"


def test_a_deleted_working_folder_is_named(tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    proc = subprocess.run(["sh", "-c", f"cd {gone} && rmdir {gone} && exec {sys.executable} -m kernelscope "
                           f"capture add_relu -q"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 2 and "current folder no longer exists" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("redirect, words", [(">/dev/full", "no space left"), (">&-", "closed")])
def test_stdout_full_or_closed_is_one_line(redirect, words):
    proc = subprocess.run(["sh", "-c", f"exec {sys.executable} -m kernelscope show {FIXTURE} {redirect}"],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 2 and words in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_tmpdir_with_a_quote_is_named_before_compiling(tmp_path):
    bad = tmp_path / "it's"
    bad.mkdir()
    proc = _cli("capture", "add_relu", "-q", "-o", str(tmp_path / "out"), env={"TMPDIR": str(bad)})
    assert proc.returncode == 2 and "TMPDIR" in proc.stderr and not (tmp_path / "out").exists()
