package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// kcat (Debian package, librdkafka inside) is driven as a user would drive
// it: `kcat -P` with -K/-D delimiters, -H headers and -z codec, and `kcat -C`
// with a -f format.
//
// What kcat can and cannot express, and how the tests cover it:
//   - kcat -P sets no CreateTime: its records carry the producer's clock,
//     checked to lie within the window of the kcat run.
//   - -H headers apply to every record of one kcat run, so records are sent in
//     several runs, one per header set and partition. Duplicate header names
//     and an empty header value ("-H name=") are expressible.
//   - A null key or value needs -Z (empty input as NULL), and then an empty
//     key or value is not expressible in that run: null and empty cases go in
//     separate runs.
//   - Input is split on delimiter bytes (\x1e between records, \x1f between
//     key and value), so kcat's keys and values avoid those two bytes; the
//     300-byte key is text.
//   - Offsets: `-v -v` makes kcat print "Message delivered to partition P
//     (offset N)" for each record, in order; those are the producer offsets.
//   - kcat -C prints %K/%S lengths (-1 = null) before raw key and value
//     bytes, so binary data round-trips exactly; %h prints headers as
//     name=value,... and cannot be parsed back when a value holds ',' or
//     '\n': the canonical set has none.
//   - Compression: Debian's kcat 1.7.1 is built on librdkafka 2.0.2, which
//     compresses gzip, snappy and lz4 only when the broker advertises Produce
//     v2 and Fetch v2 (its "MsgVer1" feature). kfake starts at Produce v3
//     (as Apache Kafka 4.x does), so kcat sends those batches uncompressed to
//     it, logging "Broker does not support compression type"; zstd (gated on
//     Produce v7 + Fetch v10) is compressed. librdkafka also sends a batch
//     uncompressed when compressing does not make it smaller. kcatCodecCheck
//     therefore demands zstd on the batches that carry the 1 KiB values, and
//     only logs what it saw for the other codecs.
//
// TestKcatReadsEveryCase covers kcat's consumer on the full canonical set
// (explicit timestamps, binary values) produced by franz-go.

const (
	kcatRecordDelim = "\x1e"
	kcatKeyDelim    = "\x1f"
)

func kcatReady(t *testing.T) { lookTool(t, "kcat") }

func TestKcatRoundTrip(t *testing.T) {
	runRoundTrips(t, roundTripClient{
		name:       "kcat",
		ready:      kcatReady,
		records:    kcatRecords,
		produce:    kcatProduce,
		consume:    kcatConsume,
		codecCheck: kcatCodecCheck,
	})
}

func kcatCodecCheck(t *testing.T, who, codec string, got map[int32][]int8) {
	t.Helper()
	if codec != "zstd" {
		t.Logf("%s: batch codecs per partition %v (librdkafka 2.0.2 decides; see the kcat notes)", who, got)
		return
	}
	for p, attrs := range got {
		if !slices.Contains(attrs, codecAttr["zstd"]) {
			t.Errorf("%s: partition %d: no zstd batch among %v", who, p, attrs)
		}
	}
}

// TestKcatReadsEveryCase: franz-go produces the canonical records with each
// codec, kcat consumes them.
func TestKcatReadsEveryCase(t *testing.T) {
	runRoundTrips(t, roundTripClient{
		name:    "kcat-reads-kgo",
		ready:   kcatReady,
		records: canonicalRecords,
		produce: kgoProduce,
		consume: kcatConsume,
	})
}

// kcatRun is one `kcat -P` invocation: records that share a partition, a
// header set and the -Z flag.
type kcatRun struct {
	partition int32
	headers   []Header
	nulls     bool // -Z: empty key or value is sent as NULL
	recs      []Rec
}

// kcatRecords is what kcat can express of the canonical set (see above).
// Timestamps are filled in by kcatProduce.
func kcatRecords() []Rec {
	var out []Rec
	for _, run := range kcatRuns() {
		out = append(out, run.recs...)
	}
	return out
}

func kcatRuns() []kcatRun {
	shared := []Header{{"dup", []byte("first")}, {"other", []byte("x")}, {"dup", []byte("second")}, {"empty", []byte{}}}
	binary := make([]byte, 0, 254)
	for i := range 256 {
		if b := byte(i); b != kcatRecordDelim[0] && b != kcatKeyDelim[0] {
			binary = append(binary, b)
		}
	}
	rec := func(label string, p int32, key, value []byte, hs []Header) Rec {
		return Rec{Label: label, Partition: p, Key: key, Value: value, Headers: hs, Offset: -1}
	}
	runs := []kcatRun{
		{partition: 0, headers: shared, recs: []Rec{
			rec("plain", 0, []byte("k-plain"), []byte("v-plain"), shared),
			rec("empty key", 0, []byte{}, []byte("value with an empty key"), shared),
			rec("300-byte key", 0, bytes.Repeat([]byte("K"), 300), []byte("value with a 300-byte key"), shared),
			rec("empty value", 0, []byte("k-empty-value"), []byte{}, shared),
			rec("1 KiB value", 0, []byte("k-kib"), kibValue("p0"), shared),
			rec("binary value", 0, []byte("k-binary"), binary, shared),
		}},
		{partition: 0, nulls: true, recs: []Rec{
			rec("null key", 0, nil, []byte("value with a null key"), nil),
			rec("tombstone", 0, []byte("k-tombstone"), nil, nil),
		}},
		{partition: 1, headers: []Header{{"p", []byte("1")}}, recs: []Rec{
			rec("p1 first", 1, []byte("k-p1"), []byte("first on partition 1"), []Header{{"p", []byte("1")}}),
			rec("p1 1 KiB value", 1, []byte("k-p1-kib"), kibValue("p1"), []Header{{"p", []byte("1")}}),
		}},
	}
	return runs
}

