"""The multi-file sample (samples/tiny_gpt: model.py imports blocks.py, 4 repeated blocks), captured
once on CPU under its OPTIONS (no_grad, eval, token ids 0..512): lines in both files, a bundle that
still shows them once moved, per-launch nodes of a repeated kernel, an inference graph, the UI."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from kernelscope.bundle.io import read_bundle

from .conftest import kernelscope_cmd

pytestmark = pytest.mark.slow
BLOCKS = Path(__file__).resolve().parents[1] / "samples" / "tiny_gpt" / "blocks.py"
GELU_LINE = next(i for i, line in enumerate(BLOCKS.read_text().split("\n"), start=1) if "F.gelu(self.up(x))" in line)


@pytest.fixture(scope="session")
def tiny_gpt(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tiny-gpt") / "tiny_gpt"
    proc = kernelscope_cmd("capture", "tiny_gpt", "-o", str(out), "--device", "cpu", "-q")
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="session")
def moved_tiny_gpt(tiny_gpt, tmp_path_factory) -> Path:
    """The capture copied, then moved to another folder (as if opened on a laptop)."""
    copy = tmp_path_factory.mktemp("copy") / "tiny_gpt"
    shutil.copytree(tiny_gpt, copy)
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    return Path(shutil.move(str(copy), str(elsewhere / "moved")))


def test_the_sample_is_listed_and_runs_in_inference_mode(tiny_gpt):
    listed = kernelscope_cmd("samples").stdout
    assert "tiny_gpt" in listed
    b = read_bundle(tiny_gpt)
    assert b.target["inputs"] == ["i64[2, 32]"]
    assert [g.kind for g in b.graphs] == ["inference"]
    assert not [k.name for k in b.kernels if "backward" in k.name]  # no AOT training forward
    assert (b.options["grad_mode"], b.options["train"]) == ("no_grad", "eval")
    shown = kernelscope_cmd("show", str(tiny_gpt)).stdout
    assert "no_grad · eval" in shown


def test_kernels_map_to_lines_in_both_files(tiny_gpt):
    b = read_bundle(tiny_gpt)
    files = {Path(u.file).name for k in b.kernels for u in k.user_lines}
    assert {"model.py", "blocks.py"} <= files
    blocks = (Path(tiny_gpt) / "source" / "blocks.py").read_text()
    gelu = next(k for k in b.kernels if "gelu" in k.name)
    (line,) = [u for u in gelu.user_lines]
    assert "F.gelu(self.up(x))" in blocks.split("\n")[line.line - 1]
    # the call sites above it are kept too: model.py's loop over the blocks
    assert any(Path(f.file).name == "model.py" and "block(x)" in f.code for f in gelu.frames)
    entries = b.source_files()
    assert [e["name"] for e in entries] == ["model.py", "blocks.py"]  # the target's file first
    assert all(not e["path"].startswith("/") and ".." not in e["path"] for e in entries)


def test_a_moved_bundle_still_shows_the_second_files_lines(moved_tiny_gpt):
    proc = kernelscope_cmd("show", str(moved_tiny_gpt))
    assert proc.returncode == 0, proc.stderr
    assert f"line blocks.py:{GELU_LINE}: return self.down(F.gelu(self.up(x)))" in proc.stdout
    b = read_bundle(moved_tiny_gpt)
    entry = next(e for e in b.source_files() if e["name"] == "blocks.py")
    assert "class MLP" in (moved_tiny_gpt / entry["path"]).read_text()


def test_a_repeated_kernel_keeps_each_launchs_nodes(tiny_gpt):
    b = read_bundle(tiny_gpt)
    gelu = next(k for k in b.kernels if "gelu" in k.name)
    assert gelu.launches == 4 == len(gelu.launch_info)  # one definition, one launch per block
    node_lists = [tuple(li.fx_nodes) for li in gelu.launch_info]
    assert all(node_lists) and len(set(node_lists)) == 4  # layer 1's nodes are not layer 3's
    assert len({n for nodes in node_lists for n in nodes}) == sum(map(len, node_lists))
    proc = kernelscope_cmd("show", str(tiny_gpt), "--kernel", gelu.name, "--launches")
    assert "launch 4/4" in proc.stdout and gelu.launch_info[2].fx_nodes[0] in proc.stdout
    data = json.loads(kernelscope_cmd("show", str(tiny_gpt), "--json").stdout)
    assert next(k for k in data["kernels"] if k["name"] == gelu.name)["launches"] == 4


@pytest.mark.parametrize("size", [(160, 48), (80, 24)])
def test_kernel_to_its_line_in_blocks_py_and_back(moved_tiny_gpt, size, tmp_path, monkeypatch):
    from kernelscope.ui.app import make_app
    from kernelscope.ui.widgets.code_view import CodeView
    from kernelscope.ui.widgets.source_files import SourceFiles

    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))

    async def run():
        app = make_app(str(moved_tiny_gpt))
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            screen = app.screen
            gelu = next(k for k in screen.bundle.kernels if "gelu" in k.name)
            screen.select_kernel(gelu)
            await pilot.pause()
            src = screen.query_one("#source", CodeView)
            assert Path(screen.index.source_file).name == "blocks.py"
            assert GELU_LINE - 1 in src.marks  # the gelu line of blocks.py is marked
            files = screen.query_one(SourceFiles)
            assert files.display and "blocks.py" in str(files.get_option_at_index(1).prompt)
            screen.select_kernel(screen.bundle.kernels[0])  # the embedding kernel: lines in model.py too
            await pilot.pause()
            assert Path(screen.index.source_file).name == "blocks.py"  # it has lines here: no switch
            await pilot.press("f")  # the next file with its lines
            await pilot.pause()
            assert Path(screen.index.source_file).name == "model.py"
            assert src.marks and "self.tok(ids)" in " ".join(src.doc.lines[i] for i in src.marks)
            screen.select_kernel(gelu)
            await pilot.pause()
            await pilot.press("2")
            src.move_cursor(GELU_LINE - 1)
            await pilot.press("enter")  # the line, reached from the gelu kernel -> back to the gelu kernel
            await pilot.pause()
            fed = screen.index.kernels_for_source_row(GELU_LINE - 1)
            assert gelu in fed and len(fed) > 1 and screen.kernel is gelu
            if screen.layout_mode != "wide":  # tabs: following showed the Kernel tab; back to the source
                await pilot.press("2")
            await pilot.press("enter")  # enter again steps on to the line's next kernel
            await pilot.pause()
            assert screen.kernel is fed[(fed.index(gelu) + 1) % len(fed)]
            for _ in fed:  # and on, round to the gelu kernel again
                if screen.kernel is gelu:
                    break
                if screen.layout_mode != "wide":
                    await pilot.press("2")
                await pilot.press("enter")
                await pilot.pause()
            assert screen.kernel is gelu

    asyncio.run(run())


def test_following_a_layer_line_names_each_kernel_once_with_its_count(tmp_path, monkeypatch):
    """The MLP line of blocks.py feeds a Triton kernel (one row for its 4 launches) and an extern mm per
    launch (a row each): the toast names each kernel once, with how many rows it has."""
    import asyncio

    from kernelscope.ui.app import make_app

    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))
    shown: list[str] = []

    async def run():
        app = make_app(str(Path(__file__).parent / "fixtures" / "gpu" / "tiny_gpt"))
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            screen = app.screen
            gelu = next(k for k in screen.bundle.kernels if "gelu" in k.name)
            screen.select_kernel(gelu)
            await pilot.pause()
            monkeypatch.setattr(screen, "notify", lambda text, **kw: shown.append(text))
            fed = screen.index.kernels_for_source_row(GELU_LINE - 1)
            screen._follow(("line", GELU_LINE - 1), fed, f"line {GELU_LINE}")
            mm_rows = sum(1 for k in fed if k.name == "extern_kernels.mm")
            assert mm_rows > 1 and screen.kernel is gelu
            assert shown and f"extern_kernels.mm ×{mm_rows}" in shown[-1]
            assert shown[-1].count("extern_kernels.mm") == 1 and gelu.name in shown[-1]

    asyncio.run(run())
