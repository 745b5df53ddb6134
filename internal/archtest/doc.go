// Package archtest holds no code: its test checks the import layering of
// docs/ARCHITECTURE.md ("Imports point one way") against `go list`, so a
// change that breaks the picture fails `make test`. The table of allowed
// arrows is layers in layers_test.go.
package archtest
