"""The soak: the real `inkling serve` driven for a bounded time by seeded editors
(evaluation/soak_editor.py), over stdio (one editor) and over TCP (two editors at once, each
with its own documents; one leaves with shutdown and exit halfway, the other drops its socket
with requests in flight three quarters of the way, and a new editor connects in each place).
Its figures per transport: requests, answers and how they fitted (evaluation/soak_tally.py),
desyncs, tracebacks on the server's stderr, the server's resident memory first and at most,
and the percentiles of the inline completions' round trips.

It is a package module, not a test helper nor a benchmark, because the short soak of the tests
(tests/lsp/test_soak.py) and the long one of the benchmarks (benchmarks/soak.py, its command
line) run the same driver, and neither may import the other's folder."""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from inkling.lsp.server_stats import percentile

from inkling.evaluation.soak_editor import Editor, SoakError
from inkling.evaluation.soak_server import ServerProcess, free_port
from inkling.evaluation.soak_tally import Tally, merge
from inkling.evaluation.soak_wire import Connection

RSS_FACTOR, RSS_MARGIN_MB = 1.5, 200   # bounded: the most memory is within first * factor + margin
TCP_LANES = ((0.5, False), (0.75, True))   # per lane: when its first editor leaves; dropped?
TRANSPORTS = ("stdio", "tcp")


@dataclass
class Target:
    """What the sessions of one transport share: the server, and the soak's clock, which
    starts when the first session is ready (the model's load is not soak time)."""
    model: str                   # the model folder
    server: ServerProcess
    seconds: float
    port: int | None = None      # None: stdio
    _start: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def ready(self) -> None:
        with self._lock:
            if self._start is None:
                self._start = time.monotonic()
        self.server.start_sampling()

    def at(self, fraction: float) -> float:
        """The monotonic time ``fraction`` of the way through the soak."""
        return self._start + fraction * self.seconds


def session(target: Target, name: str, conn: Connection, seed: int, leave: float,
            drop: bool) -> Tally:
    """One editor's whole session on ``conn``, until ``leave`` of the way through the soak;
    a session the server refused is one problem."""
    editor = Editor(name, conn, seed)
    try:
        editor.start(target.model)
    except SoakError as exc:
        conn.close()
        editor.tally.problem(str(exc))
        editor.tally.count(conn, editor.expect, dropped=False)
        return editor.tally
    editor.tally.started = 1
    target.ready()
    editor.run(target.at(leave))
    return editor.finish(drop)


def tcp_session(target: Target, name: str, seed: int, leave: float, drop: bool,
                connect_s: float) -> Tally:
    """A new connection's session, or one error where the server does not listen."""
    try:
        conn = Connection.over_tcp(target.port, timeout_s=connect_s)
    except OSError as exc:
        tally = Tally(name, errors=1)
        tally.problem(f"{name}: could not connect to port {target.port}: {exc}")
        return tally
    return session(target, name, conn, seed, leave, drop)


def soak_stdio(model: str, seconds: float, seed: int) -> dict:
    server = ServerProcess()
    try:
        conn = Connection.over_process(server.proc)
        tally = session(Target(model, server, seconds), "stdio", conn, seed, 1.0, False)
    finally:
        code = server.stop(terminate=False)
    return figures(merge("stdio", [tally]), server, code, sessions=1)


def soak_tcp(model: str, seconds: float, seed: int) -> dict:
    """Two lanes at once (TCP_LANES), each an editor and the one that replaces it."""
    port = free_port()
    target = Target(model, ServerProcess(port), seconds, port)

    def lane(n: int, leave: float, drop: bool) -> list[Tally]:
        name, seed_ = "ab"[n], seed * 10 + 2 * n
        return [tcp_session(target, f"tcp-{name}1", seed_, leave, drop, 120),
                tcp_session(target, f"tcp-{name}2", seed_ + 1, 1.0, False, 10)]
    try:
        with ThreadPoolExecutor(len(TCP_LANES)) as pool:
            lanes = [pool.submit(lane, n, *plan) for n, plan in enumerate(TCP_LANES)]
            tallies = [t for f in lanes for t in f.result()]
    finally:
        code = target.server.stop(terminate=True)
    return figures(merge("tcp", tallies), target.server, code, sessions=len(tallies))


def figures(tally: Tally, server: ServerProcess, exit_code: int | None, sessions: int) -> dict:
    lat, rss = tally.latencies_ms, server.rss_mb
    inline = {f"p{q}": round(percentile(lat, q), 1) for q in (50, 95, 99)} if lat else {}
    return {**tally.counts(), "sessions": sessions, "tracebacks": server.tracebacks(),
            "rss_first_mb": round(rss[0], 1) if rss else 0,
            "rss_max_mb": round(max(rss), 1) if rss else 0,
            "rss_bounded": bool(rss) and max(rss) <= rss[0] * RSS_FACTOR + RSS_MARGIN_MB,
            "inline_ms": {**inline, "count": len(lat)},
            "exit_code": -1 if exit_code is None else exit_code,
            "problems": tally.problems,
            "stderr_tail": "".join(server.stderr[-40:])}


def soak(model: str, seconds: float, seed: int, transports=TRANSPORTS) -> dict:
    """{transport: its figures}, each transport soaked for ``seconds`` in turn."""
    run = {"stdio": soak_stdio, "tcp": soak_tcp}
    return {t: run[t](model, seconds, seed) for t in transports}


def healthy(fig: dict) -> bool:
    """Whether a transport's figures show nothing wrong."""
    return (fig["started"] == fig["sessions"] and fig["checks"] > 0 and fig["rss_bounded"] and
            not any(fig[k] for k in ("unanswered", "answered_twice", "misrouted", "errors",
                                     "desyncs", "tracebacks")))


def summary(name: str, fig: dict) -> str:
    """A transport's figures in two lines."""
    ms = fig["inline_ms"]
    return (f"{name}: {fig['started']} of {fig['sessions']} sessions started, "
            f"{fig['requests']} requests, "
            f"{fig['answered']} answered, {fig['unanswered']} unanswered, {fig['dropped']} "
            f"dropped, {fig['answered_twice']} twice, {fig['misrouted']} misrouted, "
            f"{fig['errors']} errors, {fig['desyncs']} desyncs in {fig['checks']} checks, "
            f"{fig['tracebacks']} tracebacks, exit {fig['exit_code']}\n"
            f"  RSS first {fig['rss_first_mb']} MiB, max {fig['rss_max_mb']} MiB; inline "
            f"completions {ms['count']}: p50 {ms.get('p50')} ms, p95 {ms.get('p95')} ms, "
            f"p99 {ms.get('p99')} ms; {fig['keystrokes']} keystrokes, {fig['far_edits']} far "
            f"edits, {fig['cancels']} cancels ({fig['cancelled']} cancelled, {fig['modified']} "
            f"content modified), {fig['opened']} opened, {fig['closed']} closed")
