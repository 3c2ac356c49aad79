"""`python -m vlmjudge.cli`: the `vlmjudge` command without its console script."""
import sys

from . import main

sys.exit(main())
