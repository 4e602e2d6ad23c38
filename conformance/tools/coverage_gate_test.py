#!/usr/bin/env python3
"""Unit tests of coverage_gate.py's decisions: which uncovered lines a reason covers (listed by
text, or connective next to a listed line in the same uncovered block) and which are new."""
import collections
import importlib.util
import pathlib
import tempfile
import unittest

_spec = importlib.util.spec_from_file_location(
    "coverage_gate", pathlib.Path(__file__).with_name("coverage_gate.py"))
gate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gate)

F = "storage/lmcache/fs/fs_connector.cc"
LISTED = {(F, 'note("fstat: " + errno_text(errno));'): "an OS error"}


class LineReasonsTest(unittest.TestCase):
    def test_listed_text_gives_its_reason(self):
        unc = [(F, 10, 'note("fstat: " + errno_text(errno));')]
        self.assertEqual(gate.line_reasons(unc, {}, LISTED), {(F, 10): "an OS error"})

    def test_connective_line_after_a_listed_one_inherits_it(self):
        unc = [(F, 10, 'note("fstat: " + errno_text(errno));'), (F, 11, "return false;")]
        self.assertEqual(gate.line_reasons(unc, {F: {9, 12}}, LISTED)[(F, 11)], "an OS error")

    def test_connective_line_before_a_listed_one_inherits_it(self):
        unc = [(F, 9, "} catch (...) {"), (F, 10, 'note("fstat: " + errno_text(errno));')]
        self.assertEqual(gate.line_reasons(unc, {F: {8}}, LISTED)[(F, 9)], "an OS error")

    def test_a_covered_line_between_ends_the_block(self):
        unc = [(F, 10, 'note("fstat: " + errno_text(errno));'), (F, 13, "return false;")]
        self.assertNotIn((F, 13), gate.line_reasons(unc, {F: {11}}, LISTED))

    def test_a_line_with_code_of_its_own_does_not_inherit(self):
        unc = [(F, 10, 'note("fstat: " + errno_text(errno));'), (F, 11, "++failures_;")]
        self.assertNotIn((F, 11), gate.line_reasons(unc, {}, LISTED))

    def test_inheritance_chains_through_connective_lines(self):
        unc = [(F, 10, 'note("fstat: " + errno_text(errno));'), (F, 11, "return false;"),
               (F, 12, "}")]
        self.assertEqual(gate.line_reasons(unc, {}, LISTED)[(F, 12)], "an OS error")

    def test_other_files_do_not_lend_reasons(self):
        unc = [(F, 10, 'note("fstat: " + errno_text(errno));'), ("other.cc", 11, "return false;")]
        self.assertNotIn(("other.cc", 11), gate.line_reasons(unc, {}, LISTED))

    def test_connective_pattern(self):
        for text in ["}", "return false;", "return {};", "break;", "} catch (...) {",
                     "std::lock_guard lock(mu_);", "} catch (const std::invalid_argument&) {"]:
            self.assertTrue(gate.CONNECTIVE.match(text), text)
        for text in ['note("x");', "return static_cast<int>(x);", "++errors;", "fail(task);"]:
            self.assertFalse(gate.CONNECTIVE.match(text), text)


class NewUncoveredTest(unittest.TestCase):
    def test_untriaged_lines_are_counted_per_text(self):
        unc = [(F, 10, "x = 1;"), (F, 20, "x = 1;")]
        unlisted, new = gate.new_uncovered(unc, {}, collections.Counter({(F, "x = 1;"): 1}))
        self.assertEqual(len(unlisted), 2)
        self.assertEqual(new, [(F, 20, "x = 1;")])

    def test_lines_with_a_reason_are_neither_unlisted_nor_new(self):
        unc = [(F, 10, "x = 1;")]
        unlisted, new = gate.new_uncovered(unc, {(F, 10): "why"}, collections.Counter())
        self.assertEqual((unlisted, new), ([], []))


class StaleEntriesTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.root = pathlib.Path(self.dir.name)
        (self.root / "a.cc").write_text("int f() {\n  return g(1,\n         2);\n}\n")

    def tearDown(self):
        self.dir.cleanup()

    def test_current_text_is_not_stale(self):
        self.assertEqual(gate.stale_entries(self.root, [("a.cc", "return g(1,"), ("a.cc", "2);")]),
                         [])

    def test_reflowed_text_is_stale(self):
        self.assertEqual(gate.stale_entries(self.root, [("a.cc", "return g(1, 2);")]),
                         [("a.cc", "return g(1, 2);")])

    def test_a_missing_file_is_stale(self):
        self.assertEqual(gate.stale_entries(self.root, [("gone.cc", "x;")]), [("gone.cc", "x;")])


if __name__ == "__main__":
    unittest.main()
