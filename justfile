# Conveniences only: every recipe is one plain cargo command you can run without just.

# Start the whole system (Postgres, migrations, both services, the demo store and its scan).
up:
    cargo run --release -p devstack

# Run every test (starts its own throwaway Postgres).
test:
    cargo test --workspace

fmt:
    cargo fmt --all

lint:
    cargo fmt --all --check
    bash .ci/check-layering
    cargo clippy --workspace --all-targets -- -D warnings

# Benchmarks (criterion); numbers go in docs/BENCHMARKS.md.
bench:
    cargo bench --workspace

# What CI runs.
ci:
    bash .ci/run
