"""The runner judges: an adapter that says every case's expected outcome
passes, and one wrong in any way the contract can be is failed, naming the
case; a known divergence fails only the implementation it is known for."""

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import run  # noqa: E402

ORACLE = f"{sys.executable} {os.path.join(HERE, 'oracle.py')}"
CASES = os.path.join(HERE, "..", "cases")
# The cases the tests name, and one of every other kind: a run each
# stays short.
NAMED = ["accept-every-kind", "accept-sample", "refuse-wrong-magic", "refuse-bool-2",
         "refuse-zero-length", "refuse-cut-in-length-1", "refuse-rows-before-handshake",
         "defined-map-key-repeated", "accept-golden-04-rows", "refuse-hostile-07-rows",
         "accept-seq-gap", "defined-second-handshake"]
FAILED_ROW = re.compile(r"\| ✗( adapter)? \|$", re.M)


def setUpModule():
    global SUBSET
    SUBSET = tempfile.mkdtemp()
    for name in NAMED:
        for ext in (".json", ".dwr"):
            shutil.copy(os.path.join(CASES, name + ext), SUBSET)
    os.environ["CONFORMANCE_CASES"] = SUBSET


def tearDownModule():
    shutil.rmtree(SUBSET)


def judge(*adapters, held=()):
    """The runner's exit status, its matrix and what it said on stderr,
    over the subset of cases."""
    argv = [a for name, how in adapters for a in ("--adapter", f"{name}={ORACLE} {how}")]
    argv += ["--cases", SUBSET] + [a for name in held for a in ("--held-to-8", name)]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = run.main(argv)
    return status, out.getvalue(), err.getvalue()


class Runner(unittest.TestCase):
    def test_the_expected_outcomes_pass(self):
        status, matrix, err = judge(("oracle", "right"))
        self.assertEqual(status, 0, err)
        self.assertIsNone(FAILED_ROW.search(matrix), matrix)
        passed = re.findall(r"\| (✓|as §8) \|$", matrix, re.M)
        self.assertEqual(len(passed), len(NAMED), matrix)
        self.assertIn("| `refuse-wrong-magic` | must-refuse | §2 | ✓ |", matrix)
        self.assertIn("| `defined-map-key-repeated` | implementation-defined | §3, §8.1 | as §8 |", matrix)

    def test_each_wrong_adapter_fails(self):
        for how, case, words in [
            ("drop-frame", "accept-every-kind", "7 frame(s), expected 8"),
            ("accept-all", "refuse-wrong-magic", "accepts, expected refused"),
            ("wrong-rule", "refuse-bool-2", "refused by Other"),
            ("wrong-offset", "refuse-zero-length", "at offset 42, expected frame 2 at offset 41"),
            ("tally-off", "accept-sample", "tally: frames 14 (expected 13)"),
            ("not-json", "accept-sample", "not JSON"),
            ("no-end", "accept-sample", "no end line"),
        ]:
            with self.subTest(how=how):
                status, matrix, err = judge(("broken", how))
                self.assertEqual(status, 1, err)
                self.assertIn(f"broken: {case}: ", err)
                self.assertIn(words, err)
                self.assertIsNotNone(FAILED_ROW.search(matrix))

    def test_a_known_divergence_is_known_only_for_its_implementation(self):
        status, matrix, err = judge(("dendro 0.6.1", "as-dendro"))
        self.assertEqual(status, 0, err)
        self.assertIn("| `refuse-cut-in-length-1` | must-refuse | §1, §2, §8.3 | known ≠ |", matrix)
        status, _, err = judge(("another", "as-dendro"))
        self.assertEqual(status, 1)
        self.assertIn("another: refuse-cut-in-length-1: accepts, expected refused", err)

    def test_an_implementation_held_to_8_fails_where_it_is_not_stricter(self):
        status, matrix, err = judge(("lenient", "accept-all"), held=["strict"])
        self.assertIn("| `defined-map-key-repeated` | implementation-defined | §3, §8.1 | other: accepts |",
                      matrix)
        self.assertNotIn("defined-map-key-repeated", err)
        status, matrix, err = judge(("strict", "accept-all"), held=["strict"])
        self.assertEqual(status, 1)
        self.assertIn("strict: defined-map-key-repeated (held to §8): accepts", err)

    def test_a_decode_only_adapter_is_not_held_to_the_subscriber_cases(self):
        status, matrix, err = judge(("codec", "decode-only"))
        self.assertEqual(status, 0, err)
        self.assertIn("| `refuse-rows-before-handshake` | must-refuse | rule 1 | n/a |", matrix)
        self.assertIn("| `refuse-bool-2` | must-refuse | §3, §4.1 | ✓ |", matrix)

    @unittest.skipUnless(os.environ.get("DENDRO_WIRE"), "DENDRO_WIRE names the tool")
    def test_a_wrong_expectation_fails_the_real_tool(self):
        """A case whose expected offset is wrong fails the tool, so the
        runner compares what the tool says, not what it is told."""
        with tempfile.TemporaryDirectory() as cases:
            for name in ("refuse-zero-length.json", "refuse-zero-length.dwr"):
                shutil.copy(os.path.join(CASES, name), cases)
            path = os.path.join(cases, "refuse-zero-length.json")
            with open(path) as f:
                case = json.load(f)
            case["expect"]["offset"] += 1
            with open(path, "w") as f:
                json.dump(case, f)
            tool = f"{sys.executable} {os.path.join(HERE, '..', 'adapters', 'dendro_wire_tool.py')}"
            done = subprocess.run(
                [sys.executable, os.path.join(HERE, "..", "run.py"), "--cases", cases,
                 "--adapter", f"Rust tool={tool} {os.environ['DENDRO_WIRE']}"],
                capture_output=True, text=True)
            self.assertEqual(done.returncode, 1, done.stderr)
            self.assertIn("Rust tool: refuse-zero-length: refused frame 2 at offset 41, "
                          "expected frame 2 at offset 42", done.stderr)


if __name__ == "__main__":
    unittest.main()
