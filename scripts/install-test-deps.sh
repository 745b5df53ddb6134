#!/usr/bin/env bash
# Installs what `make test` needs on a fresh machine. Idempotent: every step
# checks before it installs. Go modules come from the module proxy through the
# go command itself.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== test deps: Go modules"
go mod download

# --- helpers -----------------------------------------------------------------
# run_quiet LABEL CMD...: runs CMD with its output in a log; prints the log and
# fails when CMD fails, prints nothing when it succeeds.
run_quiet() {
    local label="$1"; shift
    local log
    log="$(mktemp)"
    if ! "$@" >"$log" 2>&1; then
        echo "install-test-deps: $label failed: $*" >&2
        cat "$log" >&2
        rm -f "$log"
        exit 1
    fi
    rm -f "$log"
}

as_root() {
    if [[ "$(id -u)" == 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        echo "install-test-deps: need root (or sudo) for: $*" >&2
        exit 1
    fi
}

apt_updated=0
# apt_install PKG...: installs Debian packages, running apt-get update once first.
apt_install() {
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "install-test-deps: apt-get not found; install by hand: $*" >&2
        exit 1
    fi
    if [[ "$apt_updated" == 0 ]]; then
        run_quiet "apt-get update" as_root apt-get update
        apt_updated=1
    fi
    run_quiet "apt-get install $*" as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"
}

# --- kcat (Debian package) for scripts/e2e/kcat_test.go -----------------------
echo "== test deps: kcat"
if ! command -v kcat >/dev/null 2>&1; then
    apt_install kcat
    command -v kcat >/dev/null 2>&1 || { echo "install-test-deps: kcat still not on PATH after apt-get install kcat" >&2; exit 1; }
fi

# --- the Java client for scripts/e2e/java_test.go -----------------------------
# kafka-clients (and its codecs) from Maven Central, copied into a cache dir,
# and scripts/e2e/java/KafkaRoundTrip.java compiled there. A stamp (hash of the
# pom and the source) makes this a no-op when nothing changed; java_test.go
# checks the same stamp.
echo "== test deps: Java client (kafka-clients)"
missing=()
command -v javac >/dev/null 2>&1 || missing+=(default-jdk-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
if [[ ${#missing[@]} -gt 0 ]]; then
    apt_install "${missing[@]}"
fi
java_src="scripts/e2e/java"
java_dir="${KAFKA_IGGY_JAVA_DIR:-$HOME/.cache/kafka-iggy/java}"
stamp="$(cat "$java_src/pom.xml" "$java_src/KafkaRoundTrip.java" | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$java_dir/stamp" 2>/dev/null || true)" != "$stamp" || ! -f "$java_dir/classes/KafkaRoundTrip.class" ]]; then
    rm -rf "$java_dir/lib" "$java_dir/classes" "$java_dir/stamp"
    mkdir -p "$java_dir/lib" "$java_dir/classes"
    run_quiet "Maven (kafka-clients from Maven Central)" \
        mvn -q -B -Dstyle.color=never -f "$java_src/pom.xml" dependency:copy-dependencies \
        -DincludeScope=runtime -DoutputDirectory="$java_dir/lib"
    ls "$java_dir"/lib/kafka-clients-*.jar >/dev/null 2>&1 || { echo "install-test-deps: Maven copied no kafka-clients jar into $java_dir/lib" >&2; exit 1; }
    run_quiet "javac KafkaRoundTrip.java" \
        javac -encoding UTF-8 --release 17 -d "$java_dir/classes" -cp "$java_dir/lib/*" "$java_src/KafkaRoundTrip.java"
    echo "$stamp" >"$java_dir/stamp"
fi

# --- the official Iggy Rust SDK conformance driver (embedded/conformance_test.go)
# scripts/conformance pins the iggy crate (=0.11.0) in Cargo.lock; cargo
# fetches it from crates.io. A cold build takes several minutes; later runs
# are a no-op.
echo "== test deps: Rust SDK conformance driver (iggy =0.11.0)"
if ! command -v cargo >/dev/null 2>&1; then
    echo "install-test-deps: cargo not found; a Rust toolchain is required for the SDK conformance test" >&2
    exit 1
fi
run_quiet "cargo build of scripts/conformance" env CONFORMANCE_BUILD_ONLY=1 bash scripts/conformance/run.sh
