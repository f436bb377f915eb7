#!/usr/bin/env bash
# Builds the binary that ships (`just dist`, the Docker image): the `dist` profile (whole-program
# LTO) into target/dist/skipper.
#
# On a glibc Linux host it is linked statically (`crt-static`, still position-independent): a
# process then starts without the dynamic loader opening, mapping and binding libc, libm and
# libgcc_s — about 0.5 ms of every start, a tenth of a `-p` run (tests/bench/README.md, twelfth
# pass). glibc's static library carries its `files` and `dns` name services, which is what
# /etc/nsswitch.conf names in the Docker image; a host that resolves names through another
# module (mDNS, LDAP) can build with SKIPPER_DIST_DYNAMIC=1. The flag needs an explicit
# `--target`: given without one, it would also apply to proc-macro crates, which cannot be static.
set -euo pipefail
cd "$(dirname "$0")/.."
host=$(rustc -vV | sed -n 's/^host: //p')
case "$host" in
    *-linux-gnu)
        if [ -z "${SKIPPER_DIST_DYNAMIC:-}" ]; then
            RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static" \
                cargo build --profile dist "$@" -p skipper --bin skipper --target "$host"
            mkdir -p target/dist
            install -m 0755 "target/$host/dist/skipper" target/dist/skipper
            exit 0
        fi
        ;;
esac
cargo build --profile dist "$@" -p skipper --bin skipper
