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

# --- a C compiler for `make test-race` (go test -race needs cgo) ---------------
echo "== test deps: C compiler (race detector)"
if ! command -v "$(go env CC)" >/dev/null 2>&1; then
    apt_install gcc libc6-dev
fi

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
# The Java producer of the fault workload (scripts/fault/java), compiled
# against the same jars into its own dir with its own stamp (the pom, which
# names the jars, and its source); scripts/fault checks the same stamp.
fault_java_src="scripts/fault/java"
fault_java_dir="${KAFKA_IGGY_FAULT_JAVA_DIR:-$HOME/.cache/kafka-iggy/java-fault}"
fault_stamp="$(cat "$java_src/pom.xml" "$fault_java_src/FaultProducer.java" | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$fault_java_dir/stamp" 2>/dev/null || true)" != "$fault_stamp" || ! -f "$fault_java_dir/classes/FaultProducer.class" ]]; then
    rm -rf "$fault_java_dir/classes" "$fault_java_dir/stamp"
    mkdir -p "$fault_java_dir/classes"
    run_quiet "javac FaultProducer.java" \
        javac -encoding UTF-8 --release 17 -d "$fault_java_dir/classes" -cp "$java_dir/lib/*" "$fault_java_src/FaultProducer.java"
    echo "$fault_stamp" >"$fault_java_dir/stamp"
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
# The edge SDK driver (scripts/conformance/edge, iggy pinned to the newest
# published edge build, protocol 0.12) shares the target directory.
echo "== test deps: Rust SDK edge conformance driver (protocol 0.12)"
run_quiet "cargo build of scripts/conformance/edge" env CONFORMANCE_BUILD_ONLY=1 CONFORMANCE_SDK=edge bash scripts/conformance/run.sh

# --- The schema registry of scripts/e2e/registry_test.go ---------------------
# crabka-schema-registry 0.3.0 (crates.io; Confluent Schema Registry API,
# schemas in a compacted Kafka topic), built by scripts/e2e/registry/build.sh
# from the .crate files crates.io serves (sha256-checked; its versions are
# yanked, so the script pins them itself) into $HOME/.cache/kafka-iggy. A cold
# build takes about 5 minutes on two cores; later runs are a no-op.
echo "== test deps: schema registry (crabka-schema-registry 0.3.0, crates.io)"
run_quiet "build of crabka-schema-registry (scripts/e2e/registry/build.sh)" bash scripts/e2e/registry/build.sh

# --- Kubernetes checks (deploy/deploy_test.go, cmd/kafka-iggy/config_test.go) --
# kubeconform and helm, pinned, built from the Go module proxy into a cache
# dir (a cold helm build takes several minutes on two cores; later runs are a
# no-op). The Kubernetes JSON schemas come from the PyPI package
# kubernetes-validate, which ships them; kubeconform would otherwise fetch them
# from a host that is not reachable here. Its files reference
# "/api/_definitions.json" under an https $id; they are rewritten to refer to
# the local _definitions.json so kubeconform resolves everything offline.
echo "== test deps: kubeconform, helm, Kubernetes JSON schemas"
KUBECONFORM_VERSION=v0.8.0
HELM_VERSION=v3.22.0
K8S_VALIDATE_VERSION=1.37.0                 # PyPI kubernetes-validate
K8S_SCHEMA_VERSIONS="v1.33.0 v1.37.0"       # native sidecars are GA from 1.33
k8s_bin="${KAFKA_IGGY_TOOLS_DIR:-$HOME/.cache/kafka-iggy/bin}"
k8s_schemas="${KAFKA_IGGY_K8S_SCHEMAS:-$HOME/.cache/kafka-iggy/k8s-schemas}"
mkdir -p "$k8s_bin"
if [[ "$(cat "$k8s_bin/kubeconform.version" 2>/dev/null || true)" != "$KUBECONFORM_VERSION" || ! -x "$k8s_bin/kubeconform" ]]; then
    run_quiet "go install kubeconform@$KUBECONFORM_VERSION" \
        env GOBIN="$k8s_bin" CGO_ENABLED=0 go install -trimpath "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION"
    echo "$KUBECONFORM_VERSION" >"$k8s_bin/kubeconform.version"
