#!/usr/bin/env python3
"""Times the hostile bodies of the hostile-input tests against a running platform-api.

Usage: start the system (`cargo run -p devstack`, or `--release`), then
    python3 tests/benches/hostile_bodies.py <admin access token> [base URL]
The base URL defaults to devstack's platform-api, http://127.0.0.1:8081/api/v1. Each body is
sent 7 times with curl; the first is a warm-up. The report gives the status codes seen, and
the median and maximum of the other six, in milliseconds. Memory is asserted by
bins/platform-api/tests/process/hostile.rs; time is measured here, not asserted in a test.
"""
import subprocess
import sys
import tempfile


def billion_laughs():
    doc = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    previous = "a"
    for name in "bcdefghi":
        doc += f"{name}: &{name} [{','.join(['*' + previous] * 10)}]\n"
        previous = name
    return doc.encode()


CASES = [
    ("alias bomb (YAML)", "/governance/policies", "application/yaml", billion_laughs()),
    ("10,000-deep JSON", "/governance/policies", "application/json",
     ('{"a":' + "[" * 10000 + "1" + "]" * 10000 + "}").encode()),
    ("10 MiB body", "/classifiers", "application/json", b"x" * (10 << 20)),
    ("invalid UTF-8 (JSON)", "/classifiers", "application/json", b'{"name":"\xff\xfe"}'),
    ("invalid UTF-8 (YAML)", "/governance/policies", "application/yaml", b"kind: \xc3\x28\n"),
]


def main():
    token = sys.argv[1]
    base = sys.argv[2] if len(sys.argv) > 2 else "http://127.0.0.1:8081/api/v1"
    for name, path, content_type, body in CASES:
        with tempfile.NamedTemporaryFile() as f:
            f.write(body)
            f.flush()
            runs = []
            for _ in range(7):
                out = subprocess.run(
                    ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{time_total}",
                     "-H", "Authorization: Bearer " + token, "-H", "Content-Type: " + content_type,
                     "--data-binary", "@" + f.name, base + path],
                    capture_output=True, text=True, check=True).stdout.split()
                runs.append((out[0], float(out[1]) * 1000))
        statuses = sorted({status for status, _ in runs})
        times = sorted(ms for _, ms in runs[1:])
        print(f"{name}: status {','.join(statuses)}, median {times[len(times) // 2]:.1f} ms, "
              f"max {times[-1]:.1f} ms")


if __name__ == "__main__":
    main()
