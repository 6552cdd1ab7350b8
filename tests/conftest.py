"""Shared fixtures: bundles built from the real H200 reference artifacts, and real CPU captures.

All are session-scoped: building from the reference is pure Python (well under a second each); a
CPU capture runs a real torch.compile (about 20-30 s on a 2-core machine). Under pytest-xdist
(``make test`` runs two workers) each capture is made once per run, not once per worker: the first
worker to ask builds it in the run's common temp folder while the others wait, then all read it
(``built_once``). Tests that change a shared bundle copy it first.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock

# A suite started under nohup inherits SIGHUP ignored, and one started in the background by a shell without
# job control (`make test &` in a script) SIGINT, and so would every kernelscope it starts: the hangup and
# Ctrl-C tests (tests/test_hostile_*.py, test_run.py) need the defaults a terminal session has.
if hasattr(signal, "SIGHUP") and signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# One folder for Inductor's precompiled C++ header (5-20 s of g++) for every capture and bench the tests run,
# though most run with a cache folder of their own (kernelscope/capture/compile_cache.py): the user's.
if not os.environ.get("KERNELSCOPE_PRECOMPILED_HEADERS"):
    from kernelscope.capture import compile_cache as _compile_cache

    os.environ["KERNELSCOPE_PRECOMPILED_HEADERS"] = str(_compile_cache.folder() / "precompiled_headers")

# Which vector instructions Inductor's C++ may use: it finds out by building and loading a probe library for
# each candidate (torch 2.13: cpu_vec_isa.valid_vec_isa_list, six g++ builds and a torch import in a child,
# 5-7 s) in its cache folder, and every capture, run and bench here has a fresh one, so each paid it again.
# With TORCHINDUCTOR_VEC_ISA_OK=1 (Inductor's own switch) the CPU's flags alone decide: the same instruction
# set, the same kernels (checked: add_relu's output code is byte for byte the same; a capture 18.7 -> 13.5 s).
# Set it to the empty string to run the probes.
os.environ.setdefault("TORCHINDUCTOR_VEC_ISA_OK", "1")

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "tests" / "fixtures" / "reference"  # trimmed H200 reference captures (see its README)
REF_CASES = ("add_relu", "mul_add_sigmoid", "linear_relu", "linear_relu_autotune", "linear_relu_bf16_autotune",
             "softmax", "layernorm", "sin_cos", "with_break", "mlp_train")
GPU_FIXTURES = REPO / "tests" / "fixtures" / "gpu"


def rewrite_kernel_rows(bundle: Path, change: Callable[[list[list], list[str]], None]) -> None:
    """A format-5 bundle's kernel rows changed by ``change(rows, fields)`` (a forged bundle): the kernel file
    written again and the manifest's byte ranges into it moved to match."""
    import json

    m = json.loads((bundle / "bundle.json").read_text())
    rows = [json.loads(line) for line in (bundle / "kernel_index.jsonl").read_text().splitlines()]
    change(rows, m["kernel_fields"])
    texts = [json.dumps(r) + "\n" for r in rows]
    offset = 0
    for g in m["graphs"]:
        r = g["kernel_rows"]
        r["offset"] = offset
        r["length"] = sum(len(t.encode("utf-8")) for t in texts[r["first"]:r["first"] + r["count"]])
        offset += r["length"]
    (bundle / "kernel_index.jsonl").write_text("".join(texts), encoding="utf-8")
    (bundle / "bundle.json").write_text(json.dumps(m))


def kernelscope_cmd(*args: str, timeout: float = 600, env: dict | None = None, cwd: str | None = None):
    """Run the CLI as a user would, in a fresh process."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "kernelscope", *args], capture_output=True, text=True,
                          timeout=timeout, env=full_env, cwd=cwd or str(REPO))


def built_once(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """The folder ``name``, filled by ``build`` once per test run. Without xdist that is this process;
    with it, the first worker to get the lock builds it in the run's temp folder (the parent of every
    worker's own), marks it done, and the others find it there. A build that fails leaves no mark:
    the next worker to ask tries again (and fails with its own message)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        folder = tmp_path_factory.mktemp(name)
        build(folder)
        return folder
    shared = tmp_path_factory.getbasetemp().parent / "built-once"
    shared.mkdir(exist_ok=True)
    folder, done = shared / name, shared / f"{name}.done"
    with FileLock(str(shared / f"{name}.lock")):
        if not done.exists():
            folder.mkdir(exist_ok=True)
            build(folder)
            done.touch()
    return folder


