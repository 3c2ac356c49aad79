"""The openai backend's client threads and connections: one pool of request threads per judge,
kept across calls; one connection pool per thread, closed when its thread has ended; a call made
from one of the judge's own threads runs inline instead of waiting on the pool it occupies."""
import threading

from openai_stub import chat_stub, make_requests, stub_client

from vlmjudge.backends.openai.threads import POOL_MARK, POOL_PREFIX
from vlmjudge.backends.openai.transport import BoundedTransport, bounded_http_client


def _judge_threads(judge):
    """The living request threads of `judge` (other judges' threads, still alive in this process, aside)."""
    return {t.ident for t in threading.enumerate()
            if getattr(t, POOL_MARK, None) is not None and getattr(t, POOL_MARK)() is judge._pool}


def test_calls_reuse_the_judge_s_request_threads(monkeypatch):
    with chat_stub(monkeypatch, delay_s=0.0) as (server, url):
        judge = stub_client(url, concurrency=4)
        first = judge.generate(make_requests(8))
        threads = _judge_threads(judge)
        second = judge.generate(make_requests(8)[::-1])
        assert _judge_threads(judge) == threads and 1 <= len(threads) <= 4
    assert [a.text for a in second] == [a.text for a in first][::-1]
    assert len(server.bodies) == 16  # no cache between the calls: both went out


def test_a_call_from_a_judge_thread_runs_inline():
    judge_like = stub_client("http://127.0.0.1:9/v1", concurrency=2)
    inner = judge_like._parallel
    seen = []

    def nested(i):
        seen.append(threading.current_thread().name)
        return sum(inner([0, 1, 2], lambda j: j * i).values())

    assert judge_like._parallel([1, 2], nested) == {1: 3, 2: 6}  # the pool's 2 threads each wait on 3 more
    assert all(name.startswith(POOL_PREFIX) for name in seen)


def test_another_judge_s_thread_still_uses_this_judge_s_threads():
    """Inline only in this judge's own threads: one judge's request thread that calls a second
    judge gets the second's threads (its requests in parallel, not one after another)."""
    first = stub_client("http://127.0.0.1:9/v1", concurrency=2)
    second = stub_client("http://127.0.0.1:9/v1", concurrency=3)
    together = threading.Barrier(3)

    def three_at_once(j):
        together.wait(timeout=10)  # breaks (BrokenBarrierError) unless three tasks run at once
        return getattr(threading.current_thread(), POOL_MARK)()

    pools = first._parallel([0, 1], lambda i: second._parallel([0, 1, 2], three_at_once))
    assert {pool for by in pools.values() for pool in by.values()} == {second._pool}


def test_each_thread_has_its_own_pool_and_ended_threads_pools_are_closed(monkeypatch):
    with chat_stub(monkeypatch, delay_s=0.0) as (server, url):
        client = bounded_http_client(url, 10.0)
        transport = client._transport
        assert isinstance(transport, BoundedTransport)
        body = {"model": "stub-model", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
        headers = {"Authorization": "Bearer sk-stub"}
        pools, together = [], threading.Barrier(3)

        def ask():
            client.post(url + "/chat/completions", json=body, headers=headers).raise_for_status()
            pools.append(transport._pool())
            together.wait(timeout=10)  # all three alive at once: their idents (and pools) differ

        threads = [threading.Thread(target=ask) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len({id(p) for p in pools}) == 3 and all(p.connections for p in pools)  # each kept its connection
        client.post(url + "/chat/completions", json=body, headers=headers).raise_for_status()  # opens this thread's pool
        assert list(transport._pools) == [threading.get_ident()]
        assert all(not p.connections for p in pools)  # the ended threads' pools were closed
        mine = transport._pool()
        client.close()
        assert transport._pools == {} and not mine.connections


def _generate_in_child(judge, requests, out):
    out.put([a.text for a in judge.generate(requests)])


def test_a_forked_child_opens_its_own_client_and_threads(monkeypatch):
    """A judge used, then forked (a fork-started worker): the child's calls run on threads and
    sockets of its own, not on the parent's pool, whose threads the child does not have."""
    import multiprocessing

    with chat_stub(monkeypatch, delay_s=0.0) as (server, url):
        judge = stub_client(url, concurrency=4, cache=None)
        requests = make_requests(6)
        here = [a.text for a in judge.generate(requests)]
        ctx = multiprocessing.get_context("fork")
        out = ctx.Queue()
        child = ctx.Process(target=_generate_in_child, args=(judge, requests, out))
        child.start()
        child.join(timeout=60)
        if child.exitcode is None:  # stalled: a pool waiting on threads the child does not have
            child.kill()
        assert child.exitcode == 0
        assert out.get(timeout=5) == here
        assert len(server.bodies) == 12
