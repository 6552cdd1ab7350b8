#!/usr/bin/env bash
# Set up kernelscope in ./.venv. Idempotent: a second run only re-checks.
# - A machine whose python3 already has torch (a GPU box with CUDA torch): the venv sees that
#   interpreter's packages, so its torch and triton are used as they are, never replaced.
# - A fresh CPU machine: installs the CPU build of torch (never the multi-GB CUDA one).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
  # Let the venv see the outer interpreter's packages (works when that interpreter is itself a venv,
  # where --system-site-packages would not): one .pth line per site-packages folder.
  outer=$("$PY" -c 'import site, sys; print("\n".join(p for p in site.getsitepackages() + [site.getusersitepackages()] if p))')
  inner=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  printf '%s\n' "$outer" > "$inner/_kernelscope_outer_site.pth"
fi
VPY=.venv/bin/python
if ! "$VPY" -c "import torch" 2>/dev/null; then
  echo "kernelscope setup: installing the CPU build of torch 2.13" >&2
  "$VPY" -m pip install -q --timeout 15 --retries 1 --index-url https://download.pytorch.org/whl/cpu \
      --extra-index-url https://pypi.org/simple "torch==2.13.0" \
    || "$VPY" -m pip install -q "torch==2.13.0"
fi
"$VPY" -m pip install -q -e ".[dev,serve]"
"$VPY" -c "import torch, textual; print(f'kernelscope setup: torch {torch.__version__}, textual {textual.__version__}')"
