"""Private Apache instances and httperf runs, for tests and benchmarks.

One implementation of "start a real Apache with our module on a high
port in a private ServerRoot" and of "run httperf and read its report",
shared by tests/integration and bench/.  Nothing here touches the
system's Apache configuration; every server is ended by the pid we
started, and every wait is bounded.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

TOP_SRCDIR = os.environ.get(
    "QOSCTL_TOP_SRCDIR",
    os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
TOP_BUILDDIR = os.environ.get("QOSCTL_TOP_BUILDDIR", TOP_SRCDIR)
MODULE = os.environ.get("QOSCTL_MODULE",
                        os.path.join(TOP_BUILDDIR, ".libs", "mod_qosctl.so"))
HTTPD = (os.environ.get("HTTPD") or shutil.which("apache2")
         or "/usr/sbin/apache2")
HTTPERF = os.environ.get("HTTPERF") or shutil.which("httperf") or "httperf"
MODULES_DIR = os.environ.get("HTTPD_MODULES_DIR", "/usr/lib/apache2/modules")

# Modules every private server loads; each test adds what it needs.
BASE_MODULES = ["authz_core", "authz_host", "mime", "dir", "remoteip",
                "setenvif", "status", "alias"]

_live = {}  # pid -> Apache, for the emergency teardown


_given_ports = set()


def free_port():
    """A TCP port on loopback that nobody listens on right now and that
    this process has not handed out before: the kernel may give one port
    to two binds in a row, and a test that asks for two ports before its
    server binds either would get one port twice."""
    for _ in range(1000):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _given_ports:
            _given_ports.add(port)
            return port
    raise RuntimeError("no loopback port left that was not handed out")


# Held while a test makes, removes or depends on the system user qosctl,
# the controller's by default: tests/package/run installs and purges the
# package, whose postinst makes it, beside the integration suites.  In
# the build tree, which both know, not in a directory others may write.
def user_lock_path():
    return os.path.join(os.environ.get("QOSCTL_TOP_BUILDDIR", "."),
                        "tests", "qosctl-user.lock")


class user_lock:
    """Hold the user lock (a context manager; flock, so a crashed holder
    frees it)."""

    def __enter__(self):
        import fcntl
        os.makedirs(os.path.dirname(user_lock_path()), exist_ok=True)
        self.f = open(user_lock_path(), "a")
        fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        self.f.close()
        return False


def _uid_runs(uid):
    """Does a process run as uid (real, effective or saved)?"""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/status" % pid) as f:
                for line in f:
                    if line.startswith("Uid:"):
                        if str(uid) in line.split()[1:4]:
                            return True
                        break
        except OSError:
            pass
    return False


def make_system_user(name):
    """Make the system user `name` as the package's postinst does."""
    subprocess.run(["adduser", "--system", "--group", "--quiet",
                    "--home", "/nonexistent", "--no-create-home",
                    "--shell", "/usr/sbin/nologin", name], check=True)


def remove_system_user(name, limit=30.0):
    """Remove a system user make_system_user made, once no process runs as
    it: userdel refuses while one does, and the controller may outlive
    httpd's parent by a moment.  Raises if the user stays."""
    import pwd
    uid = pwd.getpwnam(name).pw_uid
    wait_for(lambda: not _uid_runs(uid), limit, 0.1)
    subprocess.run(["deluser", "--system", "--quiet", name], check=True)
    subprocess.run(["delgroup", "--system", "--quiet", "--only-if-empty",
                    name], check=False)


def run_user():
    """httpd refuses to serve as root; tests run as root in CI."""
    if os.geteuid() != 0:
        return None
    for user in ("www-data", "nobody"):
        try:
            import pwd
            pwd.getpwnam(user)
            return user
        except KeyError:
            continue
    return None


def unprivileged(argv):
    """argv run as the user httpd's children run as (run_user), under
    runuser(1), when we are root: what a non-root user meets (a file
    mode 0 is unreadable) is tested in CI too, which runs as root.
    argv unchanged when we are not root."""
    user = run_user()
    return ["runuser", "-u", user, "--"] + list(argv) if user else list(argv)


