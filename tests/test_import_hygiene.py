"""The parent process never imports torch or triton: the CLI, show, the capture runner, the ingest."""

import subprocess
import sys

import pytest


@pytest.mark.parametrize("module", ["kernelscope.cli", "kernelscope.show", "kernelscope.capture.runner",
                                    "kernelscope.ingest.open_trace", "kernelscope.bundle"])
def test_module_does_not_import_torch(module):
    code = (f"import sys, {module}\n"
            "heavy = [m for m in ('torch', 'triton') if m in sys.modules]\n"
            "print(','.join(heavy) or 'clean')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "clean", out.stderr


def test_cli_help_and_show_run_without_torch(tmp_path):
    code = ("import sys, runpy\n"
            "sys.argv = ['kernelscope', 'samples']\n"
            "try:\n    runpy.run_module('kernelscope', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip().endswith("False") and "add_relu" in out.stdout
