package iggy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strconv"
	"testing"

	"github.com/valyala/bytebufferpool"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

type testMsg struct {
	id      wire.U128
	ts      uint64
	payload []byte
	headers []byte
}

func buildMessages(t *testing.T, pool *bytebufferpool.Pool, msgs []testMsg) *Messages {
	t.Helper()
	m := &Messages{pool: pool}
	for _, x := range msgs {
		if err := m.Add(x.id, x.ts, x.payload, x.headers); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// sealTo seals segs into a standalone batch record for checking.
func sealTo(segs [][]byte, count uint32, minTS uint64) []byte {
	blob := 0
	for _, s := range segs {
		blob += len(s)
	}
	rec := make([]byte, icodec.BatchHeaderSize, icodec.BatchHeaderSize+blob)
	var s icodec.BatchSealer
	s.Seal(rec, segs, count, minTS)
	for _, seg := range segs {
		rec = append(rec, seg...)
	}
	return rec
}

func TestMessagesSealMatchesCodec(t *testing.T) {
	hdrs := icodec.AppendHeader(nil, "kafka.v", icodec.HeaderKindRaw, []byte{1})
	tests := []struct {
		name  string
		parts [][]testMsg // one Messages per part, sealed together
	}{
		{"one message", [][]testMsg{{{id: wire.U128{Lo: 1}, ts: 1000, payload: []byte("a")}}}},
		{"headers and empty payload", [][]testMsg{{{ts: 5, payload: nil, headers: hdrs}, {ts: 7, payload: []byte("xyz"), headers: hdrs}}}},
		{"timestamps out of order", [][]testMsg{{{ts: 9000, payload: []byte("late")}, {ts: 100, payload: []byte("early")}, {ts: 5000, payload: []byte("mid")}}}},
		{"three callers coalesced", [][]testMsg{
			{{ts: 300, payload: []byte("c0m0")}, {ts: 301, payload: []byte("c0m1")}},
			{{ts: 200, payload: []byte("c1m0"), headers: hdrs}},
			{{ts: 400, payload: bytes.Repeat([]byte("z"), 3000)}, {ts: 250, payload: []byte("c2m1")}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pool bytebufferpool.Pool
			var segs [][]byte
			var want []testMsg
			count := uint32(0)
			minTS := ^uint64(0)
			for _, p := range tt.parts {
				m := buildMessages(t, &pool, p)
				segs = append(segs, m.frames())
				count += uint32(m.Len())
				minTS = min(minTS, m.minTS)
				want = append(want, p...)
			}
			rec := sealTo(segs, count, minTS)
			if err := icodec.CheckBatch(rec); err != nil {
				t.Fatalf("CheckBatch: %v", err)
			}
			it := icodec.NewMessageIter(rec)
			i := 0
			for it.Next() {
				got := it.Message()
				w := want[i]
				if got.Offset != uint64(i) || got.OriginTimestamp != w.ts || got.ID != w.id ||
					!bytes.Equal(got.Payload, w.payload) || !bytes.Equal(got.Headers, w.headers) {
					t.Errorf("message %d: got offset %d ts %d id %v payload %q headers %x; want ts %d id %v payload %q",
						i, got.Offset, got.OriginTimestamp, got.ID, got.Payload, got.Headers, w.ts, w.id, w.payload)
				}
				i++
			}
			if err := it.Err(); err != nil || i != len(want) {
				t.Fatalf("iterated %d of %d messages, err %v", i, len(want), err)
			}
		})
	}
}

func TestMessagesAddLimits(t *testing.T) {
	var pool bytebufferpool.Pool
	m := &Messages{pool: &pool}
	huge := make([]byte, MaxMessageSize-icodec.MessageHeaderSize+1)
	if err := m.Add(wire.U128{}, 0, huge, nil); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("oversized message: %v", err)
	}
	if err := m.Add(wire.U128{}, 0, huge[:len(huge)-1], nil); err != nil {
		t.Fatalf("largest message: %v", err)
	}
	if m.Len() != 1 || m.Size() != MaxMessageSize {
		t.Fatalf("len %d size %d", m.Len(), m.Size())
	}
	m.Reset()
	if m.Len() != 0 || m.Size() != 0 || m.Span() != 0 {
		t.Fatalf("after Reset: len %d size %d span %d", m.Len(), m.Size(), m.Span())
	}
	m.sent = true
	if err := m.Add(wire.U128{}, 0, []byte("x"), nil); !errors.Is(err, ErrMessagesSent) {
		t.Fatalf("add after send: %v", err)
	}
	m.Release()
}

func TestMessagesSpan(t *testing.T) {
	var pool bytebufferpool.Pool
	m := &Messages{pool: &pool}
	defer m.Release()
	for _, ts := range []uint64{50, 10, 90} {
		if err := m.Add(wire.U128{}, ts, []byte(strconv.FormatUint(ts, 10)), nil); err != nil {
			t.Fatal(err)
		}
	}
	if m.Span() != 80 || m.minTS != 10 || m.maxTS != 90 {
		t.Fatalf("span %d min %d max %d", m.Span(), m.minTS, m.maxTS)
	}
	// The origin timestamp waits in the checksum slot until sealing.
	if got := binary.LittleEndian.Uint64(m.frames()[icodec.MessageHeaderChecksumOffset:]); got != 50 {
		t.Fatalf("first frame's pending timestamp %d", got)
	}
}
