"""Checks that README.md and every docs/*.md name only things that exist.

For each Markdown file (README.md and every docs/*.md, taken from the
directory, so a new doc is checked without a change here):

 - Links. Every relative Markdown link, inline `[text](target)` or reference
   `[label]: target`, outside fenced code blocks and code spans, names a
   file or directory that exists, relative to the file that holds it.
   Links with a scheme (`https:`, `mailto:`) and links to an anchor of the
   same file (`#...`) are skipped; a `#anchor` after a path is dropped.
 - Repository paths. Every word that starts with a top-level directory of
   the repository and a slash (`rpc/`, `transport/`, `test/`, `docs/`,
   `.ci/`, ...; the list is read from the repository, `bazel-*` left out),
   in backticks, in code blocks or in plain text, exists as a file or a
   directory. A path preceded by another path character (`bazel-bin/tools/x`,
   `$PWD/test/x`, `https://host/test/x`) is not one of ours and is skipped.
   Trailing punctuation (`.`, `,`, `:`, `;`, `)`) is not part of the path.
   A path `P` also counts as existing when a file `P.<extension>` does: a
   stem naming a source pair (`test/util/allocation_counter` for its .h and
   .cc), a target named after its source (`benchmark/delay_relay`), or a
   build output and its template (`rpc/version.h` and `rpc/version.h.in`).
 - Bazel labels. `//pkg:target` and `@h2rpc//pkg:target` name a package
   directory `pkg/` that exists; labels of other repositories
   (`@system//:absl`) are skipped.

A path or label that is a pattern or a placeholder is skipped: one
containing `*`, `?`, `<`, `>`, `{`, `}`, `$`, `...`, or a component
written as a placeholder in capitals (`N`, `X`, `NAME`, `FILE`, `DIR`,
`OUT`, `PREFIX`, alone or between `_`, `-` and `.`, as in `unary_N.json`).

The repository is found from the real location of this test's README.md
data file (Bazel runfiles are symlinks into the source tree), or given as
the first argument when run by hand:
    python3 test/docs/docs_check_test.py [REPO_ROOT]
"""

import os
import re
import sys
import unittest

# Whole words standing for a value the reader chooses.
_PLACEHOLDER = re.compile(
    r"(?:^|[/_.-])(?:N|X|NAME|FILE|DIR|OUT|PREFIX)(?=$|[/_.-])")
