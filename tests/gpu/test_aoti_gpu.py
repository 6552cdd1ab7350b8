"""`run` of a script that packages a model with AOTInductor on the GPU: its Triton kernels, read from the C++
wrapper, listed with their FX nodes and lines, and their Triton stages (PTX) from the run's Triton cache.
Checked by hand on an H100 (torch 2.11): 5 kernels, PTX for sm_90a."""

from __future__ import annotations

import sys
from pathlib import Path

from kernelscope.bundle.io import read_bundle

from ..conftest import kernelscope_cmd

SCRIPT = '''import os, tempfile, torch
class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)
    def forward(self, x):
        h = torch.relu(self.fc1(x))
        return torch.sigmoid(self.fc2(h)) * 2.0 + x.sum(dim=1, keepdim=True)
ep = torch.export.export(Mlp().cuda(), (torch.randn(4, 16, device="cuda"),))
torch._inductor.aoti_compile_and_package(ep, package_path=os.path.join(tempfile.mkdtemp(), "mlp.pt2"))
'''


def test_run_of_an_aoti_gpu_script_lists_triton_kernels_with_lines_and_stages(tmp_path):
    script = tmp_path / "aoti_gpu.py"
    script.write_text(SCRIPT)
    out = tmp_path / "out"
    proc = kernelscope_cmd("run", "--no-ui", "-o", str(out), "--", sys.executable, str(script), cwd=str(tmp_path),
                           env={"KERNELSCOPE_CACHE": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr[-2000:]
    b = read_bundle(out)
    assert [g.id for g in b.graphs] == ["aoti-inference"]
    k = b.kernel("triton_per_fused_sum_1")
    assert k.fx_nodes == ["sum_1"] and [(Path(u.file).name, u.line) for u in k.user_lines] == [("aoti_gpu.py", 9)]
    assert sum(1 for kk in b.kernels if kk.lang == "triton") == 3
    ptx = kernelscope_cmd("show", str(out), "--kernel", "triton_per_fused_sum_1", "--artifact", "ptx").stdout
    assert ".target sm_" in ptx, ptx[:500]
