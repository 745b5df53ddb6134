// Package txn is the transaction coordinator of Kafka transactional ids
// (issue 25; docs/ARCHITECTURE.md "Transactions"): per transactional id its
// producer id and epoch, the state of its current transaction and the
// partitions and groups in it. The state lives in Iggy, in an append-only
// decision log (stream __kafka_iggy, one partition): every change appends the
// id's whole state as one record, and a coordinator that reads the log to its
// end knows every id's last state (that counts: claims of the log's shards
// fence a deposed coordinator, fence.go). Before each decision the coordinator reads
// the log to its end, so a sidecar that takes over a transactional id (an
// ownership move, a restart after SIGKILL) starts from what the previous one
// wrote; its sweep rolls PrepareCommit/PrepareAbort forward (the markers are
// written again: a second marker for a finished transaction is harmless to
// readers) and aborts Ongoing transactions past their timeout.
//
// The Gate (gate.go) is the other half, at the producer's local sidecar: it
// admits transactional Produce batches and orders them against EndTxn.
package txn

import (
	"encoding/json"
	"errors"
	"slices"
)

// State is a transaction's state, as Kafka names them.
type State uint8

// The states of a transactional id (Kafka's TransactionState).
const (
	Empty State = iota
	Ongoing
	PrepareCommit
	PrepareAbort
	CompleteCommit
	CompleteAbort
	Dead
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead"}

// String is Kafka's name of the state (DescribeTransactions, ListTransactions).
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// ParseState returns the state named s (Kafka's names).
func ParseState(s string) (State, bool) {
	i := slices.Index(stateNames[:], s)
	return State(i), i >= 0
}

// Partition names one Kafka partition.
type Partition struct {
	Topic     string `json:"t"`
	Partition int32  `json:"p"`
}

// Txn is one transactional id's state: one record of the decision log.
type Txn struct {
	ID         string      `json:"id"`
	ProducerID int64       `json:"pid"`
	Epoch      int16       `json:"e"`
	State      State       `json:"s"`
	Seq        uint32      `json:"q"`  // sequence of the current (or last) transaction of the producer id
	TimeoutMs  int32       `json:"to"` // transaction.timeout.ms of the producer
	StartMs    int64       `json:"st"` // when the current transaction started; -1 none
	UpdateMs   int64       `json:"u"`  // last change
	Parts      []Partition `json:"ps,omitempty"`
	Groups     []string    `json:"gs,omitempty"`
	// MarkEpoch is the epoch the current transaction's records carry: the
	// epoch it started under (an abort that fences bumps Epoch first).
	MarkEpoch int16 `json:"me"`
	// Bumped: the current (or last) transaction was decided by an EndTxn
	// of transaction protocol v2 (KIP-890 part 2), which bumped Epoch past
	// MarkEpoch (v2.go); a retry of that EndTxn carries MarkEpoch.
	Bumped bool `json:"b,omitempty"`
	// MarkPID is the producer id the transaction's records and markers
	// carry when its v2 EndTxn ran the epoch out and moved ProducerID on to
	// a new id (epoch 0); 0: ProducerID.
	MarkPID int64 `json:"mp,omitempty"`
	// Claim is the claim of the id's shard the record was written under
	// (fence.go): the record counts only while that claim is the shard's
	// current one. nil: written before claims, always counts.
	Claim *ClaimRef `json:"c,omitempty"`
	// Nonce tells the writer its own record apart when it reads the log
	// back (fence.go); 0 in records written before claims.
	Nonce uint64 `json:"w,omitempty"`
}

// markPID is the producer id of the current (or last) transaction's
// records and markers.
func (t *Txn) markPID() int64 {
	if t.MarkPID != 0 {
		return t.MarkPID
	}
	return t.ProducerID
}

// logVersion is the first byte of every decision-log record.
const logVersion = 1

// encode is a decision-log record: the version byte and the state in JSON.
func (t *Txn) encode() []byte {
	b, _ := json.Marshal(t) // no value of Txn fails to marshal
	return append([]byte{logVersion}, b...)
}

var errRecord = errors.New("txn: malformed decision-log record")

// decodeTxn reads a decision-log record.
func decodeTxn(p []byte) (*Txn, error) {
	if len(p) < 2 || p[0] != logVersion {
		return nil, errRecord
	}
	t := new(Txn)
	if err := json.Unmarshal(p[1:], t); err != nil || t.ID == "" {
		return nil, errRecord
	}
	return t, nil
}

// clone copies t, its slices too.
func (t *Txn) clone() *Txn {
	c := *t
	if t.Claim != nil {
		cl := *t.Claim
		c.Claim = &cl
	}
	c.Parts = slices.Clone(t.Parts)
	c.Groups = slices.Clone(t.Groups)
	return &c
}

// hasPart reports whether p is in the transaction.
func (t *Txn) hasPart(p Partition) bool { return slices.Contains(t.Parts, p) }
