package iggy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// splitSend splits a SEND_MESSAGES body (§4.4) into the metadata prefix
// (metadata_length and the fields it counts), messages_count and the batch.
func splitSend(t *testing.T, payload []byte) (prefix []byte, count uint32, batch []byte) {
	t.Helper()
	ml := int(binary.LittleEndian.Uint32(payload))
	if 4+ml > len(payload) || ml < 4 {
		t.Fatalf("metadata_length %d in a %d-byte body", ml, len(payload))
	}
	return payload[:4+ml], binary.LittleEndian.Uint32(payload[4+ml-4:]), payload[4+ml:]
}

type wantMsg struct {
	offset, ts, origin uint64
	id                 wire.U128
	partition          uint32
	payload, headers   string
}

func collect(t *testing.T, batches []byte) ([]Message, error) {
	t.Helper()
	var out []Message
	it := NewMessageIter(batches)
	for it.Next() {
		if !it.ChecksumOK() {
			t.Fatalf("message %d: checksum mismatch", len(out))
		}
		m := it.Message()
		if m.Checksum != binary.LittleEndian.Uint64(it.Frame()) {
			t.Fatalf("message %d: Checksum field differs from the frame", len(out))
		}
		out = append(out, m)
	}
	if it.Offset() > len(batches) {
		t.Fatalf("iterator offset %d beyond %d", it.Offset(), len(batches))
	}
	if it.Next() {
		t.Fatal("Next true after the end")
	}
	return out, it.Err()
}

func assertMessages(t *testing.T, got []Message, want []wantMsg) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d messages, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Offset != w.offset || g.Timestamp != w.ts || g.OriginTimestamp != w.origin || g.ID != w.id ||
			g.PartitionID != w.partition || string(g.Payload) != w.payload || string(g.Headers) != w.headers {
			t.Fatalf("message %d = {off %d ts %d origin %d id %v part %d payload %q headers %x}\nwant %+v",
				i, g.Offset, g.Timestamp, g.OriginTimestamp, g.ID, g.PartitionID, g.Payload, g.Headers, w)
		}
	}
}

func TestSendVectors(t *testing.T) {
	tests := []struct {
		name string
		want []wantMsg
		span uint64
	}{
		{name: "send_messages_payload_golden", span: 50, want: []wantMsg{
			{offset: 0, origin: 1000, id: wire.U128{Lo: 7}, payload: "first-payload"},
			{offset: 1, origin: 1050, id: wire.U128{Lo: 8}, payload: "second-payload", headers: "user-header-bytes"},
		}},
		{name: "send_messages_payload_with_tlv_headers", span: 250, want: []wantMsg{
			{offset: 0, origin: 1_700_000_000_000_000, id: wire.U128{Lo: 0x1111}, payload: "hello"},
			{offset: 1, origin: 1_700_000_000_000_250, id: wire.U128{Lo: 0x2222}, payload: "world", headers: string(vec(t, "user_headers_block"))},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			payload := vec(t, tc.name)
			prefix, count, batch := splitSend(t, payload)
			if err := CheckBatch(batch); err != nil {
				t.Fatalf("CheckBatch: %v", err)
			}
			if got := BatchMessageCount(batch); got != count || got != uint32(len(tc.want)) {
				t.Fatalf("BatchMessageCount %d, metadata %d, want %d", got, count, len(tc.want))
			}
			if n, err := CountBatchMessages(batch); err != nil || n != uint64(count) {
				t.Fatalf("CountBatchMessages = %d, %v", n, err)
			}
			msgs, err := collect(t, batch)
			if err != nil {
				t.Fatalf("MessageIter: %v", err)
			}
			assertMessages(t, msgs, tc.want)

			// Rebuild the whole body from the decoded messages.
			var b BatchBuilder
			b.Begin(bytes.Clone(prefix))
			for _, m := range msgs {
				if err := b.Add(m.ID, m.OriginTimestamp, m.Payload, m.Headers); err != nil {
					t.Fatalf("Add: %v", err)
				}
			}
			if b.Len() != len(msgs) || b.Size() != len(batch) || b.Span() != tc.span {
				t.Fatalf("Len %d Size %d Span %d; want %d %d %d", b.Len(), b.Size(), b.Span(), len(msgs), len(batch), tc.span)
			}
			out, err := b.Finish()
			if err != nil {
				t.Fatalf("Finish: %v", err)
			}
			if !bytes.Equal(out, payload) {
				t.Fatalf("rebuilt body differs\n got %x\nwant %x", out, payload)
			}
		})
	}
	frame := vec(t, "send_messages_request_frame")
	if !bytes.Equal(frame[HeaderSize:], vec(t, "send_messages_payload_with_tlv_headers")) {
		t.Fatal("send_messages_request_frame body is not send_messages_payload_with_tlv_headers")
	}
}

func pollRecord(t *testing.T) []byte {
	t.Helper()
	return vec(t, "poll_messages_response_golden")[16:]
}

