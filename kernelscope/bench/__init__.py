"""Rerun a capture: eager vs compiled, kernel by kernel, against the device's measured ceilings.

``counts`` (pure) counts kernels, array-sized transfers and bytes from a bundle's graphs;
``runner`` spawns ``child`` (the only part that imports torch) and stores results in the bundle.
"""