var kcatDelivered = regexp.MustCompile(`Message delivered to partition (\d+) \(offset (-?\d+)\)`)

func kcatProduce(t *testing.T, tg Target, topic, codec string, recs []Rec) []Rec {
	t.Helper()
	var out []Rec
	for _, run := range kcatRuns() {
		var in bytes.Buffer
		for _, r := range run.recs {
			in.Write(r.Key)
			in.WriteString(kcatKeyDelim)
			in.Write(r.Value)
			in.WriteString(kcatRecordDelim)
		}
		args := []string{"-P", "-b", tg.Bootstrap, "-t", topic, "-p", strconv.Itoa(int(run.partition)),
			"-D", `\x1e`, "-K", `\x1f`, "-z", codec, "-v", "-v", "-m", "15",
			"-X", "linger.ms=20"}
		for _, h := range run.headers {
			args = append(args, "-H", h.Key+"="+string(h.Value))
		}
		if run.nulls {
			args = append(args, "-Z")
		}
		lo := time.Now().UnixMilli()
		stdout, stderr, err := runTool(t, 30*time.Second, in.Bytes(), "kcat", args...)
		hi := time.Now().UnixMilli()
		if err != nil {
			t.Fatalf("%s: kcat -P (%s): %v\nargs: %q\nstderr:\n%s", tg.Name, codec, err, args, stderr)
		}
		reports := kcatDelivered.FindAllStringSubmatch(string(stderr), -1)
		if len(reports) != len(run.recs) {
			t.Fatalf("%s: kcat -P (%s) reported %d deliveries for %d records\nstdout:\n%s\nstderr:\n%s", tg.Name, codec, len(reports), len(run.recs), stdout, stderr)
		}
		for i, r := range run.recs {
			p, _ := strconv.Atoi(reports[i][1])
			o, _ := strconv.ParseInt(reports[i][2], 10, 64)
			r = r.clone()
			r.Partition, r.Offset = int32(p), o
			r.TimestampIn = &[2]int64{lo, hi}
			out = append(out, r)
		}
	}
	if len(out) != len(recs) {
		t.Fatalf("kcat runs produced %d records, kcatRecords has %d", len(out), len(recs))
	}
	return out
}

// kcatFormat prints one record per entry: a line of numbers and headers, then
// the raw key and value, whose lengths (-1 = null) come first.
const kcatFormat = `P%p O%o T%T KL%K VL%S H%h\nK:%k\nV:%s\n`

func kcatConsume(t *testing.T, tg Target, topic string, _ int32, want int) []Rec {
	t.Helper()
	args := []string{"-C", "-b", tg.Bootstrap, "-t", topic, "-o", "beginning", "-e",
		"-c", strconv.Itoa(want), "-m", "15", "-f", kcatFormat}
	stdout, stderr, err := runTool(t, 30*time.Second, nil, "kcat", args...)
	if err != nil {
		t.Fatalf("%s: kcat -C: %v\nargs: %q\nstderr:\n%s", tg.Name, err, args, stderr)
	}
	recs, err := parseKcat(stdout)
	if err != nil {
		t.Fatalf("%s: kcat -C output: %v\nstderr:\n%s", tg.Name, err, stderr)
	}
	return recs
}

func parseKcat(out []byte) ([]Rec, error) {
	rd := bufio.NewReader(bytes.NewReader(out))
	var recs []Rec
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			if line == "" {
				return recs, nil
			}
			return recs, fmt.Errorf("truncated entry %q", line)
		}
		line = strings.TrimSuffix(line, "\n")
		head, hdrs, ok := strings.Cut(line, " H")
		if !ok {
			return recs, fmt.Errorf("entry line %q has no headers field", line)
		}
		var r Rec
		var kl, vl int
		if _, err := fmt.Sscanf(head, "P%d O%d T%d KL%d VL%d", &r.Partition, &r.Offset, &r.Timestamp, &kl, &vl); err != nil {
			return recs, fmt.Errorf("entry line %q: %v", line, err)
		}
		if hdrs != "" {
			for _, kv := range strings.Split(hdrs, ",") {
				k, v, _ := strings.Cut(kv, "=")
				r.Headers = append(r.Headers, Header{k, []byte(v)})
			}
		}
		if r.Key, err = readField(rd, "K:", kl); err != nil {
			return recs, fmt.Errorf("offset %d key: %v", r.Offset, err)
		}
		if r.Value, err = readField(rd, "V:", vl); err != nil {
			return recs, fmt.Errorf("offset %d value: %v", r.Offset, err)
		}
		recs = append(recs, r)
	}
}

// readField reads prefix, n raw bytes (n = -1: null, nothing printed) and the
// newline after them.
func readField(rd *bufio.Reader, prefix string, n int) ([]byte, error) {
	p := make([]byte, len(prefix))
	if _, err := io.ReadFull(rd, p); err != nil || string(p) != prefix {
		return nil, fmt.Errorf("want %q, got %q (%v)", prefix, p, err)
	}
	var b []byte
	if n >= 0 {
		b = make([]byte, n)
		if _, err := io.ReadFull(rd, b); err != nil {
			return nil, err
		}
	}
	if c, err := rd.ReadByte(); err != nil || c != '\n' {
		return nil, fmt.Errorf("no newline after %d bytes", n)
	}
	return b, nil
}

// runTool runs an external program with stdin, bounded by d.
func runTool(t *testing.T, d time.Duration, stdin []byte, name string, args ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (still running after %v)", err, d)
	}
	return o.Bytes(), e.Bytes(), err
}