func goldenSendBatch(t *testing.T) []byte {
	t.Helper()
	_, _, batch := splitSend(t, vec(t, "send_messages_payload_golden"))
	return batch
}

func TestPollVectors(t *testing.T) {
	body := vec(t, "poll_messages_response_golden")
	if p, cur, n := binary.LittleEndian.Uint32(body), binary.LittleEndian.Uint64(body[4:]), binary.LittleEndian.Uint32(body[12:]); p != 3 || cur != 101 || n != 2 {
		t.Fatalf("prefix partition %d current %d count %d", p, cur, n)
	}
	batches := body[16:]
	if n, err := CountBatchMessages(batches); err != nil || n != 2 {
		t.Fatalf("CountBatchMessages = %d, %v", n, err)
	}
	msgs, err := collect(t, batches)
	if err != nil {
		t.Fatalf("MessageIter: %v", err)
	}
	assertMessages(t, msgs, []wantMsg{
		{offset: 100, ts: 5000, origin: 1000, id: wire.U128{Lo: 7}, partition: 3, payload: "first-payload"},
		{offset: 101, ts: 5000, origin: 1050, id: wire.U128{Lo: 8}, partition: 3, payload: "second-payload", headers: "user-header-bytes"},
	})
	// A stored record keeps a valid batch checksum over its stamped fields.
	if err := CheckBatch(batches); err != nil {
		t.Fatalf("CheckBatch(stored record): %v", err)
	}

	empty := vec(t, "poll_messages_response_empty")
	if len(empty) != 16 {
		t.Fatalf("empty poll body is %d bytes", len(empty))
	}
	if err := CheckBatches(empty[16:]); err != nil {
		t.Fatal(err)
	}
	if msgs, err := collect(t, empty[16:]); err != nil || len(msgs) != 0 {
		t.Fatalf("empty poll: %d messages, %v", len(msgs), err)
	}
}

func TestStampBatch(t *testing.T) {
	batch := goldenSendBatch(t)
	StampBatch(batch, 3, 100, 5000)
	if want := pollRecord(t); !bytes.Equal(batch, want) {
		t.Fatalf("stamped send batch differs from the stored poll record\n got %x\nwant %x", batch, want)
	}
	if err := CheckBatch(batch); err != nil {
		t.Fatalf("CheckBatch after stamping: %v", err)
	}
	// Garbage never panics.
	for _, b := range [][]byte{nil, make([]byte, 10), make([]byte, 256), batch[:300], append(bytes.Clone(batch), 1, 2, 3)} {
		StampBatch(b, 1, 2, 3)
	}
}

// resum recomputes every frame checksum that fits and the batch checksum,
// using the header's batch_length and message_count as they are.
func resum(b []byte) {
	for off := BatchHeaderSize; off < len(b); {
		n := frameEnd(b[off:])
		if n < 0 {
			break
		}
		binary.LittleEndian.PutUint64(b[off:], XXH3(b[off+8:off+n]))
		off += n
	}
	binary.LittleEndian.PutUint64(b[batchChecksumOff:], batchSum(b, BatchHeaderSize, len(b),
		binary.LittleEndian.Uint64(b[batchLengthOff:]), binary.LittleEndian.Uint32(b[batchMessageCountOff:])))
}

