"""The capture's Inductor entries kept for the bench (capture/compile_cache.py): merged into one shared
folder, never overwriting, never following links; the capture's and the bench's children compile with
the same cache settings (else the bench would never find the capture's graph); the bench says whether
its compile came from that cache. A module built on its device, and built on the CPU where its
__init__ cannot run there."""

from __future__ import annotations

import os
import subprocess
import sys

from kernelscope.bench.wording import compile_cache_note
from kernelscope.capture import compile_cache


def _tree(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_keep_merges_a_captures_caches_without_overwriting_or_following_links(tmp_path):
    work, dest = tmp_path / "work", tmp_path / "common"
    (work / "inductor" / "fxgraph" / "ab").mkdir(parents=True)
    (work / "inductor" / "fxgraph" / "ab" / "entry").write_text("new entry")
    (work / "inductor" / "locks").mkdir()
    (work / "inductor" / "locks" / "x.lock").write_text("")
    (work / "triton" / "HASH").mkdir(parents=True)
    (work / "triton" / "HASH" / "k.cubin").write_bytes(b"\x7fELF")
    secret = tmp_path / "secret.txt"
    secret.write_text("not ours")
    os.symlink(secret, work / "triton" / "HASH" / "link.txt")
    (dest / "inductor" / "fxgraph" / "ab").mkdir(parents=True)
    (dest / "inductor" / "fxgraph" / "ab" / "entry").write_text("old entry")

    copied = compile_cache.keep(work, dest)

    assert copied == 1  # the cubin; the existing entry, the lock and the link are left
    assert _tree(dest) == ["inductor/fxgraph/ab/entry", "triton/HASH/k.cubin"]
    assert (dest / "inductor" / "fxgraph" / "ab" / "entry").read_text() == "old entry"
    assert (dest / "triton" / "HASH" / "k.cubin").read_bytes() == b"\x7fELF"


def test_keep_empties_a_shared_folder_past_its_limit_and_never_raises(tmp_path, monkeypatch):
    work, dest = tmp_path / "work", tmp_path / "common"
    (work / "triton").mkdir(parents=True)
    (work / "triton" / "new").write_text("n")
    (dest / "triton").mkdir(parents=True)
    (dest / "triton" / "old").write_text("x" * 100)
    monkeypatch.setattr(compile_cache, "LIMIT_BYTES", 10)
    assert compile_cache.keep(work, dest) == 1
    assert _tree(dest) == ["triton/new"]
    # a destination that cannot be made (a file where the folder should be): nothing copied, no error
    blocked = tmp_path / "blocked"
    blocked.write_text("a file")
    assert compile_cache.keep(work, blocked) == 0


def test_the_capture_and_the_bench_compile_with_the_same_cache_settings(tmp_path):
    """INDUCTOR_PROVENANCE is part of Inductor's cache key: a bench without it never hits."""
    code = ("import json, os, sys, types; from pathlib import Path; from kernelscope.capture import child; "
            "spec = types.SimpleNamespace(options=types.SimpleNamespace(mode='default')); "
            "child._setup_environment(Path(sys.argv[1]), spec); "
            "print(json.dumps({k: os.environ[k] for k in sorted(os.environ) if k.startswith(('TORCHINDUCTOR', "
            "'TRITON_CACHE', 'INDUCTOR'))}))")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCHINDUCTOR", "TRITON_CACHE", "INDUCTOR"))}
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60,
                          env=env)
    assert proc.returncode == 0, proc.stderr
    import json

    captured = json.loads(proc.stdout)
    assert captured == compile_cache.env(tmp_path)
    assert captured["TORCHINDUCTOR_FX_GRAPH_CACHE"] == "1" and captured["INDUCTOR_PROVENANCE"] == "1"
    assert captured["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "inductor")


def test_the_bench_request_points_at_the_shared_folder(cpu_add_relu, monkeypatch, tmp_path):
    from kernelscope.bench.runner import Bench
    from kernelscope.bundle.io import read_bundle

    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "ks"))
    request = Bench(cpu_add_relu).request(read_bundle(cpu_add_relu), tmp_path / "work", 3)
    assert request["compile_cache"] == str(tmp_path / "ks" / "compile-cache")


def test_the_bench_says_where_its_compile_came_from():
    assert compile_cache_note({"compile_cache": {"hits": 1, "misses": 0}, "capture_compile_s": 19.84}) == \
        ": Inductor's cache held the capture's compiled graph; the capture's compile and first call took 19.8 s"
    assert compile_cache_note({"compile_cache": {"hits": 0, "misses": 2}}) == ": compiled anew"
    assert compile_cache_note({"compile_cache": {"hits": 1, "misses": 1}}) == \
        ": 1 graph from Inductor's cache, 1 compiled anew"
    assert compile_cache_note({"compile_cache": None}) == ""  # an older bench or a torch without counters


def test_a_module_is_built_on_its_device_or_on_the_cpu_when_its_init_cannot_run_there():
    import torch

    from kernelscope.capture.session import build_on

    class Plain(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.register_buffer("pos", torch.arange(4))

    class NeedsHost(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.table = torch.nn.Parameter(torch.from_numpy(torch.arange(4.0).numpy().copy()))

    made = []
    orig = torch.nn.Linear.reset_parameters

    def spy(self):
        made.append(self.weight.device.type)
        return orig(self)

    torch.nn.Linear.reset_parameters = spy
    try:
        plain = build_on(Plain, "meta")
        needs = build_on(NeedsHost, "meta")
    finally:
        torch.nn.Linear.reset_parameters = orig
    assert made[0] == "meta"  # Plain's weights were made on the device, not the host
    assert made[1:] == ["meta", "cpu"]  # NeedsHost failed there (.numpy()), then was built on the CPU
    assert {p.device.type for p in plain.parameters()} | {plain.pos.device.type} == {"meta"}
    assert {p.device.type for p in needs.parameters()} == {"meta"}
