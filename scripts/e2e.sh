#!/usr/bin/env bash
# make e2e: end-to-end checks with clients we did not write.
#
# 1. The official Iggy Rust SDK (crate iggy =0.11.0) drives the embedded Iggy
#    server through scripts/conformance (login, PAT, streams/topics/options,
#    send/poll in every strategy, offsets, consumer groups).
#
# Everything it needs is installed by cargo from crates.io; the embedded server
# is built from this tree and started as a process on a free loopback port.
set -euo pipefail
cd "$(dirname "$0")/.."

workdir="$(mktemp -d)"
pid=""
cleanup() {
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    rm -rf "$workdir"
}
trap cleanup EXIT

echo "== e2e: building kafka-iggy"
go build -o "$workdir/kafka-iggy" ./cmd/kafka-iggy

# Build the conformance driver first: a cold build takes minutes.
echo "== e2e: building the Rust SDK conformance driver"
CONFORMANCE_BUILD_ONLY=1 bash scripts/conformance/run.sh

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')"
echo "== e2e: embedded Iggy server on 127.0.0.1:$port"
"$workdir/kafka-iggy" embedded-iggy --listen "127.0.0.1:$port" --data-dir "$workdir/data" >"$workdir/embedded.log" 2>&1 &
pid=$!

status=0
bash scripts/conformance/run.sh "127.0.0.1:$port" || status=$?
if [[ $status -ne 0 ]]; then
    echo "== e2e: conformance failed (exit $status); embedded server log:" >&2
    tail -n 200 "$workdir/embedded.log" >&2 || true
fi
exit $status