@pytest.fixture(scope="session")
def ref_bundles(tmp_path_factory) -> dict[str, Path]:
    """Bundles built from tests/fixtures/reference (real H200 TORCH_TRACE logs + Triton caches)."""
    from kernelscope.ingest.open_trace import bundle_from_trace

    root = tmp_path_factory.mktemp("ref-bundles")
    out = {}
    for case in REF_CASES:
        src = REFERENCE / case
        out[case] = root / case
        bundle_from_trace(src / "trace", out[case], triton_cache=src / "triton", stderr_log=src / "torch_logs.txt")
    return out


def _capture_into(out: Path, *args: str) -> None:
    """A capture whose cache folder (KERNELSCOPE_CACHE) is ``out``'s sibling ``cache``: the Inductor entries
    it keeps for the benches that follow are there, for ``seeded_cache``."""
    proc = kernelscope_cmd("capture", *args, "-o", str(out), "-q", env={"KERNELSCOPE_CACHE": str(out.parent / "cache")})
    assert proc.returncode == 0, proc.stderr


def seeded_cache(capture: Path, cache: Path) -> Path:
    """``cache``, a cache folder for a bench of ``capture`` (made by ``_capture_into``) holding the Inductor
    entries that capture kept, as a user's cache holds them after a capture: the bench loads the captured
    graph instead of compiling it again (about 20 s of a CPU bench here). What the bench prints and stores
    is the same either way: test_bench_cpu_figures pins a bench on its capture's entries as a user has it,
    and the benches of test_fusion_reasons and the sweeps of test_bench_cpu still compile anew."""
    from kernelscope.capture import compile_cache

    compile_cache.keep(capture.parent / "cache" / "compile-cache", cache / "compile-cache")
    return cache


@pytest.fixture(scope="session")
def cpu_add_relu(tmp_path_factory) -> Path:
    """A real `kernelscope capture add_relu --device cpu`, shared by every test that reads it."""
    return built_once(tmp_path_factory, "cpu-add_relu",
                      lambda root: _capture_into(root / "add_relu", "add_relu", "--device", "cpu")) / "add_relu"


def _preview_checked_or_skip() -> None:
    from kernelscope.capture import preview_patches

    if not preview_patches.torch_checked():
        pytest.skip(f"--preview was checked against torch {', '.join(preview_patches.CHECKED_TORCH)}, "
                    f"not {preview_patches.version_line()}")


# Every sample a preview can make on a CPU build: mlp_train is a training step (refused, see test_preview).
PREVIEW_SAMPLES = ("add_relu", "mul_add_sigmoid", "softmax", "layer_norm", "sin_cos", "graph_break", "linear_relu",
                   "attention", "tiny_gpt")
PREVIEW_ARCHES = ("sm_90", "sm_80")


@pytest.fixture(scope="session")
def previews(tmp_path_factory) -> dict[tuple[str, str], Path]:
    """`kernelscope capture SAMPLE --preview ARCH` of every sample for sm_90 and sm_80 on this CPU
    machine, two at a time: {(sample, arch): bundle}."""
    _preview_checked_or_skip()
    root = built_once(tmp_path_factory, "preview", _make_previews)
    return {(sample, arch): root / arch / sample for arch in PREVIEW_ARCHES for sample in PREVIEW_SAMPLES}


def _make_previews(root: Path) -> None:
    jobs = [(sample, arch) for arch in PREVIEW_ARCHES for sample in PREVIEW_SAMPLES]
    running, failed = [], []
    while jobs or running:
        while jobs and len(running) < 2:
            sample, arch = jobs.pop(0)
            cmd = [sys.executable, "-m", "kernelscope", "capture", sample, "--preview", arch, "-o",
                   str(root / arch / sample), "-q"]
            running.append(((sample, arch), subprocess.Popen(cmd, cwd=str(REPO), stdout=subprocess.PIPE,
                                                             stderr=subprocess.PIPE, text=True)))
        key, proc = running.pop(0)
        _, err = proc.communicate(timeout=600)
        if proc.returncode != 0:
            failed.append(f"{key}: {err.strip()}")
    assert not failed, failed


