package bridge

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/decompress"
)

// produceDecompressBudget bounds what one Produce request may decompress
// to (bridge/decompress).
const produceDecompressBudget = decompress.RequestBudget

// decompressAllowance is the DecompressBudget limit of a Produce request
// and the function that returns its memory (decompress.Allowance).
func (b *Bridge) decompressAllowance(ctx context.Context, req *kmsg.ProduceRequest) (limit int, release func(), ok bool) {
	return decompress.Allowance(ctx, b.budget, req)
}

// setProduceCodes answers every partition of resp with code.
func setProduceCodes(resp *kmsg.ProduceResponse, code int16) {
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			resp.Topics[i].Partitions[j].ErrorCode = code
		}
	}
}
