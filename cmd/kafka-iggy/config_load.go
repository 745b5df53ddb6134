// Loading the configuration: koanf layers (defaults, --config file,
// KAFKA_IGGY_* environment, flags), the strict decode hook, and the
// collection of every problem with its key. The types, defaults and
// validation are in config.go; the key index in config_keys.go.

package main

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
)

// envPrefix starts every environment variable the sidecar reads.
const envPrefix = "KAFKA_IGGY_"

// keyDelim separates key levels inside koanf. Not ".": Kafka topic names
// (keys of topics.overrides) contain dots. Kafka names never contain "/".
const keyDelim = "/"

// Problem is one thing wrong with a configuration and the key it concerns
// (dotted, as in the YAML file: "iggy.pool_size").
type Problem struct {
	Key string
	Msg string
}

// String is "key: message".
func (p Problem) String() string {
	if p.Key == "" {
		return p.Msg
	}
	return p.Key + ": " + p.Msg
}

// ConfigError is every problem found while loading and validating a
// configuration.
type ConfigError struct {
	Problems []Problem
}

// Error lists the problems, one per line.
func (e *ConfigError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return "invalid configuration:\n  " + strings.Join(lines, "\n  ")
}

// errHelp is returned by loadConfig for --help; print configUsage.
var errHelp = pflag.ErrHelp

// loadConfig builds the effective configuration from the defaults, the
// YAML file named by --config, the KAFKA_IGGY_ variables of environ and the
// flags in args (a subcommand's arguments, e.g. os.Args[2:]). A returned
// *ConfigError carries every problem at once with its key; the Config is
// then the best effort (unparseable values keep their defaults). Other
// errors (bad flags, an unreadable file) are returned alone; errHelp means
// --help was given.
func loadConfig(args, environ []string) (Config, error) {
	l, err := load(args, environ)
	return l.cfg, err
}

// loaded is a configuration with where each key that is not a default came
// from (for check-config).
type loaded struct {
	cfg     Config
	file    string
	sources map[string]string // dotted key -> "file", "env NAME" or "flag --name"
}

func load(args, environ []string) (loaded, error) {
	l := loaded{cfg: DefaultConfig(), sources: map[string]string{}}
	fs := newFlagSet()
	if err := fs.Parse(args); err != nil {
		return l, err
	}
	if fs.NArg() > 0 {
		return l, fmt.Errorf("unexpected arguments %q (flags only; see --help)", fs.Args())
	}
	l.file, _ = fs.GetString("config")

	var problems []Problem
	k := koanf.New(keyDelim)

	// The file.
	if l.file != "" {
		fk := koanf.New(keyDelim)
		if err := fk.Load(file.Provider(l.file), yaml.Parser()); err != nil {
			return l, fmt.Errorf("config file %s: %w", l.file, err)
		}
		for _, key := range fk.Keys() {
			l.sources[dotted(key)] = "file"
		}
		if err := k.Merge(fk); err != nil {
			return l, err
		}
	}

	// The environment.
	envNames := map[string]string{} // koanf key -> variable name
	ek := koanf.New(keyDelim)
	err := ek.Load(env.Provider(keyDelim, env.Opt{
		Prefix:      envPrefix,
		EnvironFunc: func() []string { return environ },
		TransformFunc: func(name, value string) (string, any) {
			rest := strings.TrimPrefix(name, envPrefix)
			if isServiceLink(rest) {
				return "", nil
			}
			key := strings.ReplaceAll(strings.ToLower(rest), "__", keyDelim)
			envNames[key] = name
			return key, value
		},
	}), nil)
	if err != nil {
		return l, fmt.Errorf("environment: %w", err)
	}
	for _, key := range ek.Keys() {
		l.sources[dotted(key)] = "env " + envNames[key]
	}
	if err := k.Merge(ek); err != nil {
		return l, err
	}

	// The flags (only those given).
	pk := koanf.New(keyDelim)
	err = pk.Load(posflag.ProviderWithFlag(fs, keyDelim, nil, func(f *pflag.Flag) (string, any) {
		if f.Name == "config" {
			return "", nil
		}
		key := strings.ReplaceAll(f.Name, ".", keyDelim)
		v := posflag.FlagVal(fs, f)
		if m, ok := v.(map[string]string); ok { // merge entries, not the whole map
			mm := make(map[string]any, len(m))
			for mk, mv := range m {
				mm[mk] = mv
			}
			v = mm
		}
		return key, v
	}), nil)
	if err != nil {
		return l, fmt.Errorf("flags: %w", err)
	}
	for _, key := range pk.Keys() {
		l.sources[dotted(key)] = "flag --" + leafOf(dotted(key))
	}
	if err := k.Merge(pk); err != nil {
		return l, err
	}

	// Unknown keys, and values where a section belongs or the reverse.
	for _, key := range k.Keys() {
		d := dotted(key)
		if msg := checkKey(key, k.Get(key)); msg != "" {
			if src := l.sources[d]; strings.HasPrefix(src, "env ") {
				msg += " (from " + strings.TrimPrefix(src, "env ") + ")"
			}
			problems = append(problems, Problem{Key: d, Msg: msg})
			k.Delete(key)
		}
	}

	// Decode onto the defaults.
	dc := &mapstructure.DecoderConfig{
		DecodeHook: strictHook,
		TagName:    "koanf",
	}
	if err := k.UnmarshalWithConf("", &l.cfg, koanf.UnmarshalConf{DecoderConfig: dc}); err != nil {
		problems = append(problems, decodeProblems(err)...)
	}

	problems = append(problems, problemsOf(l.cfg.Validate())...)
	if len(problems) > 0 {
		return l, &ConfigError{Problems: sortProblems(dedupe(problems))}
	}
	return l, nil
}