func TestCheckBatchErrors(t *testing.T) {
	const f0 = BatchHeaderSize // first frame
	f1 := f0 + MessageHeaderSize + len("first-payload")
	setU32 := func(off int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint32(b[off:], v); return b }
	}
	setU64 := func(off int, v uint64) func([]byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint64(b[off:], v); return b }
	}
	tests := []struct {
		name      string
		mutate    func([]byte) []byte
		resum     bool // fix the checksums so only the targeted rule fails
		wantErr   error
		wantField string
	}{
		{name: "valid", mutate: func(b []byte) []byte { return b }},
		{name: "valid resummed", mutate: func(b []byte) []byte { return b }, resum: true},
		{name: "empty", mutate: func(b []byte) []byte { return nil }, wantErr: wire.ErrShortBuffer, wantField: "header"},
		{name: "short header", mutate: func(b []byte) []byte { return b[:255] }, wantErr: wire.ErrShortBuffer, wantField: "header"},
		{name: "batch_length below 256", mutate: setU64(batchLengthOff, 255), wantErr: wire.ErrConstraint, wantField: "batch_length"},
		{name: "batch_length 0", mutate: setU64(batchLengthOff, 0), wantErr: wire.ErrConstraint, wantField: "batch_length"},
		{name: "batch_length beyond input", mutate: setU64(batchLengthOff, 397), wantErr: wire.ErrShortBuffer, wantField: "batch_length"},
		{name: "batch_length huge", mutate: setU64(batchLengthOff, math.MaxUint64), wantErr: wire.ErrShortBuffer, wantField: "batch_length"},
		{name: "trailing bytes", mutate: func(b []byte) []byte { return append(b, 0) }, wantErr: wire.ErrTrailingBytes, wantField: "batch_length"},
		{name: "reserved byte 52", mutate: func(b []byte) []byte { b[52] = 1; return b }, resum: true, wantErr: wire.ErrConstraint, wantField: "reserved"},
		{name: "reserved byte 255", mutate: func(b []byte) []byte { b[255] = 0x80; return b }, resum: true, wantErr: wire.ErrConstraint, wantField: "reserved"},
		{name: "message_count 0", mutate: setU32(batchMessageCountOff, 0), resum: true, wantErr: wire.ErrConstraint, wantField: "message_count"},
		{name: "message_count too high", mutate: setU32(batchMessageCountOff, 3), resum: true, wantErr: wire.ErrConstraint, wantField: "message_count"},
		{name: "message_count too low", mutate: setU32(batchMessageCountOff, 1), resum: true, wantErr: wire.ErrConstraint, wantField: "message_count"},
		{name: "frame reserved", mutate: func(b []byte) []byte { b[f1+frameReservedOff+7] = 1; return b }, resum: true, wantErr: wire.ErrConstraint, wantField: "frame[1].reserved"},
		{name: "payload past blob", mutate: setU32(f1+framePayloadLenOff, 1000), resum: true, wantErr: wire.ErrShortBuffer, wantField: "frame[1].payload_length"},
		{name: "headers past blob", mutate: setU32(f0+frameUserHeadersLenOff, 0xFFFFFFFF), resum: true, wantErr: wire.ErrShortBuffer, wantField: "frame[0].payload_length"},
		{name: "frames do not tile", mutate: func(b []byte) []byte {
			b = append(b, make([]byte, 20)...)
			binary.LittleEndian.PutUint64(b[batchLengthOff:], uint64(len(b)))
			return b
		}, resum: true, wantErr: wire.ErrShortBuffer, wantField: "frame[2]"},
		{name: "frame checksum", mutate: func(b []byte) []byte { b[f0+MessageHeaderSize] ^= 1; return b }, wantErr: wire.ErrChecksum, wantField: "frame[0].checksum"},
		{name: "second frame checksum", mutate: func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, wantErr: wire.ErrChecksum, wantField: "frame[1].checksum"},
		{name: "frame id changed", mutate: func(b []byte) []byte { b[f1+frameIDOff] = 9; return b }, wantErr: wire.ErrChecksum, wantField: "frame[1].checksum"},
		{name: "batch checksum", mutate: func(b []byte) []byte { b[batchChecksumOff] ^= 1; return b }, wantErr: wire.ErrChecksum, wantField: "batch_checksum"},
		{name: "origin changed", mutate: setU64(batchOriginTimestampOff, 999), wantErr: wire.ErrChecksum, wantField: "batch_checksum"},
		{name: "stamped without recompute", mutate: setU64(batchBaseOffsetOff, 100), wantErr: wire.ErrChecksum, wantField: "batch_checksum"},
		{name: "stamped with recompute", mutate: func(b []byte) []byte { StampBatch(b, 1, 2, 3); return b }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.mutate(goldenSendBatch(t))
			if tc.resum {
				resum(b)
			}
			err := CheckBatch(b)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("CheckBatch: %v", err)
				}
				return
			}
			wantDecodeErr(t, err, tc.wantErr)
			var de *wire.DecodeError
			errors.As(err, &de)
			if de.Field != tc.wantField {
				t.Fatalf("field %q, want %q (%v)", de.Field, tc.wantField, err)
			}
			if de.Offset < 0 || de.Offset > len(b) {
				t.Fatalf("offset %d outside the %d-byte input", de.Offset, len(b))
			}
		})
	}
}

func buildBatch(t testing.TB, prefix []byte, msgs ...wantMsg) []byte {
	t.Helper()
	var b BatchBuilder
	b.Begin(prefix)
	for _, m := range msgs {
		if err := b.Add(m.id, m.origin, []byte(m.payload), []byte(m.headers)); err != nil {
			t.Fatalf("Add: %v", err)
		}
	}
	out, err := b.Finish()
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	return out
}

