"""Which bundles this machine wrote (bundle/provenance.py): a bundle's own word (origin, host) never lets
its code run unasked; the record kept in the cache at write time does, for that code byte for byte."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest

from kernelscope.bench import bundle_plan
from kernelscope.bundle import provenance
from kernelscope.bundle.io import read_bundle
from tests.conftest import GPU_FIXTURES, kernelscope_cmd


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))


def _claims_here(tmp_path: Path, canary: Path | None = None) -> Path:
    """A GPU fixture made to say it was `run` on this host, with no function to rerun."""
    b = tmp_path / "b"
    shutil.copytree(GPU_FIXTURES / "add_relu", b)
    m = json.loads((b / "bundle.json").read_text())
    m["target"] = {"spec": "python train.py", "kind": "command", "origin": "run", "file": "", "name": "",
                   "host": socket.gethostname(), "command": ["python", "train.py"]}
    m["environment"]["host"] = socket.gethostname()
    (b / "bundle.json").write_text(json.dumps(m))
    if canary is not None:
        code = b / m["graphs"][0]["files"]["output_code"]
        code.write_text(f"open({str(canary)!r}, 'w').write('ran')\n" + code.read_text())
    return b


def test_a_bundles_claim_of_origin_and_host_proves_nothing(tmp_path):
    bundle = read_bundle(_claims_here(tmp_path))
    assert not bundle_plan.written_here(bundle)
    assert bundle_plan.consent_question(bundle).endswith("y/n")  # the UI asks


def test_the_record_kept_at_write_time_is_for_that_code_only(tmp_path):
    b = _claims_here(tmp_path)
    assert provenance.remember(read_bundle(b))
    assert bundle_plan.written_here(read_bundle(b))
    assert bundle_plan.consent_question(read_bundle(b)) == ""
    # a bench record stored in the manifest afterwards keeps it ours
    m = json.loads((b / "bundle.json").read_text())
    m.setdefault("notes", []).append("benched")
    (b / "bundle.json").write_text(json.dumps(m))
    assert bundle_plan.written_here(read_bundle(b))
    # one byte of its code changed: someone's
    fx = b / m["graphs"][0]["files"]["fx-aot"]
    fx.write_text(fx.read_text() + " ")
    assert not bundle_plan.written_here(read_bundle(b))


def test_a_copy_moved_elsewhere_is_still_ours_and_another_users_cache_is_not(tmp_path, monkeypatch):
    b = _claims_here(tmp_path)
    provenance.remember(read_bundle(b))
    moved = tmp_path / "elsewhere" / "b"
    shutil.copytree(b, moved)
    assert bundle_plan.written_here(read_bundle(moved))
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "other-cache"))
    assert not bundle_plan.written_here(read_bundle(moved))


def test_bench_of_a_bundle_claiming_to_be_made_here_asks_and_runs_nothing(tmp_path):
    canary = tmp_path / "RAN"
    b = _claims_here(tmp_path, canary)
    proc = kernelscope_cmd("bench", str(b), "-q", env={"KERNELSCOPE_CACHE": str(tmp_path / "cache")}, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--run-bundle-code" in lines[0] and "output_code.py" in lines[0]
    assert not canary.exists()
