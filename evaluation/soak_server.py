"""The `inkling serve` process a soak drives (evaluation/soak.py): started over stdio or on a
TCP port, its stderr kept (to count tracebacks), its resident memory sampled from /proc."""
from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

SERVE = [sys.executable, "-m", "inkling.cli.main", "serve", "--log-level", "warning"]
RSS_EVERY_S = 0.5          # how often the sampler reads the server's resident memory


def free_port() -> int:
    """A loopback port free now (the server binds it a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    def __init__(self, tcp_port: int | None = None):
        args = [] if tcp_port is None else ["--tcp", str(tcp_port)]
        self.proc = subprocess.Popen(SERVE + args, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.stderr: list[str] = []
        self.rss_mb: list[float] = []        # samples, from the first ``start_sampling``
        self._stop = threading.Event()
        self._sampling = False
        threading.Thread(target=self._read_stderr, daemon=True, name="soak-stderr").start()

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:
            self.stderr.append(line.decode("utf-8", "replace"))

    def rss_now(self) -> float | None:
        """VmRSS of the server in MiB, or None once it has ended."""
        try:
            status = Path(f"/proc/{self.proc.pid}/status").read_text()
        except OSError:
            return None
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return None

    def start_sampling(self) -> None:
        """Sample memory from now on (called once the model is loaded: the first sample is
        the baseline the rest are held to)."""
        def sample() -> None:
            while True:
                rss = self.rss_now()
                if rss is not None:
                    self.rss_mb.append(rss)
                if self._stop.wait(RSS_EVERY_S):
                    return
        if not self._sampling:
            self._sampling = True
            threading.Thread(target=sample, daemon=True, name="soak-rss").start()

    def tracebacks(self) -> int:
        return sum("Traceback" in line for line in self.stderr)

    def stop(self, terminate: bool, timeout_s: float = 10) -> int | None:
        """Sample once more and wait for the end, sending SIGTERM first if ``terminate`` (a
        TCP server outlives its clients); the exit code, None where it had to be killed."""
        rss = self.rss_now()
        if rss is not None and self._sampling:
            self.rss_mb.append(rss)
        self._stop.set()
        if terminate and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None
