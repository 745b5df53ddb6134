package bridge

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/codec/records"
)

// setProduceCodes answers every partition of resp with code.
func setProduceCodes(resp *kmsg.ProduceResponse, code int16) {
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			resp.Topics[i].Partitions[j].ErrorCode = code
		}
	}
}

// produceCompressed reports whether any batch of req names a compression
// codec (magic 0/1 message sets and v2 batches alike keep it in the low
// bits of their attributes; a message set's wrapper is checked through
// its first message only, which is where a compressed set says so).
func produceCompressed(req *kmsg.ProduceRequest) bool {
	for i := range req.Topics {
		for j := range req.Topics[i].Partitions {
			if records.Compressed(req.Topics[i].Partitions[j].Records) {
				return true
			}
		}
	}
	return false
}
