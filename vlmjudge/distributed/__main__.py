"""`python -m vlmjudge.distributed METHOD --input DIR --output FILE --model M`: the command lives with
the others in `vlmjudge.cli.distributed`; this entry point only runs it."""
from vlmjudge.cli.distributed import main

if __name__ == "__main__":
    raise SystemExit(main())
