package bridge_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// listOne asks ListOffsets at version for one partition.
func listOne(t testing.TB, rk *rawKafka, version int16, topic string, partition int32, ts int64) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	resp := rk.do(listOffsetsReq(topic, partition, ts), version).(*kmsg.ListOffsetsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("response shape %+v", resp)
	}
	return resp.Topics[0].Partitions[0]
}

// nextMilli waits for the wall clock to enter a later millisecond than t
// (Iggy's Timestamp poll works on append times: records must land in
// different milliseconds to be told apart by a millisecond query).
func nextMilli(t time.Time) {
	for time.Now().UnixMilli() <= t.UnixMilli() {
		time.Sleep(100 * time.Microsecond)
	}
}

func TestListOffsets(t *testing.T) {
	s := startStack(t)
	rk := dialRaw(t, s.Addr)
	const topic = "listed"
	createTopic(t, rk, topic)

	// Empty partition.
	for _, c := range []struct {
		ts, offset, timestamp int64
	}{{-1, 0, -1}, {-2, 0, -1}, {-4, 0, -1}, {-3, -1, -1}, {0, -1, -1}, {1_700_000_000_000, -1, -1}} {
		p := listOne(t, rk, 9, topic, 0, c.ts)
		if p.ErrorCode != 0 || p.Offset != c.offset || p.Timestamp != c.timestamp {
			t.Errorf("empty, ts %d: %+v", c.ts, p)
		}
	}

	// Three records in three Iggy batches appended in distinct
	// milliseconds, CreateTime = the wall clock, as producers set it.
	var createTimes []int64
	var appendAfter []time.Time // a time after each append
	for i := range 3 {
		if i > 0 {
			nextMilli(appendAfter[i-1])
		}
		ct := time.Now().UnixMilli()
		rp := rk.produceRaw(9, -1, topic, 0, buildBatch(ct, 0, []testRecord{{value: []byte{byte('a' + i)}}}, nil, 0))
		if rp.ErrorCode != 0 || rp.BaseOffset != int64(i) {
			t.Fatalf("produce %d: %+v", i, rp)
		}
		createTimes = append(createTimes, ct)
		appendAfter = append(appendAfter, time.Now())
	}
	nextMilli(appendAfter[2])

	cases := []struct {
		name              string
		ts                int64
		offset, timestamp int64
	}{
		{"latest", -1, 3, -1},
		{"earliest", -2, 0, -1},
		{"earliest local", -4, 0, -1},
		{"max timestamp = the last record", -3, 2, createTimes[2]},
		{"latest tiered: none", -5, -1, -1},
		{"from time 0", 0, 0, createTimes[0]},
		{"after the first append", appendAfter[0].UnixMilli() + 1, 1, createTimes[1]},
		{"after the second append", appendAfter[1].UnixMilli() + 1, 2, createTimes[2]},
		{"after every record", time.Now().UnixMilli() + 1, -1, -1},
	}
	for _, c := range cases {
		p := listOne(t, rk, 9, topic, 0, c.ts)
		if p.ErrorCode != 0 || p.Offset != c.offset || p.Timestamp != c.timestamp {
			t.Errorf("%s (ts %d): error %d offset %d timestamp %d, want %d %d", c.name, c.ts, p.ErrorCode, p.Offset, p.Timestamp, c.offset, c.timestamp)
		}
		if want := int32(-1); c.offset >= 0 {
			if p.LeaderEpoch != 0 {
				t.Errorf("%s: leader epoch %d", c.name, p.LeaderEpoch)
			}
		} else if p.LeaderEpoch != want {
			t.Errorf("%s: leader epoch %d", c.name, p.LeaderEpoch)
		}
	}

	// v0: the old offsets array.
	p := listOne(t, rk, 0, topic, 0, -1)
	if len(p.OldStyleOffsets) != 1 || p.OldStyleOffsets[0] != 3 {
		t.Errorf("v0 latest: %+v", p)
	}
	req := listOffsetsReq(topic, 0, -2)
	req.Topics[0].Partitions[0].MaxNumOffsets = 0
	resp := rk.do(req, 0).(*kmsg.ListOffsetsResponse)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.OldStyleOffsets) != 0 {
		t.Errorf("v0 with max 0 offsets: %+v", p)
	}
	// v1 and the newest version agree with v9.
	for _, v := range []int16{1, 11} {
		if p := listOne(t, rk, v, topic, 0, -1); p.Offset != 3 {
			t.Errorf("v%d latest: %+v", v, p)
		}
	}

	// Errors: duplicates, unknown topic, unknown partition.
	dup := listOffsetsReq(topic, 0, -1)
	dup.Topics[0].Partitions = append(dup.Topics[0].Partitions, dup.Topics[0].Partitions[0])
	resp = rk.do(dup, 5).(*kmsg.ListOffsetsResponse)
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("duplicate: %+v", p)
		}
	}
	if p := listOne(t, rk, 5, "missing", 0, -1); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("missing topic: %+v", p)
	}
	if p := listOne(t, rk, 5, topic, 3, -1); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("missing partition: %+v", p)
	}
}

// TestListOffsetsByCreateTime: records whose CreateTimes lie far before
// their append times (replayed or migrated data) are found by CreateTime,
// as Kafka finds them; past the bounded forward read the append-time answer
// stands.
func TestListOffsetsByCreateTime(t *testing.T) {
	s := startStack(t)
	rk := dialRaw(t, s.Addr)
	const topic = "replayed"
	createTopic(t, rk, topic)
	base := int64(1_700_000_000_000)
	recs := make([]testRecord, 5)
	for i := range recs {
		recs[i] = testRecord{value: []byte("r"), tsDelta: int64(i) * 1000}
	}
	if rp := rk.produceRaw(9, -1, topic, 0, buildBatch(base, 0, recs, nil, 0)); rp.ErrorCode != 0 {
		t.Fatalf("produce: %+v", rp)
	}
	for _, c := range []struct{ ts, offset, timestamp int64 }{
		{base - 1, 0, base},
		{base, 0, base},
		{base + 1500, 2, base + 2000},
		{base + 4000, 4, base + 4000},
		{base + 1_000_000, -1, -1},
	} {
		if p := listOne(t, rk, 9, topic, 0, c.ts); p.ErrorCode != 0 || p.Offset != c.offset || p.Timestamp != c.timestamp {
			t.Errorf("ts %d: %+v, want offset %d timestamp %d", c.ts, p, c.offset, c.timestamp)
		}
	}

	// 21,000 old records, none at or after the query: the forward read
	// gives up after 20,000 and answers the first record appended after
	// the query time (Kafka would answer -1).
	const topic2 = "replayed-long"
	createTopic(t, rk, topic2)
	many := make([]testRecord, 21_000)
	for i := range many {
		many[i] = testRecord{value: []byte{'x'}}
	}
	if rp := rk.produceRaw(9, -1, topic2, 0, buildBatch(base, 0, many, nil, 0)); rp.ErrorCode != 0 {
		t.Fatalf("produce: %+v", rp)
	}
	if p := listOne(t, rk, 9, topic2, 0, base+1); p.ErrorCode != 0 || p.Offset != 0 || p.Timestamp != base {
		t.Errorf("bounded search: %+v", p)
	}
}
