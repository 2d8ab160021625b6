#!/usr/bin/env python3
"""Slow clients on mod_qosctl's agent port, and an honest agent check
beside them: `qcdrip.py PORT N SECONDS` keeps N connections to
127.0.0.1:PORT, each sending one byte every 15 ms (opened again when the
agent ends one), and once a second asks as HAProxy does.  Prints one
line: checks made, checks answered, and the slowest answer's seconds.
Run inside the server's network namespace (ip netns exec).  The tests
use Drip and agent_reply (tests/integration/test_agent.py)."""

import errno
import socket
import sys
import threading
import time


def agent_reply(port, send=b"", timeout=5.0):
    """One agent check, as HAProxy makes it: connect, send agent-send
    (if any), read the reply line (bytes; without its newline's end if
    the agent closed first).  Raises OSError."""
    with socket.create_connection(("127.0.0.1", port), timeout) as s:
        if send:
            s.sendall(send)
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(256)
            if not chunk:
                break
            data += chunk
    return data


def ask(port, timeout=5.0):
    """Seconds an agent check took, or None without a reply line."""
    t0 = time.monotonic()
    try:
        data = agent_reply(port, timeout=timeout)
    except OSError:
        return None
    return time.monotonic() - t0 if data.endswith(b"\n") else None


class Drip:
    """n connections to the agent, each sending a byte every `every`
    seconds, and opened again whenever the agent ends one; for at most
    `limit` seconds, in a thread of its own (a context manager)."""

    def __init__(self, port, n=100, every=0.015, limit=150):
        self.port, self.n, self.every, self.limit = port, n, every, limit
        self.opened = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def connect(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", self.port))
        self.opened += 1
        return s

    def run(self):
        socks = [self.connect() for _ in range(self.n)]
        end = time.monotonic() + self.limit
        while not self.done.is_set() and time.monotonic() < end:
            for i, s in enumerate(socks):
                try:
                    s.recv(256)     # a reply: the agent is done with it
                    dead = True
                except BlockingIOError:
                    dead = False
                except OSError:
                    dead = True
                if not dead:
                    try:
                        s.send(b"a")
                    except (BlockingIOError, OSError) as e:
                        dead = getattr(e, "errno", None) not in (
                            errno.EAGAIN, errno.ENOTCONN)
                if dead:
                    s.close()
                    socks[i] = self.connect()
            time.sleep(self.every)
        for s in socks:
            s.close()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join(10)


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: qcdrip.py PORT N SECONDS")
    port, n, seconds = int(sys.argv[1]), int(sys.argv[2]), \
        float(sys.argv[3])
    asked = answered = 0
    slowest = 0.0
    with Drip(port, n, limit=min(seconds, 3600)):
        end = time.monotonic() + min(seconds, 3600)
        while time.monotonic() < end:
            time.sleep(1)
            took = ask(port)
            asked += 1
            if took is not None:
                answered += 1
                slowest = max(slowest, took)
    print("agent checks %d, answered %d, slowest %.3f s"
          % (asked, answered, slowest), flush=True)


if __name__ == "__main__":
    main()
