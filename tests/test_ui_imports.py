"""The UI process never imports torch or triton: opening a bundle must stay fast and crash-proof."""

from __future__ import annotations

import subprocess
import sys


def test_ui_modules_do_not_import_torch_or_triton():
    code = (
        "import sys\n"
        "import kernelscope.ui.app, kernelscope.ui.serve, kernelscope.ui.commands\n"
        "import kernelscope.ui.screens.explorer, kernelscope.ui.screens.gallery, kernelscope.ui.screens.capture\n"
        "import kernelscope.ui.screens.options, kernelscope.ui.screens.editor, kernelscope.ui.screens.tools\n"
        "import kernelscope.capture.runner\n"
        "app = kernelscope.ui.app.make_app()\n"
        "heavy = sorted(m for m in ('torch', 'triton') if m in sys.modules)\n"
        "print('HEAVY:' + ','.join(heavy))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY:\n" in proc.stdout, f"the UI imported {proc.stdout.strip()}"
