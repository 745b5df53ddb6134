// The key index: every leaf of Config, found by reflection over the koanf
// tags (squashed structs flattened), in declaration order; the flags, the
// usage text and the masked log object built from it.

package main

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"
)

// leaf is one configuration key.
type leaf struct {
	key   string       // dotted key, e.g. "iggy.pool_size"
	index []int        // field index path from Config
	typ   reflect.Type // the field's type
	owner reflect.Type // the struct type declaring the field
	field string       // the Go field name in owner
}

type keyIndex struct {
	list     []leaf
	leaves   map[string]leaf
	sections map[string]bool
}

var leafIndex = sync.OnceValue(func() keyIndex {
	idx := keyIndex{leaves: map[string]leaf{}, sections: map[string]bool{}}
	var walk func(t reflect.Type, prefix string, index []int)
	walk = func(t reflect.Type, prefix string, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			tag := f.Tag.Get("koanf")
			name, opts, _ := strings.Cut(tag, ",")
			path := append(slices.Clone(index), i)
			if opts == "squash" {
				walk(f.Type, prefix, path)
				continue
			}
			if name == "" || name == "-" {
				continue
			}
			key := prefix + name
			if f.Type.Kind() == reflect.Struct && f.Type != durationType {
				idx.sections[key] = true
				walk(f.Type, key+".", path)
				continue
			}
			lf := leaf{key: key, index: path, typ: f.Type, owner: t, field: f.Name}
			idx.list = append(idx.list, lf)
			idx.leaves[key] = lf
		}
	}
	walk(reflect.TypeFor[Config](), "", nil)
	return idx
})

// secretKeys are masked by check-config and in logs. A test checks that
// every key named like a credential is listed.
var secretKeys = map[string]bool{
	"iggy.password":              true,
	"iggy.personal_access_token": true,
	"embedded.root_password":     true,
	"sasl.users":                 true, // the values (passwords) of the map
	"peers.secret":               true,
	"peers.secret_file":          true, // a path, masked with the other secrets
}

// maskedValue replaces a secret's text.
const maskedValue = "******"

// envName is the environment variable of a dotted key.
func envName(key string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "__"))
}

// typeName is how docs and messages name a field type.
func typeName(t reflect.Type) string {
	if t == durationType {
		return "duration"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "bool"
	case reflect.String:
		return "string"
	case reflect.Slice:
		return "list of " + typeName(t.Elem())
	case reflect.Map:
		return "map of " + typeName(t.Elem())
	}
	if isInt(t.Kind()) || isUint(t.Kind()) {
		return "integer"
	}
	return t.String()
}

// newFlagSet returns the flags shared by serve and check-config: --config
// and one flag per key (--listener.address, --iggy.pool_size, ...).
func newFlagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("kafka-iggy", pflag.ContinueOnError)
	fs.SetOutput(discard{})
	fs.SortFlags = false
	fs.StringP("config", "c", "", "YAML configuration file (see deploy/config.example.yaml)")
	def := reflect.ValueOf(DefaultConfig())
	for _, lf := range leafIndex().list {
		usage := fmt.Sprintf("%s; env %s; default %s", typeName(lf.typ), envName(lf.key), formatValue(def.FieldByIndex(lf.index), false))
		switch lf.typ.Kind() {
		case reflect.Bool:
			fs.Bool(lf.key, false, usage)
		case reflect.Map:
			fs.StringToString(lf.key, nil, usage)
		case reflect.Slice:
			fs.StringSlice(lf.key, nil, usage)
		default:
			fs.String(lf.key, "", usage)
		}
	}
	return fs
}

// configUsage describes the configuration flags.
func configUsage() string {
	fs := newFlagSet()
	return "Configuration: defaults < --config FILE < KAFKA_IGGY_* environment < flags.\n" +
		"Every key of docs/OPERATIONS.md is a flag:\n" + fs.FlagUsages()
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// formatValue renders a value for check-config, docs and flag help;
// secret hides non-empty strings and map values.
func formatValue(v reflect.Value, secret bool) string {
	if v.Type() == durationType {
		return time.Duration(v.Int()).String()
	}
	switch v.Kind() {
	case reflect.String:
		if secret && v.String() != "" {
			return maskedValue
		}
		if v.String() == "" {
			return `""`
		}
		return v.String()
	case reflect.Slice:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = formatValue(v.Index(i), secret)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case reflect.Map:
		keys := make([]string, 0, v.Len())
		for _, k := range v.MapKeys() {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ": " + formatValue(v.MapIndex(reflect.ValueOf(k)), secret)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v.Interface())
}

// MarshalZerologObject logs the configuration as flat keys with secrets
// masked, so log.Info().Object("config", cfg) is safe.
func (c Config) MarshalZerologObject(e *zerolog.Event) {
	v := reflect.ValueOf(c)
	for _, lf := range leafIndex().list {
		fv := v.FieldByIndex(lf.index)
		secret := secretKeys[lf.key]
		switch {
		case lf.typ == durationType:
			e.Str(lf.key, time.Duration(fv.Int()).String())
		case lf.typ.Kind() == reflect.Bool:
			e.Bool(lf.key, fv.Bool())
		case isInt(lf.typ.Kind()):
			e.Int64(lf.key, fv.Int())
		case isUint(lf.typ.Kind()):
			e.Uint64(lf.key, fv.Uint())
		case lf.typ.Kind() == reflect.String:
			s := fv.String()
			if secret && s != "" {
				s = maskedValue
			}
			e.Str(lf.key, s)
		default:
			e.Str(lf.key, formatValue(fv, secret))
		}
	}
}
