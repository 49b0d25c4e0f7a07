#!/usr/bin/env python3
"""Every test tests/ctest_serial.cmake names is a TEST(Suite, Name) of tests/: ctest ignores a property set on a name
it does not know, so a renamed test would lose RUN_SERIAL silently."""
import pathlib
import re
import sys

tests = pathlib.Path(__file__).resolve().parent.parent
listed = re.search(r"foreach\(t\s+(.*?)\)", (tests / "ctest_serial.cmake").read_text(), re.S).group(1).split()
defined = set()
for src in tests.rglob("*.cpp"):
    defined.update(f"{a}.{b}" for a, b in re.findall(r"^TEST(?:_F)?\((\w+),\s*(\w+)\)", src.read_text(), re.M))
missing = [n for n in listed if n not in defined]
if not listed or missing:
    sys.exit(f"tests/ctest_serial.cmake names no TEST in tests/: {missing or 'its list is empty'}")
print(f"{len(listed)} serial tests, each defined")
