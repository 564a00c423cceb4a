#!/usr/bin/env python3
"""The archive benchmark's inputs (docs/BENCHMARKS.md, "Archives"): ten dense customer CSVs of
10 MiB each (tests/benches/dense_csv.py), the same ten in one deflated ZIP (about 100 MiB of
CSV), and, with --big, one ZIP of those ten ten times over (about 1 GiB of CSV).

    python3 tests/benches/archive_vs_plain.py OUT_DIR [--big]
"""
import os
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    out = sys.argv[1]
    big = "--big" in sys.argv[2:]
    os.makedirs(os.path.join(out, "csv"), exist_ok=True)
    names = [os.path.join(out, "csv", f"customers_{i}.csv") for i in range(10)]
    for name in names:
        if not os.path.exists(name):
            subprocess.run(
                [sys.executable, os.path.join(HERE, "dense_csv.py"), name, str(10 << 20)],
                check=True,
            )
    with zipfile.ZipFile(os.path.join(out, "export.zip"), "w", zipfile.ZIP_DEFLATED) as z:
        for name in names:
            z.write(name, "exports/" + os.path.basename(name))
    if big:
        with zipfile.ZipFile(os.path.join(out, "big.zip"), "w", zipfile.ZIP_DEFLATED) as z:
            for r in range(10):
                for name in names:
                    z.write(name, f"exports/{r}/" + os.path.basename(name))


if __name__ == "__main__":
    main()
