package txnoffsets

import "github.com/twmb/franz-go/pkg/kerr"

// GroupCheckCode turns the answer of OffsetCommit's group check (classic or
// consumer-protocol, local or from the owner over the peer link) into
// TxnOffsetCommit's. Kafka never answers a transactional commit (below v6)
// REBALANCE_IN_PROGRESS or GROUP_ID_NOT_FOUND, and Java's producer takes
// both as fatal (a Kafka Streams exactly_once_v2 thread went to ERROR when
// its group moved between sidecars). REBALANCE_IN_PROGRESS (a moved group
// adopting the member, or CompletingRebalance, where Kafka accepts) answers
// UNKNOWN_MEMBER_ID, GROUP_ID_NOT_FOUND ILLEGAL_GENERATION: the producer
// aborts the transaction and the member rejoins.
func GroupCheckCode(code int16) int16 {
	switch code {
	case kerr.RebalanceInProgress.Code:
		return kerr.UnknownMemberID.Code
	case kerr.GroupIDNotFound.Code:
		return kerr.IllegalGeneration.Code
	}
	return code
}