@pytest.fixture(scope="session")
def preview_sm90(previews) -> dict[str, Path]:
    return {sample: path for (sample, arch), path in previews.items() if arch == "sm_90"}


@pytest.fixture(scope="session")
def cpu_dynamic_softmax(tmp_path_factory) -> Path:
    """A real `--dynamic` capture of softmax with three calls of different row counts."""
    return built_once(tmp_path_factory, "cpu-softmax_dynamic", lambda root: _capture_into(
        root / "softmax_dynamic", "softmax", "--device", "cpu", "--dynamic",
        "--args", "f32[64, 1024]; f32[128, 1024]; f32[256, 1024]")) / "softmax_dynamic"


@pytest.fixture(scope="session")
def cpu_recompile_softmax(tmp_path_factory) -> Path:
    """A real capture whose second call changes a static shape: one recompile, one failed guard."""
    return built_once(tmp_path_factory, "cpu-softmax_recompile", lambda root: _capture_into(
        root / "softmax_recompile", "softmax", "--device", "cpu", "--no-dynamic",
        "--args", "f32[8, 16]; f32[16, 16]")) / "softmax_recompile"


# The fixtures that run a real compile (those above, and those of one test file: a capture, a program run,
# a bench that runs a bundle's output code) or start a child that imports torch: a test that asks for one
# is slow, marked here so that `-m "not slow"` (make test-fast, the stock-Textual pass) never waits on a
# compile or a torch import it did not name. Found by running `-m "not slow"` with CXX=/bin/false (a test
# that still compiles fails there) and with a sitecustomize that logs PYTEST_CURRENT_TEST in every
# process that imports torch; tests that start such a child themselves are marked slow by hand.
COMPILING_FIXTURES = frozenset({"cpu_add_relu", "previews", "preview_sm90", "cpu_dynamic_softmax",
                                "cpu_recompile_softmax", "cpu_bench", "opened_cpu_bench", "rbm_capture",
                                "rbm_benched", "tiny_gpt", "moved_tiny_gpt", "cpu_trace", "graphs_run",
                                "cancelled_mid_run", "fullgraph_break"})


@pytest.hookimpl(tryfirst=True)  # before -m "not slow" deselects
def pytest_collection_modifyitems(config, items):
    for item in items:
        if COMPILING_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")  # after -m: the tests that will run
def pytest_collection_modifyitems_order(config, items):
    # make test hands whole files to its workers in this order (--dist loadfile --no-loadscope-reorder): the
    # files that compile most go first, then those with most tests (make test-fast: test_ui_newcomer's minute
    # started last, alphabetically), so that no long file starts last while the other worker idles.
    slow_in_file: dict[str, int] = {}
    tests_in_file: dict[str, int] = {}
    for item in items:
        file = item.nodeid.split("::")[0]
        slow_in_file[file] = slow_in_file.get(file, 0) + (item.get_closest_marker("slow") is not None)
        tests_in_file[file] = tests_in_file.get(file, 0) + 1
    items.sort(key=lambda item: (-slow_in_file[item.nodeid.split("::")[0]],
                                 -tests_in_file[item.nodeid.split("::")[0]]))  # stable: in-file order is kept


# A full disk shows up as hundreds of setup errors whose cause a CI log cuts off: say the free space first,
# and stop at once, in one line, where there is less than a run uses (a clean-clone `make test` on the 2-core
# box: 1.0 GB more in use at its peak than when it began, a passing test's tmp_path removed as it ends).
NEEDS_FREE_BYTES = 1 << 30


def _free_bytes() -> tuple[str, int]:
    import shutil
    import tempfile

    where = os.environ.get("PYTEST_DEBUG_TEMPROOT") or tempfile.gettempdir()
    return where, shutil.disk_usage(where).free


def pytest_report_header(config):
    where, free = _free_bytes()
    return f"kernelscope tests: {free / (1 << 30):.1f} GiB free in {where} (they need about 1)"


def pytest_sessionstart(session):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    where, free = _free_bytes()
    if free < NEEDS_FREE_BYTES:
        pytest.exit(f"only {free / (1 << 30):.1f} GiB free in {where}: the tests need about 1; free some space "
                    f"(or point TMPDIR elsewhere) and run them again", returncode=3)
