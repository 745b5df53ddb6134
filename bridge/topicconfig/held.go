// Topic settings the gateway holds itself, because Iggy has no topic option
// for them: max.message.bytes (a gatewayOptions key of the Set,
// enforced on Produce), and the string-valued configs below (heldConfigs),
// which Kafka clients and apps set on their topics:
//
//   - cleanup.policy (LIST of compact, delete): accepted with "retain,
//     never compact" semantics. Iggy never compacts, so a compact topic
//     keeps every record (under compact,delete until retention); readers
//     that replay a topic and keep the last value per key (Kafka Streams
//     changelogs, Connect's worker topics, a schema registry's _schemas)
//     see the same final state as after compaction, tombstones included.
//     The cost is storage: kafka_iggy_compact_topic_bytes shows it.
//   - message.timestamp.type (CreateTime, LogAppendTime): with
//     LogAppendTime the gateway stamps every record it writes with its own
//     clock (the origin timestamp of the Iggy message), answers that time
//     as the Produce LogAppendTime, and Fetch flags the topic's batches
//     LogAppendTime, as a Kafka broker does.
//   - the others (min.insync.replicas, segment.ms, delete.retention.ms,
//     ...): accepted with Kafka's types and bounds, stored and reported, no
//     effect (one Iggy server has no replicas to count, and segments, flushes
//     and indexes are Iggy's own).
//
// Every value lives in the topic-config store in Iggy (store.go), so
// every sidecar of one Iggy server reports and enforces the same values and
// they survive restarts.

package topicconfig

import (
	"math"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Held config names with behaviour of their own.
const (
	TimestampTypeName   = "message.timestamp.type"
	MaxMessageBytesName = "max.message.bytes"
	logAppendTime       = "LogAppendTime"
)

// heldSpec is one string-valued config the gateway holds: its default (as
// DescribeConfigs reports it) and its check, which returns the value to
// store or the refusal reason.
type heldSpec struct {
	def   string
	check func(v string) (string, string)
}

// heldConfigs are the held string configs; topicConfigs lists them with
// their types and broker names.
var heldConfigs = map[string]heldSpec{
	cleanupPolicyName:                         {cleanupPolicyValue, checkPolicyList},
	TimestampTypeName:                         {"CreateTime", choice("CreateTime", logAppendTime)},
	"min.insync.replicas":                     {"1", intAtLeast(1)},
	"segment.ms":                              {"604800000", longAtLeast(1)},
	"segment.jitter.ms":                       {"0", longAtLeast(0)},
	"segment.index.bytes":                     {"10485760", intAtLeast(4)},
	"index.interval.bytes":                    {"4096", intAtLeast(0)},
	"delete.retention.ms":                     {"86400000", longAtLeast(0)},
	"min.compaction.lag.ms":                   {"0", longAtLeast(0)},
	"max.compaction.lag.ms":                   {strconv.FormatInt(math.MaxInt64, 10), longAtLeast(1)},
	"min.cleanable.dirty.ratio":               {"0.5", ratio},
	"flush.ms":                                {strconv.FormatInt(math.MaxInt64, 10), longAtLeast(0)},
	"file.delete.delay.ms":                    {"60000", longAtLeast(0)},
	"preallocate":                             {"false", boolean},
	"unclean.leader.election.enable":          {"false", boolean},
	"message.timestamp.before.max.ms":         {strconv.FormatInt(math.MaxInt64, 10), longAtLeast(0)},
	"message.timestamp.after.max.ms":          {"3600000", longAtLeast(0)},
	"compression.gzip.level":                  {"-1", intIn(-1, 9)},
	"compression.lz4.level":                   {"9", intIn(1, 17)},
	"compression.zstd.level":                  {"3", intIn(-131072, 22)},
	"local.retention.ms":                      {"-2", longAtLeast(-2)},
	"local.retention.bytes":                   {"-2", longAtLeast(-2)},
	"remote.storage.enable":                   {"false", onlyFalse},
	"remote.log.copy.disable":                 {"false", boolean},
	"remote.log.delete.on.disable":            {"false", boolean},
	"leader.replication.throttled.replicas":   {"", anyString},
	"follower.replication.throttled.replicas": {"", anyString},
}

// heldTopicConfigs are the topicConfigs rows of heldConfigs (name, broker
// synonym, type), merged into topicConfigs at init.
var heldTopicConfigs = []topicConfig{
	{name: cleanupPolicyName, broker: "log.cleanup.policy", typ: kmsg.ConfigTypeList},
	{name: TimestampTypeName, broker: "log.message.timestamp.type", typ: kmsg.ConfigTypeString},
	{name: "min.insync.replicas", broker: "min.insync.replicas", typ: kmsg.ConfigTypeInt},
	{name: "segment.ms", broker: "log.roll.ms", typ: kmsg.ConfigTypeLong},
	{name: "segment.jitter.ms", broker: "log.roll.jitter.ms", typ: kmsg.ConfigTypeLong},
	{name: "segment.index.bytes", broker: "log.index.size.max.bytes", typ: kmsg.ConfigTypeInt},
	{name: "index.interval.bytes", broker: "log.index.interval.bytes", typ: kmsg.ConfigTypeInt},
	{name: "delete.retention.ms", broker: "log.cleaner.delete.retention.ms", typ: kmsg.ConfigTypeLong},
	{name: "min.compaction.lag.ms", broker: "log.cleaner.min.compaction.lag.ms", typ: kmsg.ConfigTypeLong},
	{name: "max.compaction.lag.ms", broker: "log.cleaner.max.compaction.lag.ms", typ: kmsg.ConfigTypeLong},
	{name: "min.cleanable.dirty.ratio", broker: "log.cleaner.min.cleanable.ratio", typ: kmsg.ConfigTypeDouble},
	{name: "flush.ms", broker: "log.flush.interval.ms", typ: kmsg.ConfigTypeLong},
	{name: "file.delete.delay.ms", broker: "log.segment.delete.delay.ms", typ: kmsg.ConfigTypeLong},
	{name: "preallocate", broker: "log.preallocate", typ: kmsg.ConfigTypeBoolean},
	{name: "unclean.leader.election.enable", broker: "unclean.leader.election.enable", typ: kmsg.ConfigTypeBoolean},
	{name: "message.timestamp.before.max.ms", broker: "log.message.timestamp.before.max.ms", typ: kmsg.ConfigTypeLong},
	{name: "message.timestamp.after.max.ms", broker: "log.message.timestamp.after.max.ms", typ: kmsg.ConfigTypeLong},
	{name: "compression.gzip.level", broker: "compression.gzip.level", typ: kmsg.ConfigTypeInt},
	{name: "compression.lz4.level", broker: "compression.lz4.level", typ: kmsg.ConfigTypeInt},
	{name: "compression.zstd.level", broker: "compression.zstd.level", typ: kmsg.ConfigTypeInt},
	{name: "local.retention.ms", broker: "log.local.retention.ms", typ: kmsg.ConfigTypeLong},
	{name: "local.retention.bytes", broker: "log.local.retention.bytes", typ: kmsg.ConfigTypeLong},
	{name: "remote.storage.enable", broker: "remote.log.storage.system.enable", typ: kmsg.ConfigTypeBoolean},
	{name: "remote.log.copy.disable", broker: "remote.log.copy.disable", typ: kmsg.ConfigTypeBoolean},
	{name: "remote.log.delete.on.disable", broker: "remote.log.delete.on.disable", typ: kmsg.ConfigTypeBoolean},
	{name: "leader.replication.throttled.replicas", broker: "leader.replication.throttled.replicas", typ: kmsg.ConfigTypeList},
	{name: "follower.replication.throttled.replicas", broker: "follower.replication.throttled.replicas", typ: kmsg.ConfigTypeList},
}

// --- checks (Kafka's ConfigDef rules; values are trimmed first) ---

func longAtLeast(lo int64) func(string) (string, string) {
	return func(v string) (string, string) {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch {
		case err != nil:
			return "", "Not a number of type LONG"
		case n < lo:
			return "", "Value must be at least " + strconv.FormatInt(lo, 10)
		}
		return strconv.FormatInt(n, 10), ""
	}
}

func intIn(lo, hi int64) func(string) (string, string) {
	return func(v string) (string, string) {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		switch {
		case err != nil:
			return "", "Not a number of type INT"
		case n < lo:
			return "", "Value must be at least " + strconv.FormatInt(lo, 10)
		case n > hi:
			return "", "Value must be no more than " + strconv.FormatInt(hi, 10)
		}
		return strconv.FormatInt(n, 10), ""
	}
}

func intAtLeast(lo int64) func(string) (string, string) { return intIn(lo, math.MaxInt32) }

func ratio(v string) (string, string) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	switch {
	case err != nil:
		return "", "Not a number of type DOUBLE"
	case f < 0:
		return "", "Value must be at least 0.0"
	case f > 1:
		return "", "Value must be no more than 1.0"
	}
	return strings.TrimSpace(v), ""
}