fi
if [[ "$(cat "$k8s_bin/helm.version" 2>/dev/null || true)" != "$HELM_VERSION" || ! -x "$k8s_bin/helm" ]]; then
    run_quiet "go install helm@$HELM_VERSION" \
        env GOBIN="$k8s_bin" CGO_ENABLED=0 go install -trimpath \
        -ldflags "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
    echo "$HELM_VERSION" >"$k8s_bin/helm.version"
fi
schema_stamp="$K8S_VALIDATE_VERSION $K8S_SCHEMA_VERSIONS"
if [[ "$(cat "$k8s_schemas/stamp" 2>/dev/null || true)" != "$schema_stamp" ]]; then
    command -v python3 >/dev/null 2>&1 || apt_install python3 python3-pip
    wheel_dir="$(mktemp -d)"
    run_quiet "pip download kubernetes-validate==$K8S_VALIDATE_VERSION" \
        python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$wheel_dir" "kubernetes-validate==$K8S_VALIDATE_VERSION"
    rm -rf "$k8s_schemas"
    mkdir -p "$k8s_schemas"
    run_quiet "unpack the Kubernetes schemas" python3 - "$wheel_dir" "$k8s_schemas" $K8S_SCHEMA_VERSIONS <<'PY'
import glob, json, os, sys, zipfile
wheel_dir, out, versions = sys.argv[1], sys.argv[2], sys.argv[3:]
wheel = zipfile.ZipFile(glob.glob(os.path.join(wheel_dir, "*.whl"))[0])
prefix = "kubernetes_validate/kubernetes-json-schema/"
for version in versions:
    for flavour in ("-local", "-local-strict"):
        src, dst = prefix + version + flavour + "/", os.path.join(out, version + flavour)
        os.makedirs(dst)
        names = [n for n in wheel.namelist() if n.startswith(src) and n.endswith(".json")]
        if not names:
            sys.exit("no schemas for %s%s in the wheel" % (version, flavour))
        for name in names:
            doc = json.loads(wheel.read(name))
            doc.pop("$id", None)  # resolve references against the local file
            text = json.dumps(doc).replace('"/api/_definitions.json#', '"_definitions.json#')
            with open(os.path.join(dst, os.path.basename(name)), "w") as f:
                f.write(text)
PY
    rm -rf "$wheel_dir"
    echo "$schema_stamp" >"$k8s_schemas/stamp"
fi

# --- promtool (Debian's prometheus package) for deploy/monitoring_test.go -----
# Checks the alert rules of deploy/prometheus. The package also installs the
# Prometheus server; nothing here starts it.
echo "== test deps: promtool"
if ! command -v promtool >/dev/null 2>&1; then
    apt_install prometheus
    command -v promtool >/dev/null 2>&1 || { echo "install-test-deps: promtool still not on PATH after apt-get install prometheus" >&2; exit 1; }
fi

# --- The compatibility run (scripts/e2e/compat, `make e2e`) -------------------
# Apache Kafka (broker + tools, latest 4.x and 3.9.x of scripts/kafka/versions.sh)
# from Maven Central, the Java programs of scripts/e2e compiled against each
# kafka-clients, and a Python venv with confluent-kafka and kafka-python from
# PyPI, all under $HOME/.cache/kafka-iggy (scripts/kafka/install.sh; stamps make
# it a no-op when nothing changed). Java, javac and mvn come from the Java
# section above; python3-venv from Debian when the interpreter lacks venv.
echo "== test deps: Kafka broker/tools jars, Java and Python clients (scripts/kafka/install.sh)"
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    apt_install python3-venv
fi
bash scripts/kafka/install.sh
