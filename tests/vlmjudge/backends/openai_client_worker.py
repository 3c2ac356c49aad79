"""Subprocess side of the resume test: an openai-backend client killed (SIGKILL) mid-run."""
import os
import signal
import sys

from openai_stub import STUB_KEY_ENV, make_requests

from vlmjudge.backends.openai import OpenAIJudge


class DyingClient(OpenAIJudge):
    """Killed, with no cleanup, when it starts chunk number `die_at`."""

    def __init__(self, *a, die_at, **kw):
        super().__init__(*a, **kw)
        self.die_at, self.chunks = die_at, 0

    def _generate(self, chunk):
        if self.chunks == self.die_at:
            os.kill(os.getpid(), signal.SIGKILL)
        self.chunks += 1
        return super()._generate(chunk)


if __name__ == "__main__":
    url, cache, die_at, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    client = DyingClient("stub-model", base_url=url, cache=cache, batch_size=3, concurrency=3, die_at=die_at,
                         timeout_s=5.0, backoff_s=0.01, api_key_env=STUB_KEY_ENV)
    client.generate(make_requests(n))
