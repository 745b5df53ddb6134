package e2e

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Header is one Kafka record header. A nil Value is a null header value.
type Header struct {
	Key   string
	Value []byte
}

// Rec is one Kafka record as a user sees it. Nil Key or Value means null
// (a nil Value is a tombstone); an empty non-nil slice means empty.
type Rec struct {
	Partition int32
	Offset    int64 // -1 while unknown
	Key       []byte
	Value     []byte
	Headers   []Header
	// Timestamp is the CreateTime in milliseconds since the epoch.
	Timestamp int64
	// TimestampIn, when set, replaces the exact Timestamp check with a range
	// [lo, hi]: for clients that cannot set a CreateTime (kcat).
	TimestampIn *[2]int64
	// Label names the record in failure messages.
	Label string
}

func (r Rec) clone() Rec {
	c := r
	c.Key = cloneBytes(r.Key)
	c.Value = cloneBytes(r.Value)
	c.Headers = nil
	for _, h := range r.Headers {
		c.Headers = append(c.Headers, Header{h.Key, cloneBytes(h.Value)})
	}
	return c
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func cloneRecs(rs []Rec) []Rec {
	out := make([]Rec, len(rs))
	for i, r := range rs {
		out[i] = r.clone()
	}
	return out
}

// codecs are the compression codecs every client produces with.
var codecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// codecAttr is the record-batch attribute value (low 3 bits) of each codec.
var codecAttr = map[string]int8{"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

// canonicalPartitions is the partition count of every round-trip topic.
const canonicalPartitions = 2

// Fixed CreateTime values, so that runs are reproducible.
const (
	tsBase    int64 = 1_700_000_000_000 // 2023-11-14T22:13:20Z
	tsFarPast int64 = 1_000_000_000_000 // 2001-09-09T01:46:40Z, ~22 years before tsBase
)

// largeKey is a 300-byte binary key (longer than an Iggy header value can
// hold, so the sidecar must use its envelope).
func largeKey() []byte {
	b := make([]byte, 300)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}

// kibValue is 1 KiB of text: compressible, so every codec really shrinks it.
func kibValue(tag string) []byte {
	var buf bytes.Buffer
	for buf.Len() < 1024 {
		fmt.Fprintf(&buf, "%s line %03d of a compressible kibibyte; ", tag, buf.Len()/64)
	}
	return buf.Bytes()[:1024]
}

func allBytes() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

// canonicalRecords is the record set every client produces and consumes,
// in production order. Partition 0 carries the edge cases; partition 1 proves
// offsets are per partition.
func canonicalRecords() []Rec {
	longName := strings.Repeat("n", 260) // "kafka.h."+name exceeds 255 bytes
	recs := []Rec{
		{Label: "plain", Key: []byte("k-plain"), Value: []byte("v-plain"), Headers: []Header{{"h1", []byte("a")}}, Timestamp: tsBase},
		{Label: "null key", Key: nil, Value: []byte("value with a null key"), Timestamp: tsBase + 1},
		{Label: "empty key", Key: []byte{}, Value: []byte("value with an empty key"), Timestamp: tsBase + 2},
		{Label: "300-byte key", Key: largeKey(), Value: []byte("value with a 300-byte binary key"), Timestamp: tsBase + 3},
		{Label: "tombstone", Key: []byte("k-tombstone"), Value: nil, Timestamp: tsBase + 4},
		{Label: "empty value", Key: []byte("k-empty-value"), Value: []byte{}, Timestamp: tsBase + 5},
		{Label: "1 KiB value", Key: []byte("k-kib"), Value: kibValue("p0"), Headers: []Header{{"big", bytes.Repeat([]byte("h"), 300)}}, Timestamp: tsBase + 6},
		{Label: "duplicate headers", Key: []byte("k-dup"), Value: []byte("dup"), Headers: []Header{
			{"dup", []byte("first")}, {"other", []byte("x")}, {"dup", []byte("second")}, {"dup", []byte("third")},
		}, Timestamp: tsBase + 7},
		{Label: "empty header value", Key: []byte("k-empty-header"), Value: []byte("eh"), Headers: []Header{
			{"empty", []byte{}}, {"after-empty", []byte("y")}, {longName, []byte("long name")},
		}, Timestamp: tsBase + 8},
		{Label: "CreateTime 0 ms", Key: []byte("k-epoch"), Value: []byte("at the epoch"), Timestamp: 0},
		{Label: "far-past CreateTime", Key: []byte("k-far-past"), Value: []byte("2001"), Timestamp: tsFarPast},
		{Label: "binary value", Key: []byte("k-binary"), Value: allBytes(), Headers: []Header{{"h1", []byte("b")}}, Timestamp: tsBase + 9},
		{Label: "p1 first", Partition: 1, Key: []byte("k-p1"), Value: []byte("first on partition 1"), Headers: []Header{{"p", []byte("1")}}, Timestamp: tsBase + 10},
		{Label: "p1 null key+value", Partition: 1, Key: nil, Value: nil, Timestamp: tsBase + 11},
		{Label: "p1 1 KiB value", Partition: 1, Key: []byte("k-p1-kib"), Value: kibValue("p1"), Timestamp: tsBase + 12},
	}
	for i := range recs {
		recs[i].Offset = -1
	}
	return recs
}

// sortByPosition orders records by partition, then offset (records with an
// unknown offset keep their relative order).
func sortByPosition(rs []Rec) {
	slices.SortStableFunc(rs, func(a, b Rec) int {
		if c := cmp.Compare(a.Partition, b.Partition); c != 0 {
			return c
		}
		if a.Offset < 0 || b.Offset < 0 {
			return 0
		}
		return cmp.Compare(a.Offset, b.Offset)
	})
}

// assertRecords compares what a producer reported (records with the
// partition and offset it was told) with what a consumer read: key, value,
// headers in order, timestamp, partition and offset, exactly. nil and empty
// are different. who names the client and scenario in the failure message.
func assertRecords(t *testing.T, who string, produced, consumed []Rec) {
	t.Helper()
	if diffs := diffRecords(produced, consumed); len(diffs) > 0 {
		const maxShown = 40
		if len(diffs) > maxShown {
			diffs = append(diffs[:maxShown], fmt.Sprintf("... and %d more", len(diffs)-maxShown))
		}
		t.Errorf("%s: consumed records differ from produced ones (want = produced, got = consumed):\n  %s", who, strings.Join(diffs, "\n  "))
	}
}

// diffRecords lists every difference between produced and consumed records.
func diffRecords(produced, consumed []Rec) []string {
	p := cloneRecs(produced)
	c := cloneRecs(consumed)
	sortByPosition(p)
	sortByPosition(c)
	var diffs []string
	if len(p) != len(c) {
		diffs = append(diffs, fmt.Sprintf("record count: produced %d, consumed %d", len(p), len(c)))
	}
	for i := range min(len(p), len(c)) {
		diffs = append(diffs, recordDiffs(i, p[i], c[i])...)
	}
	for i := len(c); i < len(p); i++ {
		diffs = append(diffs, fmt.Sprintf("#%d [%s] p%d@%d: produced but not consumed", i, p[i].Label, p[i].Partition, p[i].Offset))
	}
	for i := len(p); i < len(c); i++ {
		diffs = append(diffs, fmt.Sprintf("#%d p%d@%d: consumed but never produced (key %s)", i, c[i].Partition, c[i].Offset, fmtBytes(c[i].Key)))
	}
	return diffs
}

func recordDiffs(i int, want, got Rec) []string {
	var out []string
	add := func(field, w, g string) {
		out = append(out, fmt.Sprintf("#%d [%s] p%d@%d %s: want %s, got %s", i, want.Label, want.Partition, want.Offset, field, w, g))
	}
	if want.Partition != got.Partition {
		add("partition", fmt.Sprint(want.Partition), fmt.Sprint(got.Partition))
	}
	if want.Offset != got.Offset {
		add("offset", fmt.Sprint(want.Offset), fmt.Sprint(got.Offset))
	}
	if !sameBytes(want.Key, got.Key) {
		add("key", fmtBytes(want.Key), fmtBytes(got.Key))
	}
	if !sameBytes(want.Value, got.Value) {
		add("value", fmtBytes(want.Value), fmtBytes(got.Value))
	}
	if !sameHeaders(want.Headers, got.Headers) {
		add("headers", fmtHeaders(want.Headers), fmtHeaders(got.Headers))
	}
	if r := want.TimestampIn; r != nil {
		if got.Timestamp < r[0] || got.Timestamp > r[1] {
			add("timestamp", fmt.Sprintf("in [%d, %d]", r[0], r[1]), fmt.Sprint(got.Timestamp))
		}
	} else if want.Timestamp != got.Timestamp {
		add("timestamp", fmtTime(want.Timestamp), fmtTime(got.Timestamp))
	}
	return out
}

// sameBytes is bytes.Equal that tells null from empty.
func sameBytes(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

func sameHeaders(a, b []Header) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || !sameBytes(a[i].Value, b[i].Value) {
			return false
		}
	}
	return true
}

func fmtTime(ms int64) string {
	return fmt.Sprintf("%d (%s)", ms, time.UnixMilli(ms).UTC().Format(time.RFC3339Nano))
}

func fmtBytes(b []byte) string {
	if b == nil {
		return "null"
	}
	printable := true
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			printable = false
			break
		}
	}
	if printable && len(b) <= 60 {
		return fmt.Sprintf("%q", b)
	}
	head := b[:min(len(b), 16)]
	if printable {
		return fmt.Sprintf("%d bytes %q...", len(b), head)
	}
	return fmt.Sprintf("%d bytes %x...", len(b), head)
}

