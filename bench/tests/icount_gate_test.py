#!/usr/bin/env python3
"""Tests of bench/icount/gate.py's baseline sets (ctest label "unit"): one set per toolchain,
the set of this toolchain chosen, the closest one only on request, re-baselining that replaces
this toolchain's set and keeps the others (with their tolerances and notes)."""

import importlib.util
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("gate", os.path.join(HERE, "..", "icount", "gate.py"))
gate = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gate)

ERMS = {"valgrind": "v", "compiler": "c", "glibc": "g", "build_type": "Release",
        "cpu_features": ["avx2", "bmi2", "erms", "fsrm"], "simd_target": "SSE4"}
PLAIN = dict(ERMS, cpu_features=["avx2", "bmi2"])
OTHER_GLIBC = dict(ERMS, glibc="2.40", compiler="c2")


def write(doc):
    fd, path = tempfile.mkstemp(suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f)
    return path


class BaselineSets(unittest.TestCase):
    def test_the_one_set_layout_is_read_as_one_set(self):
        path = write({"default_tolerance_pct": 3.0, "runs": 5, "toolchain": ERMS,
                      "workloads": {"a": {"ir": 10}}})
        doc = gate.load_baselines(path)
        self.assertEqual(len(doc["sets"]), 1)
        self.assertEqual(doc["sets"][0]["workloads"], {"a": {"ir": 10}})
        self.assertNotIn("toolchain", doc)

    def test_the_set_of_this_toolchain_is_chosen_else_the_closest_is_offered(self):
        doc = {"sets": [{"toolchain": OTHER_GLIBC, "workloads": {"a": {"ir": 1}}},
                        {"toolchain": ERMS, "workloads": {"a": {"ir": 2}}}]}
        chosen, _, diff = gate.pick_set(doc, ERMS)
        self.assertEqual(chosen["workloads"]["a"]["ir"], 2)
        self.assertEqual(diff, [])
        chosen, closest, diff = gate.pick_set(doc, PLAIN)
        self.assertIsNone(chosen, "no set was recorded on PLAIN")
        self.assertEqual(closest["workloads"]["a"]["ir"], 2, "ERMS differs in one field only")
        self.assertEqual([k for k, _, _ in diff], ["cpu_features"])
        self.assertEqual(gate.pick_set({"sets": []}, ERMS), (None, None, []))

    def test_rebaseline_adds_a_set_then_replaces_only_its_own(self):
        path = write({"default_tolerance_pct": 3.0, "runs": 5, "toolchain": ERMS,
                      "workloads": {"a": {"ir": 100, "tolerance_pct": 6.0, "note": "noisy"}}})
        gate.rebaseline(path, gate.load_baselines(path), PLAIN, {"a": [90, 91, 92]}, 3)
        doc = gate.load_baselines(path)
        self.assertEqual(len(doc["sets"]), 2)
        erms, _, _ = gate.pick_set(doc, ERMS)
        plain, _, _ = gate.pick_set(doc, PLAIN)
        self.assertEqual(erms["workloads"]["a"]["ir"], 100, "the other toolchain's set is kept")
        self.assertEqual(plain["workloads"]["a"]["ir"], 91)
        self.assertEqual(plain["workloads"]["a"]["tolerance_pct"], 6.0,
                         "a new set takes its decisions from the closest set")
        self.assertEqual(plain["workloads"]["a"]["note"], "noisy")
        gate.rebaseline(path, gate.load_baselines(path), PLAIN, {"a": [80]}, 1)
        doc = gate.load_baselines(path)
        self.assertEqual(len(doc["sets"]), 2, "re-baselining a toolchain replaces its set")
        self.assertEqual(gate.pick_set(doc, PLAIN)[0]["workloads"]["a"]["ir"], 80)
        self.assertEqual(gate.pick_set(doc, ERMS)[0]["workloads"]["a"]["ir"], 100)
        os.remove(path)



class ValgrindLimits(unittest.TestCase):
    def test_an_instruction_valgrind_does_not_know_is_named_not_a_failure(self):
        stderr = ("vex amd64->IR: unhandled instruction bytes: 0xF 0x1 0xF9 0x48 0xC1 0xE2\n"
                  "==1== valgrind: Unrecognised instruction at address 0x54e6522.\n")
        self.assertEqual(gate.cannot_emulate(stderr), "bytes 0xF 0x1 0xF9 0x48")
        self.assertEqual(gate.cannot_emulate("==1== valgrind: Unrecognised instruction\n"),
                         "an unrecognised instruction")
        # Any other crash under callgrind is the binary's: no skip.
        self.assertIsNone(gate.cannot_emulate("==1== Process terminating with SIGSEGV\n"))

if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
