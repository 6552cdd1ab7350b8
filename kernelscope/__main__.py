"""`python -m kernelscope` runs the CLI."""

from kernelscope.cli import main

raise SystemExit(main())
