#!/usr/bin/env bash
# Installs what `make test` needs on a fresh machine. Idempotent: every step
# checks before it installs. Go modules come from the module proxy through the
# go command itself.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== test deps: Go modules"
go mod download
