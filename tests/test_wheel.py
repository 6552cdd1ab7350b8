"""A built wheel is a working install: it ships every kernelscope package and the samples, and a user
who pip-installs it can list the samples and capture one (nothing read from the checkout)."""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from .conftest import REPO

SKIP = shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", "tests",
                              "kernelscope-captures", "benchmarks", ".scratch", "out")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The wheel, pip-installed into a fresh venv that sees this interpreter's torch (as scripts/setup.sh
    does: a .pth line per outer site-packages folder) but not the checkout's kernelscope."""
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"  # build from a copy: the build writes build/ and *.egg-info beside the sources
    shutil.copytree(REPO, src, ignore=SKIP)
    run = dict(capture_output=True, text=True, timeout=600)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            str(src), "-w", str(root / "dist")], cwd=root, **run)
    assert built.returncode == 0, built.stderr
    [wheel] = (root / "dist").glob("kernelscope-*.whl")
    target = root / "target"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                          str(wheel)], cwd=root, **run)
    assert pip.returncode == 0, pip.stderr
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, **run)
    python = venv / "bin" / "python"
    inner = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                           check=True, **run).stdout.strip()
    # Every site-packages folder this interpreter reads (its own, and those its .pth lines add: torch's
    # dependencies may live in either), never the checkout.
    outer = [sysconfig.get_paths()["purelib"], *site.getsitepackages(),
             *(p for p in sys.path if Path(p).name in ("site-packages", "dist-packages"))]
    # A path line adds the folder only: its .pth files (the checkout's editable finder) are not run.
    Path(inner, "_outer_site.pth").write_text("\n".join(dict.fromkeys(outer)) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KERNELSCOPE_SAMPLES")}
    env["PYTHONPATH"] = str(target)
    home = root / "home"  # a user's folder, outside the checkout
    home.mkdir()

    def kernelscope(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run([str(python), "-m", "kernelscope", *args], capture_output=True, text=True,
                              timeout=timeout, env=env, cwd=home)

    where = subprocess.run([str(python), "-c", "import kernelscope; print(kernelscope.__file__)"], env=env,
                           cwd=home, **run)
    assert where.returncode == 0, where.stderr
    return {"wheel": wheel, "target": target, "kernelscope": kernelscope, "home": home,
            "module": Path(where.stdout.strip())}


@pytest.mark.slow
def test_wheel_ships_every_package_and_the_samples(installed):
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    modules = {p.relative_to(REPO).as_posix() for p in (REPO / "kernelscope").rglob("*.py")}
    assert sorted(modules - names) == []  # pyproject lists the packages by hand: none left out
    samples = {f"kernelscope/samples/{p.name}" for p in (REPO / "samples").glob("*.py")}
    assert len(samples) >= 9 and samples <= names
    assert "kernelscope/ui/app.tcss" in names


@pytest.mark.slow
def test_installed_wheel_lists_the_samples_and_captures_one(installed):
    assert installed["module"].is_relative_to(installed["target"])  # the wheel's kernelscope, not the checkout's
    listed = installed["kernelscope"]("samples")
    assert listed.returncode == 0, listed.stderr
    assert any(line.startswith("add_relu ") for line in listed.stdout.split("\n"))
    out = installed["home"] / "add_relu"
    cap = installed["kernelscope"]("capture", "add_relu", "-o", str(out), "--device", "cpu", "-q")
    assert cap.returncode == 0, cap.stderr
    shown = installed["kernelscope"]("show", str(out))
    assert shown.returncode == 0 and "cpp_fused_add_relu_0" in shown.stdout, shown.stderr
