# Skipper tasks. `./x <recipe>` installs just first on a fresh machine.
set shell := ["bash", "-euo", "pipefail", "-c"]

export CARGO_TERM_COLOR := "never"
listen := env_var_or_default("SKIPPER_LISTEN", "127.0.0.1:8080")
sdk_listen := env_var_or_default("SKIPPER_SDK_LISTEN", "127.0.0.1:4321")

default: test

# Release binaries used by every test suite and by `serve`.
build:
    cargo build --release --workspace --bins

# Start the team server: HTTP + WebSocket on 127.0.0.1:8080, SDK TCP on 127.0.0.1:4321, tenants
# from config/server.toml (none: tenant `default`, token $SKIPPER_TOKEN or ~/.copilot/serve-token),
# state in $COPILOT_HOME (default ~/.copilot, SQLite index).
serve: build sandbox
    ./target/release/skipper serve --listen {{listen}} --sdk-listen {{sdk_listen}}

# Everything: Rust unit+integration tests, then the official SDK suites against the binary.
test: build-tests test-rust test-sdk
    python3 tests/summary.py target/rust-tests.log target/python-tests.log target/node-tests.log

# The binaries and every test binary in one cargo invocation. `cargo test` turns on features of
# shared dependencies that the dev-dependencies ask for, so a separate `cargo build --bins` would
# compile some 60 crates (sqlx, reqwest, axum, every workspace crate) a second time; the binaries
# built here (target/release/skipper, fake-model, mcp-test-server) serve the SDK suites.
build-tests: deps sandbox
    cargo test --release --workspace --no-run

test-rust: build-tests
    mkdir -p target
    if cargo fmt --version >/dev/null 2>&1; then cargo fmt --all --check; else echo "rustfmt not installed; format check skipped"; fi
    cargo test --release --workspace 2>&1 | tee target/rust-tests.log

test-sdk: build-tests
    #!/usr/bin/env bash
    set -uo pipefail
    (just test-python > target/python-tests.log 2>&1; echo $? > target/python-tests.rc) &
    (just test-node > target/node-tests.log 2>&1; echo $? > target/node-tests.rc) &
    wait
    cat target/python-tests.log target/node-tests.log
    py=$(cat target/python-tests.rc); nd=$(cat target/node-tests.rc)
    echo "python suite exit $py, node suite exit $nd"
    [ "$py" = 0 ] && [ "$nd" = 0 ]

test-python:
    python3 -m pip install --quiet --disable-pip-version-check -r tests/python/requirements.txt
    python3 -m pytest tests/python -q -p no:cacheprovider

test-node:
    cd tests/node && npm install --silent --no-audit --no-fund --omit=optional --ignore-scripts
    cd tests/node && npm test

# System packages the tests need beyond the Rust toolchain: OpenSSL headers, which the official
# Rust SDK's build script links (the SDK is a test client only; `build` and `serve` don't need it).
deps:
    #!/usr/bin/env bash
    set -euo pipefail
    if pkg-config --exists openssl 2>/dev/null; then exit 0; fi
    sudo=""; if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends libssl-dev pkg-config

# Bubblewrap, which confines every command a team server's tenants run (crates/sandbox): the
# server refuses to start without it. Debian's package, installed only when missing.
sandbox:
    #!/usr/bin/env bash
    set -euo pipefail
    if command -v bwrap >/dev/null 2>&1; then exit 0; fi
    sudo=""; if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends bubblewrap

# The binary that ships (the Docker image): `skipper` with whole-program LTO, target/dist/skipper
# (statically linked on glibc Linux; see docker/dist.sh).
dist:
    bash docker/dist.sh

# Startup latency, memory, per-turn overhead (see tests/bench/README.md), of the shipped binary.
bench: build dist
    SKIPPER_BIN="${SKIPPER_BIN:-target/dist/skipper}" python3 tests/bench/bench.py

fmt:
    cargo fmt --all

# Regenerate crates/protocol/src/generated from shared/schemas/*.json and crates/protocol-codegen/allowlist.toml.
codegen:
    cargo run -p protocol-codegen

lint:
    cargo clippy --workspace --all-targets -- -D warnings
