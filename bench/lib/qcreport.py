"""Outputs of the bench/ scripts: bench/out/<name>/ with a TSV of the
data, a summary.txt of the printed results, and PNG plots by gnuplot.

    out = qcreport.out_dir("baseline")
    qcreport.write_tsv(os.path.join(out, "baseline.tsv"), COLUMNS, rows)
    summary = qcreport.Summary(os.path.join(out, "summary.txt"))
    summary.line("Rdegrade %d req/s", 180)     # printed now, saved on close
    summary.close()
    qcreport.gnuplot(script_text)              # False if gnuplot is missing

Rows are dicts; a missing key or None is written as "NA" (gnuplot skips
it with `set datafile missing "NA"`, which plot_header() sets).
"""

import os
import shutil
import subprocess

OUT = os.path.abspath(os.path.join(os.path.dirname(
    os.path.abspath(__file__)), "..", "out"))


def out_dir(name):
    """bench/out/<name>, created if needed."""
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    return d


def fmt(v):
    """One TSV cell: floats to 6 significant digits, None as NA."""
    if v is None:
        return "NA"
    if isinstance(v, float):
        return "%.6g" % v
    return str(v)


def read_tsv(path, keep=()):
    """write_tsv()'s rows back as dicts: NA as None, numbers as floats,
    the columns in keep as the text they are.  A line short of the
    header's columns (one still being written) is left out."""
    def cell(k, v):
        if k in keep:
            return v
        if v == "NA":
            return None
        try:
            return float(v)
        except ValueError:
            return v
    with open(path) as f:
        head = f.readline().rstrip("\n").split("\t")
        return [{k: cell(k, v) for k, v in zip(head, vals)}
                for vals in (line.rstrip("\n").split("\t") for line in f)
                if len(vals) == len(head)]


def write_tsv(path, columns, rows):
    """A header line, then one line per row (dict) in column order."""
    with open(path, "w") as f:
        f.write("\t".join(columns) + "\n")
        for r in rows:
            f.write("\t".join(fmt(r.get(c)) for c in columns) + "\n")
    return path


class Summary:
    """Lines printed as they come and saved to a file at close()."""

    def __init__(self, path):
        self.path, self.lines = path, []

    def line(self, text="", *args):
        text = text % args if args else text
        print(text, flush=True)
        self.lines.append(text)

    def close(self):
        with open(self.path, "w") as f:
            f.write("\n".join(self.lines) + "\n")
        return self.path


def plot_header(png, title, size="900,600"):
    """The common start of a gnuplot script writing png."""
    return ("set terminal pngcairo size %s noenhanced\nset output '%s'\n"
            "set title '%s'\nset datafile separator '\\t'\n"
            "set datafile missing 'NA'\nset key autotitle columnhead\n"
            "set grid\n" % (size, png, title))


def gnuplot(script):
    """Run a gnuplot script; False (and a note) when gnuplot is absent."""
    if not shutil.which("gnuplot"):
        print("gnuplot not installed (gnuplot-nox): no plot")
        return False
    subprocess.run(["gnuplot"], input=script, text=True, check=True,
                   timeout=60)
    return True
