package topicconfig

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

func u64opt(key string, v uint64) icodec.Option {
	return icodec.Option{Key: key, Kind: icodec.HeaderKindUint64, Value: binary.LittleEndian.AppendUint64(nil, v)}
}

func stropt(key, v string) icodec.Option {
	return icodec.Option{Key: key, Kind: icodec.HeaderKindString, Value: []byte(v)}
}

func sp(s string) *string { return &s }

func TestParseHumanDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		us   uint64
		fail bool
	}{
		{in: "7 days", us: 7 * 86400e6},
		{in: "1h 30m", us: 5400e6},
		{in: "1h30m", us: 5400e6},
		{in: "90s", us: 90e6},
		{in: "1 hour 2 minutes 3 seconds", us: 3723e6},
		{in: "250ms", us: 250e3},
		{in: "1500us", us: 1500},
		{in: "1500ns", us: 1},
		{in: "1 month", us: 2630016e6},
		{in: "1y", us: 31557600e6},
		{in: "  2 w ", us: 2 * 604800e6},
		{in: "4294967295s", us: 4294967295e6},
		{in: "4294967296s", fail: true}, // above 2^32-1 s
		{in: "99999999999999999999s", fail: true},
		{in: "", fail: true},
		{in: "10", fail: true},
		{in: "days", fail: true},
		{in: "1 fortnight", fail: true},
		{in: "-1s", fail: true},
		{in: "1.5h", fail: true},
	} {
		us, ok := icodec.ParseHumanDuration(tc.in)
		if ok == tc.fail || (ok && us != tc.us) {
			t.Errorf("ParseHumanDuration(%q) = %d, %v; want %d, ok=%v", tc.in, us, ok, tc.us, !tc.fail)
		}
	}
}

func TestParseByteSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    uint64
		fail bool
	}{
		{in: "1024", n: 1024},
		{in: "1 GiB", n: 1 << 30},
		{in: "500MB", n: 500e6},
		{in: "128 mib", n: 128 << 20},
		{in: "1.5 GB", n: 1.5e9},
		{in: "1.5 B", n: 1},
		{in: "16 EiB", fail: true}, // 2^64: beyond u64
		{in: "15 EiB", n: 15 << 60},
		{in: "", fail: true},
		{in: "GB", fail: true},
		{in: "1..5 GB", fail: true},
		{in: ".", fail: true},
		{in: "1 XB", fail: true},
		{in: "-5 MB", fail: true},
		{in: "1e3", fail: true},
	} {
		n, ok := icodec.ParseByteSize(tc.in)
		if ok == tc.fail || (ok && n != tc.n) {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d, ok=%v", tc.in, n, ok, tc.n, !tc.fail)
		}
	}
}

