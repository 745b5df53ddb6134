#!/usr/bin/env bash
# Stops a broker started by start.sh DIR: SIGTERM to its process group, then
# SIGKILL if it is still there after KAFKA_IGGY_STOP_TIMEOUT seconds
# (default 20). Keeps DIR (its log stays readable); a no-op when nothing runs.
#
# Usage: scripts/kafka/stop.sh DIR
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 DIR" >&2; exit 2; }
pidfile="$1/pid"
[[ -f "$pidfile" ]] || exit 0
pid="$(cat "$pidfile")"
if kill -TERM -- "-$pid" 2>/dev/null; then
    deadline=$((SECONDS + ${KAFKA_IGGY_STOP_TIMEOUT:-20}))
    while kill -0 -- "-$pid" 2>/dev/null; do
        if ((SECONDS >= deadline)); then
            echo "kafka/stop: broker group $pid still running after SIGTERM; sending SIGKILL" >&2
            kill -KILL -- "-$pid" 2>/dev/null || true
            break
        fi
        sleep 0.2
    done
fi
rm -f "$pidfile"
