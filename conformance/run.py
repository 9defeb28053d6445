"""Run the conformance suite against implementations and print the results
matrix (README.md says what a case and an adapter are).

    python3 run.py --adapter 'NAME=COMMAND' [--adapter ...] [--cases DIR]
                   [--matrix FILE] [--jobs N] [--held-to-8 NAME ...]

Each COMMAND is run once per case, with the case's stream on standard
input, and must print JSON Lines: one line per frame, then the end line.
The matrix (markdown) goes to FILE, or to standard output. Exit status 1
if an implementation disagrees with a must-accept or must-refuse case
(but for a divergence the case records as known for it), or, named by
--held-to-8, with an implementation-defined one; or if an adapter printed
what the contract does not allow; 0 otherwise.
"""

import argparse
import concurrent.futures
import json
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CLASSES = ("must-accept", "must-refuse", "implementation-defined")
LAYERS = ("decode", "subscriber")


def load_cases(folder):
    """Every case under `folder`, by name: its JSON with its stream's bytes."""
    cases = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(folder, name)) as f:
            case = json.load(f)
        with open(os.path.join(folder, case["stream"]), "rb") as f:
            case["bytes"] = f.read()
        if case["class"] not in CLASSES or case["layer"] not in LAYERS:
            raise ValueError(f"{name}: class {case['class']!r} or layer {case['layer']!r}")
        cases.append(case)
    return cases