def give_to_run_user(path):
    """chown -R path to run_user() (when root): a tree it may write."""
    user = run_user()
    if user:
        subprocess.run(["chown", "-R", "%s:" % user, str(path)], check=True)


def stop_process(proc, sig, timeout=30):
    """Stop a server we started: `sig` to it, SIGKILL to its process group
    if it is still there after `timeout` s; returns its exit status (None
    if it was never started)."""
    if not proc:
        return None
    if proc.poll() is None:
        try:
            os.kill(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    _live.pop(proc.pid, None)
    return proc.returncode


def wait_for(pred, limit=10.0, step=0.02):
    """Poll pred() until it returns a true value (bounded); return it."""
    deadline = time.time() + limit
    while True:
        v = pred()
        if v or time.time() > deadline:
            return v
        time.sleep(step)


class _Server:
    """What every private server the harness starts shares: a context
    manager that starts and cleans up, and its error log."""

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.cleanup()

    def log(self):
        try:
            with open(self.error_log, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def _launch(self, argv, name, ready, timeout):
        """Start argv in a session of its own and wait until ready()
        (bounded by timeout); its exit or a timeout raises, with the
        server's stderr and error log."""
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE,
                                     start_new_session=True)
        _live[self.proc.pid] = self
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited with %s:\n%s\n%s" % (
                    name, self.proc.returncode,
                    self.proc.stderr.read().decode(), self.log()))
            if ready():
                return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("%s did not listen within %ss" % (name, timeout))


TLS_VHOST = """Listen {addr}:{port}
<VirtualHost {addr}:{port}>
  SSLEngine on
  SSLCertificateFile "{cert}"
  SSLCertificateKeyFile "{key}"
</VirtualHost>"""


def self_signed_cert(directory, name="localhost"):
    """A throw-away key and self-signed certificate for `name` in
    `directory` (openssl): (certificate, key) file names."""
    cert = os.path.join(directory, "cert.pem")
    key = os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048",
                    "-nodes", "-days", "2", "-subj", "/CN=" + name,
                    "-addext", "subjectAltName=DNS:%s,IP:127.0.0.1" % name,
                    "-keyout", key, "-out", cert],
                   capture_output=True, check=True, timeout=60)
    return cert, key


