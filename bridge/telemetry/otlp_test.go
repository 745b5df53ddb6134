package telemetry

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// The tests build OTLP payloads with this small protobuf appender.

func pbTag(b []byte, num, wt int) []byte { return binary.AppendUvarint(b, uint64(num<<3|wt)) }

func pbBytes(b []byte, num int, v []byte) []byte {
	b = pbTag(b, num, wireBytes)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func pbFixed(b []byte, num int, v uint64) []byte {
	return binary.LittleEndian.AppendUint64(pbTag(b, num, wireFixed64), v)
}

func pbVarint(b []byte, num int, v uint64) []byte {
	return binary.AppendUvarint(pbTag(b, num, wireVarint), v)
}

func kvString(k, v string) []byte {
	return pbBytes(pbBytes(nil, 1, []byte(k)), 2, pbBytes(nil, 1, []byte(v)))
}

// point builds a NumberDataPoint with a double or an int value.
func point(v float64, isInt bool, attrs ...[]byte) []byte {
	var b []byte
	for _, a := range attrs {
		b = pbBytes(b, 7, a)
	}
	b = pbFixed(b, 3, 1234) // time_unix_nano
	if isInt {
		return pbFixed(b, 6, uint64(int64(v)))
	}
	return pbFixed(b, 4, math.Float64bits(v))
}

func gaugeMetric(name string, pts ...[]byte) []byte {
	var g []byte
	for _, p := range pts {
		g = pbBytes(g, 1, p)
	}
	return pbBytes(pbBytes(nil, 1, []byte(name)), 5, g)
}

func sumMetric(name string, mono bool, pts ...[]byte) []byte {
	var s []byte
	for _, p := range pts {
		s = pbBytes(s, 1, p)
	}
	s = pbVarint(s, 2, 2) // cumulative
	if mono {
		s = pbVarint(s, 3, 1)
	}
	return pbBytes(pbBytes(nil, 1, []byte(name)), 7, s)
}

// metricsData wraps metrics into one ResourceMetrics whose resource (put
// after the scope metrics, as the wire allows) has resAttrs.
func metricsData(resAttrs [][]byte, metrics ...[]byte) []byte {
	var sm []byte
	sm = pbBytes(sm, 1, pbBytes(nil, 1, []byte("scope")))
	for _, m := range metrics {
		sm = pbBytes(sm, 2, m)
	}
	var res []byte
	for _, a := range resAttrs {
		res = pbBytes(res, 1, a)
	}
	rm := pbBytes(nil, 2, sm)
	rm = pbBytes(rm, 1, res)
	return pbBytes(nil, 1, rm)
}

func samplePayload() []byte {
	hist := pbBytes(pbBytes(nil, 1, []byte("org.apache.kafka.producer.latency")), 9, pbBytes(nil, 1, point(1, false)))
	return metricsData([][]byte{kvString("client_software_name", "apache-kafka-java")},
		gaugeMetric("org.apache.kafka.producer.buffer.available.bytes", point(3.3554432e7, false, kvString("node.id", "1"))),
		sumMetric("org.apache.kafka.producer.record.send.total", true, point(42, true, kvString("topic", "t1")), point(7, true, kvString("topic", "t2"))),
		sumMetric("org.apache.kafka.producer.io.waittime", false, point(-5, true)),
		hist,
	)
}

func TestDecodeMetrics(t *testing.T) {
	var got []Point
	if err := DecodeMetrics(samplePayload(), func(p *Point) { got = append(got, *p) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("%d points, want 4 (the histogram skipped): %+v", len(got), got)
	}
	want := []struct {
		name    string
		counter bool
		value   float64
		last    Label
	}{
		{"org.apache.kafka.producer.buffer.available.bytes", false, 3.3554432e7, Label{"node.id", "1"}},
		{"org.apache.kafka.producer.record.send.total", true, 42, Label{"topic", "t1"}},
		{"org.apache.kafka.producer.record.send.total", true, 7, Label{"topic", "t2"}},
		{"org.apache.kafka.producer.io.waittime", false, -5, Label{"client_software_name", "apache-kafka-java"}},
	}
	for i, w := range want {
		p := got[i]
		if p.Name != w.name || p.Counter != w.counter || p.Value != w.value {
			t.Errorf("point %d: %s counter=%v %v, want %s counter=%v %v", i, p.Name, p.Counter, p.Value, w.name, w.counter, w.value)
		}
		if p.Labels[0] != (Label{"client_software_name", "apache-kafka-java"}) {
			t.Errorf("point %d: first label %+v, want the resource's", i, p.Labels[0])
		}
		if p.Labels[len(p.Labels)-1] != w.last {
			t.Errorf("point %d: last label %+v, want %+v", i, p.Labels[len(p.Labels)-1], w.last)
		}
	}
}

// Every truncation of a valid payload either decodes a prefix or fails
// with ErrMalformed; none panics or reports another error.
func TestDecodeMetricsTruncated(t *testing.T) {
	full := samplePayload()
	malformed := 0
	for n := range len(full) {
		err := DecodeMetrics(full[:n], func(*Point) {})
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("cut at %d: %v", n, err)
		}
		if err != nil {
			malformed++
		}
	}
	if malformed == 0 {
		t.Fatal("no truncation was reported malformed")
	}
	for _, bad := range [][]byte{{0x0a, 0xff}, {0x00}, {0x0f}, {0x0a, 0x02, 0x12, 0x05}} {
		if err := DecodeMetrics(bad, func(*Point) {}); !errors.Is(err, ErrMalformed) {
			t.Errorf("% x: %v, want ErrMalformed", bad, err)
		}
	}
}

func FuzzDecodeMetrics(f *testing.F) {
	f.Add(samplePayload())
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		n := 0
		err := DecodeMetrics(b, func(p *Point) {
			n++
			if p.Name == "" {
				t.Fatal("a point without a name")
			}
		})
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v", err)
		}
	})
}
