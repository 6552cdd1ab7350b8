"""Loaded by every Python process that ``kernelscope run`` starts (this folder is first on its
PYTHONPATH): installs the graph counter of ``_kernelscope_run_hook`` when the run's settings are in
the environment, then runs the ``sitecustomize`` this one shadows, so the program starts as it
would without kernelscope. Standard library only; never raises."""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))

if os.environ.get("KERNELSCOPE_RUN_HOOK"):
    try:
        sys.path.insert(0, _HERE)
        try:
            import _kernelscope_run_hook

            _kernelscope_run_hook.install(os.environ["KERNELSCOPE_RUN_HOOK"])
        finally:
            sys.path.remove(_HERE)
    except Exception:  # the program runs exactly as without the hook; the parent counts trace records then
        pass


def _chain_shadowed_sitecustomize() -> None:
    import importlib.machinery
    import importlib.util

    others = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


try:
    _chain_shadowed_sitecustomize()
except Exception as _err:  # said as Python says it for its own sitecustomize, never swallowed
    if sys.flags.verbose:
        sys.excepthook(*sys.exc_info())
    else:
        print("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n"
              f"{type(_err).__name__}: {_err}", file=sys.stderr)
