#!/usr/bin/env python3
"""Slow clients on mod_qosctl's agent port, and an honest agent check
beside them: `qcdrip.py PORT N SECONDS` keeps N connections to
127.0.0.1:PORT, each sending one byte every 15 ms (opened again when the
agent ends one), and once a second asks as HAProxy does.  Prints one
line: checks made, checks answered, and the slowest answer's seconds.
Run inside the server's network namespace (ip netns exec)."""

import socket
import sys
import time


def ask(port, timeout=5.0):
    """Seconds an agent check took, or None without a reply line."""
    t0 = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout) as s:
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(256)
                if not chunk:
                    break
                data += chunk
    except OSError:
        return None
    return time.monotonic() - t0 if data.endswith(b"\n") else None


def connect(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    s.connect_ex(("127.0.0.1", port))
    return s


def main():
    port, n, seconds = int(sys.argv[1]), int(sys.argv[2]), \
        float(sys.argv[3])
    socks = [connect(port) for _ in range(n)]
    end = time.monotonic() + min(seconds, 3600)
    next_ask, asked, answered, slowest = time.monotonic() + 1, 0, 0, 0.0
    while time.monotonic() < end:
        for i, s in enumerate(socks):
            try:
                s.recv(256)
                dead = True         # a reply, or the agent closed it
            except BlockingIOError:
                dead = False
            except OSError:
                dead = True
            if not dead:
                try:
                    s.send(b"a")
                except BlockingIOError:
                    pass
                except OSError as e:
                    dead = e.errno != 107           # ENOTCONN: connecting
            if dead:
                s.close()
                socks[i] = connect(port)
        if time.monotonic() >= next_ask:
            took = ask(port)
            asked += 1
            if took is not None:
                answered += 1
                slowest = max(slowest, took)
            next_ask = time.monotonic() + 1
        time.sleep(0.015)
    print("agent checks %d, answered %d, slowest %.3f s"
          % (asked, answered, slowest), flush=True)


if __name__ == "__main__":
    main()
