"""Proof that an agent CLI reached nothing but loopback.

Two checks, both cheap enough for every run:
- `Blackhole`: a loopback listener that every CLI gets as its HTTP(S) proxy. It records the first
  line of each connection (`CONNECT host:443 HTTP/1.1`) and hangs up, so anything that honours the
  proxy variables names what it tried to reach and reaches nothing.
- `strace_connects`: the address of every `connect()` the CLI and its children made, from
  `strace -f -e trace=connect`; anything outside 127.0.0.0/8, ::1 or a Unix socket left loopback,
  including a DNS lookup through the machine's resolver.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import threading
from pathlib import Path


class Blackhole:
    """A dead-end proxy on 127.0.0.1 that records what each connection asked for."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="blackhole")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def start(self) -> Blackhole:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:  # the 0.2 s poll that lets stop() end the loop
                continue
            with conn:
                conn.settimeout(2)
                try:
                    line = conn.recv(4096).split(b"\r\n", 1)[0].decode("latin-1")
                except OSError:
                    line = "(nothing sent)"
                self.requests.append(line)


_ADDR = re.compile(
    r"sa_family=AF_INET6?, sin6?_port=htons\((\d+)\), "
    r'(?:sin_addr=inet_addr\("([^"]+)"\)|.*?inet_pton\(AF_INET6, "([^"]+)")'
)


def strace_connects(trace: Path) -> list[str]:
    """`host:port` of every IPv4/IPv6 connect() in an strace log (one file or `trace.PID`s)."""
    files = [trace] if trace.exists() else sorted(trace.parent.glob(trace.name + ".*"))
    found = []
    for f in files:
        for line in f.read_text(errors="replace").splitlines():
            if "connect(" in line and (m := _ADDR.search(line)):
                found.append(f"{m.group(2) or m.group(3)}:{m.group(1)}")
    return found


def off_loopback(addresses: list[str]) -> list[str]:
    """The addresses among `host:port` strings that are not loopback (nor IPv4-mapped loopback)."""
    out = []
    for a in addresses:
        ip = ipaddress.ip_address(a.rsplit(":", 1)[0])
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
            ip = ip.ipv4_mapped
        if not ip.is_loopback and not ip.is_unspecified:
            out.append(a)
    return out