func TestBatchBuilder(t *testing.T) {
	t.Run("timestamps in any order", func(t *testing.T) {
		out := buildBatch(t, nil,
			wantMsg{origin: 2000, id: wire.U128{Lo: 1}, payload: "a"},
			wantMsg{origin: 1000, id: wire.U128{Hi: 2}, payload: "b", headers: "h"},
			wantMsg{origin: 1500, payload: ""}) // empty payload and id 0 are written as given
		if err := CheckBatch(out); err != nil {
			t.Fatal(err)
		}
		if o := binary.LittleEndian.Uint64(out[batchOriginTimestampOff:]); o != 1000 {
			t.Fatalf("origin_timestamp %d, want the minimum 1000", o)
		}
		msgs, err := collect(t, out)
		if err != nil {
			t.Fatal(err)
		}
		assertMessages(t, msgs, []wantMsg{
			{offset: 0, origin: 2000, id: wire.U128{Lo: 1}, payload: "a"},
			{offset: 1, origin: 1000, id: wire.U128{Hi: 2}, payload: "b", headers: "h"},
			{offset: 2, origin: 1500},
		})
		for i := 0; i < 3; i++ {
			if binary.LittleEndian.Uint64(out[batchPartitionIDOff+8*i:]) != 0 {
				t.Fatal("server fields not zero")
			}
		}
	})
	t.Run("prefix kept", func(t *testing.T) {
		out := buildBatch(t, []byte("metadata"), wantMsg{origin: 1, payload: "p"})
		if string(out[:8]) != "metadata" {
			t.Fatalf("prefix %q", out[:8])
		}
		if err := CheckBatch(out[8:]); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("empty batch", func(t *testing.T) {
		var b BatchBuilder
		b.Begin(nil)
		if _, err := b.Finish(); !errors.Is(err, ErrEmptyBatch) || !errors.Is(err, wire.ErrConstraint) {
			t.Fatalf("Finish of an empty batch: %v", err)
		}
	})
	t.Run("zero value", func(t *testing.T) {
		var b BatchBuilder
		if b.Size() != 0 || b.Len() != 0 || b.Span() != 0 {
			t.Fatal("zero value not empty")
		}
		if err := b.Add(wire.U128{Lo: 1}, 5, []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
		out, err := b.Finish()
		if err != nil || CheckBatch(out) != nil {
			t.Fatalf("Finish: %v / %v", err, CheckBatch(out))
		}
	})
	t.Run("use after finish", func(t *testing.T) {
		var b BatchBuilder
		b.Begin(nil)
		_ = b.Add(wire.U128{}, 1, []byte("x"), nil)
		if _, err := b.Finish(); err != nil {
			t.Fatal(err)
		}
		if err := b.Add(wire.U128{}, 1, []byte("y"), nil); err == nil {
			t.Fatal("Add after Finish succeeded")
		}
		if _, err := b.Finish(); err == nil {
			t.Fatal("second Finish succeeded")
		}
		b.Begin(nil)
		if err := b.Add(wire.U128{}, 1, []byte("y"), nil); err != nil {
			t.Fatalf("Add after Begin: %v", err)
		}
	})
}

func TestBatchBuilderSpan(t *testing.T) {
	const maxSpan = MaxTimestampSpan
	tests := []struct {
		name    string
		ts      []uint64
		failAt  int // index of the Add that must fail, -1 for none
		span    uint64
		minimum uint64
	}{
		{name: "exactly max ascending", ts: []uint64{0, maxSpan}, failAt: -1, span: maxSpan},
		{name: "max+1 ascending", ts: []uint64{0, maxSpan + 1}, failAt: 1, span: 0},
		{name: "exactly max descending", ts: []uint64{maxSpan + 5, 5}, failAt: -1, span: maxSpan, minimum: 5},
		{name: "max+1 descending", ts: []uint64{maxSpan + 6, 5}, failAt: 1, span: 0, minimum: maxSpan + 6},
		{name: "widening both ways", ts: []uint64{100, 50, 50 + maxSpan, 49}, failAt: 3, span: maxSpan, minimum: 50},
		{name: "huge timestamps", ts: []uint64{math.MaxUint64, math.MaxUint64 - maxSpan}, failAt: -1, span: maxSpan, minimum: math.MaxUint64 - maxSpan},
		{name: "huge and zero", ts: []uint64{math.MaxUint64, 0}, failAt: 1, span: 0, minimum: math.MaxUint64},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b BatchBuilder
			b.Begin(nil)
			added := 0
			for i, ts := range tc.ts {
				err := b.Add(wire.U128{Lo: uint64(i)}, ts, []byte{byte(i)}, nil)
				if i == tc.failAt {
					if err != ErrTimestampSpan || !errors.Is(err, wire.ErrConstraint) || !errors.Is(err, StatusInvalidMessageTimestampDelta) {
						t.Fatalf("Add %d: %v, want ErrTimestampSpan", i, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("Add %d: %v", i, err)
				}
				added++
			}
			if b.Len() != added || b.Span() != tc.span {
				t.Fatalf("Len %d Span %d, want %d %d", b.Len(), b.Span(), added, tc.span)
			}
			out, err := b.Finish()
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckBatch(out); err != nil {
				t.Fatal(err)
			}
			if o := binary.LittleEndian.Uint64(out[batchOriginTimestampOff:]); o != tc.minimum {
				t.Fatalf("origin_timestamp %d, want %d", o, tc.minimum)
			}
			msgs, _ := collect(t, out)
			j := 0
			for i, ts := range tc.ts {
				if i == tc.failAt {
					continue
				}
				if msgs[j].OriginTimestamp != ts {
					t.Fatalf("message %d origin %d, want %d", j, msgs[j].OriginTimestamp, ts)
				}
				j++
			}
		})
	}
}

func TestAppendBatchSlice(t *testing.T) {
	rec := pollRecord(t)
	f1 := BatchHeaderSize + MessageHeaderSize + len("first-payload")
	tests := []struct {
		name     string
		from, to uint32
		want     []uint64 // offsets
		identity bool
	}{
		{name: "all", from: 0, to: 2, want: []uint64{100, 101}, identity: true},
		{name: "clamped", from: 0, to: 100, want: []uint64{100, 101}, identity: true},
		{name: "first", from: 0, to: 1, want: []uint64{100}},
		{name: "second", from: 1, to: 2, want: []uint64{101}},
		{name: "second clamped", from: 1, to: math.MaxUint32, want: []uint64{101}},
		{name: "past end", from: 2, to: 3},
		{name: "empty range", from: 1, to: 1},
		{name: "inverted", from: 2, to: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := []byte("pre")
			out := AppendBatchSlice(dst, rec, tc.from, tc.to)
			if string(out[:3]) != "pre" {
				t.Fatal("prefix lost")
			}
			got := out[3:]
			if len(tc.want) == 0 {
				if len(got) != 0 {
					t.Fatalf("appended %d bytes for an empty selection", len(got))
				}
				return
			}
			if tc.identity && !bytes.Equal(got, rec) {
				t.Fatal("slice of everything differs from the record")
			}
			if err := CheckBatch(got); err != nil {
				t.Fatalf("CheckBatch(slice): %v", err)
			}
			for _, off := range []int{batchPartitionIDOff, batchBaseOffsetOff, batchBaseTimestampOff, batchOriginTimestampOff} {
				if !bytes.Equal(got[off:off+8], rec[off:off+8]) {
					t.Fatalf("header field at %d changed", off)
				}
			}
			msgs, err := collect(t, got)
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) != len(tc.want) {
				t.Fatalf("%d messages, want %d", len(msgs), len(tc.want))
			}
			for i, m := range msgs {
				if m.Offset != tc.want[i] || m.Timestamp != 5000 || m.PartitionID != 3 {
					t.Fatalf("message %d: offset %d ts %d partition %d", i, m.Offset, m.Timestamp, m.PartitionID)
				}
			}
			if tc.from == 1 && !bytes.Equal(got[BatchHeaderSize:], rec[f1:]) {
				t.Fatal("frames not copied verbatim")
			}
		})
	}
	// Garbage in, nothing out.
	for _, b := range [][]byte{nil, rec[:255], rec[:300]} {
		if out := AppendBatchSlice(nil, b, 0, 2); len(out) != 0 {
			t.Fatalf("slice of a malformed record appended %d bytes", len(out))
		}
	}

	// Slices of a larger batch, served back to back, read as one stream.
	msgs := make([]wantMsg, 5)
	for i := range msgs {
		msgs[i] = wantMsg{origin: uint64(10 + i), payload: strings.Repeat("x", i+1), headers: strings.Repeat("h", i)}
	}
	big := buildBatch(t, nil, msgs...)
	StampBatch(big, 7, 1000, 42)
	stream := AppendBatchSlice(nil, big, 3, 5)
	stream = AppendBatchSlice(stream, big, 0, 2)
	if err := CheckBatches(stream); err != nil {
		t.Fatal(err)
	}
	got, err := collect(t, stream)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []uint64{1003, 1004, 1000, 1001} {
		if got[i].Offset != want || got[i].OriginTimestamp != want-1000+10 || got[i].PartitionID != 7 {
			t.Fatalf("message %d: offset %d origin %d", i, got[i].Offset, got[i].OriginTimestamp)
		}
	}
}

func TestMessageIterErrors(t *testing.T) {
	rec := pollRecord(t)
	with := func(off int, v uint64, size int) []byte {
		b := bytes.Clone(rec)
		if size == 4 {
			binary.LittleEndian.PutUint32(b[off:], uint32(v))
		} else {
			binary.LittleEndian.PutUint64(b[off:], v)
		}
		return b
	}
	zeroCount := make([]byte, BatchHeaderSize)
	binary.LittleEndian.PutUint64(zeroCount[batchLengthOff:], BatchHeaderSize)
	emptyWithCount := bytes.Clone(zeroCount)
	binary.LittleEndian.PutUint32(emptyWithCount[batchMessageCountOff:], 1)
	f1 := BatchHeaderSize + MessageHeaderSize + len("first-payload")
	tests := []struct {
		name     string
		in       []byte
		messages int
		wantErr  error
	}{
		{name: "empty", in: nil},
		{name: "one record", in: rec, messages: 2},
		{name: "two records", in: concat(rec, rec), messages: 4},
		{name: "zero-count header-only record", in: concat(zeroCount, rec), messages: 2},
		{name: "short header", in: rec[:100], wantErr: wire.ErrShortBuffer},
		{name: "record then stray byte", in: concat(rec, rec, []byte{0}), messages: 4, wantErr: wire.ErrShortBuffer},
		{name: "batch_length below 256", in: with(batchLengthOff, 10, 8), wantErr: wire.ErrConstraint},
		{name: "batch_length beyond", in: with(batchLengthOff, uint64(len(rec)+1), 8), wantErr: wire.ErrShortBuffer},
		{name: "count too high", in: with(batchMessageCountOff, 3, 4), messages: 2, wantErr: wire.ErrConstraint},
		{name: "count too low", in: with(batchMessageCountOff, 1, 4), messages: 1, wantErr: wire.ErrConstraint},
		{name: "count without frames", in: emptyWithCount, wantErr: wire.ErrConstraint},
		{name: "frame overrun", in: with(f1+framePayloadLenOff, 1000, 4), messages: 1, wantErr: wire.ErrShortBuffer},
		{name: "batch shorter than frames", in: concat(with(batchLengthOff, uint64(len(rec)-1), 8), []byte{0}), messages: 1, wantErr: wire.ErrShortBuffer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			it := NewMessageIter(tc.in)
			n := 0
			for it.Next() {
				n++
			}
			if n != tc.messages {
				t.Fatalf("%d messages, want %d", n, tc.messages)
			}
			if m := it.Message(); m.Payload != nil || m.Offset != 0 || it.Frame() != nil || it.ChecksumOK() {
				t.Fatal("iterator keeps a message after the end")
			}
			check := CheckBatches(tc.in)
			if tc.wantErr == nil {
				if it.Err() != nil || check != nil {
					t.Fatalf("iterator %v, CheckBatches %v", it.Err(), check)
				}
				return
			}
			wantDecodeErr(t, it.Err(), tc.wantErr)
			if check == nil {
				t.Fatalf("CheckBatches accepted what the iterator rejects (%v)", it.Err())
			}
		})
	}
}

func TestBatchAllocs(t *testing.T) {
	rec := pollRecord(t)
	send := goldenSendBatch(t)
	dst := make([]byte, 0, 4096)
	tests := []struct {
		name string
		fn   func()
	}{
		{"CheckBatch", func() { _ = CheckBatch(send) }},
		{"CheckBatches", func() { _ = CheckBatches(rec) }},
		{"MessageIter", func() {
			it := NewMessageIter(rec)
			for it.Next() {
				_ = it.Message()
			}
		}},
		{"StampBatch", func() { StampBatch(send, 1, 2, 3) }},
		{"AppendBatchSlice", func() { dst = AppendBatchSlice(dst[:0], rec, 1, 2) }},
	}
	for _, tc := range tests {
		if n := testing.AllocsPerRun(50, tc.fn); n != 0 {
			t.Errorf("%s allocates %.1f times", tc.name, n)
		}
	}
}

func TestBatchBuilderReuseAllocs(t *testing.T) {
	headers := AppendHeader(AppendHeader(nil, "a", HeaderKindString, []byte("1")), "b", HeaderKindUint32, u32le(2))
	payload := bytes.Repeat([]byte{'p'}, 100)
	var b BatchBuilder
	buf := make([]byte, 0, 64<<10)
	build := func() {
		b.Begin(buf[:0])
		for i := range 20 {
			_ = b.Add(wire.U128{Lo: uint64(i)}, uint64(1000-i), payload, headers)
		}
		buf, _ = b.Finish()
	}
	build()
	first := bytes.Clone(buf)
	if n := testing.AllocsPerRun(50, build); n != 0 {
		t.Fatalf("reused BatchBuilder allocates %.1f times", n)
	}
	if !bytes.Equal(buf, first) || CheckBatch(buf) != nil {
		t.Fatal("rebuilt batch differs or is invalid")
	}
}