func fmtHeaders(hs []Header) string {
	if len(hs) == 0 {
		return "[]"
	}
	parts := make([]string, len(hs))
	for i, h := range hs {
		name := h.Key
		if len(name) > 40 {
			name = fmt.Sprintf("%s...(%d bytes)", name[:16], len(name))
		}
		parts[i] = fmt.Sprintf("%s=%s", name, fmtBytes(h.Value))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// ---------------------------------------------------------------------------
// franz-go helpers shared by every test: admin, topic creation, the reference
// consumer and the batch codec check.

var topicSeq atomic.Int64

// uniqueTopic returns a fresh, legal topic name.
func uniqueTopic(prefix string) string {
	return fmt.Sprintf("e2e-%s-%d-%d", prefix, time.Now().UnixNano()%1_000_000_000, topicSeq.Add(1))
}

// newKgo returns a franz-go client for tg, closed when the test ends.
func newKgo(t *testing.T, tg Target, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{
		kgo.SeedBrokers(tg.Bootstrap),
		kgo.RequestTimeoutOverhead(5 * time.Second),
		kgo.RetryTimeout(15 * time.Second),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatalf("%s: kgo client: %v", tg.Name, err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// createTopic creates topic with the given partition count (replication
// factor 1) and fails the test on any error.
func createTopic(t *testing.T, tg Target, topic string, partitions int32) {
	t.Helper()
	adm := kadm.NewClient(newKgo(t, tg))
	ctx := testCtx(t, 20*time.Second)
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatalf("%s: create topic %s (%d partitions): %v", tg.Name, topic, partitions, err)
	}
	awaitTopic(t, ctx, tg, adm, topic, partitions)
}

// awaitTopic waits until a metadata request shows topic with every partition
// led, as a Kafka client does before it uses a topic it just created: a
// broker answers CreateTopics once the controller has the topic, and its own
// metadata can lag behind by a moment (UNKNOWN_TOPIC_OR_PARTITION, or
// LEADER_NOT_AVAILABLE), which made raw requests right after a create fail
// against Apache Kafka under load.
func awaitTopic(t *testing.T, ctx context.Context, tg Target, adm *kadm.Client, topic string, partitions int32) {
	t.Helper()
	var last string
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			td, ok := md.Topics[topic]
			switch {
			case !ok:
				last = "not in metadata"
			case td.Err != nil:
				last = td.Err.Error()
			case int32(len(td.Partitions)) != partitions:
				last = fmt.Sprintf("%d of %d partitions", len(td.Partitions), partitions)
			default:
				led := true
				for _, p := range td.Partitions {
					if p.Err != nil || p.Leader < 0 {
						led, last = false, fmt.Sprintf("partition %d: leader %d, %v", p.Partition, p.Leader, p.Err)
						break
					}
				}
				if led {
					return
				}
			}
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: topic %s not usable after its create: %s", tg.Name, topic, last)
		case <-time.After(50 * time.Millisecond): // poll interval of the wait for the condition above
		}
	}
}

// fromKgo converts a consumed franz-go record.
func fromKgo(r *kgo.Record) Rec {
	out := Rec{
		Partition: r.Partition,
		Offset:    r.Offset,
		Key:       r.Key,
		Value:     r.Value,
		Timestamp: r.Timestamp.UnixMilli(),
	}
	for _, h := range r.Headers {
		out.Headers = append(out.Headers, Header{h.Key, h.Value})
	}
	return out
}

// toKgo converts a record to produce with franz-go.
func toKgo(topic string, r Rec) *kgo.Record {
	kr := &kgo.Record{
		Topic:     topic,
		Partition: r.Partition,
		Key:       r.Key,
		Value:     r.Value,
		Timestamp: time.UnixMilli(r.Timestamp),
	}
	for _, h := range r.Headers {
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	return kr
}

// kgoConsume reads want records from the start of every partition of topic
// with franz-go, failing if they do not arrive in time.
func kgoConsume(t *testing.T, tg Target, topic string, partitions int32, want int) []Rec {
	t.Helper()
	parts := map[int32]kgo.Offset{}
	for p := range partitions {
		parts[p] = kgo.NewOffset().AtStart()
	}
	cl := newKgo(t, tg,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	ctx := testCtx(t, 20*time.Second)
	var out []Rec
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s: kgo consumer read %d of %d records from %s before the deadline", tg.Name, len(out), want, topic)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("%s: kgo consumer, %s[%d]: %v", tg.Name, e.Topic, e.Partition, e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, fromKgo(r)) })
	}
	return out
}

// kgoProduce produces recs with franz-go, each to its own partition, and
// returns them with the offsets the broker assigned.
func kgoProduce(t *testing.T, tg Target, topic, codec string, recs []Rec) []Rec {
	t.Helper()
	cl := newKgo(t, tg,
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgoCodec(codec)),
		kgo.ProducerLinger(50*time.Millisecond),
	)
	ctx := testCtx(t, 20*time.Second)
	krs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		krs[i] = toKgo(topic, r)
	}
	// Produce asynchronously so records share batches, as a real app would.
	results := make(chan error, len(krs))
	for _, kr := range krs {
		cl.Produce(ctx, kr, func(_ *kgo.Record, err error) { results <- err })
	}
	for range krs {
		if err := <-results; err != nil {
			t.Fatalf("%s: kgo produce (%s): %v", tg.Name, codec, err)
		}
	}
	out := cloneRecs(recs)
	for i, kr := range krs {
		out[i].Partition = kr.Partition
		out[i].Offset = kr.Offset
	}
	return out
}

func kgoCodec(codec string) kgo.CompressionCodec {
	switch codec {
	case "gzip":
		return kgo.GzipCompression()
	case "snappy":
		return kgo.SnappyCompression()
	case "lz4":
		return kgo.Lz4Compression()
	case "zstd":
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

// listEnds returns the high watermark of every partition of topic.
func listEnds(t *testing.T, tg Target, topic string) map[int32]int64 {
	t.Helper()
	adm := kadm.NewClient(newKgo(t, tg))
	lo, err := adm.ListEndOffsets(testCtx(t, 20*time.Second), topic)
	if err == nil {
		err = lo.Error()
	}
	if err != nil {
		t.Fatalf("%s: list end offsets of %s: %v", tg.Name, topic, err)
	}
	out := map[int32]int64{}
	lo.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// withTimestamp returns rs with every CreateTime from replaced by to: for a
// client that cannot send the from value.
func withTimestamp(rs []Rec, from, to int64) []Rec {
	for i := range rs {
		if rs[i].Timestamp == from {
			rs[i].Timestamp = to
		}
	}
	return rs
}
