package clientmetrics

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The configs of a subscription, as Kafka 4.4's ClientMetricsConfigs
// defines them (names sorted, as DescribeConfigs lists them).
const (
	KeyInterval = "interval.ms"
	KeyMatch    = "match"
	KeyMetrics  = "metrics"

	// DefaultInterval is interval.ms when a subscription does not set it.
	DefaultInterval = 300000
	minInterval     = 100
	maxInterval     = 3600000
)

// Def is one config of a subscription.
type Def struct {
	Name    string
	Type    kmsg.ConfigType
	Default string
	Doc     string
}

// Defs are the subscription configs, sorted by name.
var Defs = []Def{
	{KeyInterval, kmsg.ConfigTypeInt, strconv.Itoa(DefaultInterval), "Metrics push interval in milliseconds"},
	{KeyMatch, kmsg.ConfigTypeList, "", "Client match criteria"},
	{KeyMetrics, kmsg.ConfigTypeList, "", "Telemetry metric name prefix list"},
}

// MatchKeys are the client selectors a match pattern may name.
var MatchKeys = []string{"client_instance_id", "client_id", "client_software_name", "client_software_version",
	"client_source_address", "client_source_port"}

func known(name string) bool {
	for _, d := range Defs {
		if d.Name == name {
			return true
		}
	}
	return false
}

// Problem is a Kafka error code with its message.
type Problem struct {
	Code int16
	Msg  string
}

func problem(code int16, format string, args ...any) *Problem {
	return &Problem{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// AlterOp is one config change of an IncrementalAlterConfigs resource
// (Op: 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT).
type AlterOp struct {
	Name  string
	Op    kmsg.IncrementalAlterConfigOp
	Value *string
}

// Plan checks the changes an alter makes to subscription name, whose
// current configs are cur, in Kafka 4.4's order, and returns the changes
// to store (normalized values; Remove for a config put back to its
// default) and the configs after them. replace (AlterConfigs) removes
// every config ops do not set.
func Plan(name string, cur map[string]string, ops []AlterOp, replace bool) ([]Op, map[string]string, *Problem) {
	if name == "" {
		return nil, nil, problem(kerr.InvalidRequest.Code, "Subscription name can't be empty")
	}
	seen := map[string]bool{}
	for _, o := range ops {
		if seen[o.Name] {
			return nil, nil, problem(kerr.InvalidRequest.Code, "Error due to duplicate config keys")
		}
		seen[o.Name] = true
	}
	next := map[string]string{}
	if !replace {
		for k, v := range cur {
			next[k] = v
		}
	}
	for _, o := range ops {
		switch o.Op {
		case kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete:
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if o.Value == nil {
				return nil, nil, problem(kerr.InvalidRequest.Code, "Null value not supported for : %s", o.Name)
			}
			// Kafka's broker checks the type against its broker configs,
			// where no client-metrics key is a LIST.
			return nil, nil, problem(kerr.InvalidConfig.Code, "Can't %s to key %s because its type is not LIST.", o.Op, o.Name)
		default:
			return nil, nil, problem(kerr.InvalidRequest.Code, "Unknown alter configs operation %d", o.Op)
		}
		if o.Op == kmsg.IncrementalAlterConfigOpDelete {
			delete(next, o.Name)
			continue
		}
		if o.Value == nil {
			return nil, nil, problem(kerr.InvalidRequest.Code, "Null value not supported for : %s", o.Name)
		}
		next[o.Name] = *o.Value
	}
	if p := Validate(next); p != nil {
		return nil, nil, p
	}
	for k, v := range next {
		next[k] = normalize(k, v)
	}
	var changes []Op
	for _, d := range Defs {
		v, ok := next[d.Name]
		old, had := cur[d.Name]
		switch {
		case ok && (!had || old != v):
			changes = append(changes, Op{Key: d.Name, Value: v})
		case !ok && had:
			changes = append(changes, Op{Key: d.Name, Remove: true})
		}
	}
	return changes, next, nil
}

// Validate checks a subscription's configs as Kafka's
// ClientMetricsConfigs.validate does: unknown names, then values that do
// not parse, then the interval's range, then the match patterns.
func Validate(cfg map[string]string) *Problem {
	for k := range cfg {
		if !known(k) {
			return problem(kerr.InvalidRequest.Code, "Unknown client metrics configuration: %s", k)
		}
	}
	for _, d := range []string{KeyMetrics, KeyInterval, KeyMatch} {
		v, ok := cfg[d]
		if !ok {
			continue
		}
		if d == KeyInterval {
			if _, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32); err != nil {
				return problem(kerr.InvalidConfig.Code, "Invalid value %s for configuration %s: Not a number of type INT", v, d)
			}
		} else if _, ok := list(v); !ok {
			return problem(kerr.InvalidConfig.Code, "Configuration '%s' values must not be empty.", d)
		}
	}
	if v, ok := cfg[KeyInterval]; ok {
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if n < minInterval || n > maxInterval {
			return problem(kerr.InvalidRequest.Code, "Invalid value %d for %s, interval must be between %d and %d (1 hour)", n, KeyInterval, minInterval, maxInterval)
		}
	}
	if v, ok := cfg[KeyMatch]; ok {
		pats, _ := list(v)
		for _, p := range pats {
			if _, _, ok := parsePattern(p); !ok {
				return problem(kerr.InvalidConfig.Code, "Illegal client matching pattern: %s", p)
			}
		}
	}
	return nil
}

// list splits a LIST value as Kafka's ConfigDef does: the empty string is
// the empty list, elements are trimmed, and an empty element is refused.
func list(v string) ([]string, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, true
	}
	out := strings.Split(v, ",")
	for i := range out {
		out[i] = strings.TrimSpace(out[i])
		if out[i] == "" {
			return nil, false
		}
	}
	return out, true
}

// normalize is the value Kafka keeps: a list's trimmed elements joined by
// commas, an interval's number.
func normalize(key, v string) string {
	if key == KeyInterval {
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		return strconv.FormatInt(n, 10)
	}
	l, _ := list(v)
	return strings.Join(l, ",")
}

// parsePattern splits one match pattern "selector=regex".
func parsePattern(p string) (string, *regexp.Regexp, bool) {
	parts := strings.Split(p, "=")
	if len(parts) != 2 {
		return "", nil, false
	}
	k, v := strings.TrimSpace(parts[0]), strings.TrimSpace(parts[1])
	if v == "" {
		return "", nil, false
	}
	okKey := false
	for _, m := range MatchKeys {
		okKey = okKey || m == k
	}
	if !okKey {
		return "", nil, false
	}
	re, err := regexp.Compile("^(?:" + v + ")$")
	if err != nil {
		return "", nil, false
	}
	return k, re, true
}

// Doc is config name's documentation (nil for an unknown one).
func Doc(name string) *string {
	for _, d := range Defs {
		if d.Name == name {
			doc := d.Doc
			return &doc
		}
	}
	return nil
}