func seedBatches(f *testing.F) {
	vs := vectors(f)
	for _, name := range []string{"send_messages_payload_golden", "send_messages_payload_with_tlv_headers"} {
		p := vs[name]
		ml := int(binary.LittleEndian.Uint32(p))
		f.Add(p[4+ml:])
	}
	f.Add(vs["poll_messages_response_golden"][16:])
	f.Add([]byte{})
	f.Add(make([]byte, BatchHeaderSize))
}

// FuzzCheckBatch: no panic; an accepted batch is structurally consistent
// with CheckBatches and MessageIter, and when it is a producer batch in the
// builder's own shape (server fields zero, offset_delta = index, origin =
// minimum) BatchBuilder rebuilds it byte for byte.
func FuzzCheckBatch(f *testing.F) {
	seedBatches(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		err := CheckBatch(in)
		if err != nil {
			var de *wire.DecodeError
			if !errors.As(err, &de) || de.Offset < 0 || de.Offset > len(in) {
				t.Fatalf("error %v", err)
			}
			return
		}
		n, err := CountBatchMessages(in)
		if err != nil || n != uint64(BatchMessageCount(in)) || n == 0 {
			t.Fatalf("CountBatchMessages = %d, %v", n, err)
		}
		var b BatchBuilder
		b.Begin(nil)
		canonical := binary.LittleEndian.Uint64(in[0:]) == 0 && binary.LittleEndian.Uint64(in[8:]) == 0 && binary.LittleEndian.Uint64(in[16:]) == 0
		minOrigin := uint64(math.MaxUint64)
		it := NewMessageIter(in)
		i := uint64(0)
		for it.Next() {
			m := it.Message()
			if !it.ChecksumOK() {
				t.Fatal("accepted batch with a bad frame checksum")
			}
			if m.Offset != i {
				canonical = false
			}
			minOrigin = min(minOrigin, m.OriginTimestamp)
			if err := b.Add(m.ID, m.OriginTimestamp, m.Payload, m.Headers); err != nil {
				canonical = false
			}
			i++
		}
		if it.Err() != nil || i != n {
			t.Fatalf("iterator: %d messages, %v", i, it.Err())
		}
		if minOrigin != binary.LittleEndian.Uint64(in[batchOriginTimestampOff:]) {
			canonical = false
		}
		if canonical {
			out, err := b.Finish()
			if err != nil || !bytes.Equal(out, in) {
				t.Fatalf("rebuild differs: %v", err)
			}
		}
		// Slicing everything reproduces the batch; stamping keeps it valid.
		if all := AppendBatchSlice(nil, in, 0, math.MaxUint32); !bytes.Equal(all, in) {
			t.Fatal("AppendBatchSlice of everything differs")
		}
		stamped := bytes.Clone(in)
		StampBatch(stamped, 1, 2, 3)
		if err := CheckBatch(stamped); err != nil {
			t.Fatalf("stamped batch: %v", err)
		}
	})
}

