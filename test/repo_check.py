#!/usr/bin/env python3
"""Repository checks that keep the code base's own rules from eroding (run by ctest, no root):

- README.md's "Map of the code" names every source file of lib/ and plugin/ (as `lib/<m>/<stem>`);
- no production file (lib/, plugin/) is longer than 400 lines;
- no top-level function in lib/ or plugin/ is longer than 60 lines unless the comment right above
  it says why ("Long because ...");
- no comment cites a document that is not in the repository (design sections, reference files,
  issue numbers);
- every C++ file of lib/, plugin/ and test/ is in .clang-format's style;
- ctest's Testing/ output is not committed.
"""
import os
import re
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 60
SOURCE_EXT = (".h", ".cpp")
# A section sign is a citation of a document unless a public spec's name comes right before it.
CITATION = re.compile(r"design(\.md)?\s*§|\bdesign §|reference/[a-z-]+\.md|\bissues? \d+(\b|[–-])"
                      r"|(?<!NPWG )(?<!spec )(?<!SPEC\.md )§\s*\d")


def tracked(*tops):
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "--", *tops], check=True,
                         capture_output=True, text=True).stdout.split()
    return [p for p in out if os.path.exists(os.path.join(ROOT, p))]


def production_sources():
    return [p for p in tracked("lib", "plugin") if p.endswith(SOURCE_EXT)]


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def long_functions(text):
    """(first line, length) of each top-level function body longer than the limit. A definition
    starts at column 0 and ends at the next line that is exactly "}"."""
    lines = text.split("\n")
    found = []
    i = 0
    while i < len(lines):
        line = lines[i]
        starts = (line and not line[0].isspace() and line.rstrip().endswith("{")
                  and not re.match(r"(namespace|struct|class|enum|union|extern)\b", line)
                  and "=" not in line.split("(")[0] and "(" in line + "".join(lines[max(0, i - 3):i]))
        if not starts:
            i += 1
            continue
        first = i
        while first > 0 and lines[first - 1] and not lines[first - 1].startswith(("}", "//", "#")) \
                and not lines[first - 1].rstrip().endswith((";", "{", "}")):
            first -= 1
        end = i + 1
        while end < len(lines) and lines[end] != "}":
            end += 1
        length = end - first + 1
        above = "\n".join(lines[max(0, first - 8):first]).lower()
        if length > MAX_FUNCTION_LINES and "long because" not in above:
            found.append((first + 1, length))
        i = end + 1
    return found


class RepoCheck(unittest.TestCase):
    def test_readme_maps_every_file(self):
        readme = read("README.md")
        self.assertIn("## Map of the code", readme)
        stems = sorted({p.rsplit(".", 1)[0] for p in production_sources()})
        missing = [s for s in stems if "`" + s + "`" not in readme]
        self.assertEqual(missing, [], "README.md's map does not name these files")

    def test_file_sizes(self):
        big = [(p, n) for p in production_sources() if (n := read(p).count("\n")) > MAX_FILE_LINES]
        self.assertEqual(big, [], "production files over %d lines" % MAX_FILE_LINES)

    def test_function_sizes(self):
        big = [(p, line, n) for p in production_sources() if p.endswith(".cpp")
               for line, n in long_functions(read(p))]
        self.assertEqual(big, [], "functions over %d lines without a comment saying why" % MAX_FUNCTION_LINES)

    def test_no_citations_of_missing_documents(self):
        paths = [p for p in tracked("lib", "plugin", "test", "conf", "examples", "CMakeLists.txt")
                 if p.endswith(SOURCE_EXT + (".py", ".sh", ".txt", ".c", ".go", ".yaml"))
                 and "/corpus/" not in p and p != "test/repo_check.py"]
        hits = []
        for p in paths:
            for n, line in enumerate(read(p).split("\n"), 1):
                if CITATION.search(line):
                    hits.append("%s:%d: %s" % (p, n, line.strip()[:100]))
        self.assertEqual(hits, [], "comments citing documents that are not in the repository")

    def test_cpp_files_are_formatted(self):
        # clang-format is installed by test/install-deps.sh; its absence fails the check.
        files = [p for p in tracked("lib", "plugin", "test") if p.endswith(SOURCE_EXT) and "/corpus/" not in p]
        run = subprocess.run(["clang-format", "--dry-run", "--Werror", *files], cwd=ROOT,
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, "files not in .clang-format's style (run clang-format -i):\n" +
                         "\n".join(sorted({line.split(":")[0] for line in run.stderr.splitlines()
                                            if ": error:" in line})))

    def test_no_committed_ctest_output(self):
        self.assertEqual(tracked("Testing"), [])


if __name__ == "__main__":
    unittest.main()