// isServiceLink reports the variables Kubernetes injects for a Service
// named kafka-iggy (KAFKA_IGGY_SERVICE_HOST, KAFKA_IGGY_PORT_9092_TCP, ...),
// given without the prefix; they are not configuration. No key of ours is
// a top-level value, so none of them can be one.
func isServiceLink(rest string) bool {
	if strings.Contains(rest, "__") {
		return false
	}
	return strings.HasPrefix(rest, "SERVICE_") || rest == "PORT" || strings.HasPrefix(rest, "PORT_")
}

// dotted turns a koanf key into the dotted form users write.
func dotted(key string) string { return strings.ReplaceAll(key, keyDelim, ".") }

// leafOf returns the known leaf key that key is or lies under (a map
// entry's key lies under its map), else key itself.
func leafOf(key string) string {
	idx := leafIndex()
	for k := key; ; {
		if _, ok := idx.leaves[k]; ok {
			return k
		}
		i := strings.LastIndexByte(k, '.')
		if i < 0 {
			return key
		}
		k = k[:i]
	}
}

// checkKey returns why a loaded koanf key is not acceptable, or "".
func checkKey(key string, value any) string {
	idx := leafIndex()
	parts := strings.Split(key, keyDelim)
	// Walk down: a known leaf ends the walk (a map leaf may have one more
	// level, its entries); a section goes on.
	for i := range parts {
		prefix := strings.Join(parts[:i+1], ".")
		if lf, ok := idx.leaves[prefix]; ok {
			switch rest := len(parts) - 1 - i; {
			case rest == 0:
				return ""
			case rest == 1 && lf.typ.Kind() == reflect.Map:
				return ""
			}
			return fmt.Sprintf("%s is a %s, not a section", prefix, typeName(lf.typ))
		}
		if !idx.sections[prefix] {
			break
		}
		if i == len(parts)-1 {
			if value == nil || reflect.ValueOf(value).Kind() == reflect.Map {
				return "" // an empty section in YAML ("sasl:" or "sasl: {}")
			}
			return fmt.Sprintf("is a section; got the value %v", value)
		}
	}
	msg := "unknown key"
	if near := nearestKey(dotted(key)); near != "" {
		msg += "; did you mean " + near + "?"
	}
	return msg
}

