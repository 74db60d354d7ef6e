"""Tests of perfdoc: the checked-in docs against the checked-in results, and
the block and figure rules on small texts."""

import os
import unittest

import figures
import perfdoc


def _root():
    """The workspace in the test's runfiles."""
    return os.path.join(os.environ["TEST_SRCDIR"],
                        os.environ.get("TEST_WORKSPACE", "h2rpc"))


class CheckedInDocsTest(unittest.TestCase):

    def test_blocks_are_fresh_and_figures_come_from_results(self):
        self.assertEqual(perfdoc.check(_root()), [])

    def test_readme_has_the_main_job_table(self):
        with open(os.path.join(_root(), "README.md"), encoding="utf-8") as f:
            readme = f.read()
        self.assertIn("<!-- perfdoc main_job main_job.json -->", readme)
        self.assertIn("h2rpc/gRPC C++", readme)


class FigureRulesTest(unittest.TestCase):

    def setUp(self):
        self.figures = figures.Figures(ratios={5.18, 1.66}, qps={210464.0},
                                       cpu_us={3.92}, allocs={2.0, 3.0})

    def problems(self, text):
        return figures.unsupported_figures(text, self.figures, "doc.md")

    def test_figures_within_rounding_pass(self):
        self.assertEqual(self.problems(
            "h2rpc does 5.2x gRPC C++'s QPS at 64 in flight, 210k calls/s, "
            "3.92 us of CPU per call and 2 allocations per call.\n"), [])

    def test_a_ratio_no_result_holds_fails(self):
        problems = self.problems("h2rpc is 6.7x gRPC C++ at 120.\n")
        self.assertEqual(len(problems), 1)
        self.assertIn("doc.md:1: '6.7x'", problems[0])

    def test_other_counts_fail(self):
        self.assertEqual(len(self.problems(
            "211k calls/s, 4.5 us CPU, 12 allocations per call\n")), 3)

    def test_numbers_that_are_not_figures_are_ignored(self):
        self.assertEqual(self.problems(
            "The window grows 2x per sample; 100 ms backoff.\n"), [])

    def test_figures_inside_generated_blocks_are_not_prose(self):
        text = ("<!-- perfdoc pairings a.json -->\n"
                "| 64 | h2rpc/grpcpp | 9.99x gRPC C++ |\n"
                "<!-- /perfdoc -->\n")
        self.assertEqual(self.problems(text), [])


class RenderTest(unittest.TestCase):

    def test_a_block_without_end_is_an_error(self):
        with self.assertRaises(ValueError):
            perfdoc.render(_root(), "<!-- perfdoc wan x.json -->\ntext\n")

    def test_an_unknown_block_is_an_error(self):
        with self.assertRaises(ValueError):
            perfdoc.render(_root(),
                           "<!-- perfdoc nosuch x.json -->\n<!-- /perfdoc -->")

    def test_before_after_needs_files_on_both_sides_of_after(self):
        for files in ("perf3_before_1.json perf3_after_1.json",
                      "perf3_before_1.json after",
                      "after perf3_after_1.json"):
            with self.assertRaises(ValueError, msg=files):
                perfdoc.render(_root(), f"<!-- perfdoc before_after {files} "
                               "-->\n<!-- /perfdoc -->")

    def test_memory_rows_per_number_of_units(self):
        text = perfdoc.render(_root(), "<!-- perfdoc memory memory.json -->\n"
                              "<!-- /perfdoc -->")
        self.assertIn("| per idle connection, 2,000 at once |", text)
        self.assertIn("| per idle connection, 20,000 at once |", text)

    def test_text_without_blocks_is_unchanged(self):
        self.assertEqual(perfdoc.render(_root(), "a\nb\n"), "a\nb\n")


if __name__ == "__main__":
    unittest.main()
