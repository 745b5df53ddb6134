#!/usr/bin/env bash
# Builds the schema registry of TestSchemaRegistry (scripts/e2e/registry_test.go):
# crabka-schema-registry 0.3.0, a Confluent Schema Registry-compatible REST
# service that keeps its schemas in a compacted Kafka topic (_schemas), from
# the packages crates.io serves.
#
# crates.txt pins the crabka-* packages (version and sha256). They are all
# yanked on crates.io, so cargo will not resolve them from the index; this
# script downloads the .crate files from static.crates.io, checks each sha256
# against crates.txt and against the sparse index's cksum, unpacks them into
# the cache and builds with [patch.crates-io] pointing at them (passed as
# --config, so nothing of theirs lands in this repository). Every other crate
# comes from crates.io at the version Cargo.lock pins.
#
# Output: $KAFKA_IGGY_CACHE/schema-registry-0.3.0/bin/crabka-schema-registry
# (default cache $HOME/.cache/kafka-iggy) and a stamp next to it; a no-op when
# the stamp matches. The binary is what the test runs.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version=0.3.0
cache="${KAFKA_IGGY_CACHE:-$HOME/.cache/kafka-iggy}"
dir="$cache/schema-registry-$version"
bin="$dir/bin/crabka-schema-registry"
stamp="$(cat "$here/build.sh" "$here/crates.txt" "$here/Cargo.toml" "$here/Cargo.lock" | sha256sum | cut -d' ' -f1)"
if [[ -x "$bin" && "$(cat "$dir/stamp" 2>/dev/null || true)" == "$stamp" ]]; then
    exit 0
fi
command -v cargo >/dev/null 2>&1 || { echo "registry: cargo not found (a Rust toolchain >= 1.95 is required)" >&2; exit 2; }
command -v curl >/dev/null 2>&1 || { echo "registry: curl not found" >&2; exit 2; }

rm -rf "$dir/src" "$dir/stamp"
mkdir -p "$dir/src" "$dir/bin"
config=()
while read -r name ver sum; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    crate="$dir/src/$name-$ver.crate"
    curl -fsSL --retry 3 -o "$crate" "https://static.crates.io/crates/$name/$name-$ver.crate"
    got="$(sha256sum "$crate" | cut -d' ' -f1)"
    if [[ "$got" != "$sum" ]]; then
        echo "registry: $name $ver: sha256 $got, crates.txt pins $sum" >&2
        exit 1
    fi
    # The sparse index path of a name of 4+ characters: first two / next two.
    index="$(curl -fsSL --retry 3 "https://index.crates.io/${name:0:2}/${name:2:2}/$name")"
    cksum="$(printf '%s\n' "$index" | python3 -c '
import json, sys
want = sys.argv[1]
for line in sys.stdin:
    d = json.loads(line)
    if d["vers"] == want:
        print(d["cksum"])
' "$ver")"
    if [[ "$cksum" != "$sum" ]]; then
        echo "registry: $name $ver: the crates.io index says cksum '$cksum', crates.txt pins $sum" >&2
        exit 1
    fi
    tar -xzf "$crate" -C "$dir/src"
    rm -f "$crate"
    config+=(--config "patch.crates-io.$name.path=\"$dir/src/$name-$ver\"")
done <"$here/crates.txt"

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$cache/schema-registry-target}"
start=$SECONDS
cargo build --manifest-path "$here/Cargo.toml" --locked --release "${config[@]}" \
    -p crabka-schema-registry --bin crabka-schema-registry
cp "$CARGO_TARGET_DIR/release/crabka-schema-registry" "$bin.tmp"
mv "$bin.tmp" "$bin"
echo "$stamp" >"$dir/stamp"
echo "registry: built $bin in $((SECONDS - start)) s" >&2
