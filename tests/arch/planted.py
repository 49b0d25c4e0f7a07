"""A planted source tree for the rule tests of tests/arch: writes `files` (path relative to the root -> text) into a
temporary root and runs a tools/ check on it with --root."""
import os
import subprocess
import sys
import tempfile


def run_check(check, files):
    """(exit code, stdout + stderr) of `check --root TMP` on a tree holding `files`."""
    with tempfile.TemporaryDirectory() as d:
        for rel, text in files.items():
            os.makedirs(os.path.join(d, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(d, rel), "w") as fh:
                fh.write(text)
        p = subprocess.run([sys.executable, check, "--root", d], capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr
