package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// checkConfigUsage heads the check-config help.
const checkConfigUsage = `usage: kafka-iggy check-config [--config FILE] [--KEY=VALUE ...]

Prints the effective configuration (defaults < file < KAFKA_IGGY_* environment
< flags) as YAML on standard output, secrets masked, each value that is not a
default annotated with where it came from; then lists every problem, each with
its key, on standard error. Exit status: 0 valid, 1 problems, 2 unusable
arguments or file.

`

// runCheckConfig is the check-config subcommand: main calls it with the
// subcommand's arguments and returns its exit status. It reads the
// process environment.
func runCheckConfig(args []string, stdout, stderr io.Writer) int {
	return checkConfig(args, os.Environ(), stdout, stderr)
}

// checkConfig is runCheckConfig with the environment given.
func checkConfig(args, environ []string, stdout, stderr io.Writer) int {
	l, err := load(args, environ)
	if errors.Is(err, errHelp) {
		fmt.Fprint(stdout, checkConfigUsage+configUsage())
		return 0
	}
	var ce *ConfigError
	if err != nil && !errors.As(err, &ce) {
		fmt.Fprintf(stderr, "kafka-iggy check-config: %v\n", err)
		return 2
	}
	if werr := writeEffective(stdout, l); werr != nil {
		fmt.Fprintf(stderr, "kafka-iggy check-config: %v\n", werr)
		return 2
	}
	if ce != nil {
		fmt.Fprintf(stderr, "kafka-iggy check-config: %d problem(s):\n", len(ce.Problems))
		for _, p := range ce.Problems {
			fmt.Fprintf(stderr, "  %s\n", p)
		}
		return 1
	}
	fmt.Fprintln(stderr, "kafka-iggy check-config: the configuration is valid")
	return 0
}

// writeEffective writes l's configuration as YAML, secrets masked. The
// output is itself a valid configuration file (with the secrets to fill
// in again).
func writeEffective(w io.Writer, l loaded) error {
	root := &yaml.Node{Kind: yaml.MappingNode}
	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}
	head := "Effective kafka-iggy configuration: defaults < "
	if l.file != "" {
		head += "file " + l.file + " < "
	}
	head += "environment < flags.\nSecrets are masked as " + maskedValue + "."
	doc.HeadComment = head

	v := reflect.ValueOf(l.cfg)
	for _, lf := range leafIndex().list {
		parent := root
		parts := strings.Split(lf.key, ".")
		for _, p := range parts[:len(parts)-1] {
			parent = childMapping(parent, p)
		}
		key := &yaml.Node{Kind: yaml.ScalarNode, Value: parts[len(parts)-1]}
		val := yamlValue(v.FieldByIndex(lf.index), secretKeys[lf.key])
		if val.Kind == yaml.ScalarNode {
			val.LineComment = l.sources[lf.key]
		} else {
			// A map or list: the comment goes on its key's line; map
			// entries set one by one name their sources there.
			var srcs []string
			for k, src := range l.sources {
				if k == lf.key || strings.HasPrefix(k, lf.key+".") {
					srcs = append(srcs, src)
				}
			}
			sort.Strings(srcs)
			key.LineComment = strings.Join(slices.Compact(srcs), ", ")
		}
		parent.Content = append(parent.Content, key, val)
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return err
	}
	return enc.Close()
}

// childMapping returns the mapping under key in m, adding it if missing.
func childMapping(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	c := &yaml.Node{Kind: yaml.MappingNode}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, c)
	return c
}

// yamlValue renders one field; secret masks non-empty strings and map
// values.
func yamlValue(v reflect.Value, secret bool) *yaml.Node {
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
	if v.Type() == durationType {
		return str(time.Duration(v.Int()).String())
	}
	switch v.Kind() {
	case reflect.String:
		if secret && v.String() != "" {
			return str(maskedValue)
		}
		return str(v.String())
	case reflect.Bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v.Bool())}
	case reflect.Slice:
		n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for i := range v.Len() {
			n.Content = append(n.Content, yamlValue(v.Index(i), secret))
		}
		return n
	case reflect.Map:
		n := &yaml.Node{Kind: yaml.MappingNode}
		keys := make([]string, 0, v.Len())
		for _, k := range v.MapKeys() {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		if len(keys) == 0 {
			n.Style = yaml.FlowStyle
		}
		for _, k := range keys {
			n.Content = append(n.Content, str(k), yamlValue(v.MapIndex(reflect.ValueOf(k)), secret))
		}
		return n
	}
	if isInt(v.Kind()) {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(v.Int(), 10)}
	}
	if isUint(v.Kind()) {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatUint(v.Uint(), 10)}
	}
	return str(fmt.Sprint(v.Interface()))
}
