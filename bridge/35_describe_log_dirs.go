package bridge

// DescribeLogDirs: v1-v5
//
// Behavior:
//   - The sidecar's one "log dir" is its Iggy server: the answer holds one
//     dir named "iggy" whose partitions are the Kafka partitions asked for
//     (Topics null: every Kafka topic, as Metadata lists them), each with
//     its size in bytes from Iggy's own statistics (GET_TOPIC, asked
//     afresh: the partition's size_bytes), OffsetLag 0 (the leader is its
//     only replica) and IsFuture false. __consumer_offsets (not stored in
//     Iggy) has size 0.
//   - As Kafka does, unknown topics and partitions are left out of the
//     answer (no per-partition error exists).
//   - TotalBytes and UsableBytes (v4+) are -1, "not available": Iggy does
//     not report its volume's capacity. IsCordoned (v5) is false.
//   - An Iggy failure answers the dir with the retriable code of errors.go
//     (Kafka's dir-level error) and the partitions read so far.
//
// Version notes: v0 is not served (Kafka 4 serves v1+); v2 flexible; v3
// top-level ErrorCode; v4 TotalBytes, UsableBytes; v5 IsCordoned.
//
// Iggy commands: GET_TOPICS (301, for every topic), GET_TOPIC (300).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// logDirName is the name of the sidecar's one log dir.
const logDirName = "iggy"

func (b *Bridge) describeLogDirsAPI() API {
	return API{Key: 35, Name: "DescribeLogDirs", MinVersion: 1, MaxVersion: 5, Handle: b.handleDescribeLogDirs, ErrorCodes: errorCodes(describeLogDirsErrorCodes)}
}

func init() { registerAPI((*Bridge).describeLogDirsAPI) }

func (b *Bridge) handleDescribeLogDirs(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = logDirName
	defer func() { resp.Dirs = append(resp.Dirs, dir) }()

	type asked struct {
		topic      string
		partitions []int32 // nil: every partition
	}
	var topics []asked
	if req.Topics == nil {
		names, err := b.listTopics(ctx)
		if err != nil {
			dir.ErrorCode = kafkaCode(err, scopeData)
			return resp, nil
		}
		for _, n := range names {
			topics = append(topics, asked{topic: n})
		}
		topics = append(topics, asked{topic: consumerOffsetsTopic})
	} else {
		for _, t := range req.Topics {
			topics = append(topics, asked{t.Topic, t.Partitions})
			if t.Partitions == nil {
				topics[len(topics)-1].partitions = []int32{}
			}
		}
	}
	for _, a := range topics {
		info, count, code := b.topicForAdmin(ctx, a.topic, true)
		if code != 0 {
			if !unknownTopic(code) {
				dir.ErrorCode = code
			}
			continue
		}
		ps := a.partitions
		if ps == nil {
			for p := int32(0); p < count; p++ {
				ps = append(ps, p)
			}
		}
		rt := kmsg.NewDescribeLogDirsResponseDirTopic()
		rt.Topic = a.topic
		for _, p := range ps {
			_, size, ok := partitionStats(info, p)
			if !ok || p >= count {
				continue
			}
			rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			rp.Partition, rp.Size, rp.OffsetLag, rp.IsFuture = p, int64(size), 0, false
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(rt.Partitions) > 0 {
			dir.Topics = append(dir.Topics, rt)
		}
	}
	return resp, nil
}

// describeLogDirsErrorCodes walks a DescribeLogDirs response for the
// metrics.
func describeLogDirsErrorCodes(r *kmsg.DescribeLogDirsResponse, f func(int16)) {
	f(r.ErrorCode)
	for _, d := range r.Dirs {
		f(d.ErrorCode)
	}
}