// FuzzMessageIter: no panic; the iterator agrees with CheckBatches and
// CountBatchMessages, never reads past the input, and its slices lie inside
// it.
func FuzzMessageIter(f *testing.F) {
	seedBatches(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		it := NewMessageIter(in)
		n := uint64(0)
		for it.Next() {
			m := it.Message()
			if len(m.Payload)+len(m.Headers)+MessageHeaderSize != len(it.Frame()) || len(it.Frame()) > len(in) {
				t.Fatal("message slices inconsistent")
			}
			n++
		}
		if it.Offset() > len(in) {
			t.Fatalf("offset %d beyond %d", it.Offset(), len(in))
		}
		total, err := CountBatchMessages(in)
		if (err == nil) != (it.Err() == nil) {
			t.Fatalf("CountBatchMessages %v, iterator %v", err, it.Err())
		}
		if err == nil && (total != n || it.Offset() != len(in)) {
			t.Fatalf("%d messages counted, %d iterated, offset %d of %d", total, n, it.Offset(), len(in))
		}
	})
}

// ---- benchmarks ----

// BenchmarkBuildSendBatch builds a 100-message batch (1 KiB payloads, two
// user headers each) into a reused buffer, after the SEND_MESSAGES metadata.
func BenchmarkBuildSendBatch(b *testing.B) {
	headers := AppendHeader(nil, "content-type", HeaderKindString, []byte("application/octet-stream"))
	headers = AppendHeader(headers, "retries", HeaderKindUint32, u32le(3))
	payload := bytes.Repeat([]byte{0x5A}, 1024)
	metadata := []byte("metadata-prefix-24-bytes")
	var bb BatchBuilder
	buf := make([]byte, 0, 256<<10)
	var size int
	build := func() {
		bb.Begin(append(buf[:0], metadata...))
		for i := range 100 {
			if err := bb.Add(wire.U128{Lo: uint64(i) + 1}, 1_700_000_000_000_000+uint64(i), payload, headers); err != nil {
				b.Fatal(err)
			}
		}
		var err error
		buf, err = bb.Finish()
		if err != nil {
			b.Fatal(err)
		}
		size = len(buf) - len(metadata)
	}
	build()
	if err := CheckBatch(buf[len(metadata):]); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		build()
	}
}

func pollBody(b *testing.B) []byte {
	headers := AppendHeader(nil, "k", HeaderKindString, []byte("v"))
	payload := bytes.Repeat([]byte{0x5A}, 1024)
	body := make([]byte, 16)
	binary.LittleEndian.PutUint32(body[12:], 100)
	// Four stored batches of 25 messages, as a poll of 100 would return.
	for r := range 4 {
		var bb BatchBuilder
		bb.Begin(body)
		for i := range 25 {
			_ = bb.Add(wire.U128{Lo: uint64(r*25 + i)}, uint64(i), payload, headers)
		}
		out, err := bb.Finish()
		if err != nil {
			b.Fatal(err)
		}
		StampBatch(out[len(body):], 0, uint64(r*25), 5000+uint64(r))
		body = out
	}
	return body
}

