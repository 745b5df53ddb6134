#!/usr/bin/env bash
# Build an SDK conformance driver and run it against an Iggy-protocol server:
# CONFORMANCE_SDK=0.11 (default) is scripts/conformance (official `iggy` crate
# pinned =0.11.0, protocol 0.11), CONFORMANCE_SDK=edge is
# scripts/conformance/edge (the newest published edge build, protocol 0.12;
# run it against a server in 0.12 mode).
#
# Usage: scripts/conformance/run.sh [HOST:PORT] [extra iggy-conformance args]
#   address: first argument, else $IGGY_ADDR, else 127.0.0.1:8090
#
# Environment:
#   CARGO_TARGET_DIR          build directory (default: $HOME/.cache/kafka-iggy/conformance-target)
#   CONFORMANCE_PROFILE       release (default) or debug
#   CONFORMANCE_WAIT_SECONDS  how long to wait for the server port (default 30, 0 = no wait)
#   CONFORMANCE_BUILD_ONLY=1  build and exit
#   CONFORMANCE_SDK           0.11 (default) or edge
#   IGGY_USERNAME / IGGY_PASSWORD  credentials (default iggy / iggy)
#
# Installs nothing but the crates pinned in Cargo.lock (through cargo itself).
# The output ends with "N passed, M failed"; the exit status is non-zero when a
# step failed, the build failed (2) or the server never became reachable (3).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
case "${CONFORMANCE_SDK:-0.11}" in
    0.11) manifest="$here/Cargo.toml"; bin_name=iggy-conformance ;;
    edge) manifest="$here/edge/Cargo.toml"; bin_name=iggy-conformance-edge ;;
    *) echo "conformance: CONFORMANCE_SDK must be 0.11 or edge, got '${CONFORMANCE_SDK}'" >&2; exit 2 ;;
esac
profile="${CONFORMANCE_PROFILE:-release}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/kafka-iggy/conformance-target}"

addr="${IGGY_ADDR:-127.0.0.1:8090}"
if [[ $# -gt 0 && "$1" != -* ]]; then
    addr="$1"
    shift
fi

if ! command -v cargo >/dev/null 2>&1; then
    echo "conformance: cargo not found on PATH (a Rust toolchain >= 1.95 is required; this script installs none)" >&2
    exit 2
fi

case "$profile" in
    release) profile_flag=(--release); bin_dir=release ;;
    debug) profile_flag=(); bin_dir=debug ;;
    *) echo "conformance: CONFORMANCE_PROFILE must be release or debug, got '$profile'" >&2; exit 2 ;;
esac

# Download exactly what Cargo.lock pins (a no-op when the registry cache is
# warm); without network, carry on with whatever is cached and build offline.
if ! cargo fetch --manifest-path "$manifest" --locked --quiet; then
    echo "conformance: cargo fetch failed (no network?); trying an offline build" >&2
fi
echo "conformance: building $bin_name ($profile, target dir $CARGO_TARGET_DIR)" >&2
if ! cargo build --manifest-path "$manifest" --locked --offline "${profile_flag[@]}"; then
    echo "conformance: build failed" >&2
    exit 2
fi
bin="$CARGO_TARGET_DIR/$bin_dir/$bin_name"

if [[ "${CONFORMANCE_BUILD_ONLY:-0}" == "1" ]]; then
    echo "conformance: built $bin" >&2
    exit 0
fi

# Wait for the server to accept TCP connections.
wait_seconds="${CONFORMANCE_WAIT_SECONDS:-30}"
if [[ "$wait_seconds" -gt 0 ]]; then
    host="${addr%:*}"
    port="${addr##*:}"
    host="${host#[}"
    host="${host%]}"
    deadline=$((SECONDS + wait_seconds))
    until (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; do
        if [[ $SECONDS -ge $deadline ]]; then
            echo "conformance: nothing listening on $addr after ${wait_seconds}s" >&2
            exit 3
        fi
        sleep 0.5
    done
fi

exec "$bin" --addr "$addr" "$@"
