"""`python -m tapeflow`: the `tapeflow` command."""
import sys

from tapeflow.cli import main

sys.exit(main())
