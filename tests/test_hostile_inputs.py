"""Hostile and malformed input (issue 14, items 4-7): bundles that point outside themselves, escape
bytes, Markdown and Rich markup in names, type-mixed and deeply nested manifests, damaged
TORCH_TRACE logs, megabyte tokens, and errors blamed on the right party. Bundles and traces are
built here, from a copy of a small fixture bundle."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from kernelscope.bundle.io import read_bundle
from kernelscope.cli import main

FIXTURE = Path(__file__).parent / "fixtures" / "gpu" / "add_relu"
TARGETS = Path(__file__).parent / "fixtures" / "targets"
KERNEL = "triton_poi_fused_add_relu_0"
SECRET = "kernelscope-secret-outside-the-bundle"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))


def copy_bundle(tmp_path: Path, name: str = "b") -> Path:
    out = tmp_path / name
    shutil.copytree(FIXTURE, out)
    return out


def edit_manifest(bundle: Path, change) -> dict:
    m = json.loads((bundle / "bundle.json").read_text())
    change(m)
    (bundle / "bundle.json").write_text(json.dumps(m))
    return m


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(rc: int, err: str) -> str:
    lines = [line for line in err.split("\n") if line.strip()]
    assert rc == 2, err
    assert len(lines) == 1, err
    assert "internal error" not in err and "Traceback" not in err
    return lines[0]


# -- item 4: bundles stay inside themselves --------------------------------------------------------

@pytest.fixture
def outside(tmp_path) -> Path:
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET + "\n")
    return secret


def _point_kernel_source(bundle: Path, rel: str) -> None:
    edit_manifest(bundle, lambda m: m["kernels"][0].__setitem__("source", rel))


def hostile_bundles(tmp_path: Path, secret: Path) -> dict[str, Path]:
    climbing = copy_bundle(tmp_path, "climbing")
    _point_kernel_source(climbing, "../secret.txt")
    absolute = copy_bundle(tmp_path, "absolute")
    _point_kernel_source(absolute, str(secret))
    linked = copy_bundle(tmp_path, "linked")
    rel = json.loads((linked / "bundle.json").read_text())["kernels"][0]["source"]
    (linked / rel).unlink()
    os.symlink(secret, linked / rel)
    linked_dir = copy_bundle(tmp_path, "linked_dir")  # a folder symlink on the way
    shutil.rmtree(linked_dir / "kernels")
    os.symlink(tmp_path, linked_dir / "kernels")
    _point_kernel_source(linked_dir, "kernels/secret.txt")
    return {"climbing": climbing, "absolute": absolute, "linked": linked, "linked_dir": linked_dir}


@pytest.mark.parametrize("case", ["climbing", "absolute", "linked", "linked_dir"])
def test_paths_outside_the_bundle_are_refused_by_show_report_and_diff(tmp_path, outside, capsys, case):
    bundle = hostile_bundles(tmp_path, outside)[case]
    good = copy_bundle(tmp_path, "good")
    for args in (["show", str(bundle), "--kernel", KERNEL, "--artifact", "source"], ["show", str(bundle)],
                 ["report", str(bundle), "--format", "html"], ["report", str(bundle), "--format", "md"],
                 ["diff", str(good), str(bundle)]):
        rc, out, err = run_cli(capsys, *args)
        line = one_line_error(rc, err)
        assert SECRET not in out
        assert "secret.txt" in line and "refusing" in line, line


def test_paths_outside_the_bundle_are_refused_when_the_ui_loads_it(tmp_path, outside):
    from kernelscope.bundle.io import BundleError
    from kernelscope.ui.app import make_app

    for bundle in hostile_bundles(tmp_path, outside).values():
        with pytest.raises(BundleError, match="secret.txt"):
            make_app(str(bundle))  # what `kernelscope BUNDLE` calls before the explorer opens


def test_symlinks_inside_the_bundle_still_work(tmp_path, capsys):
    bundle = copy_bundle(tmp_path)
    rel = json.loads((bundle / "bundle.json").read_text())["kernels"][0]["source"]
    real = bundle / "kernels" / "moved.py"
    (bundle / rel).rename(real)
    os.symlink(real, bundle / rel)
    rc, out, _ = run_cli(capsys, "show", str(bundle), "--kernel", KERNEL, "--artifact", "source")
    assert rc == 0 and "def triton_poi_fused_add_relu_0" in out


def test_show_artifact_strips_terminal_control_characters(tmp_path, capsys):
    bundle = copy_bundle(tmp_path)
    rel = json.loads((bundle / "bundle.json").read_text())["kernels"][0]["source"]
    (bundle / rel).write_text("x = 1\x1b[2J\x1b]0;pwned\x07\x1b[31m red\x1b[0m\x07\x08\r\ny = 2\n")
    rc, out, _ = run_cli(capsys, "show", str(bundle), "--kernel", KERNEL, "--artifact", "source")
    assert rc == 0
    assert out == "x = 1 red\ny = 2\n"


def test_missing_artifact_file_is_an_error(tmp_path, capsys):
    bundle = copy_bundle(tmp_path)
    rel = json.loads((bundle / "bundle.json").read_text())["kernels"][0]["source"]
    (bundle / rel).unlink()
    rc, out, err = run_cli(capsys, "show", str(bundle), "--kernel", KERNEL, "--artifact", "source")
    assert "cannot read" in one_line_error(rc, err) and out == ""


def test_backticks_in_a_kernel_name_cannot_inject_markdown(tmp_path, capsys):
    bundle = copy_bundle(tmp_path)
    evil = "k``[click](http://evil.example)``"
    edit_manifest(bundle, lambda m: m["kernels"][0].__setitem__("name", evil))
    rc, out, _ = run_cli(capsys, "report", str(bundle), "--format", "md")
    assert rc == 0
    row = next(line for line in out.split("\n") if "evil.example" in line)
    # The name sits in a code span whose fence is longer than any backtick run inside it.
    assert "``` k``[click](http://evil.example)`` ```" in row


def test_rich_markup_in_names_and_breaks_does_not_crash_the_explorer(tmp_path):
    from kernelscope.ui.app import make_app
    from kernelscope.ui.screens.explorer import ExplorerScreen
    from kernelscope.ui.widgets.kernel_table import KernelTable

    markup = "[bold red]x[/bold red][/] [link=http://e]y[/link] [@click=app.quit]z"
    bundle = copy_bundle(tmp_path)

    def change(m):
        m["kernels"][0]["name"] = "triton_" + markup
        m["graph_breaks"] = [{"reason": "break " + markup, "file": "/repo/samples/add_relu.py", "line": 7,
                              "code": markup}]
        m["recompiles"] = [{"compile_id": "0/1", "reason": markup, "file": "/repo/samples/add_relu.py", "line": 7}]

    edit_manifest(bundle, change)

    async def run():
        app = make_app(str(bundle))
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            assert isinstance(app.screen, ExplorerScreen)
            table = app.screen.query_one(KernelTable)
            shown = table.get_row_at(0)[1].plain
            for key in ("4", "6", "down", "enter", "p"):  # kernel pane, breaks, follow a break, pipeline
                await pilot.press(key)
                await pilot.pause()
            return shown, app.is_running

    shown, running = asyncio.run(run())
    # shown as written (long names keep their end), not interpreted as markup
    assert shown.endswith("[@click=app.quit]z"), shown
    assert running


# -- item 5: malformed manifests and traces: one line, exit 2 ---------------------------------------

@pytest.mark.parametrize("case, change, words", [
    ("string kernels", lambda m: m.__setitem__("kernels", "all"), "bundle.kernels should be a list"),
    ("number name", lambda m: m["kernels"][0].__setitem__("name", 5), "bundle.kernels[0].name"),
    ("list graph", lambda m: m["graphs"].__setitem__(0, [1, 2]), "bundle.graphs[0]"),
    ("string launches", lambda m: m["kernels"][0].__setitem__("launches", "1"), "launches"),
    ("bool inputs", lambda m: m["target"].__setitem__("inputs", [True]), "bundle.target.inputs[0]"),
    ("NaN timing", lambda m: m["timings"].__setitem__("collect", float("nan")), "not a finite number"),
    ("string timing", lambda m: m["timings"].__setitem__("collect", "fast"), "bundle.timings.collect"),
    ("version string", lambda m: m.__setitem__("version", "1"), "version '1' is not a positive whole number"),
    ("deep extra", lambda m: m["extra"].__setitem__("x", json.loads("[" * 60 + "]" * 60)), "nests deeper"),
])
def test_malformed_manifests_are_one_line_errors(tmp_path, capsys, case, change, words):
    bundle = copy_bundle(tmp_path)
    edit_manifest(bundle, change)
    good = copy_bundle(tmp_path, "good")
    for args in (["show", str(bundle)], ["report", str(bundle), "--format", "html"], ["diff", str(good), str(bundle)],
                 ["bench", str(bundle), "--counts"]):
        rc, _, err = run_cli(capsys, *args)
        assert words in one_line_error(rc, err)


def test_a_manifest_nested_past_the_parser_is_a_one_line_error(tmp_path, capsys):
    bundle = copy_bundle(tmp_path)
    text = (bundle / "bundle.json").read_text()
    (bundle / "bundle.json").write_text(text[:-2] + ', "extra2": ' + "[" * 200_000 + "]" * 200_000 + "}\n")
    rc, _, err = run_cli(capsys, "show", str(bundle))
    assert "nested too deeply" in one_line_error(rc, err)


TRACE_HEAD = "V0101 00:00:00.000000 1 torch/_logging/structured.py:1] "


@pytest.mark.parametrize("content", [
    b"just some text\nnothing to see\n",
    bytes(range(256)) * 40,
    (TRACE_HEAD + "{not json\n").encode(),
], ids=["text", "binary", "not-json"])
def test_open_on_text_or_binary_says_it_found_no_records(tmp_path, capsys, content):
    (tmp_path / "trace").mkdir()
    (tmp_path / "trace" / "x.log").write_bytes(content)
    rc, _, err = run_cli(capsys, "open", str(tmp_path / "trace"), "--no-ui", "-o", str(tmp_path / "out"))
    assert "found no TORCH_TRACE records" in one_line_error(rc, err)
    assert not (tmp_path / "out").exists()


def test_open_on_malformed_envelopes_keeps_what_it_can(tmp_path, capsys):
    trace = tmp_path / "trace"
    trace.mkdir()
    records = [
        {"dynamo_start": 5, "frame_id": 0, "frame_compile_id": 0, "attempt": 0},
        {"artifact": "not-an-object", "frame_id": 0},
        {"str": ["file.py", "x"]},
        {"compilation_metrics": {"co_firstlineno": "ten"}, "frame_id": "zero"},
        {"dynamo_start": {"stack": [{"line": 3, "name": "f", "filename": 1}]}, "frame_id": 0,
         "frame_compile_id": 0, "attempt": 0},
    ]
    (trace / "t.log").write_text("".join(TRACE_HEAD + json.dumps(r) + "\n" for r in records))
    rc, _, err = run_cli(capsys, "open", str(trace), "--no-ui", "-o", str(tmp_path / "out"))
    assert rc == 0, err
    notes = read_bundle(tmp_path / "out").notes
    assert any("4 malformed TORCH_TRACE record(s) left out" in n for n in notes), notes


def test_only_malformed_envelopes_is_a_one_line_error(tmp_path, capsys):
    (tmp_path / "t.log").write_text(TRACE_HEAD + json.dumps({"frame_id": [1], "dynamo_start": {}}) + "\n")
    rc, _, err = run_cli(capsys, "open", str(tmp_path / "t.log"), "--no-ui", "-o", str(tmp_path / "out"))
    line = one_line_error(rc, err)
    assert "found no TORCH_TRACE records" in line and "frame_id is not a whole number" in line


def test_an_unwritable_out_path_is_a_one_line_error(tmp_path, capsys):
    (tmp_path / "t.log").write_text(TRACE_HEAD + json.dumps({"dynamo_start": {"stack": []}, "frame_id": 0,
                                                             "frame_compile_id": 0}) + "\n")
    afile = tmp_path / "afile"
    afile.write_text("x")
    for out in (afile, afile / "below"):
        rc, _, err = run_cli(capsys, "open", str(tmp_path / "t.log"), "--no-ui", "-o", str(out))
        assert "afile" in one_line_error(rc, err)
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        try:
            rc, _, err = run_cli(capsys, "open", str(tmp_path / "t.log"), "--no-ui", "-o", str(ro / "out"))
            assert "cannot write a bundle" in one_line_error(rc, err)
        finally:
            ro.chmod(0o700)


# -- item 6: size limits and linear text transforms ------------------------------------------------

def _timed_diff(tmp_path: Path, capsys, size: int, tag: str) -> tuple[float, str]:
    a = copy_bundle(tmp_path, f"a{tag}")
    b = copy_bundle(tmp_path, f"b{tag}")
    rel = json.loads((b / "bundle.json").read_text())["kernels"][0]["source"]
    (b / rel).write_text((b / rel).read_text() + "# " + "x/" * (size // 2) + "\n")
    t = time.perf_counter()
    rc, out, err = run_cli(capsys, "diff", str(a), str(b))
    assert rc == 0, err
    return time.perf_counter() - t, out


@pytest.mark.timeout(60)
def test_a_megabyte_token_diffs_in_linear_time_and_is_shown_cut(tmp_path, capsys):
    small, _ = _timed_diff(tmp_path, capsys, 250_000, "s")
    big, out = _timed_diff(tmp_path, capsys, 1_000_000, "b")
    # Quadratic regexes took minutes here; linear ones take a second or less on a loaded machine.
    assert big < 5.0
    assert big < 8 * small + 0.5  # four times the input: about four times the time, not sixteen
    assert "chars cut)" in out and len(out) < 50_000


def test_normalise_is_linear_on_long_tokens():
    from kernelscope.report.normalise import normalise_text

    for token in ("a" * 1_000_000, "/torchinductor_" * 70_000, "/c" + "a" * 51 + "/" * 1_000_000):
        t = time.perf_counter()
        normalise_text(token)
        assert time.perf_counter() - t < 5.0


def test_a_huge_one_line_source_is_cut_in_the_html_report(tmp_path, capsys):
    bundle = copy_bundle(tmp_path)
    rel = json.loads((bundle / "bundle.json").read_text())["kernels"][0]["source"]
    (bundle / rel).write_text("x = '" + "a" * 20_000_000 + "'\n")
    t = time.perf_counter()
    rc, out, err = run_cli(capsys, "report", str(bundle), "--format", "html")
    assert rc == 0, err
    assert time.perf_counter() - t < 20
    assert "chars cut)" in out and len(out) < 1_000_000


def test_logs_kept_in_a_bundle_are_capped_with_a_note(tmp_path):
    from kernelscope.capture.collect import MAX_LOG_BYTES, copy_capped

    src = tmp_path / "stdout.txt"
    src.write_bytes(b"A" * MAX_LOG_BYTES + b"B" * (3 << 20))
    dst = tmp_path / "kept.txt"
    cut = copy_capped(src, dst)
    data = dst.read_bytes()
    assert cut == 3 << 20
    assert len(data) < MAX_LOG_BYTES + 200
    assert data.startswith(b"AAAA") and data.endswith(b"BBBB")
    assert f"{cut} bytes cut here".encode() in data


# -- item 7: blame ---------------------------------------------------------------------------------

def test_a_bad_options_dict_is_named_not_blamed_on_the_function(capsys):
    rc, _, err = run_cli(capsys, "capture", f"{TARGETS / 'bad_options.py'}::add", "--args", "f32[8]", "-o", "/nonexistent/x")
    line = one_line_error(rc, err)
    assert "OPTIONS['mode'] is 'fastest'" in line and "your function" not in line


def test_version_as_a_string_is_not_called_newer(tmp_path, capsys):
    bundle = copy_bundle(tmp_path)
    edit_manifest(bundle, lambda m: m.__setitem__("version", "1"))
    rc, _, err = run_cli(capsys, "show", str(bundle))
    line = one_line_error(rc, err)
    assert "newer" not in line and "'1'" in line


@pytest.mark.slow
def test_inputs_too_big_and_sys_exit_are_blamed_right(tmp_path):
    from tests.conftest import kernelscope_cmd

    target = f"{TARGETS / 'hostile.py'}::exits"
    big = kernelscope_cmd("capture", target, "--args", "f32[99999999999]", "--device", "cpu", "-q",
                          "-o", str(tmp_path / "big"))
    assert big.returncode == 2, big.stderr
    assert "inputs need 400.0 GB: f32[99999999999]" in big.stderr and "your function" not in big.stderr
    assert not (tmp_path / "big").exists()

    done = kernelscope_cmd("capture", target, "--args", "f32[8]", "--device", "cpu", "-q", "-o", str(tmp_path / "exit"))
    assert done.returncode == 2, done.stderr
    assert "your function called sys.exit(0) (at hostile.py:7)" in done.stderr
    assert "internal error" not in done.stderr


def test_a_bad_kernelscope_device_is_named_in_one_line(tmp_path):
    """KERNELSCOPE_DEVICE=tpu (an environment a user forgot) is a usage error naming the variable,
    exit 2, never an internal error; nothing is written."""
    from tests.conftest import kernelscope_cmd

    proc = kernelscope_cmd("capture", "add_relu", "-o", str(tmp_path / "b"), "-q", env={"KERNELSCOPE_DEVICE": "tpu"})
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("kernelscope: KERNELSCOPE_DEVICE='tpu' is not a device: set it to cuda or cpu, "
                                   "or unset it")
    assert not (tmp_path / "b").exists()
