#!/usr/bin/env bash
# make e2e: end-to-end checks with clients we did not write.
#
# 1. The official Iggy Rust SDK (crate iggy =0.11.0) drives the embedded Iggy
#    server through scripts/conformance (login, PAT, streams/topics/options,
#    send/poll in every strategy, offsets, consumer groups); then the newest
#    published edge SDK (scripts/conformance/edge, protocol 0.12) drives it in
#    0.12 mode through every command the gateway uses.
# 2. The compatibility matrix (scripts/e2e/compat): every real Kafka client of
#    scripts/e2e and franz-go's kgo integration suite against a real Apache
#    Kafka broker (the reference), the sidecar and kfake; it rewrites
#    docs/COMPATIBILITY.md and fails when a cell green on Kafka is red on the
#    sidecar without an intended difference. About 10 minutes.
# 3. Protocol 0.12: every client's round trip, kcat's read-back and the
#    client scenarios (groups, commits, rebalances) again, on the sidecar only
#    (iggy.protocol auto) over the embedded server in 0.12 mode (the Iggy 0.10
#    wire). About 2 minutes.
# 4. The fault workload's short version (scripts/fault -smoke, make
#    fault-smoke): three sidecars and the Iggy server killed, stopped and
#    rolled under idempotent producers and a group; fails on any anomaly.
#    2-3 minutes.
#
# Everything it needs is installed first (make e2e depends on test-deps: cargo
# crates, Maven jars, PyPI packages, Debian packages); the embedded server and
# the sidecar are built from this tree and started as processes on free
# loopback ports. KAFKA_IGGY_E2E_COMPAT=0 skips step 2 (for a quick local run;
# CI never sets it).
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

# Build the conformance drivers first: a cold build takes minutes.
echo "== e2e: building the Rust SDK conformance drivers (0.11.0 and edge)"
CONFORMANCE_BUILD_ONLY=1 bash scripts/conformance/run.sh
CONFORMANCE_BUILD_ONLY=1 CONFORMANCE_SDK=edge bash scripts/conformance/run.sh

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')"
echo "== e2e: embedded Iggy server on 127.0.0.1:$port"
"$workdir/kafka-iggy" embedded-iggy --listen "127.0.0.1:$port" --data-dir "$workdir/data" >"$workdir/embedded.log" 2>&1 &
pid=$!

status=0
bash scripts/conformance/run.sh "127.0.0.1:$port" || status=$?
if [[ $status -ne 0 ]]; then
    echo "== e2e: conformance failed (exit $status); embedded server log:" >&2
    tail -n 200 "$workdir/embedded.log" >&2 || true
    exit $status
fi
kill "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
pid=""

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')"
echo "== e2e: embedded Iggy server in protocol 0.12 mode on 127.0.0.1:$port (edge SDK conformance)"
"$workdir/kafka-iggy" embedded-iggy --protocol 0.12 --listen "127.0.0.1:$port" >"$workdir/embedded-012.log" 2>&1 &
pid=$!
status=0
CONFORMANCE_SDK=edge bash scripts/conformance/run.sh "127.0.0.1:$port" || status=$?
if [[ $status -ne 0 ]]; then
    echo "== e2e: edge conformance failed (exit $status); embedded server log:" >&2
    tail -n 200 "$workdir/embedded-012.log" >&2 || true
    exit $status
fi
kill "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
pid=""

# The client round trips against the sidecar on a 0.12 Iggy (see 3. above).
e2e_012() {
    echo "== e2e: client round trips, kcat and the client scenarios against the sidecar on protocol 0.12"
    KAFKA_IGGY_E2E_IGGY_PROTOCOL=0.12 KAFKA_IGGY_E2E_TARGETS=sidecar go test -count=1 -timeout 20m ./scripts/e2e \
        -run '^(TestJavaRoundTrip|TestJava39RoundTrip|TestPythonRoundTrip|TestKcatRoundTrip|TestKcatReadsEveryCase|TestKgoRoundTrip|TestSaramaRoundTrip|TestKafkaGoRoundTrip|TestConfluentRoundTrip|TestScenarios)$'
}

echo "== e2e: fault workload, short version (scripts/fault -smoke)"
go run ./scripts/fault -smoke -bin "$workdir/kafka-iggy"

if [[ "${KAFKA_IGGY_E2E_COMPAT:-1}" == 0 ]]; then
    if [[ "${CI:-}" == true ]]; then
        echo "== e2e: KAFKA_IGGY_E2E_COMPAT=0 is not allowed in CI" >&2
        exit 1
    fi
    echo "== e2e: compatibility matrix skipped (KAFKA_IGGY_E2E_COMPAT=0)"
    e2e_012
    exit 0
fi
echo "== e2e: compatibility matrix (Apache Kafka, the sidecar, kfake; writes docs/COMPATIBILITY.md)"
go run ./scripts/e2e/compat -out docs/COMPATIBILITY.md  # logs stay in the temporary dir it names
e2e_012
