package bridge

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/codec/records"
)

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