func boolean(v string) (string, string) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return "true", ""
	case "false":
		return "false", ""
	}
	return "", "Expected value to be either true or false"
}

func onlyFalse(v string) (string, string) {
	b, reason := boolean(v)
	if reason == "" && b == "true" {
		return "", "Iggy has no tiered storage"
	}
	return b, reason
}

func anyString(v string) (string, string) { return strings.TrimSpace(v), "" }

func choice(choices ...string) func(string) (string, string) {
	return func(v string) (string, string) {
		t := strings.TrimSpace(v)
		for _, c := range choices {
			if t == c {
				return c, ""
			}
		}
		return "", "String must be one of: " + strings.Join(choices, ", ")
	}
}

// checkPolicyList accepts a Kafka LIST of compact and delete (comma
// separated, trimmed, each at most once) and returns it normalized.
func checkPolicyList(v string) (string, string) {
	var out []string
	seen := map[string]bool{}
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		switch p {
		case "compact", cleanupPolicyValue:
		case "":
			if strings.TrimSpace(v) == "" {
				return "", "Configuration 'cleanup.policy' must not be empty"
			}
			return "", "String must be one of: compact, delete"
		default:
			return "", "String must be one of: compact, delete"
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return strings.Join(out, ","), ""
}

// isCompactPolicy reports whether a cleanup.policy value includes compact.
func isCompactPolicy(v string) bool {
	for _, p := range strings.Split(v, ",") {
		if strings.TrimSpace(p) == "compact" {
			return true
		}
	}
	return false
}

// listOp applies an APPEND or SUBTRACT of v to the LIST value cur.
func listOp(cur, v string, op kmsg.IncrementalAlterConfigOp) string {
	var items []string
	for _, p := range strings.Split(cur, ",") {
		if p = strings.TrimSpace(p); p != "" {
			items = append(items, p)
		}
	}
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		idx := -1
		for i, it := range items {
			if it == p {
				idx = i
			}
		}
		switch {
		case op == kmsg.IncrementalAlterConfigOpAppend && idx < 0:
			items = append(items, p)
		case op == kmsg.IncrementalAlterConfigOpSubtract && idx >= 0:
			items = append(items[:idx], items[idx+1:]...)
		}
	}
	return strings.Join(items, ",")
}

// heldValue is a topic's value of a held config: its own, else the default.
func (s Set) heldValue(name string) string {
	if v, ok := s.held[name]; ok {
		return v
	}
	return heldConfigs[name].def
}
