package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// schemaError is a file:line error.
type schemaError struct {
	Pos
	Msg string
}

func (e *schemaError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

func errAt(p Pos, format string, args ...any) error {
	return &schemaError{Pos: p, Msg: fmt.Sprintf(format, args...)}
}

// decodeFile strictly decodes one YAML file into out (a pointer to a model
// struct): unknown keys, duplicate keys and type mismatches are errors with
// file:line, and every struct embedding Pos gets its position.
func decodeFile(path, rel string, out any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return errAt(Pos{rel, 1}, "expected one YAML document")
	}
	return decodeNode(rel, doc.Content[0], reflect.ValueOf(out).Elem())
}

var (
	posType      = reflect.TypeOf(Pos{})
	countDefType = reflect.TypeOf(CountDef{})
	intPairType  = reflect.TypeOf(IntPair{})
	scalarType   = reflect.TypeOf(Scalar{})
)

func decodeNode(file string, n *yaml.Node, v reflect.Value) error {
	at := Pos{file, n.Line}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch v.Type() {
	case countDefType:
		return decodeCount(at, n, v.Addr().Interface().(*CountDef))
	case intPairType:
		return decodeIntPair(at, n, v.Addr().Interface().(*IntPair))
	case scalarType:
		if n.Kind != yaml.ScalarNode {
			return errAt(at, "expected a scalar")
		}
		*v.Addr().Interface().(*Scalar) = Scalar{Set: true, Text: n.Value, Tag: n.ShortTag()}
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
			return nil
		}
		nv := reflect.New(v.Type().Elem())
		if err := decodeNode(file, n, nv.Elem()); err != nil {
			return err
		}
		v.Set(nv)
		return nil
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return errAt(at, "expected a mapping, found %s", kindName(n))
		}
		t := v.Type()
		fields := map[string]int{}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Type == posType {
				v.Field(i).Set(reflect.ValueOf(at))
				continue
			}
			tag := f.Tag.Get("yaml")
			if tag == "" || tag == "-" {
				continue
			}
			fields[tag] = i
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			kp := Pos{file, k.Line}
			idx, ok := fields[k.Value]
			if !ok {
				return errAt(kp, "unknown key %q (known: %s)", k.Value, strings.Join(sortedKeys(fields), ", "))
			}
			if seen[k.Value] {
				return errAt(kp, "duplicate key %q", k.Value)
			}
			seen[k.Value] = true
			if err := decodeNode(file, val, v.Field(idx)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Slice:
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
			return nil
		}
		if n.Kind != yaml.SequenceNode {
			return errAt(at, "expected a sequence, found %s", kindName(n))
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			if err := decodeNode(file, c, s.Index(i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	default:
		if n.Kind != yaml.ScalarNode {
			return errAt(at, "expected a scalar, found %s", kindName(n))
		}
		if err := n.Decode(v.Addr().Interface()); err != nil {
			return errAt(at, "%v", cleanYAMLErr(err))
		}
		return nil
	}
}

func cleanYAMLErr(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "yaml: unmarshal errors:\n")
	s = strings.TrimSpace(s)
	if i := strings.Index(s, ": "); strings.HasPrefix(s, "line ") && i > 0 {
		s = s[i+2:]
	}
	return s
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a sequence"
	case yaml.ScalarNode:
		return "scalar " + strconv.Quote(n.Value)
	}
	return "something else"
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func decodeCount(at Pos, n *yaml.Node, c *CountDef) error {
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.Value {
		case "u8", "u32", "to_end", "chain":
			c.Kind = n.Value
			return nil
		}
		return errAt(at, "count: want u8, u32, to_end, chain or {field: name}, found %q", n.Value)
	case yaml.MappingNode:
		if len(n.Content) != 2 || n.Content[0].Value != "field" || n.Content[1].Kind != yaml.ScalarNode {
			return errAt(at, "count: the mapping form is {field: name}")
		}
		c.Kind, c.Field = "field", n.Content[1].Value
		return nil
	}
	return errAt(at, "count: unexpected %s", kindName(n))
}

func decodeIntPair(at Pos, n *yaml.Node, p *IntPair) error {
	parse := func(x *yaml.Node) (*int64, error) {
		if x.Kind != yaml.ScalarNode {
			return nil, errAt(at, "bound: expected a number")
		}
		if x.ShortTag() == "!!null" {
			return nil, nil
		}
		u, err := strconv.ParseUint(x.Value, 0, 64)
		if err == nil {
			i := int64(u) // values above MaxInt64 wrap; bounds that large only appear as u64 sentinels
			return &i, nil
		}
		i, err := strconv.ParseInt(x.Value, 0, 64)
		if err != nil {
			return nil, errAt(Pos{at.File, x.Line}, "bound %q is not an integer", x.Value)
		}
		return &i, nil
	}
	switch n.Kind {
	case yaml.ScalarNode:
		v, err := parse(n)
		if err != nil {
			return err
		}
		*p = IntPair{Set: true, Min: v, Max: v}
		return nil
	case yaml.SequenceNode:
		if len(n.Content) != 2 {
			return errAt(at, "bounds are [min, max]")
		}
		lo, err := parse(n.Content[0])
		if err != nil {
			return err
		}
		hi, err := parse(n.Content[1])
		if err != nil {
			return err
		}
		*p = IntPair{Set: true, Min: lo, Max: hi}
		return nil
	}
	return errAt(at, "bounds: unexpected %s", kindName(n))
}

// Load reads every schema file under dir.
func Load(dir string) (*Schema, error) {
	s := &Schema{}
	rel := func(p string) string {
		r, err := filepath.Rel(filepath.Dir(filepath.Clean(dir)), p)
		if err != nil {
			return p
		}
		return filepath.ToSlash(r)
	}
	s.Protocol = &ProtocolFile{}
	if err := decodeFile(filepath.Join(dir, "protocol.yaml"), rel(filepath.Join(dir, "protocol.yaml")), s.Protocol); err != nil {
		return nil, err
	}
	for _, name := range []string{"encodings.yaml", "batch.yaml"} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			continue
		}
		f := &EncodingsFile{}
		if err := decodeFile(p, rel(p), f); err != nil {
			return nil, err
		}
		s.Encodings = append(s.Encodings, f)
	}
	s.Options = &OptionsFile{}
	if p := filepath.Join(dir, "options.yaml"); fileExists(p) {
		if err := decodeFile(p, rel(p), s.Options); err != nil {
			return nil, err
		}
	}
	s.Errors = &ErrorsFile{}
	if p := filepath.Join(dir, "errors.yaml"); fileExists(p) {
		if err := decodeFile(p, rel(p), s.Errors); err != nil {
			return nil, err
		}
	}
	var cmdPaths []string
	err := filepath.WalkDir(filepath.Join(dir, "commands"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".yaml") {
			cmdPaths = append(cmdPaths, p)
		}
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	sort.Strings(cmdPaths)
	for _, p := range cmdPaths {
		c := &CommandFile{}
		if err := decodeFile(p, rel(p), c); err != nil {
			return nil, err
		}
		c.Domain = filepath.Base(filepath.Dir(p))
		if want := strings.TrimSuffix(filepath.Base(p), ".yaml"); c.Command != want {
			return nil, errAt(c.Pos, "command %q must live in a file named %s.yaml", c.Command, c.Command)
		}
		s.Commands = append(s.Commands, c)
	}
	if err := s.resolve(); err != nil {
		return nil, err
	}
	return s, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
