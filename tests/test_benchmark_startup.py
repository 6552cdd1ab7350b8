"""benchmarks/startup.py prints the first-frame ratio of the 100k-line bundle against a minimal Textual
app, measured in one run (the figure itself is the benchmark's business, not a test's)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_startup_benchmark_prints_the_bundles_first_frame_ratio():
    proc = subprocess.run([sys.executable, "benchmarks/startup.py", "--first-frame", "--runs", "1"], cwd=str(REPO),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    line = proc.stdout.strip().splitlines()[-1]
    found = re.match(r"first frame of the 100k-line bundle: (\d+\.\d\d)x the minimal Textual app \((\d+) ms vs (\d+) ms", line)
    assert found, proc.stdout
    ratio, ours, minimal = float(found[1]), int(found[2]), int(found[3])
    assert ours > 0 and minimal > 0 and abs(ratio - ours / minimal) < 0.02
    assert "target <= 1.5x" in line
