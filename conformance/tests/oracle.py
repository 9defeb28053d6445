"""An adapter for the runner's tests: it knows every case's expected
outcome (it finds the case by its stream's bytes) and says it, or says it
wrong in the way its one argument names.

    python3 oracle.py [right|drop-frame|accept-all|wrong-rule|wrong-offset|
                       tally-off|not-json|no-end|as-dendro|decode-only]
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from run import load_cases  # noqa: E402

CASES = os.environ.get("CONFORMANCE_CASES") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "cases")


def expected(stream):
    for case in load_cases(CASES):
        if case["bytes"] == stream:
            return case
    raise SystemExit("oracle: no case has this stream")


def main():
    how = sys.argv[1] if len(sys.argv) > 1 else "right"
    case = expected(sys.stdin.buffer.read())
    want = case["expect"]
    frames = list(want["frames"])
    if want["end"] == "clean":
        end = {"end": "clean", "subscriber": True, "tally": want["tally"]}
    else:
        end = {"end": "refused", "subscriber": True, "rule": want["rules"][0],
               "frame": want["frame"], "offset": want["offset"]}
    if how == "drop-frame" and frames:
        frames.pop()
    elif how == "accept-all":
        end = {"end": "clean", "subscriber": True, "tally": None}
    elif how == "wrong-rule" and end["end"] == "refused":
        end["rule"] = "Other"
    elif how == "wrong-offset" and end["end"] == "refused":
        end["offset"] += 1
    elif how == "tally-off" and end["end"] == "clean":
        end["tally"] = dict(end["tally"], frames=end["tally"]["frames"] + 1)
    elif how == "not-json":
        print("frame 1: handshake")
        return
    elif how == "no-end":
        end = None
    elif how == "as-dendro" and "dendro 0.6.1" in case["known_divergences"]:
        end = {"end": "clean", "subscriber": False, "tally": None}
    elif how == "decode-only":
        end["subscriber"] = False
        end.pop("tally", None)
    for line in frames + ([end] if end else []):
        print(json.dumps(line))


main()