// BenchmarkIterPollReply iterates a 100-message poll reply body (16-byte
// prefix + batch records).
func BenchmarkIterPollReply(b *testing.B) {
	body := pollBody(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		it := NewMessageIter(body[16:])
		n, sum := 0, 0
		for it.Next() {
			m := it.Message()
			sum += len(m.Payload) + len(m.Headers) + int(m.Offset)
			n++
		}
		if it.Err() != nil || n != 100 {
			b.Fatalf("%d messages, %v", n, it.Err())
		}
	}
}

// BenchmarkCheckBatch runs the server admission checks (all checksums) over
// a 100-message batch of 1 KiB payloads.
func BenchmarkCheckBatch(b *testing.B) {
	headers := AppendHeader(nil, "k", HeaderKindString, []byte("v"))
	payload := bytes.Repeat([]byte{0x5A}, 1024)
	var bb BatchBuilder
	bb.Begin(nil)
	for i := range 100 {
		_ = bb.Add(wire.U128{Lo: uint64(i)}, uint64(i), payload, headers)
	}
	batch, _ := bb.Finish()
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := CheckBatch(batch); err != nil {
			b.Fatal(err)
		}
	}
}

// Frames sealed across several segments (coalesced sends) give the same
// bytes as one BatchBuilder batch of the same messages, and sealing
// allocates nothing.
func TestBatchSealerSegmentsMatchBuilder(t *testing.T) {
	type msg struct {
		id      wire.U128
		ts      uint64
		payload []byte
		headers []byte
	}
	hdrs := AppendHeader(nil, "k", HeaderKindRaw, []byte{1, 2})
	msgs := []msg{
		{wire.U128{Lo: 1}, 9000, []byte("late"), nil},
		{wire.U128{Lo: 2}, 100, []byte("early"), hdrs},
		{wire.U128{Hi: 3}, 5000, nil, hdrs},
		{wire.U128{}, 700, bytes.Repeat([]byte("z"), 3000), nil},
	}
	var b BatchBuilder
	b.Begin(nil)
	for _, m := range msgs {
		if err := b.Add(m.id, m.ts, m.payload, m.headers); err != nil {
			t.Fatal(err)
		}
	}
	want, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	var seg0, seg1 []byte
	for i, m := range msgs {
		if i < 1 {
			seg0 = AppendOpenFrame(seg0, m.id, m.ts, m.payload, m.headers)
		} else {
			seg1 = AppendOpenFrame(seg1, m.id, m.ts, m.payload, m.headers)
		}
	}
	if got := OpenFrameOrigin(seg1); got != 100 {
		t.Fatalf("open frame origin %d, want 100", got)
	}
	hdr := make([]byte, BatchHeaderSize)
	var s BatchSealer
	segs := [][]byte{seg0, seg1}
	s.Seal(hdr, segs, uint32(len(msgs)), 100)
	got := append(append(hdr, seg0...), seg1...)
	if !bytes.Equal(got, want) {
		t.Fatal("sealed segments differ from the builder's batch")
	}
	if err := CheckBatch(got); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(20, func() { s.Seal(hdr, segs, 0, 0) }); n != 0 {
		t.Fatalf("Seal allocates %v times", n)
	}
}

// TestReopenFramesReseal: frames sealed into one batch, reopened, and
// sealed alone into another batch give the batch a builder makes of them
// (a refused coalesced send resent on its own).
func TestReopenFramesReseal(t *testing.T) {
	type msg struct {
		ts      uint64
		payload string
	}
	first := []msg{{50, "other caller"}}
	mine := []msg{{9000, "late"}, {100, "early"}, {5000, "mid"}}
	var seg0, seg1 []byte
	for i, m := range first {
		seg0 = AppendOpenFrame(seg0, wire.U128{Lo: uint64(i + 1)}, m.ts, []byte(m.payload), nil)
	}
	for i, m := range mine {
		seg1 = AppendOpenFrame(seg1, wire.U128{Hi: uint64(i + 1)}, m.ts, []byte(m.payload), nil)
	}
	var s BatchSealer
	hdr := make([]byte, BatchHeaderSize)
	s.Seal(hdr, [][]byte{seg0, seg1}, 4, 50)
	ReopenFrames(seg1, 50)
	for off, i := 0, 0; off < len(seg1); i++ {
		if got := OpenFrameOrigin(seg1[off:]); got != mine[i].ts {
			t.Fatalf("frame %d reopened with origin %d, want %d", i, got, mine[i].ts)
		}
		off += FrameLen(seg1[off:])
	}
	s.Seal(hdr, [][]byte{seg1}, 3, 100)
	var b BatchBuilder
	b.Begin(nil)
	for i, m := range mine {
		if err := b.Add(wire.U128{Hi: uint64(i + 1)}, m.ts, []byte(m.payload), nil); err != nil {
			t.Fatal(err)
		}
	}
	want, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if got := append(hdr, seg1...); !bytes.Equal(got, want) {
		t.Fatal("the resealed frames differ from the builder's batch")
	}
}
