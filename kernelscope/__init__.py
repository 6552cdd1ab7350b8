"""kernelscope: see what torch.compile did to your function, from FX graph to SASS."""

__version__ = "0.1.0"