def run_adapter(command, stream):
    """The adapter's lines for `stream`: (frames, end), or (None, why)."""
    try:
        done = subprocess.run(shlex.split(command), input=stream, capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"could not run: {e}"
    try:
        lines = [json.loads(line) for line in done.stdout.decode().splitlines() if line.strip()]
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        return None, f"printed a line that is not JSON ({e}); stderr: {done.stderr.decode()[-300:]}"
    if not lines or "end" not in lines[-1]:
        return None, f"printed no end line (exit {done.returncode}); stderr: {done.stderr.decode()[-300:]}"
    frames, end = lines[:-1], lines[-1]
    if any("frame" not in f or "end" in f for f in frames):
        return None, "printed a line that is neither a frame nor the last, the end line"
    if end["end"] not in ("clean", "refused") or not isinstance(end.get("subscriber"), bool):
        return None, f"an end line outside the contract: {end}"
    if end["end"] == "refused" and not all(k in end for k in ("rule", "frame", "offset")):
        return None, f"a refusal without its rule, frame and offset: {end}"
    return frames, end


def outcome(end):
    """An adapter's end in a few words, for the matrix."""
    if end["end"] == "clean":
        return "accepts"
    return f"refuses: {end['rule']} at frame {end['frame']}"


def judge(case, frames, end):
    """Whether the adapter's lines are the case's expected outcome: None if
    they are, else the first difference."""
    want = case["expect"]
    if end["end"] != want["end"]:
        said = f" ({end.get('message')})" if end.get("message") else ""
        return f"{outcome(end)}{said}, expected {want['end']}"
    if frames != want["frames"]:
        for i, (got, exp) in enumerate(zip(frames, want["frames"])):
            if got != exp:
                return f"frame {i + 1} is {json.dumps(got)}, expected {json.dumps(exp)}"
        return f"{len(frames)} frame(s), expected {len(want['frames'])}"
    if want["end"] == "refused":
        if end["rule"] not in want["rules"]:
            return f"refused by {end['rule']} ({end.get('message')}), expected {' or '.join(want['rules'])}"
        if (end["frame"], end["offset"]) != (want["frame"], want["offset"]):
            return (f"refused frame {end['frame']} at offset {end['offset']}, expected frame "
                    f"{want['frame']} at offset {want['offset']}")
    elif end["subscriber"] and "tally" in want and end.get("tally") != want["tally"]:
        got = end.get("tally") or {}
        wrong = [f"{k} {got.get(k)} (expected {v})" for k, v in want["tally"].items() if got.get(k) != v]
        return "tally: " + ", ".join(wrong or [f"{got}"])
    return None


def verdict(case, adapter, result, held=False):
    """(cell, failed, note) for one case and one adapter; `held`: the
    adapter's implementation is held to this project's choices (§8) on
    the implementation-defined cases too."""
    frames, end = result
    if frames is None:
        return "✗ adapter", True, f"{adapter}: {case['name']}: {end}"
    if case["layer"] == "subscriber" and not end["subscriber"]:
        return "n/a", False, None
    wrong = judge(case, frames, end)
    if case["class"] == "implementation-defined":
        if wrong is None:
            return "as §8", False, None
        if held:
            return "✗", True, f"{adapter}: {case['name']} (held to §8): {wrong}"
        return f"other: {outcome(end)}", False, None
    if wrong is None:
        return "✓", False, None
    known = case.get("known_divergences", {}).get(adapter)
    if known:
        return "known ≠", False, None
    return "✗", True, f"{adapter}: {case['name']}: {wrong}"


def matrix(cases, adapters, cells):
    """The results as markdown: a summary per implementation, then a row
    per case."""
    out = ["# Conformance matrix", "",
           "Written by `cargo xtask conformance` (`conformance/run.py`); do not edit.",
           "`✓` the expected outcome; `✗` another; `known ≠` a divergence the case records",
           "as known; `n/a` a case of the subscriber's rules, which the implementation's",
           "adapter does not apply; on an implementation-defined case, `as §8` is this",
           "project's choice (PROTOCOL §8) and `other` says what the implementation did",
           "(`✗` for one held to §8, as this project's three are).", ""]
    names = [name for name, _ in adapters]
    out.append("| implementation | " + " | ".join(names) + " |")
    out.append("|---|" + "---|" * len(names))
    for label, test in [("✓", lambda c: c == "✓"), ("✗", lambda c: c.startswith("✗")),
                        ("known ≠", lambda c: c == "known ≠"), ("n/a", lambda c: c == "n/a"),
                        ("as §8", lambda c: c == "as §8"), ("other", lambda c: c.startswith("other"))]:
        counts = [sum(1 for case in cases if test(cells[case["name"], n])) for n in names]
        out.append(f"| {label} | " + " | ".join(str(c) for c in counts) + " |")
    out += ["", f"{len(cases)} cases.", "",
            "| case | class | section | " + " | ".join(names) + " |",
            "|---|---|---|" + "---|" * len(names)]
    for case in cases:
        row = [f"`{case['name']}`", case["class"], case["section"]]
        row += [cells[case["name"], n] for n in names]
        out.append("| " + " | ".join(row) + " |")
    known = {}
    for case in cases:
        for name, why in case.get("known_divergences", {}).items():
            if name in names:
                known.setdefault((name, why), []).append(f"`{case['name']}`")
    if known:
        out += ["", "## Known divergences", ""]
        out += [f"- {name} ({', '.join(which)}): {why}" for (name, why), which in known.items()]
    return "\n".join(out) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adapter", action="append", required=True, metavar="NAME=COMMAND")
    parser.add_argument("--cases", default=os.path.join(HERE, "cases"))
    parser.add_argument("--matrix", help="write the matrix here rather than to standard output")
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--held-to-8", action="append", default=[], metavar="NAME",
                        help="an implementation held to this project's choices (PROTOCOL §8) "
                             "on the implementation-defined cases too")
    args = parser.parse_args(argv)
    adapters = [tuple(a.split("=", 1)) for a in args.adapter]
    cases = load_cases(args.cases)
    jobs = [(case, name, command) for case in cases for name, command in adapters]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda j: run_adapter(j[2], j[0]["bytes"]), jobs))
    cells, failures = {}, []
    for (case, name, _), result in zip(jobs, results):
        cell, failed, note = verdict(case, name, result, name in args.held_to_8)
        cells[case["name"], name] = cell
        if failed:
            failures.append(note)
    text = matrix(cases, adapters, cells)
    if args.matrix:
        with open(args.matrix, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    for note in failures:
        sys.stderr.write(f"conformance: {note}\n")
    if failures:
        sys.stderr.write(f"conformance: {len(failures)} disagreement(s) on must-accept or must-refuse cases\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
