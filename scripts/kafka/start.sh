#!/usr/bin/env bash
# Starts a single-node Apache Kafka broker (KRaft, combined broker and
# controller) from the jars of install.sh: loopback only, ports picked at run
# time, a bounded heap. Formats a fresh storage dir, starts the broker in a
# process group of its own, waits until it answers an ApiVersions request, and
# prints its bootstrap address (host:port) as the only line on stdout.
#
# Usage: scripts/kafka/start.sh DIR [--watch PID]
#   DIR       a work dir of this broker (created; its data, config and log
#             live there: DIR/server.properties, DIR/server.log, DIR/data)
#   --watch   stop the broker when process PID exits (for a test binary that
#             may die before it calls stop.sh)
# Writes DIR/pid (the broker's process group id), DIR/bootstrap and
# DIR/version. Stop it with scripts/kafka/stop.sh DIR.
# Environment: KAFKA_VERSION, KAFKA_IGGY_CACHE, KAFKA_IGGY_JVM_OPTS as for
# run.sh; KAFKA_IGGY_START_TIMEOUT (seconds, default 90).
# KAFKA_IGGY_BROKER_LISTENERS: extra listeners, space-separated security
# protocols (SSL, SASL_SSL, SASL_PLAINTEXT), each named as its protocol on a
# port of its own, written to DIR/listener.NAME (host:port);
# KAFKA_IGGY_BROKER_PROPS: a file of properties appended to
# server.properties (their TLS and SASL settings); KAFKA_IGGY_BROKER_SCRAM:
# SCRAM credentials stored at format time, space-separated (kafka-storage
# --add-scram each, e.g. 'SCRAM-SHA-512=[name=carol,password=secret]').
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=versions.sh
source "$here/versions.sh"
[[ $# -ge 1 ]] || { echo "usage: $0 DIR [--watch PID]" >&2; exit 2; }
dir="$1"; shift
watch=""
if [[ "${1:-}" == --watch ]]; then watch="$2"; shift 2; fi
version="${KAFKA_VERSION:-${KAFKA_VERSIONS%% *}}"
export KAFKA_VERSION="$version"
timeout="${KAFKA_IGGY_START_TIMEOUT:-90}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
if [[ -f "$dir/pid" ]] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
    echo "kafka/start: a broker is already running from $dir (pid $(cat "$dir/pid"))" >&2
    exit 1
fi
rm -rf "$dir/data" "$dir/pid" "$dir/bootstrap"

# Two free loopback ports (broker, controller) and a cluster id: 16 random
# bytes as URL-safe base64 without padding, not starting with '-' (Kafka's
# own rule for the ids it generates).
extra=(${KAFKA_IGGY_BROKER_LISTENERS:-})
read -r bport cport cluster_id eports < <(python3 - "${#extra[@]}" <<'PY'
import base64, os, socket, sys
socks = [socket.socket() for _ in range(2 + int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
ports = [s.getsockname()[1] for s in socks]
for s in socks:
    s.close()
while True:
    cid = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
    if not cid.startswith("-"):
        break
print(ports[0], ports[1], cid, ",".join(map(str, ports[2:])))
PY
)
IFS=, read -r -a eport <<<"$eports"
listeners="PLAINTEXT://127.0.0.1:$bport"
protomap="PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
for i in "${!extra[@]}"; do
    listeners="$listeners,${extra[$i]}://127.0.0.1:${eport[$i]}"
    protomap="$protomap,${extra[$i]}:${extra[$i]}"
done

cat >"$dir/server.properties" <<EOF
# Written by scripts/kafka/start.sh: single-node KRaft, loopback only.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=$listeners,CONTROLLER://127.0.0.1:$cport
advertised.listeners=$listeners
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=$protomap
log.dirs=$dir/data
num.network.threads=2
num.io.threads=4
num.partitions=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=10
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
# The suites write records with CreateTimes years in the past (0 ms, 2001,
# 2023); time-based retention would delete them mid-run. Retention stays
# configured (topics may still set retention.ms) but never runs in a test.
log.retention.ms=-1
log.retention.check.interval.ms=86400000
log.initial.task.delay.ms=86400000
EOF

if [[ -n "${KAFKA_IGGY_BROKER_PROPS:-}" ]]; then
    cat "$KAFKA_IGGY_BROKER_PROPS" >>"$dir/server.properties"
fi
for i in "${!extra[@]}"; do
    echo "127.0.0.1:${eport[$i]}" >"$dir/listener.${extra[$i]}"
done

start=$(date +%s%N)
format_extra=()
read -r -a scrams <<<"${KAFKA_IGGY_BROKER_SCRAM:-}"
for s in "${scrams[@]}"; do
    format_extra+=(--add-scram "$s")
done
if ! "$here/run.sh" storage format -t "$cluster_id" -c "$dir/server.properties" "${format_extra[@]}" >"$dir/format.log" 2>&1; then
    echo "kafka/start: formatting the storage dir failed (Kafka $version):" >&2
    cat "$dir/format.log" >&2
    exit 1
fi

# setsid: the broker leads a process group of its own, so stop.sh can end it
# and everything it started with one signal.
setsid "$here/run.sh" server "$dir/server.properties" >"$dir/server.log" 2>&1 </dev/null &
pid=$!
echo "$pid" >"$dir/pid"
echo "$version" >"$dir/version"

if [[ -n "$watch" ]]; then
    # Ends the broker when the watched process is gone; ends itself when the
    # broker is gone first.
    nohup bash -c '
        while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 1; done
        kill -TERM -- "-$2" 2>/dev/null || true
    ' kafka-watch "$watch" "$pid" >/dev/null 2>&1 &
fi

# Poll until the broker answers ApiVersions v0 on its listener (its socket
# server accepts requests only once the broker has started), the process dies,
# or the deadline passes.
if ! python3 - "$bport" "$pid" "$timeout" <<'PY'
import os, socket, struct, sys, time
port, pid, timeout = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
deadline = time.monotonic() + timeout
client = b"kafka-iggy-start"
req = struct.pack(">hhih", 18, 0, 1, len(client)) + client
req = struct.pack(">i", len(req)) + req
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit("the broker process exited")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.settimeout(5)
            s.sendall(req)
            head = s.recv(8)
            if len(head) == 8 and struct.unpack(">ii", head)[1] == 1:
                sys.exit(0)
    except OSError:
        pass
    time.sleep(0.2)
sys.exit("no ApiVersions answer within %.0f s" % timeout)
PY
then
    echo "kafka/start: Kafka $version did not come up on 127.0.0.1:$bport; last lines of $dir/server.log:" >&2
    tail -n 60 "$dir/server.log" >&2 || true
    kill -TERM -- "-$pid" 2>/dev/null || true
    exit 1
fi
echo "127.0.0.1:$bport" >"$dir/bootstrap"
echo "kafka/start: Kafka $version (KRaft, pid $pid) answers on 127.0.0.1:$bport after $(( ($(date +%s%N) - start) / 1000000 )) ms" >&2
echo "127.0.0.1:$bport"
