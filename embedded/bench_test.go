package embedded

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// BenchmarkSend measures lockstep SEND_MESSAGES of 100 messages of 100
// bytes over loopback TCP (in memory, and on disk without and with fsync).
func BenchmarkSend(b *testing.B) {
	for _, tc := range []struct {
		name  string
		disk  bool
		fsync bool
	}{{"memory", false, false}, {"disk", true, false}, {"disk_fsync", true, true}} {
		b.Run(tc.name, func(b *testing.B) {
			s := startServer(b, func(c *Config) {
				if tc.disk {
					c.DataDir = b.TempDir()
				}
			})
			c := root(b, s)
			c.createStream("s")
			var opts iggy.Options
			if tc.fsync {
				opts = iggy.Options{opt("enforce_fsync", iggy.HeaderKindBool, []byte{1})}
			}
			c.createTopic(numID(0), "t", 1, opts)
			payloads := make([]string, 100)
			for i := range payloads {
				payloads[i] = strings.Repeat(fmt.Sprint(i%10), 100)
			}
			body := encode(&iggy.SendMessagesRequest{StreamID: numID(0), TopicID: numID(0), Partitioning: toPartition(0), MessagesCount: 100, Batch: batch(b, payloads...)})
			h := c.header(iggy.OperationSendMessages, 1)
			f := frame(&h, body)
			b.SetBytes(int64(len(f)))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				c.writeRaw(f)
				if r := c.recv(); r.status() != 0 {
					b.Fatalf("status %d", r.status())
				}
			}
			b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkPoll measures lockstep polls of 100 messages of 100 bytes.
func BenchmarkPoll(b *testing.B) {
	s := startServer(b, nil)
	c := root(b, s)
	c.createStream("s")
	c.createTopic(numID(0), "t", 1, nil)
	payloads := make([]string, 100)
	for i := range payloads {
		payloads[i] = strings.Repeat("x", 100)
	}
	for range 100 {
		c.send(numID(0), numID(0), 0, payloads...)
	}
	h := c.header(iggy.OperationNonReplicated, 1)
	h.Code = iggy.CodePollMessages
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		f := frame(&h, encode(pollReq(single(1), numID(0), numID(0), nil, iggy.PollingKindOffset, uint64(i%100)*100, 100, false)))
		c.writeRaw(f)
		if r := c.recv(); r.status() != 0 || len(r.body) < 16 {
			b.Fatalf("status %d", r.status())
		}
	}
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "msgs/s")
}