class Apache(_Server):
    """A private httpd: own ServerRoot, high port, our module loaded."""

    def __init__(self, docroot=None, mpm="event", extra="", modules=(),
                 with_qosctl=True, port=None, listen_addr="127.0.0.1",
                 keep_root=False, loglevel="warn", mpm_conf=None,
                 cpus=None, netns=None, protocols=None, tls=None):
        self.root = tempfile.mkdtemp(prefix="qosctl-httpd-")
        os.chmod(self.root, 0o755)
        self.docroot = docroot or os.path.join(self.root, "htdocs")
        os.makedirs(self.docroot, exist_ok=True)
        self.port = port or free_port()
        self.addr = listen_addr
        self.mpm = mpm
        self.extra = extra
        # protocols: the Protocols directive ("h2 h2c http/1.1" loads
        # mod_http2); tls: (certificate, key) files, served on a second
        # port (.tls_port) by a mod_ssl virtual host that inherits the
        # main server's configuration (its key is localhost:tls_port).
        self.protocols = protocols
        self.tls = tls
        self.tls_port = free_port() if tls else None
        h2 = {"h2", "h2c"} & set((protocols or "").split())
        wanted = list(modules) + (["http2"] if h2 else []) \
            + (["ssl"] if tls else [])
        self.modules = list(BASE_MODULES) + [m for m in dict.fromkeys(wanted)
                                             if m not in BASE_MODULES]
        self.with_qosctl = with_qosctl
        self.loglevel = loglevel
        self.mpm_conf = mpm_conf
        self.keep_root = keep_root
        self.cpus = cpus            # e.g. "0": pin the server (taskset)
        self.netns = netns          # run inside this network namespace
        self.proc = None
        self.conf = os.path.join(self.root, "httpd.conf")
        self.error_log = os.path.join(self.root, "error.log")
        self.write_conf()

    # -- configuration ---------------------------------------------------

    def default_mpm_conf(self):
        if self.mpm == "prefork":
            return ("StartServers 4\nMinSpareServers 4\nMaxSpareServers 16\n"
                    "MaxRequestWorkers 64\nServerLimit 64\n")
        return ("StartServers 2\nThreadsPerChild 25\nMaxRequestWorkers 100\n"
                "ServerLimit 4\nMinSpareThreads 10\nMaxSpareThreads 100\n")

    def render_conf(self, extra=None):
        lines = [
            'ServerRoot "%s"' % self.root,
            "Listen %s:%d" % (self.addr, self.port),
            'PidFile "%s/httpd.pid"' % self.root,
            'ErrorLog "%s"' % self.error_log,
            'DefaultRuntimeDir "%s"' % self.root,
            "LogLevel %s" % self.loglevel,
            "ServerName localhost",
            "LoadModule mpm_%s_module %s/mod_mpm_%s.so"
            % (self.mpm, MODULES_DIR, self.mpm),
        ]
        for m in self.modules:
            lines.append("LoadModule %s_module %s/mod_%s.so"
                         % (m, MODULES_DIR, m))
        if self.with_qosctl:
            lines.append("LoadModule qosctl_module %s" % MODULE)
        user = run_user()
        if user:
            lines += ["User %s" % user, "Group %s" % (
                "www-data" if user == "www-data" else "nogroup")]
        lines += [
            self.mpm_conf if self.mpm_conf is not None
            else self.default_mpm_conf(),
            "TypesConfig /etc/mime.types",
            "DirectoryIndex index.html",
            "KeepAliveTimeout 5",
            "Timeout 30",
            "ListenBacklog 511",
            # As Debian's apache2.conf: no .htaccess probing anywhere.
            "<Directory />\n  AllowOverride None\n</Directory>",
            'DocumentRoot "%s"' % self.docroot,
            '<Directory "%s">\n  Require all granted\n'
            '  Options FollowSymLinks\n</Directory>' % self.docroot,
            "RemoteIPHeader X-Forwarded-For",
            "RemoteIPInternalProxy 127.0.0.1",
        ]
        if self.protocols:
            lines.append("Protocols %s" % self.protocols)
        if self.tls:
            lines.append(TLS_VHOST.format(addr=self.addr, port=self.tls_port,
                                          cert=self.tls[0], key=self.tls[1]))
        lines += [
            # Load generators name many clients per process (qcid=...):
            # the identity mod_qosctl hashes (httperf_clients).
            'SetEnvIfExpr "%{QUERY_STRING} =~ /(?:^|&)qcid=([-0-9]+)/" '
            "QOSCTL_CLIENT=$1",
            extra if extra is not None else self.extra,
        ]
        return "\n".join(lines) + "\n"

    def write_conf(self, extra=None):
        if extra is not None:
            self.extra = extra
        with open(self.conf, "w") as f:
            f.write(self.render_conf())

    def config_test(self, extra=None):
        """Run httpd -t on this configuration: (exit code, output).
        In the server's namespace: QosCtlResource link checks that the
        interface exists, and /sys shows a namespace's own interfaces
        only under `ip netns exec`."""
        if extra is not None:
            self.write_conf(extra)
        ns = ["ip", "netns", "exec", self.netns] if self.netns else []
        p = subprocess.run(ns + [HTTPD, "-t", "-f", self.conf],
                           capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout + p.stderr

    # -- lifecycle ---------------------------------------------------------

    def start(self, timeout=30, config_test=True):
        """Start in the foreground (we keep its pid); wait until it serves.
        config_test=False: without `httpd -t` first, as a start after a
        file changed since the admin's test."""
        rc, out = self.config_test() if config_test else (0, "")
        if rc != 0:
            raise RuntimeError("httpd -t failed:\n" + out)
        pin = ["taskset", "-c", self.cpus] if self.cpus else []
        if self.netns:
            pin = ["ip", "netns", "exec", self.netns] + pin
        return self._launch(pin + [HTTPD, "-f", self.conf, "-DFOREGROUND"],
                            "httpd", self.listening, timeout)

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def graceful(self, extra=None, wait=True, timeout=30):
        """Graceful restart (SIGUSR1), optionally with a new config."""
        if extra is not None:
            self.write_conf(extra)
        before = self.log().count("resuming normal operations")
        os.kill(self.proc.pid, signal.SIGUSR1)
        if not wait:
            return
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.log().count("resuming normal operations") > before:
                return
            time.sleep(0.05)
        raise RuntimeError("graceful restart not seen in the error log")

    def stop(self, timeout=30):
        """Stop (SIGTERM to the parent, as apachectl -k stop does)."""
        return stop_process(self.proc, signal.SIGTERM, timeout)

    def cleanup(self):
        self.stop()
        if not self.keep_root:
            shutil.rmtree(self.root, ignore_errors=True)


    # -- inspection --------------------------------------------------------


    def url(self, path, port=None):
        return "http://%s:%d%s" % (self.addr, port or self.port, path)

    def listening(self):
        if self.netns:
            return self.get("/", timeout=2)[0] is not None
        try:
            with socket.create_connection((self.addr, self.port), 0.5):
                return True
        except OSError:
            return False

    def get(self, path, headers=None, timeout=10, port=None, addr=None):
        """(status, headers, body) of one GET, errors included; status is
        None when nothing answered."""
        url = "http://%s:%d%s" % (addr or self.addr, port or self.port, path)
        if self.netns:
            return ns_get(self.netns, url, headers, timeout)
        req = urllib.request.Request(url, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()
        except OSError:
            return None, {}, b""

    def raw_reply(self, request_bytes, timeout=10, until=None):
        """Send raw bytes; return the reply as it came, up to the end of
        the connection, 1 MB, or until until(data) says it is enough."""
        with socket.create_connection((self.addr, self.port), timeout) as s:
            s.sendall(request_bytes)
            data = b""
            while len(data) < 1 << 20 and not (until and until(data)):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        return data

    def status_json(self, path="/qosctl-status"):
        code, _, body = self.get(path + "?format=json")
        if code != 200:
            raise RuntimeError("status page answered %d" % code)
        return json.loads(body)

    def children(self):
        """Pids whose parent is this httpd."""
        return children_of(self.proc.pid)


def parent_pid(pid):
    """The parent of pid, from /proc (None once it is gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            # after the command name, which may hold spaces and ')'
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def controller(a):
    """The controller's part of a's JSON status."""
    return a.status_json()["controller"]


def fresh_controller(a, period, not_pid=None):
    """The controller's status if one (other than not_pid) beat within
    two periods and a does not fail open, else None (for wait_for)."""
    c = controller(a)
    if c["pid"] and c["pid"] != not_pid and c["age_seconds"] is not None \
            and c["age_seconds"] < 2 * period and not c["fail_open"]:
        return c
    return None


def alive(pid):
    """pid exists and is not a zombie (False once /proc forgets it)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def children_of(ppid):
    """Pids whose parent is ppid."""
    return [int(p) for p in os.listdir("/proc")
            if p.isdigit() and parent_pid(int(p)) == ppid]


def ns_get(netns, url, headers=None, timeout=10):
    """One GET from inside a network namespace (curl there)."""
    cmd = ["ip", "netns", "exec", netns, "curl", "-s", "-D", "-",
           "--max-time", str(timeout)]
    for k, v in (headers or {}).items():
        cmd += ["-H", "%s: %s" % (k, v)]
    p = subprocess.run(cmd + [url], capture_output=True,
                       timeout=timeout + 10)
    head, _, body = p.stdout.partition(b"\r\n\r\n")
    m = re.match(rb"HTTP/1\.[01] (\d{3})", head)
    if p.returncode != 0 or not m:
        return None, {}, b""
    hdrs = {}
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.decode("latin-1").partition(":")
        hdrs[k.strip()] = v.strip()
    return int(m.group(1)), hdrs, body


class Testbed:
    """bench/testbed: server and client namespaces over a shaped link."""

    SCRIPT = os.path.join(TOP_SRCDIR, "bench", "testbed")

    def __init__(self, prefix="qc", rate="100mbit", clients=1,
                 burst=None):
        self.prefix, self.rate, self.clients = prefix, rate, clients
        self.burst = burst
        self.info = {}

    def up(self):
        extra = ["--burst", self.burst] if self.burst else []
        out = subprocess.run([self.SCRIPT, "up", "--prefix", self.prefix,
                              "--rate", self.rate, "--clients",
                              str(self.clients)] + extra, capture_output=True,
                             text=True, timeout=60, check=True).stdout
        for line in out.splitlines():
            k, _, v = line.partition("=")
            self.info[k] = v.strip("'").strip()
        _live[("testbed", self.prefix)] = self
        return self

    @property
    def server_ns(self):
        return self.info["TESTBED_SERVER_NS"]

    @property
    def server_if(self):
        return self.info["TESTBED_SERVER_IF"]

    @property
    def server_addr(self):
        return self.info["TESTBED_SERVER_ADDR"]

    @property
    def client_ns(self):
        return self.info["TESTBED_CLIENT_NS"].split()

    def cleanup(self):
        subprocess.run([self.SCRIPT, "down", "--prefix", self.prefix],
                       capture_output=True, timeout=60)
        _live.pop(("testbed", self.prefix), None)

    def __enter__(self):
        return self.up()

    def __exit__(self, *exc):
        self.cleanup()


# -- php-fpm ------------------------------------------------------------------

def php_fpm_binary():
    """Debian's php-fpm (php8.2-fpm), or None when PHP is not installed
    (or $PHP_FPM names no program: PHP_FPM=none pretends so)."""
    found = os.environ.get("PHP_FPM")
    if found:
        return found if os.access(found, os.X_OK) else None
    path = os.pathsep.join(["/usr/sbin", os.environ.get("PATH", "")])
    for name in ("php-fpm8.2", "php-fpm"):
        found = shutil.which(name, path=path)
        if found:
            return found
    return None


class PhpFpm(_Server):
    """A private php-fpm: one pool, pm = static, on a unix socket in a
    temporary directory, running as the user who starts it; its access
    log has one line per request PHP served.  Started in the foreground
    so that we keep its pid, stopped by that pid."""

    def __init__(self, children=2, binary=None):
        self.binary = binary or php_fpm_binary()
        self.root = tempfile.mkdtemp(prefix="qosctl-fpm-")
        # Apache's children (www-data when we are root) must reach the socket.
        os.chmod(self.root, 0o755)
        self.socket = os.path.join(self.root, "php-fpm.sock")
        self.access_log = os.path.join(self.root, "access.log")
        self.error_log = os.path.join(self.root, "error.log")
        self.conf = os.path.join(self.root, "php-fpm.conf")
        self.proc = None
        root = os.geteuid() == 0
        with open(self.conf, "w") as f:
            f.write("[global]\n"
                    "error_log = %s\n"
                    "daemonize = no\n"
                    "[qosctl]\n"
                    "%s"
                    "listen = %s\n"
                    "listen.mode = 0666\n"
                    "pm = static\n"
                    "pm.max_children = %d\n"
                    "access.log = %s\n"
                    "access.format = \"%%m %%r%%Q%%q %%s\"\n"
                    "catch_workers_output = yes\n"
                    % (self.error_log,
                       "user = root\ngroup = root\n" if root else "",
                       self.socket, children, self.access_log))

    def start(self, timeout=30):
        if not self.binary:
            raise RuntimeError("php-fpm is not installed (apt-get install "
                               "php8.2-fpm)")
        return self._launch(
            [self.binary, "--nodaemonize", "--fpm-config", self.conf]
            + (["--allow-to-run-as-root"] if os.geteuid() == 0 else []),
            "php-fpm", self._accepting, timeout)

    def _accepting(self):
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(1)
                s.connect(self.socket)
            return True
        except OSError:
            return False

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def stop(self, timeout=30):
        """SIGQUIT: php-fpm's graceful stop; SIGKILL to its group if stuck."""
        return stop_process(self.proc, signal.SIGQUIT, timeout)

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)



    def requests(self):
        """Requests PHP has served so far (lines of the access log)."""
        try:
            with open(self.access_log, "rb") as f:
                return sum(1 for _ in f)
        except FileNotFoundError:
            return 0

    def get(self, script, query="", timeout=30):
        """Run SCRIPT (an absolute file name) as a GET: (headers, body)."""
        return fastcgi_get(self.socket, script, query, timeout)


def fastcgi_get(sock_path, script, query="", timeout=30):
    """One FastCGI responder request (what mod_proxy_fcgi sends for a
    GET), enough for a snapshot or a test: ({header: value}, body)."""
    import struct

    def record(kind, body):
        return struct.pack(">BBHHBx", 1, kind, 1, len(body), 0) + body

    def pair(name, value):
        out = b""
        for n in (len(name), len(value)):
            out += (struct.pack("B", n) if n < 128
                    else struct.pack(">I", n | 0x80000000))
        return out + name + value

    uri = "/" + os.path.basename(script)
    params = {"GATEWAY_INTERFACE": "CGI/1.1", "REQUEST_METHOD": "GET",
              "SCRIPT_FILENAME": script, "SCRIPT_NAME": uri,
              "REQUEST_URI": uri + ("?" + query if query else ""),
              "QUERY_STRING": query, "DOCUMENT_ROOT": os.path.dirname(script),
              "SERVER_PROTOCOL": "HTTP/1.1", "SERVER_NAME": "localhost",
              "SERVER_PORT": "80", "REMOTE_ADDR": "127.0.0.1",
              "CONTENT_LENGTH": "0"}
    body = b"".join(pair(k.encode(), os.fsencode(v))
                    for k, v in params.items())
    out, status = b"", None
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(timeout)
        s.connect(sock_path)
        s.sendall(record(1, struct.pack(">HB5x", 1, 0)) + record(4, body)
                  + record(4, b"") + record(5, b""))
        data = b""
        while status is None:
            chunk = s.recv(65536)
            if not chunk:
                raise RuntimeError("php-fpm closed the connection")
            data += chunk
            while len(data) >= 8:
                _, kind, _, length, pad = struct.unpack(">BBHHBx", data[:8])
                if len(data) < 8 + length + pad:
                    break
                content, data = data[8:8 + length], data[8 + length + pad:]
                if kind == 6:
                    out += content
                elif kind == 3:
                    status = struct.unpack(">I", content[:4])[0]
    head, _, page = out.partition(b"\r\n\r\n")
    headers = {}
    for line in head.decode("latin-1").split("\r\n"):
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return headers, page


HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"


class Haproxy:
    """haproxy -db on loopback, its admin stats socket in a directory of
    its own, in front of `backend` (a "backend be" block).  .port is the
    frontend's."""

    def __init__(self, backend):
        self.dir = tempfile.mkdtemp(prefix="qosctl-haproxy-")
        self.sock = os.path.join(self.dir, "admin.sock")
        self.port = free_port()
        self.cfg = os.path.join(self.dir, "haproxy.cfg")
        self.proc = None
        with open(self.cfg, "w") as f:
            f.write("global\n    stats socket %s mode 600 level admin\n"
                    "defaults\n    mode http\n    timeout connect 2s\n"
                    "    timeout client 10s\n    timeout server 10s\n"
                    "frontend fe\n    bind 127.0.0.1:%d\n"
                    "    default_backend be\n%s"
                    % (self.sock, self.port, backend))
        check = subprocess.run([HAPROXY, "-c", "-f", self.cfg],
                               capture_output=True, text=True, timeout=60)
        if check.returncode != 0:
            self.cleanup()
            raise RuntimeError("haproxy -c: " + check.stdout + check.stderr)
        self.proc = subprocess.Popen([HAPROXY, "-db", "-f", self.cfg],
                                     stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE,
                                     start_new_session=True)
        _live[self.proc.pid] = self
        if not wait_for(self.answers, limit=20):
            self.cleanup()
            raise RuntimeError("haproxy did not answer on its socket")

    def answers(self):
        if self.proc.poll() is not None:
            raise RuntimeError("haproxy exited: %s"
                               % self.proc.stderr.read().decode())
        try:
            return self.command("show info").startswith("Name:")
        except OSError:
            return False

    def command(self, line):
        """One runtime API command; its whole answer."""
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(10)
            s.connect(self.sock)
            s.sendall(line.encode() + b"\n")
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    return data.decode()
                data += chunk

    def servers(self, backend="be"):
        """{server name: its row of "show servers state", by column}."""
        lines = self.command("show servers state " + backend).splitlines()
        head = [l for l in lines if l.startswith("# be_id")][0]
        cols = head.lstrip("# ").split()
        rows = (dict(zip(cols, l.split()))
                for l in lines[lines.index(head) + 1:] if l.strip())
        return {r["srv_name"]: r for r in rows}

    def cleanup(self):
        if self.proc:
            stop_process(self.proc, signal.SIGTERM, 10)
            _live.pop(self.proc.pid, None)
        shutil.rmtree(self.dir, ignore_errors=True)


def stop_all():
    """Emergency teardown: servers first, then testbeds."""
    for a in sorted(_live.values(), key=lambda x: isinstance(x, Testbed)):
        try:
            a.cleanup()
        except Exception:
            pass


# -- httperf ------------------------------------------------------------------

_NUM = r"([0-9.]+)"


def parse_httperf(text):
    """The numbers of an httperf report, as a dict of floats."""
    pats = {
        "connections": r"Total: connections " + _NUM,
        "requests": r"Total: connections [0-9]+ requests " + _NUM,
        "replies": r"requests [0-9]+ replies " + _NUM,
        "duration": r"test-duration " + _NUM,
        "conn_rate": r"Connection rate: " + _NUM,
        "conn_time_avg": r"Connection time \[ms\]: min [0-9.]+ avg " + _NUM,
        "conn_time_median": r"Connection time \[ms\]: min .* median " + _NUM,
        "request_rate": r"Request rate: " + _NUM,
        "reply_rate_avg": r"Reply rate \[replies/s\]: min [0-9.]+ avg " + _NUM,
        "reply_time": r"Reply time \[ms\]: response " + _NUM,
        "reply_header": r"Reply size \[B\]: header " + _NUM,
        "reply_content": r"Reply size \[B\]: header [0-9.]+ content " + _NUM,
        "s1xx": r"1xx=" + _NUM, "s2xx": r"2xx=" + _NUM,
        "s3xx": r"3xx=" + _NUM, "s4xx": r"4xx=" + _NUM,
        "s5xx": r"5xx=" + _NUM,
        "errors": r"Errors: total " + _NUM,
        "client_timo": r"client-timo " + _NUM,
        "socket_timo": r"socket-timo " + _NUM,
        "connrefused": r"connrefused " + _NUM,
        "connreset": r"connreset " + _NUM,
        "fd_unavail": r"fd-unavail " + _NUM,
        "net_io_kbs": r"Net I/O: " + _NUM,
    }
    out = {}
    for key, pat in pats.items():
        m = re.search(pat, text)
        out[key] = float(m.group(1)) if m else 0.0
    return out


def httperf(server, port, uri="/", rate=None, num_conns=100, num_calls=1,
            timeout=5, headers=(), extra=(), netns=None, hog=True,
            wall_limit=None, cpus=None, nice=None):
    """Run httperf; return its parsed report (and the raw text as 'raw').
    nice: run it at that nice value (httperf polls without pause, and
    several at once would take the CPU from the server they measure)."""
    cmd = [HTTPERF, "--server", server, "--port", str(port), "--uri", uri,
           "--num-conns", str(num_conns), "--num-calls", str(num_calls),
           "--timeout", str(timeout)]
    if rate:
        cmd += ["--rate", str(rate)]
    if hog:
        cmd.append("--hog")
    for h in headers:
        cmd += ["--add-header", h + "\\n"]
    cmd += list(extra)
    if cpus:
        cmd = ["taskset", "-c", cpus] + cmd
    if nice is not None:
        cmd = ["nice", "-n", str(nice)] + cmd
    if netns:
        cmd = ["ip", "netns", "exec", netns] + cmd
    limit = wall_limit or (num_conns / float(rate or 100) + timeout + 60)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
    if p.returncode != 0:
        raise RuntimeError("httperf failed (%d): %s" % (p.returncode,
                                                       p.stderr[-2000:]))
    out = parse_httperf(p.stdout)
    out["raw"] = p.stdout
    return out


SUMMED = ("connections", "requests", "replies", "s1xx", "s2xx", "s3xx",
           "s4xx", "s5xx", "errors", "client_timo", "socket_timo",
           "connrefused", "connreset", "fd_unavail", "net_io_kbs",
           "request_rate", "reply_rate_avg", "conn_rate")


def sum_httperf(reps):
    """httperf reports summed: the counts, the longest duration, the
    middle median connection time, the raw texts joined."""
    total = {k: sum(r[k] for r in reps) for k in SUMMED}
    total["duration"] = max(r["duration"] for r in reps)
    meds = sorted(r["conn_time_median"] for r in reps)
    total["conn_time_median"] = meds[len(meds) // 2]
    total["raw"] = "\n".join(r.get("raw", "") for r in reps)
    return total


def client_address(i):
    """The i-th synthetic client address (sent as X-Forwarded-For)."""
    return "10.99.%d.%d" % (i // 250, i % 250 + 1)


def httperf_clients(server, port, uri, rate, seconds, clients=40,
                    first_client=0, identities=25, extra=(), **kw):
    """Offer rate req/s for seconds from a population of clients: one
    httperf process per client address (its own X-Forwarded-For, for
    classification; mod_remoteip must trust the sender), each cycling
    through `identities` sessions that name distinct clients (?qcid=,
    which the harness's servers turn into QOSCTL_CLIENT, the identity
    mod_qosctl hashes).  httperf has no per-request headers, and a few
    dozen clients quantize the actuator coarsely: 40 clients at 14 req/s
    of 64 KB move a 100 Mbit/s link by 0.064 each, 11% of a 0.58 bound.
    extra: more httperf arguments.  Returns the summed report; 'runs'
    holds the individual ones."""
    import threading
    per = float(rate) / clients
    conns = max(1, int(round(per * seconds)))
    runs = [None] * clients
    sep = "&" if "?" in uri else "?"
    tmp = tempfile.mkdtemp(prefix="qc-sessions-")

    def one(i):
        cid = first_client + i
        log = os.path.join(tmp, "c%d" % cid)
        with open(log, "w") as f:
            for j in range(identities):
                f.write("%s%sqcid=%d-%d\n\n" % (uri, sep, cid, j))
        runs[i] = httperf(server, port, uri=uri, rate=per, num_conns=conns,
                          headers=["X-Forwarded-For: " + client_address(
                              cid)], hog=False, nice=19,
                          extra=["--wsesslog", "%d,0,%s" % (conns, log)]
                          + list(extra), **kw)

    threads = [threading.Thread(target=one, args=(i,))
               for i in range(clients)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(seconds + 300)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if any(r is None for r in runs):
        raise RuntimeError("an httperf client did not finish")
    total = sum_httperf(runs)
    total["offered"] = conns * clients
    total["runs"] = runs
    return total
