#!/usr/bin/env python3
"""The Parquet benchmark's inputs (docs/BENCHMARKS.md, "Parquet"): a dense customer table
(tests/benches/dense_csv.py: an id, a name, an SSN, an email, a city and a plan on every row)
of about 100 MiB of CSV, written by pyarrow both as Parquet (snappy, pyarrow's defaults) and
as CSV, so that both hold the same values; with --big, about 1 GiB of it as one Parquet file (about 1 GiB on disk, 3.2 GiB as CSV).

    python3 -m venv /tmp/fixtures && /tmp/fixtures/bin/pip install pyarrow
    /tmp/fixtures/bin/python tests/benches/parquet_vs_csv.py OUT_DIR [--big]
"""
import os
import subprocess
import sys

import pyarrow.csv as pc
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    out = sys.argv[1]
    big = "--big" in sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    source = os.path.join(out, "source.csv")
    if not os.path.exists(source):
        subprocess.run(
            [sys.executable, os.path.join(HERE, "dense_csv.py"), source, str(100 << 20)],
            check=True,
        )
    # Everything read as text, as the CSV holds it: the id stays a string of digits.
    options = pc.ConvertOptions(column_types={"customer_id": "string"})
    table = pc.read_csv(source, convert_options=options)
    pq.write_table(table, os.path.join(out, "customers.parquet"), compression="snappy")
    pc.write_csv(table, os.path.join(out, "customers.csv"))
    if big:
        with pq.ParquetWriter(
            os.path.join(out, "big.parquet"), table.schema, compression="snappy"
        ) as writer:
            for _ in range(32):
                writer.write_table(table)


if __name__ == "__main__":
    main()