_PATTERN_CHARS = set("*?<>{}$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"`+[^`]*`+")
_INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$")
_LABEL = re.compile(r"(?<![\w/@.:-])(@[\w.-]*)?//([\w./+-]*)(?::([\w./+*-]*))?")
_TRAILING = ".,:;)"


def _repo_root():
    if len(sys.argv) > 1:
        return os.path.abspath(sys.argv[1])
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (
        os.path.join(here, "..", "..", "README.md"),
        os.path.join(os.environ.get("TEST_SRCDIR", ""),
                     os.environ.get("TEST_WORKSPACE", "__main__"),
                     "README.md"),
    ):
        if os.path.exists(candidate):
            return os.path.dirname(os.path.realpath(candidate))
    raise RuntimeError("README.md not found; pass the repository root")


def _is_pattern(path):
    return (any(c in _PATTERN_CHARS for c in path) or "..." in path or
            _PLACEHOLDER.search(path) is not None)


def _exists(root, path):
    full = os.path.join(root, path)
    if os.path.exists(full):
        return True
    # A stem: `test/util/allocation_counter` for its .h and .cc, a target
    # named after its source, `rpc/version.h` built from `rpc/version.h.in`.
    directory, name = os.path.split(full)
    return os.path.isdir(directory) and any(
        entry.startswith(name + ".") for entry in os.listdir(directory))


def _doc_files(root):
    files = ["README.md"]
    docs = os.path.join(root, "docs")
    files += sorted("docs/" + name for name in os.listdir(docs)
                    if name.endswith(".md"))
    return files


def _top_level_dirs(root):
    return sorted(
        name for name in os.listdir(root)
        if os.path.isdir(os.path.join(root, name)) and
        not name.startswith("bazel-") and name != ".git")


def _strip_code(lines):
    """Lines outside fenced code blocks, with code spans removed."""
    inside = False
    for number, line in enumerate(lines, 1):
        if _FENCE.match(line):
            inside = not inside
            continue
        if not inside:
            yield number, _CODE_SPAN.sub("", line)


def broken_links(root, doc, lines):
    """(line, target) for each relative link whose target does not exist."""
    base = os.path.dirname(os.path.join(root, doc))
    problems = []
    for number, line in _strip_code(lines):
        targets = [m.group(1) for m in _INLINE_LINK.finditer(line)]
        reference = _REFERENCE_LINK.match(line)
        if reference:
            targets.append(reference.group(1))
        for target in targets:
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                continue  # https:, mailto:, ...
            path = target.split("#", 1)[0]
            if not path:
                continue  # an anchor in this file
            if not os.path.exists(os.path.normpath(os.path.join(base, path))):
                problems.append((number, target))
    return problems


def missing_paths(root, lines, top_dirs):
    """(line, path) for each repository path or label that does not exist."""
    dirs = "|".join(re.escape(d) for d in top_dirs)
    path_re = re.compile(r"(?<![\w./@$~-])((?:%s)/[\w./+*?<>{}$-]*)" % dirs)
    problems = []
    for number, line in enumerate(lines, 1):
        for match in path_re.finditer(line):
            path = match.group(1).rstrip(_TRAILING)
            if _is_pattern(path):
                continue
            if not _exists(root, path):
                problems.append((number, path))
        for match in _LABEL.finditer(line):
            repo, package, target = match.groups()
            if repo not in (None, "@", "@h2rpc"):
                continue
            label = match.group(0)
            if _is_pattern(label) or (target and "*" in target):
                continue
            package = package.rstrip(_TRAILING)
            if package and not os.path.isdir(os.path.join(root, package)):
                problems.append((number, label))
    return problems


class DocsCheckTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.root = _repo_root()
        cls.top_dirs = _top_level_dirs(cls.root)
        cls.docs = _doc_files(cls.root)

    def _read(self, doc):
        with open(os.path.join(self.root, doc), encoding="utf-8") as f:
            return f.read().splitlines()

    def test_finds_the_docs_and_directories(self):
        self.assertIn("docs/design.md", self.docs)
        for name in ("rpc", "transport", "test", "docs"):
            self.assertIn(name, self.top_dirs)

    def test_relative_links_exist(self):
        for doc in self.docs:
            with self.subTest(doc=doc):
                problems = broken_links(self.root, doc, self._read(doc))
                self.assertEqual(
                    [], problems,
                    "%s: links to nothing: %s" % (doc, ", ".join(
                        "line %d: %s" % p for p in problems)))

    def test_repository_paths_exist(self):
        for doc in self.docs:
            with self.subTest(doc=doc):
                problems = missing_paths(self.root, self._read(doc),
                                         self.top_dirs)
                self.assertEqual(
                    [], problems,
                    "%s: names paths that do not exist: %s" % (doc, ", ".join(
                        "line %d: %s" % p for p in problems)))


class RulesTest(unittest.TestCase):
    """The rules above on small inputs."""

    @classmethod
    def setUpClass(cls):
        cls.root = _repo_root()
        cls.top_dirs = _top_level_dirs(cls.root)

    def paths(self, text):
        return [p for _, p in missing_paths(self.root, [text], self.top_dirs)]

    def test_paths(self):
        self.assertEqual([], self.paths("see `rpc/channel.h`, and rpc/server.h."))
        self.assertEqual(["rpc/no_such.h"], self.paths("in rpc/no_such.h:"))
        self.assertEqual([], self.paths("bazel-bin/tools/nothing/here"))
        self.assertEqual([], self.paths("https://example.com/test/nothing"))
        self.assertEqual([], self.paths("rpc/*.h, test/x_N.json, docs/<name>.md"))
        self.assertEqual([], self.paths("rpc/version.h"))  # from version.h.in
        self.assertEqual([], self.paths("test/util/allocation_counter"))
        self.assertEqual(["test/util/allocation"],
                         self.paths("test/util/allocation"))
        self.assertEqual([], self.paths("[docs/design.md](docs/design.md)"))

    def test_labels(self):
        self.assertEqual([], self.paths("//rpc:anything @h2rpc//rpc"))
        self.assertEqual(["//nowhere:x"], self.paths("//nowhere:x"))
        self.assertEqual([], self.paths("@system//:absl //... //test/fuzz:*_f"))

    def test_links(self):
        lines = ["[a](design.md#x) [b](https://x.org/y) [c](#z)",
                 "[d](../nothing.md)", "```", "[e](nothing)", "```",
                 "`[f](nothing)`"]
        self.assertEqual([(2, "../nothing.md")],
                         broken_links(self.root, "docs/x.md", lines))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
