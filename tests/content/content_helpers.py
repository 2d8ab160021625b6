"""Helpers shared by the content-tree tests: run the tools, make small
images, hash trees."""

import hashlib
import importlib.machinery
import os
import re
import shutil
import stat
import subprocess
import sys
import types

# The user httpd's children run as, and how to run as it (runuser).
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "harness"))
import qcharness  # noqa: E402

TOP = os.environ.get("QOSCTL_TOP_SRCDIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
TOOL = os.path.join(TOP, "content-trees", "qosctl-degrade")
GENERATOR = os.path.join(TOP, "content-trees", "make-sample-site")


def load_tool():
    """qosctl-degrade imported as a module (it has no .py suffix)."""
    sys.dont_write_bytecode = True      # no __pycache__ in the source tree
    loader = importlib.machinery.SourceFileLoader("qosctl_degrade", TOOL)
    module = types.ModuleType(loader.name)
    module.__file__ = TOOL
    loader.exec_module(module)
    return module


DEGRADE = load_tool()
CONVERT = DEGRADE.find_convert()
IDENTIFY = shutil.which("identify",
                        path="/usr/bin:" + os.environ.get("PATH", ""))


class Result:
    def __init__(self, completed):
        self.rc = completed.returncode
        self.out = completed.stdout.decode("utf-8", "replace")
        self.err = completed.stderr.decode("utf-8", "replace")

    def __repr__(self):
        return ("rc=%d\nstdout:\n%s\nstderr:\n%s"
                % (self.rc, self.out, self.err))

    def summary(self):
        """{'built': n, 'unchanged': n, ...} from the summary line."""
        line = [l for l in self.out.splitlines()
                if l.startswith("summary:")][-1]
        return ({word: int(n) for n, word
                 in re.findall(r"(\d+) (built|unchanged|errors)", line)}
                | {"removed": int(re.search(r"(\d+) outputs removed",
                                            line).group(1))})


def run_tool(*args, unprivileged=False):
    """The tool on args; unprivileged: as httpd's user when we are root
    (qcharness.unprivileged)."""
    argv = [sys.executable, TOOL] + [os.fsencode(a) for a in args]
    if unprivileged:
        # The system's Python: another user may not reach ours (pyenv's
        # under /root).
        argv = qcharness.unprivileged(["/usr/bin/python3"] + argv[1:])
    return Result(subprocess.run(argv,
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE,
                                 timeout=300, check=False))


def make_image(path, kind="jpeg", size=(320, 240), seed=1, extent=None):
    """A photo-like image (plasma + noise) that re-encoding can shrink;
    EXTENT: a JPEG of at most that many bytes, at the best quality."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    encoding = (["-define", "jpeg:extent=%d" % extent] if extent
                else ["-quality", "90"])
    subprocess.run([CONVERT, "-size", "%dx%d" % size, "-seed", str(seed),
                    "plasma:", "-attenuate", "0.3", "+noise", "Gaussian",
                    "-depth", "8"] + encoding +
                   ["%s:%s" % (kind, os.fsdecode(path))], check=True,
                   stdout=subprocess.DEVNULL)
    return os.path.getsize(path)


def make_icon(path, kind="png"):
    """A tiny flat image re-encoding cannot shrink."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    subprocess.run([CONVERT, "-size", "16x16", "xc:gold", "-strip",
                    "%s:%s" % (kind, os.fsdecode(path))], check=True)
    return os.path.getsize(path)


def identify(path):
    """(format, width, height) of the first frame, via ImageMagick."""
    out = subprocess.run([IDENTIFY, "-format", "%m %w %h\n",
                          os.fsdecode(path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         check=True)
    fmt, width, height = out.stdout.decode().splitlines()[0].split()
    return fmt, int(width), int(height)


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(data, bytes) else "w") as out:
        out.write(data)


def tree_state(root):
    """Every entry under ROOT: contents hash (or link target), mode, mtime."""
    root = os.fsencode(root)
    state = {}
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(top, name)
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                what = b"-> " + os.readlink(path)
            elif stat.S_ISREG(info.st_mode):
                with open(path, "rb") as stream:
                    what = hashlib.sha256(stream.read()).hexdigest().encode()
            else:
                what = b"dir"
            state[os.path.relpath(path, root)] = (what, info.st_mode,
                                                  info.st_mtime_ns)
    return state


def output_files(root):
    ("Relative paths of the files the tool wrote (its own .ht* files "
     "aside).")
    return {rel for rel, (what, _, _) in tree_state(root).items()
            if what != b"dir"
            and not os.path.basename(rel).startswith(b".htqosctl-")}
