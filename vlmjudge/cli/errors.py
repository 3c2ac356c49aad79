"""The one usage error of the command line, in a module of its own: intake, preflight and the
exit logic all raise it, and none of them should import another just for it."""
from __future__ import annotations


class CommandError(SystemExit):
    """A usage problem a person fixes (a bad --model, a missing file): one line, exit status 2.

    A SystemExit, so a method's own entry point that does not catch it still prints one line.

    Examples:
        >>> str(CommandError("no such model folder: ./models/qwen"))
        'no such model folder: ./models/qwen'
        >>> CommandError("bad --model").code
        'vlmjudge: error: bad --model'
    """

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(f"vlmjudge: error: {message}")

    def __str__(self) -> str:
        return self.message
