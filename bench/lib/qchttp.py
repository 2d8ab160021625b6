#!/usr/bin/env python3
"""A small HTTP/1.1 load client on asyncio and raw non-blocking
sockets, for the client models of bench/lib/qcclients.py that no Debian
tool offers.  qcclients runs it in a client namespace (on the clients'
CPU) and reads the one JSON object it prints.

    retry    open loop: JOBS at RATE a second for SECONDS, each a GET on
             a new connection; a 503 is retried at once, on a new
             connection, up to RETRIES times: a retry storm
    browser  browser-like sessions from a plan (qcclients.browser_plan,
             a JSON file): each page a GET of the page, then of each of
             its objects in turn, on one keep-alive connection (a new
             one when the server closes it or a request fails), an
             exponential think between pages, each session from its
             own source address where the plan names one

Every request is bounded by TIMEOUT (connect, send and reply); nothing
new starts after SECONDS, and what is still running TIMEOUT + a grace
later is cut and counted as timed out.  Counts always add up: requests
sent = replies (by status class) + errors (by kind).

    qchttp.py retry HOST PORT URI RATE SECONDS TIMEOUT RETRIES
    qchttp.py browser HOST PORT PLAN TIMEOUT
"""

import asyncio
import collections
import errno
import json
import resource
import socket
import sys

IP_BIND_ADDRESS_NO_PORT = 24    # linux/in.h: port chosen at connect()
MAX_HEAD = 65536
GRACE = 5.0                     # seconds past the end for the last replies
ERRORS = ("timeouts", "resets", "refused", "fd_unavail", "addrunavail",
          "other")


class Closed(Exception):
    """The server closed the connection before the reply was whole."""


class BadReply(Exception):
    """Not an HTTP reply we can read."""


def error_kind(e):
    """The httperf-like name of a failed request's error."""
    if isinstance(e, (TimeoutError, asyncio.TimeoutError,
                      asyncio.CancelledError)):
        return "timeouts"
    if isinstance(e, ConnectionRefusedError):
        return "refused"
    if isinstance(e, (ConnectionResetError, BrokenPipeError, Closed)):
        return "resets"
    if isinstance(e, OSError) and e.errno in (errno.EMFILE, errno.ENFILE):
        return "fd_unavail"
    if isinstance(e, OSError) and e.errno == errno.EADDRNOTAVAIL:
        return "addrunavail"
    return "other"


def status_class(status):
    return "s%dxx" % min(5, max(1, status // 100))


def percentile(xs, p):
    """Nearest-rank percentile (qcmetrics's), None when empty."""
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(p / 100.0 * len(xs)
                                                + 0.5)) - 1))]


def raise_fd_limit():
    """Up to the hard limit: one descriptor per connection in flight;
    the jobs allowed in flight at once."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > 65536:
        hard = 65536
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return max(16, hard - 64)


async def connect(loop, addr, source=None):
    """A connected non-blocking socket (from source, if given)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setblocking(False)
        if source:
            s.setsockopt(socket.IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 1)
            s.bind((source, 0))
        await loop.sock_connect(s, addr)
    except BaseException:
        s.close()
        raise
    return s


class Reader:
    """Replies off one connection: status line, headers, a body by
    Content-Length, chunks or the connection's end (skipped, counted)."""

    def __init__(self, loop, sock):
        self.loop, self.sock, self.buf = loop, sock, bytearray()

    async def fill(self):
        data = await self.loop.sock_recv(self.sock, 65536)
        if not data:
            raise Closed()
        self.buf += data

    async def line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                out = bytes(self.buf[:i])
                del self.buf[:i + 2]
                return out
            if len(self.buf) > MAX_HEAD:
                raise BadReply()
            await self.fill()

    async def skip(self, n):
        take = min(n, len(self.buf))
        del self.buf[:take]
        n -= take
        while n > 0:
            data = await self.loop.sock_recv(self.sock, min(n, 262144))
            if not data:
                raise Closed()
            n -= len(data)

    async def to_end(self):
        n = len(self.buf)
        self.buf.clear()
        while True:
            data = await self.loop.sock_recv(self.sock, 262144)
            if not data:
                return n
            n += len(data)

    async def chunked(self):
        n = 0
        for _ in range(1 << 20):
            size = int((await self.line()).split(b";")[0], 16)
            if size == 0:
                break
            await self.skip(size + 2)
            n += size
        for _ in range(100):            # trailers, up to the empty line
            if not await self.line():
                break
        return n

    async def reply(self):
        """(status, body bytes, whether the server closes after it,
        the headers by lower-case name)."""
        while True:
            i = self.buf.find(b"\r\n\r\n")
            if i >= 0:
                break
            if len(self.buf) > MAX_HEAD:
                raise BadReply()
            await self.fill()
        lines = bytes(self.buf[:i]).decode("latin-1").split("\r\n")
        del self.buf[:i + 4]
        first = lines[0].split(" ", 2)
        if len(first) < 2 or not first[0].startswith("HTTP/") \
                or not first[1].isdigit():
            raise BadReply()
        heads = {}
        for h in lines[1:]:
            k, _, v = h.partition(":")
            heads[k.strip().lower()] = v.strip().lower()
        close = "close" in heads.get("connection", "") or (
            first[0] == "HTTP/1.0" and "keep-alive" not in heads.get(
                "connection", ""))
        if "chunked" in heads.get("transfer-encoding", ""):
            n = await self.chunked()
        elif "content-length" in heads:
            n = int(heads["content-length"])
            await self.skip(n)
        else:
            n, close = await self.to_end(), True
        return int(first[1]), n, close, heads


