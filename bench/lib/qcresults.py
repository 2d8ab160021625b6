"""Machine-readable results of a bench/ experiment, for bench/run-all.

Each experiment writes bench/out/<name>/summary.json beside its
summary.txt:

    res = qcresults.Result("isolation", "Performance isolation",
                           paper="Figs. 12-13: ...", setup="V1 ...")
    res.number("V1 delivered / offered (worst step)", 0.995, "",
               paper="follows the offered load")
    res.goal("in-contract hosts get >= 98% undegraded", 0.995, 0.98)
    res.write(out_dir, png="isolation.png", tsv="isolation.tsv")

A goal is met when value >= target (<= with at_most=True, within
[target, upper] with upper=); a value of None is "not measured", never
met.
"""

import json
import os
import time


class Result:
    def __init__(self, name, title, paper="", setup=""):
        self.doc = {"experiment": name, "title": title, "paper": paper,
                    "setup": setup,
                    "numbers": [], "goals": [], "notes": [],
                    "started": time.time()}

    def number(self, name, value, unit="", paper=""):
        """A key number, with what the paper reports for it."""
        self.doc["numbers"].append({"name": name, "value": value,
                                    "unit": unit, "paper": paper})

    def goal(self, text, value, target, at_most=False, upper=None,
             detail=""):
        """A goal: value >= target (<= with at_most; within [target,
        upper] with upper); returns met."""
        if value is None:
            met = False
        elif upper is not None:
            met = target <= value <= upper
        else:
            met = value <= target if at_most else value >= target
        self.doc["goals"].append({"goal": text, "value": value,
                                  "target": target, "at_most": at_most,
                                  "upper": upper, "met": met,
                                  "detail": detail})
        return met

    def note(self, text):
        self.doc["notes"].append(text)

    def write(self, out_dir, **files):
        """summary.json in out_dir; files: name -> file in out_dir (png,
        tsv) for the report to link."""
        self.doc["seconds"] = time.time() - self.doc.pop("started")
        self.doc["files"] = {k: v for k, v in files.items() if v}
        path = os.path.join(out_dir, "summary.json")
        with open(path, "w") as f:
            json.dump(self.doc, f, indent=1, default=float)
            f.write("\n")
        return path


def read(out_dir):
    """The summary.json of an experiment's output directory, or None."""
    try:
        with open(os.path.join(out_dir, "summary.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def fmt(v, digits=4):
    """A number for a table: None as n/a, floats to `digits` figures."""
    if v is None:
        return "n/a"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return "%.*g" % (digits, v)
    return str(v)
