"""The capture bundle: a plain, versioned folder of JSON and text. No torch, no textual."""

from kernelscope.bundle.io import BundleError, read_bundle, read_text
from kernelscope.bundle.model import Bundle, Graph, Kernel

__all__ = ["Bundle", "BundleError", "Graph", "Kernel", "read_bundle", "read_text"]
