package bridge

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/codec/records"
)

func TestFetchPollCount(t *testing.T) {
	cases := []struct {
		remaining, avg int
		atLeastOne     bool
		want           uint32
	}{
		{0, 100, false, 0},            // no room: offsets only
		{0, 100, true, 1},             // no room, but one record goes in anyway
		{-5, 0, true, 1},              // likewise with nothing known
		{1 << 20, 0, false, 16},       // unknown sizes: a small probe
		{100, 0, false, 1},            // ... never more than the room suggests
		{10_000, 100, false, 101},     // what the room holds, plus one
		{1 << 30, 10, false, 10000},   // capped by count
		{1 << 30, 1 << 20, false, 16}, // capped by expected bytes
		{1 << 30, 1 << 30, false, 1},  // a huge message: one
	}
	for _, c := range cases {
		if got := fetchPollCount(c.remaining, c.avg, c.atLeastOne); got != c.want {
			t.Errorf("fetchPollCount(%d, %d, %v) = %d, want %d", c.remaining, c.avg, c.atLeastOne, got, c.want)
		}
	}
}

func TestProduceVersionRules(t *testing.T) {
	v2 := records.BatchInfo{Magic: 2}
	zstd := records.BatchInfo{Magic: 2, Compression: records.CodecZstd}
	legacy := records.BatchInfo{Magic: 1}
	cases := []struct {
		version int16
		batches []records.BatchInfo
		want    int16
	}{
		{0, nil, 0},
		{2, []records.BatchInfo{legacy, legacy, v2}, 0},
		{3, nil, kerr.InvalidRecord.Code},
		{3, []records.BatchInfo{legacy}, kerr.InvalidRecord.Code},
		{3, []records.BatchInfo{v2, v2}, kerr.InvalidRecord.Code},
		{3, []records.BatchInfo{v2}, 0},
		{6, []records.BatchInfo{zstd}, kerr.UnsupportedCompressionType.Code},
		{7, []records.BatchInfo{zstd}, 0},
	}
	for _, c := range cases {
		if got, why := produceVersionRules(c.version, c.batches); got != c.want || (got != 0) != (why != "") {
			t.Errorf("v%d %+v: %d %q, want %d", c.version, c.batches, got, why, c.want)
		}
	}
}
