package txn

// Coordinator fencing of the decision log (issue 25; docs/ARCHITECTURE.md
// "Transactions"). During an ownership move two sidecars can both believe
// they own a shard (the old owner has not yet seen the rebalance); the
// decision log's own order decides which of them may write, optimistically,
// with no consensus of our own:
//
//   - A claim record (claimVersion) names a shard k, an epoch and a random
//     token. A claim is valid when, at its place in the log, its epoch is
//     above every earlier claim of k (a tie: the first wins); the shard's
//     current claim is then the last valid one.
//   - Every transaction record carries the claim it was written under
//     (Txn.Claim) and counts (is applied) only while that claim is the
//     current claim of its shard at the record's place in the log; else it
//     is void. Records without a claim (written before claims) always
//     count, so an old log replays as before. Every reader, from 0 or from
//     a snapshot (which holds the claims too), applies the same rule.
//   - A coordinator claims a shard before its first write there (epoch =
//     the highest it has seen + 1), reads the log to its end after the
//     claim and only then reads the id's state it decides on: what it
//     decides on includes every record that counted before its claim. It
//     answers a decision only after reading the log back to its own record
//     (Txn.Nonce) and seeing it applied; a void record means another
//     coordinator claimed the shard in between: the claim is dropped, no
//     marker follows and the answer is NOT_COORDINATOR.
//
// So of two coordinators that both decide on one transaction, the record
// of the one whose claim came second in the log either comes after its
// claim and after the other's decision (which it read, and rolls forward),
// or the other's record after that claim is void. A deposed coordinator
// that the router still says owns the shard claims it again: two owners
// can take turns voiding each other's writes until the router settles
// (liveness, never safety).

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
)

// claimVersion is the first byte of a claim record in the decision log
// (transaction records: logVersion).
const claimVersion = 4

// ClaimRef names one claim of a shard of the decision log.
type ClaimRef struct {
	Shard int    `json:"k"`
	Epoch int32  `json:"e"`
	Token uint64 `json:"t"` // random, never 0: two claims of one epoch differ
}

// claimRecord is a claim record: the claim and who took it.
type claimRecord struct {
	ClaimRef
	By uint64 `json:"by"` // the claiming coordinator instance (logs)
}

func (r claimRecord) encode() []byte {
	b, _ := json.Marshal(r) // no value of claimRecord fails to marshal
	return append([]byte{claimVersion}, b...)
}

func decodeClaim(p []byte) (claimRecord, error) {
	var r claimRecord
	if len(p) < 2 || p[0] != claimVersion || json.Unmarshal(p[1:], &r) != nil || r.Token == 0 || r.Epoch < 1 || r.Shard < 0 {
		return claimRecord{}, errRecord
	}
	return r, nil
}

// errDeposed: another coordinator holds the shard's claim (or the router
// no longer gives this sidecar the shard); the answer is NOT_COORDINATOR.
var errDeposed = errors.New("txn: another coordinator claimed the transactional id's shard")

// errUnread: the record was appended but not found when the log was read
// back; its outcome is unknown (retriable).
var errUnread = errors.New("txn: an appended decision-log record was not read back")

// errCode is the answer for err: NOT_COORDINATOR when deposed, else other.
func errCode(err error, other int16) int16 {
	if errors.Is(err, errDeposed) {
		return kerr.NotCoordinator.Code
	}
	return other
}

// The outcome of a record this coordinator appended, once read back.
const (
	verdictPending uint8 = iota
	verdictApplied
	verdictVoid
)

func nonce() uint64 { return rand.Uint64() | 1 }

// applyRecordLocked applies one decision-log record (the caller holds mu).
func (c *Coordinator) applyRecordLocked(p []byte) {
	if len(p) > 0 && p[0] == claimVersion {
		r, err := decodeClaim(p)
		if err != nil {
			c.log.Warn().Err(err).Msg("transactions: skipping a malformed decision-log claim")
			return
		}
		if r.Epoch > c.claims[r.Shard].Epoch {
			c.claims[r.Shard] = r.ClaimRef
		}
		return
	}
	t, err := decodeTxn(p)
	if err != nil {
		c.log.Warn().Err(err).Msg("transactions: skipping a malformed decision-log record")
		return
	}
	c.applyLocked(t)
}

// validLocked reports whether t counts: written before claims, or under
// its shard's current claim.
func (c *Coordinator) validLocked(t *Txn) bool {
	return t.Claim == nil || (t.Claim.Token != 0 && c.claims[t.Claim.Shard] == *t.Claim)
}