def request_bytes(uri, keep_alive):
    return ("GET %s HTTP/1.1\r\nHost: localhost\r\nUser-Agent: qchttp\r\n"
            "%s\r\n" % (uri, "" if keep_alive else "Connection: close\r\n")
            ).encode()


# -- retry: an open loop whose 503s come back at once -----------------------

class Retry:
    """Jobs at a rate, each up to 1 + retries attempts."""

    def __init__(self, host, port, uri, rate, seconds, timeout, retries):
        self.addr, self.req = (host, port), request_bytes(uri, False)
        self.rate, self.seconds = rate, seconds
        self.timeout, self.retries = timeout, retries
        self.n = collections.Counter()
        self.ms = []                    # time to success of each job
        self.loop = None

    async def attempt(self):
        """A status, or the name of the error."""
        s = None
        try:
            async with asyncio.timeout(self.timeout):
                s = await connect(self.loop, self.addr)
                await self.loop.sock_sendall(s, self.req)
                status = (await Reader(self.loop, s).reply())[0]
            return status
        except (OSError, TimeoutError, Closed, BadReply, ValueError) as e:
            return error_kind(e)
        except asyncio.CancelledError:
            self.n["attempts"] += 1
            self.n["timeouts"] += 1
            raise
        finally:
            if s is not None:
                s.close()

    async def job(self):
        t0 = self.loop.time()
        self.n["jobs_started"] += 1
        for _ in range(self.retries + 1):
            r = await self.attempt()
            self.n["attempts"] += 1
            if isinstance(r, str):
                self.n[r] += 1
                self.n["jobs_error"] += 1
                return
            self.n[status_class(r)] += 1
            if r != 503:
                break
            self.n["s503"] += 1
        else:
            self.n["jobs_gave_up"] += 1
            return
        if 200 <= r < 300:
            self.n["jobs_ok"] += 1
            self.ms.append((self.loop.time() - t0) * 1e3)
        else:
            self.n["jobs_other"] += 1

    async def run(self):
        self.loop = asyncio.get_running_loop()
        cap = raise_fd_limit()
        jobs = max(1, int(round(self.rate * self.seconds)))
        self.n["jobs"] = jobs
        await schedule(self.loop, jobs, self.rate, self.job, cap, self.n,
                       (self.retries + 1) * self.timeout + GRACE)
        return self.result()

    def result(self):
        out = dict(self.n)
        out["job_ms_p50"] = percentile(self.ms, 50)
        out["job_ms_p95"] = percentile(self.ms, 95)
        return out


async def schedule(loop, n, rate, start, cap, counts, drain):
    """start() n times, the i-th at i/rate s, at most cap at once (the
    others counted as fd_unavail, as httperf counts them); then wait up
    to drain s for the last and cut what is left; late counts the
    starts over 0.1 s behind their time (this client short of CPU)."""
    tasks = set()
    t0 = loop.time()
    i = 0
    while i < n:
        due = min(n, int((loop.time() - t0) * rate) + 1)
        while i < due:
            if loop.time() - (t0 + i / rate) > 0.1:
                counts["late"] += 1     # the client could not keep up
            if len(tasks) >= cap:
                counts["skipped"] += 1
            else:
                t = loop.create_task(start())
                tasks.add(t)
                t.add_done_callback(tasks.discard)
            i += 1
        if i < n:
            await asyncio.sleep(max(0.0, t0 + i / rate - loop.time()))
    if tasks:
        await asyncio.wait(set(tasks), timeout=drain)
    left = set(tasks)
    for t in left:
        t.cancel()
    if left:
        await asyncio.wait(left, timeout=5)
    counts["cut"] += len(left)


# -- browser: pages of objects on keep-alive connections --------------------