func TestParseOptionValue(t *testing.T) {
	spec := func(k string) *icodec.OptionSpec {
		s, ok := icodec.LookupOption(icodec.TopicOptions, k)
		if !ok {
			t.Fatalf("catalog has no %s", k)
		}
		return s
	}
	u32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	u64 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	for _, tc := range []struct {
		name string
		key  string
		kind icodec.HeaderKind
		data []byte
		want uint64
		ok   bool
	}{
		{"expiry canonical", optMessageExpiry, icodec.HeaderKindUint64, u64(5e6), 5e6, true},
		{"expiry string", optMessageExpiry, icodec.HeaderKindString, []byte("1h"), 3600e6, true},
		{"expiry never", optMessageExpiry, icodec.HeaderKindString, []byte("never_expire"), math.MaxUint64, true},
		{"expiry default", optMessageExpiry, icodec.HeaderKindString, []byte("server_default"), 0, true},
		{"expiry short bytes", optMessageExpiry, icodec.HeaderKindUint64, []byte{1, 2, 3}, 0, false},
		{"expiry wrong kind", optMessageExpiry, icodec.HeaderKindUint32, u32(1), 0, false},
		{"size string", optMaxTopicSize, icodec.HeaderKindString, []byte("2 GiB"), 2 << 30, true},
		{"size unlimited", optMaxTopicSize, icodec.HeaderKindString, []byte("unlimited"), math.MaxUint64, true},
		{"segment in range", optSegmentSize, icodec.HeaderKindUint64, u64(1 << 20), 1 << 20, true},
		{"segment not multiple of 512", optSegmentSize, icodec.HeaderKindUint64, u64(1<<20 + 1), 0, false},
		{"segment too big", optSegmentSize, icodec.HeaderKindString, []byte("2 GiB"), 0, false},
		{"segment zero is default", optSegmentSize, icodec.HeaderKindUint64, u64(0), 0, true},
		{"messages canonical", optMessagesToSave, icodec.HeaderKindUint32, u32(10), 10, true},
		{"messages zero refused", optMessagesToSave, icodec.HeaderKindString, []byte("0"), 0, false},
		{"messages above max", optMessagesToSave, icodec.HeaderKindUint32, u32(16777217), 0, false},
		{"compression string", optCompression, icodec.HeaderKindString, []byte("gzip"), 2, true},
		{"compression upper", optCompression, icodec.HeaderKindString, []byte("GZIP"), 2, true},
		{"compression uint8", optCompression, icodec.HeaderKindUint8, []byte{1}, 1, true},
		{"compression bad code", optCompression, icodec.HeaderKindUint8, []byte{3}, 0, false},
		{"compression zstd", optCompression, icodec.HeaderKindString, []byte("zstd"), 0, false},
		{"bool", "enforce_fsync", icodec.HeaderKindBool, []byte{1}, 1, true},
		{"bool 2", "enforce_fsync", icodec.HeaderKindBool, []byte{2}, 0, false},
		{"bool string", "enforce_fsync", icodec.HeaderKindString, []byte("true"), 1, true},
		{"choice", "durability", icodec.HeaderKindString, []byte("Persisted"), 1, true},
		{"choice unknown", "durability", icodec.HeaderKindString, []byte("fast"), 0, false},
		{"bad utf8", optMessageExpiry, icodec.HeaderKindString, []byte{0xff, 's'}, 0, false},
		{"empty data", optMessageExpiry, icodec.HeaderKindUint64, nil, 0, false},
	} {
		got, ok := parseOptionValue(spec(tc.key), tc.kind, tc.data)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("%s: got %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestCreateOptions(t *testing.T) {
	type want struct {
		opts map[string]uint64 // Iggy key -> canonical value sent
		code int16
		msg  string // substring of the refusal
	}
	for _, tc := range []struct {
		name       string
		defaults   icodec.Options
		configs    map[string]string
		partitions uint32
		want       want
	}{
		{name: "none", partitions: 1, want: want{opts: map[string]uint64{}}},
		{name: "retention.ms", partitions: 1, configs: map[string]string{"retention.ms": "60000"},
			want: want{opts: map[string]uint64{optMessageExpiry: 60e6}}},
		{name: "retention.ms -1", partitions: 1, configs: map[string]string{"retention.ms": "-1"},
			want: want{opts: map[string]uint64{optMessageExpiry: math.MaxUint64}}},
		{name: "retention.ms 0 is 1 µs", partitions: 1, configs: map[string]string{"retention.ms": "0"},
			want: want{opts: map[string]uint64{optMessageExpiry: 1}}},
		{name: "retention.ms huge is never", partitions: 1, configs: map[string]string{"retention.ms": "9223372036854775807"},
			want: want{opts: map[string]uint64{optMessageExpiry: math.MaxUint64}}},
		{name: "retention.ms -2", partitions: 1, configs: map[string]string{"retention.ms": "-2"},
			want: want{code: kerr.InvalidConfig.Code, msg: "Invalid value -2 for configuration retention.ms: Value must be at least -1"}},
		{name: "retention.ms text", partitions: 1, configs: map[string]string{"retention.ms": "7d"},
			want: want{code: kerr.InvalidConfig.Code, msg: "Not a number of type LONG"}},
		{name: "retention.bytes per partition", partitions: 4, configs: map[string]string{"retention.bytes": "1073741824"},
			want: want{opts: map[string]uint64{optMaxTopicSize: 4 << 30}}},
		{name: "retention.bytes below segment", partitions: 2, configs: map[string]string{"retention.bytes": "1048576"},
			want: want{code: kerr.InvalidConfig.Code, msg: "configuration retention.bytes"}},
		{name: "retention.bytes with small segments", partitions: 2,
			configs: map[string]string{"retention.bytes": "1048576", "segment.bytes": "1048576"},
			want:    want{opts: map[string]uint64{optMaxTopicSize: 2 << 20, optSegmentSize: 1 << 20}}},
		{name: "retention.bytes 0", partitions: 1, configs: map[string]string{"retention.bytes": "0"},
			want: want{code: kerr.InvalidConfig.Code, msg: "retention.bytes"}},
		{name: "retention.bytes overflow is unlimited", partitions: 1000, configs: map[string]string{"retention.bytes": "9223372036854775807"},
			want: want{opts: map[string]uint64{optMaxTopicSize: math.MaxUint64}}},
		{name: "segment.bytes odd", partitions: 1, configs: map[string]string{"segment.bytes": "1048577"},
			want: want{code: kerr.InvalidConfig.Code, msg: "multiple of 512 between 1048576 and 1073741824"}},
		{name: "segment.bytes beyond int", partitions: 1, configs: map[string]string{"segment.bytes": "4294967296"},
			want: want{code: kerr.InvalidConfig.Code, msg: "Not a number of type INT"}},
		{name: "flush.messages", partitions: 1, configs: map[string]string{"flush.messages": "100"},
			want: want{opts: map[string]uint64{optMessagesToSave: 100}}},
		{name: "flush.messages kafka default refused", partitions: 1, configs: map[string]string{"flush.messages": "9223372036854775807"},
			want: want{code: kerr.InvalidConfig.Code, msg: "flush.messages"}},
		{name: "compression gzip", partitions: 1, configs: map[string]string{"compression.type": "gzip"},
			want: want{opts: map[string]uint64{optCompression: uint64(icodec.CompressionAlgorithmGzip)}}},
		{name: "compression uncompressed", partitions: 1, configs: map[string]string{"compression.type": "uncompressed"},
			want: want{opts: map[string]uint64{optCompression: uint64(icodec.CompressionAlgorithmNone)}}},
		{name: "compression zstd", partitions: 1, configs: map[string]string{"compression.type": "zstd"},
			want: want{code: kerr.InvalidConfig.Code, msg: "compression.type"}},
		{name: "cleanup delete", partitions: 1, configs: map[string]string{"cleanup.policy": "delete"},
			want: want{opts: map[string]uint64{}}},
		{name: "cleanup compact", partitions: 1, configs: map[string]string{"cleanup.policy": "compact"},
			want: want{opts: map[string]uint64{}}},
		{name: "cleanup compact,delete", partitions: 1, configs: map[string]string{"cleanup.policy": "delete, compact"},
			want: want{opts: map[string]uint64{}}},
		{name: "cleanup unknown policy", partitions: 1, configs: map[string]string{"cleanup.policy": "compact,shred"},
			want: want{code: kerr.InvalidConfig.Code, msg: "String must be one of: compact, delete"}},
		{name: "timestamp type", partitions: 1, configs: map[string]string{"message.timestamp.type": "LogAppendTime"},
			want: want{opts: map[string]uint64{}}},
		{name: "timestamp type bad", partitions: 1, configs: map[string]string{"message.timestamp.type": "AppendTime"},
			want: want{code: kerr.InvalidConfig.Code, msg: "String must be one of: CreateTime, LogAppendTime"}},
		{name: "min.insync.replicas 0", partitions: 1, configs: map[string]string{"min.insync.replicas": "0"},
			want: want{code: kerr.InvalidConfig.Code, msg: "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"}},
		{name: "cleanup empty", partitions: 1, configs: map[string]string{"cleanup.policy": ""},
			want: want{code: kerr.InvalidConfig.Code, msg: "cleanup.policy"}},
		{name: "unknown", partitions: 1, configs: map[string]string{"foo.bar": "1"},
			want: want{code: kerr.InvalidConfig.Code, msg: "Unknown topic config name: foo.bar"}},
		{name: "held key", partitions: 1, configs: map[string]string{"min.insync.replicas": "1", "segment.ms": "600000"},
			want: want{opts: map[string]uint64{}}},
		{name: "kafka-only key", partitions: 1, configs: map[string]string{"message.format.version": "3.0"},
			want: want{code: kerr.InvalidConfig.Code, msg: "message.format.version is not supported"}},
		{name: "gateway defaults kept", partitions: 1, defaults: icodec.Options{stropt(optMessageExpiry, "7 days"), stropt("enforce_fsync", "true")},
			want: want{opts: map[string]uint64{optMessageExpiry: 7 * 86400e6, "enforce_fsync": 1}}},
		{name: "request overrides gateway default", partitions: 1, defaults: icodec.Options{stropt(optMessageExpiry, "7 days")},
			configs: map[string]string{"retention.ms": "1000"},
			want:    want{opts: map[string]uint64{optMessageExpiry: 1e6}}},
		{name: "gateway choice default", partitions: 1, defaults: icodec.Options{stropt("durability", "persisted")},
			want: want{opts: map[string]uint64{"durability": 1}}},
		{name: "bad gateway default", partitions: 1, defaults: icodec.Options{stropt(optMessageExpiry, "soon")},
			want: want{code: kerr.InvalidConfig.Code, msg: "Gateway default topic option message_expiry=soon"}},
		{name: "preallocation budget", partitions: 65, defaults: icodec.Options{stropt(optPreallocate, "true")},
			want: want{code: kerr.InvalidConfig.Code, msg: "preallocate_segments"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfgs []Value
			for k, v := range tc.configs {
				cfgs = append(cfgs, Value{Name: k, Value: sp(v)})
			}
			opts, set, e := CreateOptions(tc.defaults, cfgs, tc.partitions)
			if tc.want.code != 0 {
				if e == nil || e.Code != tc.want.code || !strings.Contains(e.Msg, tc.want.msg) {
					t.Fatalf("got %+v, want code %d with %q", e, tc.want.code, tc.want.msg)
				}
				return
			}
			if e != nil {
				t.Fatalf("refused: %s", e.Msg)
			}
			if len(opts) != len(tc.want.opts) {
				t.Fatalf("sent %d options %+v, want %v", len(opts), opts, tc.want.opts)
			}
			for _, o := range opts {
				spec, _ := icodec.LookupOption(icodec.TopicOptions, o.Key)
				v, ok := parseOptionValue(spec, o.Kind, o.Value)
				if w, in := tc.want.opts[o.Key]; !ok || !in || v != w {
					t.Errorf("option %s = %d (ok %v), want %d", o.Key, v, ok, w)
				}
				if set.vals[o.Key] != v || !set.explicit[o.Key] {
					t.Errorf("set %s = %d explicit %v", o.Key, set.vals[o.Key], set.explicit[o.Key])
				}
			}
		})
	}
}

// TestCreateDescribeRoundTrip: what a topic created with Kafka configs
// reports back is what was asked (server-side canonical re-encoding is the
// identity on the options the gateway sends).
func TestCreateDescribeRoundTrip(t *testing.T) {
	configs := map[string]string{
		"retention.ms": "3600000", "retention.bytes": "2147483648", "segment.bytes": "16777216",
		"compression.type": "gzip", "flush.messages": "50", "cleanup.policy": "delete",
		"max.message.bytes": "10485760",
	}
	var cfgs []Value
	for k, v := range configs {
		cfgs = append(cfgs, Value{Name: k, Value: sp(v)})
	}
	opts, _, e := CreateOptions(nil, cfgs, 3)
	if e != nil {
		t.Fatal(e.Msg)
	}
	set := setOf(opts, nil)
	_, createSet, _ := CreateOptions(nil, cfgs, 3)
	overlayStored(set, StoredConfigs(createSet))
	for _, o := range opts {
		if o.Key == optMaxMessageBytes {
			t.Errorf("a gateway-held key reached the Iggy options: %v", o)
		}
	}
	entries := TopicEntries(set, 3, NewBrokerDefaults(nil, 1, DefaultMaxMessageBytes), true)
	if len(entries) != len(topicConfigs) {
		t.Fatalf("entries: %+v", entries)
	}
	for _, e := range entries {
		want, set := configs[e.Name]
		if !set {
			want = heldConfigs[e.Name].def
		}
		if e.Value != want {
			t.Errorf("%s = %q, want %q", e.Name, e.Value, want)
		}
		wantSource := kmsg.ConfigSourceDynamicTopicConfig
		if !set {
			wantSource = kmsg.ConfigSourceDefaultConfig
		}
		if e.Source != wantSource {
			t.Errorf("%s source %v", e.Name, e.Source)
		}
		wantRO := e.Name == "segment.bytes" || e.Name == "flush.messages"
		if e.ReadOnly != wantRO {
			t.Errorf("%s read-only %v", e.Name, e.ReadOnly)
		}
		if len(e.Synonyms) == 0 || e.Synonyms[len(e.Synonyms)-1].Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("%s synonyms %+v", e.Name, e.Synonyms)
		}
		if e.Source == kmsg.ConfigSourceDynamicTopicConfig && (e.Synonyms[0].Name != e.Name || e.Synonyms[0].Value != e.Value) {
			t.Errorf("%s first synonym %+v", e.Name, e.Synonyms[0])
		}
	}
	for i := 1; i < len(entries); i++ {
		if entries[i-1].Name >= entries[i].Name {
			t.Errorf("not sorted: %s before %s", entries[i-1].Name, entries[i].Name)
		}
	}
}

func TestTopicEntriesDefaults(t *testing.T) {
	// A fresh Iggy topic: everything derived; and one whose explicit block
	// holds the default markers an alter wrote.
	var derived icodec.Options
	for i := range icodec.TopicOptions {
		s := &icodec.TopicOptions[i]
		derived = append(derived, icodec.Option{Key: s.Key, Kind: s.Kind, Value: s.Default})
	}
	markers := icodec.Options{
		u64opt(optMessageExpiry, 0), u64opt(optMaxTopicSize, 0),
		{Key: optCompression, Kind: icodec.HeaderKindUint8, Value: []byte{1}},
	}
	want := map[string]string{
		"compression.type": "none", "flush.messages": "1024",
		"retention.bytes": "-1", "retention.ms": "-1", "segment.bytes": "1073741824",
		"max.message.bytes": "1048588",
	}
	for name, explicit := range map[string]icodec.Options{"derived": nil, "markers": markers} {
		for _, e := range TopicEntries(setOf(explicit, derived), 2, NewBrokerDefaults(nil, 1, DefaultMaxMessageBytes), false) {
			w, ok := want[e.Name]
			if !ok {
				w = heldConfigs[e.Name].def
			}
			if e.Value != w || e.Source != kmsg.ConfigSourceDefaultConfig || e.Synonyms != nil {
				t.Errorf("%s: %+v", name, e)
			}
		}
	}
	// An explicit value written by another Iggy client as a String, and an
	// unparsable one (read as the default).
	set := setOf(icodec.Options{stropt(optMessageExpiry, "2h"), stropt(optMaxTopicSize, "lots")}, derived)
	if set.vals[optMessageExpiry] != 7200e6 || !set.explicit[optMessageExpiry] {
		t.Errorf("string expiry: %d %v", set.vals[optMessageExpiry], set.explicit[optMessageExpiry])
	}
	if set.vals[optMaxTopicSize] != math.MaxUint64 || set.explicit[optMaxTopicSize] {
		t.Errorf("bad size: %d %v", set.vals[optMaxTopicSize], set.explicit[optMaxTopicSize])
	}
}

// TestTopicEntriesGatewayDefaults: a topic holding the gateway's default
// option reports it as STATIC_BROKER_CONFIG (a Kafka topic inheriting the
// broker's config); another explicit value is DYNAMIC_TOPIC_CONFIG with the
// gateway default among its synonyms.
func TestTopicEntriesGatewayDefaults(t *testing.T) {
	bd := NewBrokerDefaults(icodec.Options{stropt(optMessageExpiry, "1 day"), stropt(optMaxTopicSize, "4 GiB")}, 2, DefaultMaxMessageBytes)
	set := setOf(icodec.Options{u64opt(optMessageExpiry, 86400e6), u64opt(optMaxTopicSize, 8<<30)}, nil)
	got := map[string]Entry{}
	for _, e := range TopicEntries(set, 4, bd, true) {
		got[e.Name] = e
	}
	ms, bytes := got["retention.ms"], got["retention.bytes"]
	if ms.Value != "86400000" || ms.Source != kmsg.ConfigSourceStaticBrokerConfig || len(ms.Synonyms) != 2 ||
		ms.Synonyms[0] != (Synonym{"log.retention.ms", "86400000", kmsg.ConfigSourceStaticBrokerConfig}) ||
		ms.Synonyms[1] != (Synonym{"log.retention.ms", "-1", kmsg.ConfigSourceDefaultConfig}) {
		t.Errorf("retention.ms: %+v", ms)
	}
	if bytes.Value != "2147483648" || bytes.Source != kmsg.ConfigSourceDynamicTopicConfig || len(bytes.Synonyms) != 3 ||
		bytes.Synonyms[0].Source != kmsg.ConfigSourceDynamicTopicConfig || bytes.Synonyms[1] != (Synonym{"log.retention.bytes", "1073741824", kmsg.ConfigSourceStaticBrokerConfig}) {
		t.Errorf("retention.bytes: %+v", bytes)
	}
}

func TestPlanAlter(t *testing.T) {
	// The current topic: 2 partitions, retention.ms and segment.bytes set.
	cur := setOf(icodec.Options{u64opt(optMessageExpiry, 60e6), u64opt(optSegmentSize, 1<<20)}, nil)
	set := func(n, v string) AlterOp { return AlterOp{Name: n, Op: kmsg.IncrementalAlterConfigOpSet, Value: sp(v)} }
	del := func(n string) AlterOp { return AlterOp{Name: n, Op: kmsg.IncrementalAlterConfigOpDelete} }
	op := func(n string, o kmsg.IncrementalAlterConfigOp, v string) AlterOp {
		return AlterOp{Name: n, Op: o, Value: sp(v)}
	}
	reset := func(key string) string { // how a reset marker reads back
		spec, _ := icodec.LookupOption(icodec.TopicOptions, key)
		return string(resetOption(spec).Value)
	}
	type patchWant map[string]string                                                          // Iggy key -> Kafka value, or "reset"
	gw := icodec.Options{stropt(optMessageExpiry, "7 days"), stropt(optSegmentSize, "2 MiB")} // gateway defaults
	for _, tc := range []struct {
		name     string
		ops      []AlterOp
		replace  bool
		defaults icodec.Options
		patch    patchWant
		code     int16
		msg      string
	}{
		{name: "incremental set", ops: []AlterOp{set("retention.bytes", "10485760")},
			patch: patchWant{optMaxTopicSize: "10485760"}},
		{name: "incremental delete", ops: []AlterOp{del("retention.ms")}, patch: patchWant{optMessageExpiry: "reset"}},
		{name: "replace resets unnamed", replace: true, ops: []AlterOp{set("compression.type", "gzip")},
			patch: patchWant{optCompression: "gzip", optMessageExpiry: "reset", optMaxTopicSize: "reset"}},
		{name: "replace nothing resets all", replace: true,
			patch: patchWant{optCompression: "reset", optMessageExpiry: "reset", optMaxTopicSize: "reset"}},
		{name: "create-only same value", ops: []AlterOp{set("segment.bytes", "1048576")}, patch: patchWant{}},
		{name: "create-only new value", ops: []AlterOp{set("segment.bytes", "2097152")},
			code: kerr.InvalidConfig.Code, msg: "Cannot alter segment.bytes"},
		{name: "create-only delete when set", ops: []AlterOp{del("segment.bytes")},
			code: kerr.InvalidConfig.Code, msg: "Cannot delete segment.bytes"},
		{name: "create-only delete when default", ops: []AlterOp{del("flush.messages")}, patch: patchWant{}},
		{name: "cleanup delete", ops: []AlterOp{set("cleanup.policy", "delete")}, patch: patchWant{}},
		{name: "cleanup compact", ops: []AlterOp{set("cleanup.policy", "compact")}, patch: patchWant{}},
		{name: "cleanup append compact", ops: []AlterOp{op("cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, "compact")}, patch: patchWant{}},
		{name: "cleanup subtract delete", ops: []AlterOp{op("cleanup.policy", kmsg.IncrementalAlterConfigOpSubtract, "delete")},
			code: kerr.InvalidConfig.Code, msg: "must not be empty"},
		{name: "cleanup delete op", ops: []AlterOp{del("cleanup.policy")}, patch: patchWant{}},
		{name: "append on scalar", ops: []AlterOp{op("retention.ms", kmsg.IncrementalAlterConfigOpAppend, "1")},
			code: kerr.InvalidConfig.Code, msg: "Can't APPEND to key retention.ms because its type is not LIST."},
		{name: "unknown op", ops: []AlterOp{op("retention.ms", 9, "1")}, code: kerr.InvalidRequest.Code, msg: "Unknown operations type 9"},
		{name: "unknown key", ops: []AlterOp{set("foo", "1")}, code: kerr.InvalidConfig.Code, msg: "Unknown topic config name: foo"},
		{name: "unknown key delete", ops: []AlterOp{del("foo")}, code: kerr.InvalidConfig.Code, msg: "foo"},
		{name: "null value", ops: []AlterOp{{Name: "retention.ms", Op: kmsg.IncrementalAlterConfigOpSet}},
			code: kerr.InvalidRequest.Code, msg: "Null value not supported for : retention.ms"},
		{name: "duplicate key", ops: []AlterOp{set("retention.ms", "1"), set("retention.ms", "2")},
			code: kerr.InvalidRequest.Code, msg: "duplicate config keys"},
		{name: "bad value", ops: []AlterOp{set("retention.ms", "x")}, code: kerr.InvalidConfig.Code, msg: "Invalid value x for configuration retention.ms"},
		{name: "delete falls back to the gateway default", defaults: gw, ops: []AlterOp{del("retention.ms")},
			patch: patchWant{optMessageExpiry: "604800000"}},
		{name: "replace falls back to the gateway default", defaults: gw, replace: true,
			patch: patchWant{optCompression: "reset", optMessageExpiry: "604800000", optMaxTopicSize: "reset"}},
		{name: "create-only delete to another gateway default", defaults: gw, ops: []AlterOp{del("segment.bytes")},
			code: kerr.InvalidConfig.Code, msg: "Cannot delete segment.bytes"},
		{name: "size below segment", ops: []AlterOp{set("retention.bytes", "1000")}, code: kerr.InvalidConfig.Code, msg: "retention.bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bd := NewBrokerDefaults(tc.defaults, 1, DefaultMaxMessageBytes)
			patch, next, e := PlanAlter(cur, 2, tc.ops, tc.replace, bd)
			if tc.code != 0 {
				if e == nil || e.Code != tc.code || !strings.Contains(e.Msg, tc.msg) {
					t.Fatalf("got %+v, want %d %q", e, tc.code, tc.msg)
				}
				return
			}
			if e != nil {
				t.Fatalf("refused: %s", e.Msg)
			}
			if len(patch) != len(tc.patch) {
				t.Fatalf("patch %+v, want %v", patch, tc.patch)
			}
			for _, o := range patch {
				w, ok := tc.patch[o.Key]
				if !ok {
					t.Fatalf("unexpected %s in patch", o.Key)
				}
				if w == "reset" {
					if string(o.Value) != reset(o.Key) {
						t.Errorf("%s not a reset marker: %v", o.Key, o.Value)
					}
					continue
				}
				tcfg := kafkaNameOf(o.Key)
				spec, _ := icodec.LookupOption(icodec.TopicOptions, o.Key)
				v, ok := parseOptionValue(spec, o.Kind, o.Value)
				if !ok || tcfg.toKafka(v, 2) != w {
					t.Errorf("%s = %d, want Kafka %s", o.Key, v, w)
				}
			}
			// The plan's resulting set is what describing the patched
			// topic gives.
			after := setOf(patchOptions(icodec.Options{u64opt(optMessageExpiry, 60e6), u64opt(optSegmentSize, 1<<20)}, patch), nil)
			for _, k := range []string{optMessageExpiry, optMaxTopicSize, optCompression} {
				if after.vals[k] != next.vals[k] || after.explicit[k] != next.explicit[k] {
					t.Errorf("%s: planned %d/%v, reads back %d/%v", k, next.vals[k], next.explicit[k], after.vals[k], after.explicit[k])
				}
			}
		})
	}
}

// patchOptions applies an UPDATE_TOPIC block as Iggy does: sent keys replace
// (or join) the explicit block verbatim.
func patchOptions(explicit, patch icodec.Options) icodec.Options {
	out := append(icodec.Options(nil), explicit...)
	for _, p := range patch {
		replaced := false
		for i := range out {
			if out[i].Key == p.Key {
				out[i], replaced = p, true
			}
		}
		if !replaced {
			out = append(out, p)
		}
	}
	return out
}

// kafkaNameOf finds the mapping entry of an Iggy key.
func kafkaNameOf(key string) *topicConfig {
	for i := range topicConfigs {
		if topicConfigs[i].option == key {
			return &topicConfigs[i]
		}
	}
	return nil
}

func TestBrokerEntries(t *testing.T) {
	rack := "r1"
	bd := NewBrokerDefaults(icodec.Options{stropt(optMessageExpiry, "1 day"), stropt(optMaxTopicSize, "4 GiB")}, 4, DefaultMaxMessageBytes)
	got := map[string]Entry{}
	for _, e := range BrokerEntries(7, &rack, bd, true, true) {
		got[e.Name] = e
		if !e.ReadOnly || len(e.Synonyms) == 0 || e.Synonyms[0].Name != e.Name {
			t.Errorf("%+v", e)
		}
	}
	for name, w := range map[string]struct {
		value  string
		source kmsg.ConfigSource
	}{
		"broker.id":                   {"7", kmsg.ConfigSourceStaticBrokerConfig},
		"broker.rack":                 {"r1", kmsg.ConfigSourceStaticBrokerConfig},
		"num.partitions":              {"4", kmsg.ConfigSourceStaticBrokerConfig},
		"default.replication.factor":  {"1", kmsg.ConfigSourceDefaultConfig},
		"auto.create.topics.enable":   {"true", kmsg.ConfigSourceStaticBrokerConfig},
		"log.retention.ms":            {"86400000", kmsg.ConfigSourceStaticBrokerConfig},
		"log.retention.bytes":         {"1073741824", kmsg.ConfigSourceStaticBrokerConfig},
		"log.segment.bytes":           {"1073741824", kmsg.ConfigSourceDefaultConfig},
		"log.cleanup.policy":          {"delete", kmsg.ConfigSourceDefaultConfig},
		"compression.type":            {"none", kmsg.ConfigSourceDefaultConfig},
		"log.flush.interval.messages": {"1024", kmsg.ConfigSourceDefaultConfig},
	} {
		e, ok := got[name]
		if !ok || e.Value != w.value || e.Source != w.source {
			t.Errorf("%s: %+v, want %+v", name, e, w)
		}
	}
	if s := got["log.retention.ms"].Synonyms; len(s) != 2 || s[1].Source != kmsg.ConfigSourceDefaultConfig || s[1].Value != "-1" {
		t.Errorf("log.retention.ms synonyms %+v", s)
	}
}

// FuzzTopicConfigs: no input panics the mapping, and a plan that is
// accepted reads back as planned.
func FuzzTopicConfigs(f *testing.F) {
	for _, s := range []string{"retention.ms=100", "retention.bytes=-1", "segment.bytes=1048576", "compression.type=gzip",
		"cleanup.policy=delete,compact", "flush.messages=1", "x=y", "retention.ms=9223372036854775807", "retention.bytes=1e9"} {
		f.Add(s, uint32(3), uint8(0))
	}
	f.Fuzz(func(t *testing.T, kv string, partitions uint32, op uint8) {
		name, value, _ := strings.Cut(kv, "=")
		partitions %= 1001
		_, _, _ = CreateOptions(icodec.Options{stropt(optMessageExpiry, value), stropt(optMaxTopicSize, value)},
			[]Value{{Name: name, Value: &value}}, partitions)
		cur := setOf(icodec.Options{stropt(optSegmentSize, value), {Key: optCompression, Kind: icodec.HeaderKind(op), Value: []byte(value)}}, nil)
		bd := NewBrokerDefaults(icodec.Options{stropt(optMaxTopicSize, value)}, int32(partitions), DefaultMaxMessageBytes)
		patch, next, e := PlanAlter(cur, partitions, []AlterOp{{Name: name, Op: kmsg.IncrementalAlterConfigOp(op % 5), Value: &value}}, op%2 == 0, bd)
		if e == nil {
			after := setOf(patchOptions(icodec.Options{stropt(optSegmentSize, value)}, patch), nil)
			for _, k := range []string{optMessageExpiry, optMaxTopicSize, optCompression} {
				if _, sent := patch.Get(k); sent && (after.vals[k] != next.vals[k] || after.explicit[k] != next.explicit[k]) {
					t.Fatalf("%s: planned %d/%v, reads back %d/%v", k, next.vals[k], next.explicit[k], after.vals[k], after.explicit[k])
				}
			}
		}
		_ = TopicEntries(cur, partitions, bd, true)
		_, _ = icodec.ParseHumanDuration(value)
		_, _ = icodec.ParseByteSize(value)
	})
}

// TestHeldConfigOps: the held configs (held.go) through PlanAlter: a
// SET, APPEND and SUBTRACT on cleanup.policy, DELETE back to the default,
// and AlterConfigs (replace) dropping what it does not name.
func TestHeldConfigOps(t *testing.T) {
	bd := NewBrokerDefaults(nil, 1, DefaultMaxMessageBytes)
	cur := defaultOptionSet()
	v := func(s string) *string { return &s }
	steps := []struct {
		ops     []AlterOp
		replace bool
		policy  string
		held    int
	}{
		{[]AlterOp{{Name: "cleanup.policy", Op: kmsg.IncrementalAlterConfigOpSet, Value: v("compact")}}, false, "compact", 1},
		{[]AlterOp{{Name: "cleanup.policy", Op: kmsg.IncrementalAlterConfigOpAppend, Value: v("delete")}}, false, "compact,delete", 1},
		{[]AlterOp{{Name: "min.insync.replicas", Op: kmsg.IncrementalAlterConfigOpSet, Value: v(" 2 ")}}, false, "compact,delete", 2},
		{[]AlterOp{{Name: "cleanup.policy", Op: kmsg.IncrementalAlterConfigOpSubtract, Value: v("compact")}}, false, "delete", 2},
		{[]AlterOp{{Name: "cleanup.policy", Op: kmsg.IncrementalAlterConfigOpDelete}}, false, "delete", 1},
		{[]AlterOp{{Name: "cleanup.policy", Op: kmsg.IncrementalAlterConfigOpSet, Value: v("compact")}}, true, "compact", 1},
	}
	for i, st := range steps {
		_, next, e := PlanAlter(cur, 1, st.ops, st.replace, bd)
		if e != nil {
			t.Fatalf("step %d: %s", i, e.Msg)
		}
		if got := next.heldValue(cleanupPolicyName); got != st.policy || len(next.held) != st.held {
			t.Fatalf("step %d: policy %q, held %v", i, got, next.held)
		}
		cur = next
	}
	if cur.held["min.insync.replicas"] != "" {
		t.Fatalf("replace kept min.insync.replicas: %v", cur.held)
	}
}
