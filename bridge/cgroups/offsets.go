package cgroups

import "github.com/twmb/franz-go/pkg/kerr"

// The checks OffsetCommit and OffsetFetch make on a consumer-protocol
// group (Kafka's ConsumerGroup.validateOffsetCommit/validateOffsetFetch).

// ValidateCommit checks an OffsetCommit (whose generation field carries the
// member epoch) against the group: isGroup is false when no
// consumer-protocol group of that id is held here (the classic checks
// apply). A commit without a member epoch (-1: admin tools, assign())
// is accepted while the group has no members; otherwise the member must
// exist (UNKNOWN_MEMBER_ID), commit with OffsetCommit v9+
// (UNSUPPORTED_VERSION) and at its current epoch (STALE_MEMBER_EPOCH).
func (c *Coordinator) ValidateCommit(group, memberID string, epoch int32, version int16) (code int16, isGroup bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[group]
	if g == nil {
		return 0, false
	}
	if epoch < 0 && len(g.members) == 0 {
		return 0, true
	}
	m := g.members[memberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code, true
	case m.classic != nil: // a classic member commits with its generation, the member epoch
		if epoch != m.epoch {
			return kerr.IllegalGeneration.Code, true
		}
		return 0, true
	case version < 9:
		return kerr.UnsupportedVersion.Code, true
	case epoch != m.epoch:
		return kerr.StaleMemberEpoch.Code, true
	}
	return 0, true
}

// ValidateFetch checks an OffsetFetch that names a member (v9+): a request
// without member id and epoch (admin tools) is accepted; a member the group
// does not have answers UNKNOWN_MEMBER_ID, another epoch than the member's
// STALE_MEMBER_EPOCH. isGroup as for ValidateCommit.
func (c *Coordinator) ValidateFetch(group string, memberID *string, epoch int32) (code int16, isGroup bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[group]
	if g == nil {
		return 0, false
	}
	if memberID == nil && epoch < 0 {
		return 0, true
	}
	var m *member
	if memberID != nil {
		m = g.members[*memberID]
	}
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code, true
	case epoch != m.epoch && m.classic != nil:
		return kerr.IllegalGeneration.Code, true
	case epoch != m.epoch:
		return kerr.StaleMemberEpoch.Code, true
	}
	return 0, true
}
