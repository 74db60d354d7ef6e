"""Checks that README.md and every docs/*.md name only things that exist.

They link and name only existing files, directories and packages, their
shell code uses only variables it defines, and README's example is the
code of docs/examples/unary_example.cc, which the test suite builds and runs.

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
 - Shell variables. In the shell code of a document, every `$NAME` or
   `${NAME...}` names a variable the document defines before it, or a
   well-known environment variable (`HOME`, `PWD`, `OLDPWD`, `USER`,
   `PATH`, `SHELL`, `TMPDIR`). Shell code is a fenced block whose info
   string is `sh`, `bash`, `shell` or `console`, or an indented code block
   (lines indented by four spaces or a tab, after a blank line). A variable
   is defined by `NAME=` or `NAME+=` (after `export`, `local` or
   `readonly` too), `for NAME in` or `read [-opts] NAME...`, earlier in
   the same document's shell code or earlier on the same line. Comments
   (`#` at a line's start or after a blank) and single-quoted strings are
   not read; a `$` after a backslash is not a use; positional parameters
   (`$1`, `$@`) are not checked.

A path or label that is a pattern or a placeholder is skipped: one
containing `*`, `?`, `<`, `>`, `{`, `}`, `$`, `...`, or a component
written as a placeholder in capitals (`N`, `X`, `NAME`, `FILE`, `DIR`,
`OUT`, `PREFIX`, alone or between `_`, `-` and `.`, as in `unary_N.json`).

README's example: README.md's one `c++` block is the code of
docs/examples/unary_example.cc between its `// --- README example starts
here ---` and `// --- README example ends here ---` lines, each part
unindented, a blank line between parts.

The repository is found from the real location of this test's README.md
data file (Bazel runfiles are symlinks into the source tree), or given as
the first argument when run by hand:
    python3 test/docs/docs_check_test.py [REPO_ROOT]
"""

import os
import re
import sys
import textwrap
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

_SHELL_FENCE = re.compile(r"^\s*(?:```|~~~)\s*([\w+-]*)")
_SHELL_LANGUAGES = {"sh", "bash", "shell", "console"}
_ENVIRONMENT = frozenset(
    {"HOME", "PWD", "OLDPWD", "USER", "PATH", "SHELL", "TMPDIR"})
_DEFINITION = re.compile(
    r"(?:^|[\s;&|(])(?:(?:export|local|readonly)\s+)?([A-Za-z_]\w*)\+?="
    r"|\bfor\s+([A-Za-z_]\w*)\s+in\b"
    r"|\bread\s+(?:-\w+\s+)*([A-Za-z_]\w*(?:\s+[A-Za-z_]\w*)*)")
_USE = re.compile(r"(?<!\\)\$\{?([A-Za-z_]\w*)")
_COMMENT = re.compile(r"(?:^|\s)#.*$")
_SINGLE_QUOTED = re.compile(r"'[^']*'")
_EXAMPLE_BEGIN = "// --- README example starts here ---"
_EXAMPLE_END = "// --- README example ends here ---"
_README_EXAMPLE_SOURCE = "docs/examples/unary_example.cc"


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


def _shell_lines(lines):
    """(line number, text) of each line of shell code (see the docstring)."""
    fenced, language = False, ""
    after_blank, indented = True, False
    for number, line in enumerate(lines, 1):
        fence = _SHELL_FENCE.match(line)
        if fence:
            if fenced:
                fenced = False
            else:
                fenced, language = True, fence.group(1).lower()
            after_blank = indented = False
            continue
        if fenced:
            if language in _SHELL_LANGUAGES:
                yield number, line
            continue
        if not line.strip():
            after_blank = True
            continue
        if line.startswith(("    ", "\t")) and (after_blank or indented):
            indented = True
            yield number, line
        else:
            indented = False
        after_blank = False


def undefined_variables(lines):
    """(line, name) for each shell variable used before it is defined."""
    defined = set(_ENVIRONMENT)
    problems = []
    for number, line in _shell_lines(lines):
        code = _SINGLE_QUOTED.sub("''", _COMMENT.sub("", line))
        events = []
        for match in _DEFINITION.finditer(code):
            for group in match.groups():
                for name in (group or "").split():
                    events.append((match.start(), 0, name))
        for match in _USE.finditer(code):
            events.append((match.start(), 1, match.group(1)))
        for _, is_use, name in sorted(events):
            if not is_use:
                defined.add(name)
            elif name not in defined:
                problems.append((number, name))
    return problems


def _fenced_blocks(lines, language):
    """The text of each fenced block with this info string."""
    blocks, current = [], None
    for line in lines:
        fence = _SHELL_FENCE.match(line)
        if fence and current is None:
            current = [] if fence.group(1) == language else False
        elif fence:
            if current is not False:
                blocks.append("\n".join(current))
            current = None
        elif isinstance(current, list):
            current.append(line)
    return blocks


def marked_example(source_lines):
    """The parts of a source between the README example markers, unindented
    and joined with a blank line."""
    parts, current = [], None
    for line in source_lines:
        if line.strip() == _EXAMPLE_BEGIN:
            current = []
        elif line.strip() == _EXAMPLE_END and current is not None:
            parts.append(textwrap.dedent("\n".join(current)).strip("\n"))
            current = None
        elif current is not None:
            current.append(line)
    return "\n\n".join(parts)


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

    def test_shell_variables_are_defined(self):
        for doc in self.docs:
            with self.subTest(doc=doc):
                problems = undefined_variables(self._read(doc))
                self.assertEqual(
                    [], problems,
                    "%s: shell code uses variables it never defines: %s" % (
                        doc, ", ".join("line %d: $%s" % p for p in problems)))

    def test_readme_example_is_the_unary_example(self):
        blocks = _fenced_blocks(self._read("README.md"), "c++")
        self.assertEqual(1, len(blocks), "README.md: one c++ block expected")
        example = marked_example(self._read(_README_EXAMPLE_SOURCE))
        self.assertTrue(example, "%s: no marked example" %
                        _README_EXAMPLE_SOURCE)
        self.assertMultiLineEqual(
            example, blocks[0],
            "README.md's example differs from the marked code of %s" %
            _README_EXAMPLE_SOURCE)

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

    def test_shell_variables(self):
        lines = ["```sh", "B=bin/x; $B --y=$Y  # not $Z", "```",
                 "text $W", "", "    for f in a; do echo \"$f $HOME\"; done",
                 "    awk '{print $NF}' ${B}/z", "", "```make", "$(CC) $Q",
                 "```", "```bash", "read -r P Q; echo $P$Q \\$R", "```"]
        self.assertEqual([(2, "Y")], undefined_variables(lines))

    def test_marked_example(self):
        source = ["a", "// --- README example starts here ---", "int x;",
                  "// --- README example ends here ---", "f() {",
                  "  // --- README example starts here ---", "  y();",
                  "    z();", "  // --- README example ends here ---", "}"]
        self.assertEqual("int x;\n\ny();\n  z();", marked_example(source))

    def test_links(self):
        lines = ["[a](design.md#x) [b](https://x.org/y) [c](#z)",
                 "[d](../nothing.md)", "```", "[e](nothing)", "```",
                 "`[f](nothing)`"]
        self.assertEqual([(2, "../nothing.md")],
                         broken_links(self.root, "docs/x.md", lines))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
