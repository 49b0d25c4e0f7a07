#!/usr/bin/env python3
"""tools/check_keys.py fails on a key of the table that nothing outside config/ reads (an entry with a member pointer
and a hand-written one), on a key listed as unread that is read, and passes a tree where every key is read."""
import os
import sys

from planted import run_check

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHECK = os.path.join(ROOT, "tools", "check_keys.py")
ACCEPTED = ["task", "mode", "profile", "copy_paste"]


def run(table_keys, reader):
    table = "".join(f'    t.push_back(bool_key("{k}", &C::{k}));\n' for k in ACCEPTED + table_keys)
    table += '    t.push_back({"cache",\n                 [](C& c, const Raw& v) {\n                   c.cache_mode = 1;\n' \
             '                 }});\n'
    files = {"src/config/config_keys.cpp": "void f() {\n" + table + "}\n",
             "src/config/train_config.cpp": "void g(C& cfg) { cfg.epochs = 1; cfg.cache_mode = 2; }\n",
             "src/engine/use.cpp": reader}
    return run_check(CHECK, files)


def main():
    cases = [
        # (keys, reader code, expected rc, text the output must hold)
        (["epochs"], "int h(const C& cfg) { return cfg.epochs + cfg.cache_mode; }", 0, "0 problem(s)"),
        (["epochs"], "int h(const C& cfg) { return cfg.cache_mode; }", 1, "key 'epochs' (TrainConfig::epochs) is read"),
        (["epochs"], "int h(const C& cfg) { return cfg.epochs; }", 1, "key 'cache' (TrainConfig::cache_mode) is read"),
        (["epochs"], "int h(const C* c) { return c->epochs + c->cache_mode + c->profile; }", 1,
         "key 'profile' is listed as unread"),
        (["epochs"], "int h(const D& d) { return d.epochs + d.cache_mode; }  // another struct's field", 1,
         "key 'epochs'"),
    ]
    failures = 0
    for keys, reader, want_rc, want in cases:
        rc, out = run(keys, reader)
        if rc != want_rc or want not in out:
            print(f"FAIL: {reader!r}: rc {rc} (want {want_rc}), output lacks {want!r}:\n{out}")
            failures += 1
    print(f"key rule: {len(cases)} cases as expected" if not failures else f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
