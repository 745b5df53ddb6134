#!/usr/bin/env bash
# Runs one Apache Kafka command-line tool (or the broker) from the jars that
# install.sh put in $KAFKA_IGGY_CACHE/kafka-VERSION/libs, as
# `java -cp 'libs/*' <main class>`, the way the distribution's bin/ scripts do.
#
# Usage: scripts/kafka/run.sh TOOL [ARG...]
#   TOOL: server, storage, topics, consumer-groups, configs, producer-perf-test,
#         consumer-perf-test, console-producer, console-consumer, get-offsets,
#         metadata-quorum (the mapping to main classes is in
#         kafka-VERSION/mainclasses, resolved at install time).
# Environment:
#   KAFKA_VERSION           which installed version (default: the first of
#                           KAFKA_VERSIONS in versions.sh, the newest 4.x)
#   KAFKA_IGGY_CACHE        default $HOME/.cache/kafka-iggy
#   KAFKA_IGGY_JVM_OPTS     JVM options (default: a small heap, quick start-up
#                           for tools; -Xmx512m for the server)
#   KAFKA_IGGY_LOGLEVEL     log level (default WARN for tools, INFO for server)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=versions.sh
source "$here/versions.sh"
[[ $# -ge 1 ]] || { echo "usage: $0 TOOL [ARG...]" >&2; exit 2; }
tool="$1"; shift
version="${KAFKA_VERSION:-${KAFKA_VERSIONS%% *}}"
dir="${KAFKA_IGGY_CACHE:-$HOME/.cache/kafka-iggy}/kafka-$version"
if [[ ! -f "$dir/mainclasses" ]]; then
    echo "kafka/run: Kafka $version is not installed in $dir; run scripts/kafka/install.sh $version" >&2
    exit 1
fi
main="$(sed -n "s/^$tool=//p" "$dir/mainclasses")"
if [[ -z "$main" ]]; then
    echo "kafka/run: unknown tool $tool; known: $(cut -d= -f1 "$dir/mainclasses" | tr '\n' ' ')" >&2
    exit 2
fi
if [[ "$tool" == server ]]; then
    opts="${KAFKA_IGGY_JVM_OPTS:--Xmx512m -Xms512m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true}"
    level="${KAFKA_IGGY_LOGLEVEL:-INFO}"
else
    opts="${KAFKA_IGGY_JVM_OPTS:--Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true}"
    level="${KAFKA_IGGY_LOGLEVEL:-WARN}"
fi
java="${KAFKA_IGGY_JAVA:-java}"
[[ -n "${JAVA_HOME:-}" && -z "${KAFKA_IGGY_JAVA:-}" && -x "$JAVA_HOME/bin/java" ]] && java="$JAVA_HOME/bin/java"
# shellcheck disable=SC2086
exec "$java" $opts \
    -Dkafka.iggy.loglevel="$level" \
    -Dlog4j2.configurationFile="$here/log4j2.properties" \
    -Dlog4j.configuration="file:$here/log4j.properties" \
    -cp "$dir/libs/*" "$main" "$@"
