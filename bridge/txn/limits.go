package txn

import (
	"context"
	"sync/atomic"
)

// The bound on transactional ids (Config.MaxIDs): a new id is admitted
// while fewer than MaxIDs are held; at the bound the ids this sidecar owns
// that are past id_expiration (not in a transaction) are dropped first, as
// the sweep would drop them, and only then is the new id refused.

// held is how many transactional ids the coordinator holds.
func (c *Coordinator) held() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.txns)
}

// evictable reports whether t may be dropped at now: no transaction in
// progress and idle past id_expiration.
func (c *Coordinator) evictable(t *Txn, now int64) bool {
	switch t.State {
	case Ongoing, PrepareCommit, PrepareAbort:
		return false
	}
	return now-t.UpdateMs > c.cfg.IDExpiration.Milliseconds()
}

// admitNew reports whether a new transactional id (id, unknown to the log;
// the caller holds its lock) may be added under Config.MaxIDs, dropping
// expired ids first when the bound is reached.
func (c *Coordinator) admitNew(ctx context.Context, id string) bool {
	if c.held() < c.cfg.MaxIDs {
		return true
	}
	now := c.now().UnixMilli()
	var expired []string
	c.mu.Lock()
	for k, t := range c.txns {
		if k != id && c.evictable(t, now) {
			expired = append(expired, k)
		}
	}
	c.mu.Unlock()
	for _, k := range expired {
		if c.owned(k) {
			c.sweepOne(ctx, k, now) // under k's lock: writes Dead if it is still expired
		}
		if c.held() < c.cfg.MaxIDs {
			return true
		}
	}
	if c.held() < c.cfg.MaxIDs {
		return true
	}
	if last := refusedLog.Load(); now-last >= 10_000 && refusedLog.CompareAndSwap(last, now) {
		c.log.Warn().Int("max_ids", c.cfg.MaxIDs).Str("transactional_id", id).Dur("id_expiration", c.cfg.IDExpiration).
			Msg("transactions: too many transactional ids (transactions.max_ids); InitProducerId of a new id answers COORDINATOR_LOAD_IN_PROGRESS")
	}
	return false
}

// refusedLog is when a refusal was last logged (Unix ms): one warning per
// 10s, whatever the rate of refused InitProducerId calls.
var refusedLog atomic.Int64