// shardOf is the shard of id (0 without a router).
func (c *Coordinator) shardOf(id string) int {
	c.ownsMu.RLock()
	defer c.ownsMu.RUnlock()
	if c.shard == nil {
		return 0
	}
	return c.shard(id)
}

// current returns this coordinator's claim of shard k while it is the
// shard's current claim; a claim of ours that no longer is (another
// coordinator claimed the shard) is dropped.
func (c *Coordinator) current(k int) (ClaimRef, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.mine[k]
	if !ok {
		return ClaimRef{}, false
	}
	if c.claims[k] == m {
		return m, true
	}
	delete(c.mine, k)
	c.log.Info().Int("shard", k).Int32("claim_epoch", m.Epoch).Int32("new_claim_epoch", c.claims[k].Epoch).
		Msg("transactions: another coordinator claimed the shard; this one is deposed")
	return ClaimRef{}, false
}

// drop forgets claim cl of ours after a record written under it was void.
func (c *Coordinator) drop(cl ClaimRef) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mine[cl.Shard] == cl {
		delete(c.mine, cl.Shard)
	}
}

// hold reads the log to its end and returns this coordinator's current
// claim of id's shard, claiming the shard first (when the router gives it
// to this sidecar) if it holds none; the log is read again after a new
// claim, so the state read next includes every record before the claim.
func (c *Coordinator) hold(ctx context.Context, id string) (ClaimRef, error) {
	k := c.shardOf(id)
	if err := c.sync(ctx); err != nil {
		return ClaimRef{}, err
	}
	if cl, ok := c.current(k); ok {
		return cl, nil
	}
	c.claimMu.Lock()
	defer c.claimMu.Unlock()
	if cl, ok := c.current(k); ok { // claimed by another call meanwhile
		return cl, nil
	}
	if !c.owned(id) {
		return ClaimRef{}, errDeposed
	}
	c.mu.Lock()
	r := claimRecord{ClaimRef: ClaimRef{Shard: k, Epoch: c.claims[k].Epoch + 1, Token: nonce()}, By: c.instance}
	c.mu.Unlock()
	if c.hook != nil {
		c.hook("claim", nil)
	}
	if err := c.f.Append(ctx, c.deps.Client, c.deps.Log, iggy.NeverExpire(), &c.mu, r.encode()); err != nil {
		return ClaimRef{}, err
	}
	if err := c.sync(ctx); err != nil {
		return ClaimRef{}, err
	}
	c.mu.Lock()
	won := c.claims[k] == r.ClaimRef
	if won {
		c.mine[k] = r.ClaimRef
	}
	c.mu.Unlock()
	if !won {
		c.log.Info().Int("shard", k).Int32("claim_epoch", r.Epoch).Msg("transactions: another coordinator's claim of the shard came first")
		return ClaimRef{}, errDeposed
	}
	c.log.Info().Int("shard", k).Int32("claim_epoch", r.Epoch).Msg("transactions: claimed the shard's decision log")
	return r.ClaimRef, nil
}

// begin is the start of a decision on id: the claim of its shard held
// (hold), then a copy of id's state (nil when unknown).
func (c *Coordinator) begin(ctx context.Context, id string) (*Txn, ClaimRef, error) {
	cl, err := c.hold(ctx, id)
	if err != nil {
		return nil, cl, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.txns[id]; t != nil {
		return t.clone(), cl, nil
	}
	return nil, cl, nil
}

// put appends t under claim cl, reads the log back to it and returns nil
// only if it was applied; errDeposed when it was void (cl is dropped).
func (c *Coordinator) put(ctx context.Context, cl ClaimRef, t *Txn) error {
	t.UpdateMs = c.now().UnixMilli()
	t.Claim, t.Nonce = &cl, nonce()
	n := t.Nonce
	c.mu.Lock()
	c.verdicts[n] = verdictPending
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.verdicts, n)
		c.mu.Unlock()
	}()
	if c.hook != nil {
		c.hook("append", t)
	}
	if err := c.f.Append(ctx, c.deps.Client, c.deps.Log, iggy.NeverExpire(), &c.mu, t.encode()); err != nil {
		return err
	}
	if err := c.sync(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	v := c.verdicts[n]
	c.mu.Unlock()
	switch v {
	case verdictApplied:
		return nil
	case verdictVoid:
		c.drop(cl)
		c.log.Info().Str("transactional_id", t.ID).Int("shard", cl.Shard).Int32("claim_epoch", cl.Epoch).Str("state", t.State.String()).
			Msg("transactions: the decision-log record was void (another coordinator claimed the shard first); answering NOT_COORDINATOR")
		return errDeposed
	}
	return errUnread
}
