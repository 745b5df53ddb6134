#!/usr/bin/env bash
# Installs what the compatibility run (scripts/e2e, `make e2e`) needs beyond
# Go modules, from the package registries only, into a cache that later runs
# reuse. Idempotent: every step compares a stamp and is a no-op when nothing
# changed.
#
#   1. Apache Kafka, broker and command-line tools, for every version in
#      versions.sh: the runtime closure of org.apache.kafka:kafka_2.13 and
#      kafka-tools (plus the logging back end the distribution ships) copied
#      from Maven Central by mvn into
#      $KAFKA_IGGY_CACHE/kafka-VERSION/libs, and the main class of each tool
#      resolved into $KAFKA_IGGY_CACHE/kafka-VERSION/mainclasses.
#   2. The Java programs of scripts/e2e (KafkaRoundTrip.java and
#      KafkaScenarios.java) compiled against each version's kafka-clients into
#      $KAFKA_IGGY_CACHE/kafka-VERSION/classes (gson, which they use to speak
#      JSON, in .../extra).
#   2b. The Kafka apps of scripts/e2e/apps (4.x): kafka-streams with its
#      runtime closure in $KAFKA_IGGY_CACHE/kafka-VERSION/apps,
#      StreamsWordCount.java compiled into .../apps-classes.
#   2c. Kafka Connect (connect-runtime and connect-file, the newest release
#      serving both, apps/connect-pom.xml) in $KAFKA_IGGY_CACHE/connect-VERSION/libs.
#   3. Python: a venv in $KAFKA_IGGY_CACHE/venv with confluent-kafka,
#      kafka-python and the codec modules kafka-python needs, from PyPI
#      (versions pinned in scripts/e2e/python/requirements.txt).
#
# KAFKA_IGGY_CACHE defaults to $HOME/.cache/kafka-iggy. Needs java (17+),
# javac, mvn and python3 with venv; scripts/install-test-deps.sh installs the
# Debian packages when they are missing.
#
# Usage: scripts/kafka/install.sh [VERSION...]   (default: every version)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=versions.sh
source "$here/versions.sh"
cache="${KAFKA_IGGY_CACHE:-$HOME/.cache/kafka-iggy}"
GSON_VERSION=2.15.0
versions=("$@")
[[ ${#versions[@]} -gt 0 ]] || read -r -a versions <<<"$KAFKA_VERSIONS"

log() { echo "kafka/install: $*" >&2; }
die() { log "$*"; exit 1; }

# quiet LABEL CMD...: runs CMD with its output in a log, shown only on failure.
quiet() {
    local label="$1"; shift
    local out
    out="$(mktemp)"
    if ! "$@" >"$out" 2>&1; then
        log "$label failed: $*"
        cat "$out" >&2
        rm -f "$out"
        exit 1
    fi
    rm -f "$out"
}

for tool in java javac mvn python3; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found on PATH (scripts/install-test-deps.sh installs it)"
done

# resolve_mainclasses DIR: writes DIR/mainclasses, one "tool=class" a line,
# picking for each tool the first candidate class present in DIR/libs (tools
# moved between the Scala core and the Java tools module across versions).
resolve_mainclasses() {
    python3 - "$1" <<'PY'
import glob, os, sys, zipfile
d = sys.argv[1]
present = set()
for jar in glob.glob(os.path.join(d, "libs", "*.jar")):
    with zipfile.ZipFile(jar) as z:
        present.update(n[:-6].replace("/", ".") for n in z.namelist() if n.endswith(".class"))
candidates = {
    "server": ["kafka.Kafka"],
    "storage": ["kafka.tools.StorageTool", "org.apache.kafka.tools.StorageTool"],
    "topics": ["org.apache.kafka.tools.TopicCommand", "kafka.admin.TopicCommand"],
    "consumer-groups": ["org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "kafka.admin.ConsumerGroupCommand"],
    "configs": ["org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand"],
    "producer-perf-test": ["org.apache.kafka.tools.ProducerPerformance"],
    "consumer-perf-test": ["org.apache.kafka.tools.ConsumerPerformance", "kafka.tools.ConsumerPerformance"],
    "console-producer": ["org.apache.kafka.tools.ConsoleProducer", "kafka.tools.ConsoleProducer"],
    "console-consumer": ["org.apache.kafka.tools.consumer.ConsoleConsumer", "kafka.tools.ConsoleConsumer"],
    "get-offsets": ["org.apache.kafka.tools.GetOffsetShell", "kafka.tools.GetOffsetShell"],
    "metadata-quorum": ["org.apache.kafka.tools.MetadataQuorumCommand"],
}
missing = []
with open(os.path.join(d, "mainclasses.tmp"), "w") as f:
    for tool, classes in candidates.items():
        found = next((c for c in classes if c in present), None)
        if found is None:
            missing.append(tool)
        else:
            f.write("%s=%s\n" % (tool, found))
if missing:
    sys.exit("no main class found for: " + ", ".join(missing))
os.replace(os.path.join(d, "mainclasses.tmp"), os.path.join(d, "mainclasses"))
PY
}

java_src="$repo/scripts/e2e/java"
for v in "${versions[@]}"; do
    case "$v" in
        4.*) pom="$here/pom-4.x.xml" ;;
        3.*) pom="$here/pom-3.x.xml" ;;
        *) die "no pom for Kafka $v (pom-4.x.xml and pom-3.x.xml cover 4.x and 3.x)" ;;
    esac
    dir="$cache/kafka-$v"
    mkdir -p "$dir"

    # 1. broker and tools jars
    stamp="$( { echo "$v"; cat "$pom"; } | sha256sum | cut -d' ' -f1)"
    if [[ "$(cat "$dir/libs.stamp" 2>/dev/null || true)" != "$stamp" || ! -f "$dir/libs/kafka_2.13-$v.jar" || ! -f "$dir/mainclasses" ]]; then
        log "Kafka $v: copying the broker and tools jars from Maven Central"
        start=$SECONDS
        rm -rf "$dir/libs" "$dir/libs.tmp" "$dir/libs.stamp" "$dir/mainclasses"
        quiet "mvn (Kafka $v)" mvn -q -B -Dstyle.color=never -f "$pom" -Dkafka.version="$v" \
            dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$dir/libs.tmp"
        [[ -f "$dir/libs.tmp/kafka_2.13-$v.jar" && -f "$dir/libs.tmp/kafka-tools-$v.jar" ]] ||
            die "Maven copied no kafka_2.13-$v.jar / kafka-tools-$v.jar into $dir/libs.tmp"
        mv "$dir/libs.tmp" "$dir/libs"
        quiet "resolve main classes (Kafka $v)" resolve_mainclasses "$dir"
        echo "$stamp" >"$dir/libs.stamp"
        log "Kafka $v: $(ls "$dir/libs" | wc -l) jars in $((SECONDS - start)) s"
    fi

    # 2. the Java client programs, compiled against this version's kafka-clients
    sources=("$java_src/KafkaRoundTrip.java" "$repo/scripts/e2e/javacompat/KafkaScenarios.java")
    stamp="$( { echo "$v $GSON_VERSION"; cat "${sources[@]}"; } | sha256sum | cut -d' ' -f1)"
    if [[ "$(cat "$dir/classes.stamp" 2>/dev/null || true)" != "$stamp" || ! -f "$dir/classes/KafkaScenarios.class" ]]; then
        log "Kafka $v: compiling the Java client programs"
        rm -rf "$dir/classes" "$dir/extra" "$dir/classes.stamp"
        mkdir -p "$dir/classes" "$dir/extra"
        quiet "mvn (gson $GSON_VERSION)" mvn -q -B -Dstyle.color=never -f "$pom" \
            dependency:copy -Dartifact="com.google.code.gson:gson:$GSON_VERSION" -DoutputDirectory="$dir/extra"
        quiet "javac (Kafka $v clients)" javac -encoding UTF-8 --release 17 -d "$dir/classes" \
            -cp "$dir/libs/*:$dir/extra/*" "${sources[@]}"
        echo "$stamp" >"$dir/classes.stamp"
    fi

    # 2b. the Kafka apps of scripts/e2e/apps (4.x only): Kafka Streams from
    # Maven Central into $dir/apps, the Streams word count compiled into
    # $dir/apps-classes.
    if [[ "$v" == 4.* ]]; then
        apps_src="$repo/scripts/e2e/apps"
        stamp="$( { echo "$v"; cat "$apps_src/pom.xml" "$apps_src"/*.java; } | sha256sum | cut -d' ' -f1)"
        if [[ "$(cat "$dir/apps.stamp" 2>/dev/null || true)" != "$stamp" || ! -f "$dir/apps-classes/StreamsWordCount.class" ]]; then
            log "Kafka $v: copying Kafka Streams from Maven Central"
            start=$SECONDS
            rm -rf "$dir/apps" "$dir/apps-classes" "$dir/apps.stamp"
            mkdir -p "$dir/apps-classes"
            quiet "mvn (Kafka $v apps)" mvn -q -B -Dstyle.color=never -f "$apps_src/pom.xml" -Dkafka.version="$v" \
                dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$dir/apps"
            quiet "javac (Kafka $v apps)" javac -encoding UTF-8 --release 17 -d "$dir/apps-classes" \
                -cp "$dir/apps/*" "$apps_src"/*.java
            echo "$stamp" >"$dir/apps.stamp"
            log "Kafka $v: apps ready in $((SECONDS - start)) s ($(ls "$dir/apps" | wc -l) jars)"
        fi
    fi
done

# 2c. Kafka Connect (scripts/e2e/apps/connect-pom.xml: the newest release
# whose worker and FileStream connectors are both on Maven Central) into
# $cache/connect-VERSION/libs.
connect_pom="$repo/scripts/e2e/apps/connect-pom.xml"
connect_version="$(sed -n 's:.*<connect.version>\(.*\)</connect.version>.*:\1:p' "$connect_pom")"
cdir="$cache/connect-$connect_version"
stamp="$(sha256sum <"$connect_pom" | cut -d' ' -f1)"
if [[ "$(cat "$cdir/libs.stamp" 2>/dev/null || true)" != "$stamp" || ! -f "$cdir/libs/connect-file-$connect_version.jar" ]]; then
    log "Kafka Connect $connect_version: copying the worker and the FileStream connectors from Maven Central"
    start=$SECONDS
    rm -rf "$cdir"
    mkdir -p "$cdir"
    quiet "mvn (Kafka Connect $connect_version)" mvn -q -B -Dstyle.color=never -f "$connect_pom" \
        dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$cdir/libs"
    echo "$stamp" >"$cdir/libs.stamp"
    log "Kafka Connect $connect_version: $(ls "$cdir/libs" | wc -l) jars in $((SECONDS - start)) s"
fi

# 3. Python clients
venv="$cache/venv"
req="$repo/scripts/e2e/python/requirements.txt"
stamp="$( { python3 --version; cat "$req"; } | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$venv/stamp" 2>/dev/null || true)" != "$stamp" || ! -x "$venv/bin/python" ]]; then
    log "Python: creating $venv (confluent-kafka, kafka-python, codecs) from PyPI"
    start=$SECONDS
    rm -rf "$venv"
    quiet "python3 -m venv" python3 -m venv "$venv"
    quiet "pip install -r $req" "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        --only-binary=:all: -r "$req"
    quiet "import the Python clients" "$venv/bin/python" -c 'import confluent_kafka, kafka, lz4, zstandard, snappy'
    echo "$stamp" >"$venv/stamp"
    log "Python: venv ready in $((SECONDS - start)) s"
fi