class Browser:
    """Sessions of pages, as the plan says (see qcclients.browser_plan)."""

    def __init__(self, host, port, plan, timeout):
        self.addr, self.plan, self.timeout = (host, port), plan, timeout
        self.uris = [plan["page"]] + plan["objects"]
        self.reqs = [request_bytes(u, True) for u in self.uris]
        self.sizes = [plan["sizes"].get(u, [None, None]) for u in self.uris]
        self.n = collections.Counter()
        self.page_ms, self.loop, self.end = [], None, None
        self.mixed = []             # (s into the run, trees) of each

    def tree(self, i, size, heads):
        """Which tree a 2xx reply of uri i came from: by its size, or for
        a program (no full size: its static snapshot may be as long) by
        the ETag that Apache gives a file and not a program's output."""
        full, deg = self.sizes[i]
        if full is None and deg is not None:
            return "degraded" if "etag" in heads else "full"
        if deg is not None and size == deg and size != full:
            return "degraded"
        if size == full:
            return "full"
        return "unknown"

    async def fetch(self, conn, i, source):
        """One request on conn (a [socket, Reader] pair, connected when
        empty): the status, or the name of its error."""
        self.n["requests"] += 1
        try:
            async with asyncio.timeout(self.timeout):
                if not conn:
                    s = await connect(self.loop, self.addr, source)
                    conn[:] = [s, Reader(self.loop, s)]
                    self.n["connections"] += 1
                await self.loop.sock_sendall(conn[0], self.reqs[i])
                status, size, close, heads = await conn[1].reply()
        except (OSError, TimeoutError, Closed, BadReply, ValueError) as e:
            drop(conn)
            kind = error_kind(e)
            self.n[kind] += 1
            return kind
        except asyncio.CancelledError:
            drop(conn)
            self.n["timeouts"] += 1
            raise
        if close:
            drop(conn)
        self.n[status_class(status)] += 1
        if status == 503:
            self.n["s503"] += 1
        if 200 <= status < 300:
            tree = self.tree(i, size, heads)
            self.n["tree_" + tree] += 1
            return tree
        return status

    async def page(self, conn, source):
        t0 = self.loop.time()
        self.n["pages"] += 1
        got = [await self.fetch(conn, i, source)
               for i in range(len(self.uris))]
        if all(g in ("full", "degraded", "unknown") for g in got):
            self.n["pages_ok"] += 1
            self.page_ms.append((self.loop.time() - t0) * 1e3)
        if "full" in got and "degraded" in got:
            self.n["pages_mixed"] += 1
            self.mixed.append((round(t0 - self.t0, 3),
                               "".join(g[0] if isinstance(g, str) else "x"
                                       for g in got)))

    async def session(self, start, source, thinks):
        await asyncio.sleep(max(0.0, self.t0 + start - self.loop.time()))
        conn = []
        self.n["sessions"] += 1
        try:
            for k in range(len(thinks) + 1):
                if self.loop.time() >= self.end:
                    break
                await self.page(conn, source or None)
                if k < len(thinks):
                    await asyncio.sleep(thinks[k])
        finally:
            drop(conn)

    async def run(self):
        self.loop = asyncio.get_running_loop()
        cap = raise_fd_limit()
        self.t0 = self.loop.time()
        self.end = self.t0 + self.plan["seconds"]
        tasks = []
        for start, source, thinks in self.plan["sessions"][:cap]:
            tasks.append(self.loop.create_task(self.session(start, source,
                                                            thinks)))
        self.n["skipped"] += max(0, len(self.plan["sessions"]) - cap)
        drain = self.plan["seconds"] + 2 * self.timeout + GRACE
        done, left = await asyncio.wait(tasks, timeout=drain) \
            if tasks else (set(), set())
        for t in left:
            t.cancel()
        if left:
            await asyncio.wait(left, timeout=5)
        self.n["cut"] += len(left)
        out = dict(self.n)
        out["page_ms_p50"] = percentile(self.page_ms, 50)
        out["page_ms_p95"] = percentile(self.page_ms, 95)
        out["page_ms"] = [round(ms, 2) for ms in self.page_ms]
        out["mixed"] = self.mixed
        return out


def drop(conn):
    if conn:
        conn[0].close()
        conn[:] = []


def main(argv):
    if len(argv) == 8 and argv[0] == "retry":
        job = Retry(argv[1], int(argv[2]), argv[3], float(argv[4]),
                    float(argv[5]), float(argv[6]), int(argv[7]))
    elif len(argv) == 5 and argv[0] == "browser":
        with open(argv[3]) as f:
            plan = json.load(f)
        job = Browser(argv[1], int(argv[2]), plan, float(argv[4]))
    else:
        sys.exit(__doc__.strip().splitlines()[-2].strip() + "\n"
                 + __doc__.strip().splitlines()[-1].strip())
    print(json.dumps(asyncio.run(job.run()), sort_keys=True))


if __name__ == "__main__":
    main(sys.argv[1:])
