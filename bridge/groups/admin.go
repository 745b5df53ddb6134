package groups

// The calls that read or remove a group rather than join it:
// DescribeGroups, ListGroups, DeleteGroups and the OffsetCommit check.

import (
	"context"
	"errors"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// describe returns the group as DescribeGroups shows it; false when the
// group is not known here.
func (c *Coordinator) describe(groupID string) (Description, bool) {
	g := c.lockGroup(groupID, false)
	if g == nil {
		return Description{}, false
	}
	defer g.mu.Unlock()
	d := Description{State: g.state.String(), ProtocolType: g.protocolType}
	stable := g.state == StateStable
	if stable {
		d.Protocol = g.protocol
	}
	for _, id := range g.order {
		m := g.members[id]
		md := MemberDescription{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost}
		if stable {
			md.Metadata = m.metadataFor(g.protocol)
			md.Assignment = m.assignment
		}
		d.Members = append(d.Members, md)
	}
	return d, true
}

// list returns every group, sorted by id.
func (c *Coordinator) list() []Listing {
	c.mu.Lock()
	gs := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		gs = append(gs, g)
	}
	c.mu.Unlock()
	out := make([]Listing, 0, len(gs))
	for _, g := range gs {
		g.mu.Lock()
		if g.state != StateDead {
			out = append(out, Listing{Group: g.id, ProtocolType: g.protocolType, State: g.state})
		}
		g.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out
}

// deleteGroup serves one group of a DeleteGroups: an Empty group is removed
// from memory and its committed offsets are deleted (through c.offsets). A
// group unknown here may still have offsets in Iggy (after a restart): they
// are deleted too, and GROUP_ID_NOT_FOUND is answered only when there were
// none.
func (c *Coordinator) deleteGroup(ctx context.Context, groupID string) (int16, string) {
	if groupID == "" {
		return kerr.GroupIDNotFound.Code, "group id is empty"
	}
	c.mu.Lock()
	g := c.groups[groupID]
	known := g != nil
	if known {
		g.mu.Lock()
		if g.state != StateEmpty {
			state := g.state
			g.mu.Unlock()
			c.mu.Unlock()
			return kerr.NonEmptyGroup.Code, "group is " + state.String()
		}
		g.kill()
		delete(c.groups, groupID)
		g.mu.Unlock()
	}
	c.mu.Unlock()
	if known {
		c.log.Info().Str("group_id", groupID).Msg("group deleted")
	}
	if c.offsets == nil {
		if known {
			return 0, ""
		}
		return kerr.GroupIDNotFound.Code, "group " + groupID + " not found"
	}
	err := c.offsets.DeleteGroupOffsets(ctx, groupID)
	switch {
	case err == nil:
		return 0, ""
	case errors.Is(err, ErrNoOffsets):
		if known {
			return 0, ""
		}
		return kerr.GroupIDNotFound.Code, "group " + groupID + " not found"
	}
	code, icode := c.offsets.OffsetsErrorCode(err)
	c.log.Warn().Err(err).Str("group_id", groupID).Uint32("iggy_code", icode).Msg("deleting committed offsets failed")
	return code, "deleting committed offsets failed: " + err.Error()
}

// validateCommit checks an OffsetCommit against the group, as Kafka does,
// and returns the error code for the whole request: 0,
// ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID or
// REBALANCE_IN_PROGRESS.
//
//   - generation < 0 ("simple" or admin commits) is accepted when the group
//     is unknown (an Empty group without protocol type is then created, as
//     Kafka does) or Empty.
//   - otherwise the member id (and instance id) must be a current member
//     and the generation the current one; commits during
//     CompletingRebalance answer REBALANCE_IN_PROGRESS; commits during
//     PreparingRebalance from the still-current generation are accepted.
//   - an empty group id answers INVALID_GROUP_ID.
//   - an unknown group with generation >= 0 answers ILLEGAL_GENERATION
//     (Kafka answers GROUP_ID_NOT_FOUND instead from OffsetCommit v9 on; the
//     caller maps it).
func (c *Coordinator) validateCommit(groupID, memberID string, generation int32, instanceID *string) int16 {
	if groupID == "" {
		return kerr.InvalidGroupID.Code
	}
	g := c.lockGroup(groupID, generation < 0)
	if g == nil {
		return kerr.IllegalGeneration.Code
	}
	defer g.mu.Unlock()
	if generation < 0 && g.state == StateEmpty {
		g.armEmptyExpiry() // a group in use stays in memory
		return 0
	}
	if g.adoptingNow() && generation >= 0 && g.members[memberID] == nil {
		g.adoptSeen[memberID] = struct{}{}
		// A member of the previous coordinator: it rejoins first (its
		// records since the last accepted commit are delivered again).
		return kerr.RebalanceInProgress.Code
	}
	if generation >= 0 || memberID != "" || instanceID != nil {
		if code := g.validateMember(memberID, instanceID); code != 0 {
			return code
		}
		if generation != g.generation {
			return kerr.IllegalGeneration.Code
		}
	} else if g.state != StateEmpty {
		return kerr.UnknownMemberID.Code
	}
	if g.state == StateCompletingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	return 0
}
