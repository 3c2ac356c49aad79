"""`python -m vlmjudge.serve ...`: the same as `vlmjudge serve ...`."""
import sys

from vlmjudge.serve.cli import main

sys.exit(main())
