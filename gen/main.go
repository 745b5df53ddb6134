// Command gen turns the YAML description of the Iggy wire (schema/) into the
// Go codec in codec/iggy (*_gen.go). See gen/README.md for the grammar.
//
//	go run ./gen [-schema schema] [-out codec/iggy]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	schemaDir := flag.String("schema", "schema", "schema directory")
	outDir := flag.String("out", "codec/iggy", "output directory for *_gen.go files")
	flag.Parse()
	if err := run(*schemaDir, *outDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(schemaDir, outDir string) error {
	s, err := Load(schemaDir)
	if err != nil {
		return err
	}
	outs, err := Generate(s)
	if err != nil {
		return err
	}
	return write(outDir, outs)
}

// write stores the outputs and deletes *_gen.go files this run did not write.
func write(outDir string, outs []output) error {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, o := range outs {
		keep[o.Name] = true
		p := filepath.Join(outDir, o.Name)
		if old, err := os.ReadFile(p); err == nil && bytes.Equal(old, o.Code) {
			continue
		}
		if err := os.WriteFile(p, o.Code, 0o644); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(outDir)
	if err != nil {
		return err
	}
	var stale []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), "_gen.go") && !keep[e.Name()] {
			stale = append(stale, e.Name())
		}
	}
	sort.Strings(stale)
	for _, name := range stale {
		if err := os.Remove(filepath.Join(outDir, name)); err != nil {
			return err
		}
	}
	return nil
}
