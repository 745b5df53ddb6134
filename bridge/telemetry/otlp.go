package telemetry

// A small hand decoder of OTLP metrics (opentelemetry-proto's
// metrics/v1 MetricsData in protobuf), for the one message this package
// reads: the opentelemetry Go proto module would pull in gRPC and the
// protobuf runtime for what is a few nested length-delimited fields. It
// reads number data points of Gauge and Sum metrics, the kinds Kafka
// clients push; histograms, summaries and unknown fields are skipped.

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
)

// Point is one number data point of a pushed metric.
type Point struct {
	// Name is the OTLP metric name (org.apache.kafka.producer....).
	Name string
	// Counter is true for a monotonic Sum, false for a Gauge or a
	// non-monotonic Sum.
	Counter bool
	// Value is the point's value (an int value converted to float64).
	Value float64
	// Labels are the resource's attributes then the point's own, in
	// payload order; a later one with the same key wins at export.
	Labels []Label
}

// Label is one attribute, its value rendered as text.
type Label struct{ Key, Value string }

// ErrMalformed is returned for a payload that is not valid protobuf of the
// OTLP shape.
var ErrMalformed = errors.New("telemetry: malformed OTLP metrics payload")

// protobuf wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// pbReader is a sticky protobuf reader: after the first error every read
// returns zero values and err stays set.
type pbReader struct {
	b   []byte
	err error
}

func (r *pbReader) fail() { r.err, r.b = ErrMalformed, nil }

func (r *pbReader) more() bool { return r.err == nil && len(r.b) > 0 }

func (r *pbReader) varint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

// field reads a tag: the field number and wire type.
func (r *pbReader) field() (int, int) {
	t := r.varint()
	if t>>3 == 0 || t>>3 > math.MaxInt32 {
		r.fail()
		return 0, 0
	}
	return int(t >> 3), int(t & 7)
}

func (r *pbReader) bytes() []byte {
	n := r.varint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *pbReader) fixed64() uint64 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 8 {
		r.fail()
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

// skip skips a field of wire type wt.
func (r *pbReader) skip(wt int) {
	switch wt {
	case wireVarint:
		r.varint()
	case wireFixed64:
		r.fixed64()
	case wireBytes:
		r.bytes()
	case wireFixed32:
		if len(r.b) < 4 {
			r.fail()
			return
		}
		r.b = r.b[4:]
	default:
		r.fail()
	}
}

// sub reads a length-delimited field of wire type wt as a nested reader.
func (r *pbReader) sub(wt int) pbReader {
	if wt != wireBytes {
		r.fail()
		return pbReader{err: ErrMalformed}
	}
	return pbReader{b: r.bytes(), err: r.err}
}

// DecodeMetrics decodes a MetricsData payload and calls f with every
// number data point; it stops at the first malformed field.
func DecodeMetrics(payload []byte, f func(p *Point)) error {
	r := pbReader{b: payload}
	for r.more() {
		num, wt := r.field()
		if num != 1 { // resource_metrics
			r.skip(wt)
			continue
		}
		rm := r.sub(wt)
		if err := decodeResourceMetrics(&rm, f); err != nil {
			return err
		}
	}
	return r.err
}

func decodeResourceMetrics(r *pbReader, f func(p *Point)) error {
	// The resource may follow its scope metrics on the wire: read it first.
	var resource []Label
	scan := *r
	for scan.more() {
		num, wt := scan.field()
		if num != 1 {
			scan.skip(wt)
			continue
		}
		res := scan.sub(wt)
		for res.more() {
			n, w := res.field()
			if n != 1 { // attributes
				res.skip(w)
				continue
			}
			kv := res.sub(w)
			resource = append(resource, decodeKeyValue(&kv))
			if kv.err != nil {
				return kv.err
			}
		}
		if res.err != nil {
			return res.err
		}
	}
	if scan.err != nil {
		return scan.err
	}
	for r.more() {
		num, wt := r.field()
		if num != 2 { // scope_metrics
			r.skip(wt)
			continue
		}
		sm := r.sub(wt)
		for sm.more() {
			n, w := sm.field()
			if n != 2 { // metrics
				sm.skip(w)
				continue
			}
			m := sm.sub(w)
			if err := decodeMetric(&m, resource, f); err != nil {
				return err
			}
		}
		if sm.err != nil {
			return sm.err
		}
	}
	return r.err
}

func decodeMetric(r *pbReader, resource []Label, f func(p *Point)) error {
	var name string
	var body pbReader
	counter, has := false, false
	for r.more() {
		num, wt := r.field()
		switch num {
		case 1: // name
			name = string(r.sub(wt).b)
		case 5: // gauge
			body, has, counter = r.sub(wt), true, false
		case 7: // sum
			body, has = r.sub(wt), true
			counter = sumIsMonotonic(body)
		default:
			r.skip(wt)
		}
	}
	if r.err != nil || body.err != nil {
		return ErrMalformed
	}
	if !has || name == "" {
		return nil
	}
	for body.more() {
		num, wt := body.field()
		if num != 1 { // data_points
			body.skip(wt)
			continue
		}
		dp := body.sub(wt)
		p := Point{Name: name, Counter: counter, Labels: append([]Label(nil), resource...)}
		if err := decodeNumberPoint(&dp, &p); err != nil {
			return err
		}
		f(&p)
	}
	return body.err
}

// sumIsMonotonic reads Sum.is_monotonic (field 3).
func sumIsMonotonic(r pbReader) bool {
	mono := false
	for r.more() {
		num, wt := r.field()
		if num == 3 && wt == wireVarint {
			mono = r.varint() != 0
			continue
		}
		r.skip(wt)
	}
	return mono
}

func decodeNumberPoint(r *pbReader, p *Point) error {
	for r.more() {
		num, wt := r.field()
		switch {
		case num == 4 && wt == wireFixed64: // as_double
			p.Value = math.Float64frombits(r.fixed64())
		case num == 6 && wt == wireFixed64: // as_int (sfixed64)
			p.Value = float64(int64(r.fixed64()))
		case num == 7: // attributes
			kv := r.sub(wt)
			p.Labels = append(p.Labels, decodeKeyValue(&kv))
			if kv.err != nil {
				return kv.err
			}
		default:
			r.skip(wt)
		}
	}
	return r.err
}

// decodeKeyValue reads a KeyValue; the AnyValue is rendered as text
// (strings as is, bools, ints and doubles formatted; arrays, lists and
// bytes as "").
func decodeKeyValue(r *pbReader) Label {
	var l Label
	for r.more() {
		num, wt := r.field()
		switch num {
		case 1:
			l.Key = string(r.sub(wt).b)
		case 2:
			v := r.sub(wt)
			l.Value = anyValue(&v)
			if v.err != nil {
				r.fail()
			}
		default:
			r.skip(wt)
		}
	}
	return l
}

func anyValue(r *pbReader) string {
	s := ""
	for r.more() {
		num, wt := r.field()
		switch {
		case num == 1 && wt == wireBytes:
			s = string(r.bytes())
		case num == 2 && wt == wireVarint:
			s = strconv.FormatBool(r.varint() != 0)
		case num == 3 && wt == wireVarint:
			s = strconv.FormatInt(int64(r.varint()), 10)
		case num == 4 && wt == wireFixed64:
			s = strconv.FormatFloat(math.Float64frombits(r.fixed64()), 'g', -1, 64)
		default:
			r.skip(wt)
		}
	}
	return s
}