// nearestKey suggests a known key for a misspelt one: same section and a
// small edit distance, or "".
func nearestKey(key string) string {
	best, bestD := "", 3
	for _, lf := range leafIndex().list {
		if d := editDistance(key, lf.key); d < bestD {
			best, bestD = lf.key, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

var durationType = reflect.TypeFor[time.Duration]()

// strictHook converts loaded values (YAML scalars, environment and flag
// strings) to the field types, and refuses what the weak conversions of
// mapstructure would accept silently: a duration without a unit, a
// fraction or an out-of-range number for an integer, a number for a bool,
// a list or map for a scalar.
func strictHook(from, to reflect.Type, data any) (any, error) {
	if data == nil {
		return data, nil
	}
	v := reflect.ValueOf(data)
	switch {
	case to == durationType:
		switch v.Kind() {
		case reflect.String:
			d, err := time.ParseDuration(strings.TrimSpace(v.String()))
			if err != nil {
				return nil, fmt.Errorf("%q is not a duration (write e.g. 500ms, 30s, 5m)", v.String())
			}
			return d, nil
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
			if v.IsZero() {
				return time.Duration(0), nil
			}
			return nil, fmt.Errorf("%v has no unit (write e.g. \"%vs\" or \"%vms\")", data, data, data)
		}
		if from == durationType {
			return data, nil
		}
		return nil, fmt.Errorf("expected a duration, got %s", describe(data))
	case to.Kind() == reflect.Bool:
		switch v.Kind() {
		case reflect.Bool:
			return data, nil
		case reflect.String:
			b, err := strconv.ParseBool(strings.TrimSpace(v.String()))
			if err != nil {
				return nil, fmt.Errorf("%q is not true or false", v.String())
			}
			return b, nil
		}
		return nil, fmt.Errorf("expected true or false, got %s", describe(data))
	case isInt(to.Kind()) || isUint(to.Kind()):
		var n int64
		var u uint64
		neg := false
		switch {
		case isInt(v.Kind()):
			n = v.Int()
			neg, u = n < 0, uint64(n)
		case isUint(v.Kind()):
			u = v.Uint()
			if u > 1<<63-1 {
				return nil, fmt.Errorf("%v is out of range", data)
			}
			n = int64(u)
		case v.Kind() == reflect.Float32 || v.Kind() == reflect.Float64:
			f := v.Float()
			if f != float64(int64(f)) {
				return nil, fmt.Errorf("%v is not a whole number", data)
			}
			n = int64(f)
			neg, u = n < 0, uint64(n)
		case v.Kind() == reflect.String:
			s := strings.TrimSpace(v.String())
			var err error
			n, err = strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%q is not a whole number", v.String())
			}
			neg, u = n < 0, uint64(n)
		default:
			return nil, fmt.Errorf("expected a whole number, got %s", describe(data))
		}
		out := reflect.New(to).Elem()
		if isInt(to.Kind()) {
			if out.OverflowInt(n) {
				bits := uint(to.Bits())
				return nil, fmt.Errorf("%v is out of range (%d to %d)", data, -(int64(1) << (bits - 1)), int64(1)<<(bits-1)-1)
			}
			out.SetInt(n)
		} else {
			if neg || out.OverflowUint(u) {
				return nil, fmt.Errorf("%v is out of range (0 to %d)", data, uint64(1)<<uint(to.Bits())-1)
			}
			out.SetUint(u)
		}
		return out.Interface(), nil
	case to.Kind() == reflect.String:
		switch v.Kind() {
		case reflect.String:
			return data, nil
		case reflect.Map, reflect.Slice, reflect.Array, reflect.Struct:
			return nil, fmt.Errorf("expected a string, got %s", describe(data))
		}
		return fmt.Sprint(data), nil // an unquoted YAML number or bool
	case to.Kind() == reflect.Slice:
		if v.Kind() == reflect.String { // "a,b" from the environment or a flag
			var out []string
			for _, s := range strings.Split(v.String(), ",") {
				if s = strings.TrimSpace(s); s != "" {
					out = append(out, s)
				}
			}
			return out, nil
		}
		if v.Kind() != reflect.Slice {
			return nil, fmt.Errorf("expected a list, got %s", describe(data))
		}
	case to.Kind() == reflect.Map:
		if v.Kind() != reflect.Map {
			return nil, fmt.Errorf("expected a map, got %s", describe(data))
		}
	}
	return data, nil
}

func isInt(k reflect.Kind) bool {
	return k == reflect.Int || k == reflect.Int8 || k == reflect.Int16 || k == reflect.Int32 || k == reflect.Int64
}

func isUint(k reflect.Kind) bool {
	return k == reflect.Uint || k == reflect.Uint8 || k == reflect.Uint16 || k == reflect.Uint32 || k == reflect.Uint64
}

// describe names a loaded value's shape for an error message.
func describe(data any) string {
	switch reflect.ValueOf(data).Kind() {
	case reflect.Map:
		return "a map"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Bool:
		return fmt.Sprintf("the bool %v", data)
	case reflect.String:
		return fmt.Sprintf("the string %q", data)
	}
	return fmt.Sprintf("%v", data)
}

// decodeProblems turns mapstructure's errors into problems with keys.
func decodeProblems(err error) []Problem {
	var out []Problem
	var walk func(error)
	walk = func(e error) {
		if de, ok := e.(*mapstructure.DecodeError); ok {
			inner := de.Unwrap()
			if _, joined := inner.(interface{ Unwrap() []error }); joined {
				walk(inner)
				return
			}
			// Map entries are named "map[key]"; write them as map.key.
			key := strings.ReplaceAll(strings.ReplaceAll(de.Name(), "[", "."), "]", "")
			out = append(out, Problem{Key: key, Msg: inner.Error()})
			return
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		if u := errors.Unwrap(e); u != nil {
			walk(u)
			return
		}
		out = append(out, Problem{Msg: e.Error()})
	}
	walk(err)
	return out
}

// problemsOf splits a joined validation error into problems; each error
// text is "key: message".
func problemsOf(err error) []Problem {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []Problem
		for _, e := range j.Unwrap() {
			out = append(out, problemsOf(e)...)
		}
		return out
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") { // a joined error without Unwrap() []error
		var out []Problem
		for _, line := range strings.Split(msg, "\n") {
			out = append(out, problemsOf(errors.New(line))...)
		}
		return out
	}
	if i := strings.Index(msg, ": "); i > 0 && !strings.ContainsAny(msg[:i], " \t") {
		return []Problem{{Key: msg[:i], Msg: msg[i+2:]}}
	}
	return []Problem{{Msg: msg}}
}

// sortProblems orders problems by where their key is declared (unknown
// keys last, alphabetically), so the output is stable.
func sortProblems(ps []Problem) []Problem {
	pos := func(key string) int {
		for i, lf := range leafIndex().list {
			if lf.key == key || strings.HasPrefix(key, lf.key+".") {
				return i
			}
		}
		return len(leafIndex().list)
	}
	slices.SortStableFunc(ps, func(a, b Problem) int {
		if pa, pb := pos(a.Key), pos(b.Key); pa != pb {
			return pa - pb
		}
		return strings.Compare(a.Key, b.Key)
	})
	return ps
}

func dedupe(ps []Problem) []Problem {
	seen := map[Problem]bool{}
	out := ps[:0]
	for _, p := range ps {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}
