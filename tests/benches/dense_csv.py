#!/usr/bin/env python3
"""A dense customer table for `dpsctl detect` (docs/BENCHMARKS.md, issue 41): an id, a name, a
valid SSN, an email address, a city and a plan on every row, until the file holds SIZE bytes.

    python3 tests/benches/dense_csv.py OUT.csv [SIZE]   # SIZE defaults to 42,000,000
"""
import random
import sys

FIRST = ["james", "mary", "robert", "patricia", "john", "jennifer", "michael", "linda",
         "david", "elizabeth", "william", "barbara", "richard", "susan", "joseph", "jessica",
         "thomas", "sarah", "charles", "karen"]
LAST = ["smith", "johnson", "williams", "brown", "jones", "garcia", "miller", "davis",
        "rodriguez", "martinez", "hernandez", "lopez", "gonzalez", "wilson", "anderson",
        "thomas", "taylor", "moore", "jackson", "martin"]
CITIES = ["Springfield", "Riverton", "Fairview", "Madison", "Georgetown", "Salem", "Franklin",
          "Clinton", "Greenville", "Bristol"]
DOMAINS = ["example.com", "mail.example.org", "corp.example.net"]
PLANS = ["basic", "plus", "pro", "enterprise"]


def main():
    out = sys.argv[1]
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 42_000_000
    rng = random.Random(7)
    with open(out, "w") as f:
        f.write("customer_id,name,ssn,email,city,plan\n")
        n = 0
        while f.tell() < size:
            n += 1
            area = rng.randint(1, 899)
            while area == 666:
                area = rng.randint(1, 899)
            ssn = f"{area:03d}-{rng.randint(1, 99):02d}-{rng.randint(1, 9999):04d}"
            first, last = rng.choice(FIRST), rng.choice(LAST)
            f.write(f"{100000 + n},{first.title()} {last.title()},{ssn},"
                    f"{first}.{last}{n % 1000}@{rng.choice(DOMAINS)},{rng.choice(CITIES)},"
                    f"{rng.choice(PLANS)}\n")


if __name__ == "__main__":
    main()
