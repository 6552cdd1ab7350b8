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
  # Asked for by its local version (+cpu), so that no index or wheel folder can hand over the multi-GB
  # CUDA build instead: the CPU index first, then whatever pip is configured with (a --find-links folder
  # or a mirror that carries the CPU wheel). macOS wheels are CPU builds without the +cpu label.
  TORCH="torch==2.13.0+cpu"
  [ "$(uname -s)" = Darwin ] && TORCH="torch==2.13.0"
  echo "kernelscope setup: installing the CPU build of torch 2.13 ($TORCH)" >&2
  LOG=.venv/torch-install.log
  if ! "$VPY" -m pip install -q --timeout 15 --retries 1 --index-url https://download.pytorch.org/whl/cpu \
         --extra-index-url https://pypi.org/simple "$TORCH" >"$LOG" 2>&1 \
     && ! "$VPY" -m pip install -q "$TORCH" >>"$LOG" 2>&1; then
    echo "kernelscope setup: no CPU build of torch 2.13 ($TORCH) found, neither on the CPU index" \
         "https://download.pytorch.org/whl/cpu nor where pip looks by default; put the wheel in a folder and set" \
         "PIP_FIND_LINKS=FOLDER, or install torch into python3 first (pip's output: $LOG)" >&2
    exit 1
  fi
fi
"$VPY" -m pip install -q -e ".[dev,serve]"
"$VPY" -c "import torch, textual; print(f'kernelscope setup: torch {torch.__version__}, textual {textual.__version__}')"
