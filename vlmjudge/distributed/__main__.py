"""`python -m vlmjudge.distributed METHOD --input DIR --output FILE --model M` (see cli.py)."""
from vlmjudge.distributed.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
