package cgroups

import "sort"

// Group states as ConsumerGroupDescribe and ListGroups name them.
const (
	StateEmpty       = "Empty"
	StateAssigning   = "Assigning"
	StateReconciling = "Reconciling"
	StateStable      = "Stable"
)

// Description is a group as ConsumerGroupDescribe shows it.
type Description struct {
	Group           string
	State           string
	Epoch           int32
	AssignmentEpoch int32
	Assignor        string
	Members         []MemberDescription
}

// MemberDescription is one member of a Description.
type MemberDescription struct {
	MemberID         string
	InstanceID       *string
	RackID           *string
	MemberEpoch      int32
	ClientID         string
	ClientHost       string
	SubscribedTopics []string
	SubscribedRegex  *string
	Assignment       []TP // owned
	Target           []TP // target assignment
	Classic          bool // the member uses the classic protocol (MemberType 0)
}

// Listing is a group as ListGroups shows it.
type Listing struct {
	Group string
	State string
}

func (g *group) state() string {
	switch {
	case len(g.members) == 0:
		return StateEmpty
	case g.epoch != g.targetEpoch:
		return StateAssigning
	}
	for _, m := range g.members {
		if m.epoch != g.targetEpoch || m.state != stable {
			return StateReconciling
		}
	}
	return StateStable
}

// Describe returns the group; false when it is not held here.
func (c *Coordinator) Describe(id string) (Description, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweep(c.now(), id)
	g := c.groups[id]
	if g == nil {
		return Description{}, false
	}
	d := Description{Group: id, State: g.state(), Epoch: g.epoch, AssignmentEpoch: g.targetEpoch, Assignor: g.assignor}
	for _, m := range g.members {
		md := MemberDescription{
			MemberID: m.id, InstanceID: m.instanceID, RackID: m.rackID, MemberEpoch: m.epoch,
			ClientID: m.clientID, ClientHost: m.clientHost, SubscribedTopics: append([]string(nil), m.topics...),
			Assignment: sortedTPs(m.assigned), Target: sortedTPs(g.target[m.id]), Classic: m.classic != nil,
		}
		r := m.regex // "" when subscribed by names, as Kafka answers (not null)
		md.SubscribedRegex = &r
		d.Members = append(d.Members, md)
	}
	sort.Slice(d.Members, func(i, j int) bool { return d.Members[i].MemberID < d.Members[j].MemberID })
	return d, true
}

// List returns every group held, sorted by id.
func (c *Coordinator) List() []Listing {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweep(c.now(), "")
	out := make([]Listing, 0, len(c.groups))
	for id, g := range c.groups {
		out = append(out, Listing{Group: id, State: g.state()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out
}

// Release gives up the group id for another use (a classic JoinGroup, a
// DeleteGroups): busy is true when a consumer-protocol group of that id
// has members (Kafka answers INCONSISTENT_GROUP_PROTOCOL to the join,
// NON_EMPTY_GROUP to the delete). An empty consumer-protocol group is
// dropped (dropped true), as Kafka converts or deletes it.
func (c *Coordinator) Release(group string) (busy, dropped bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweep(c.now(), "")
	g := c.groups[group]
	if g == nil {
		return false, false
	}
	if len(g.members) > 0 {
		return true, false
	}
	delete(c.groups, group)
	c.log.Info().Str("group", group).Msg("empty consumer group dropped")
	return false, true
}

// Drop forgets every group for which match returns true (their shard moved
// to another coordinator); their members find them gone there and rejoin.
// It returns how many groups were dropped.
func (c *Coordinator) Drop(match func(group string) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for id := range c.groups {
		if match(id) {
			delete(c.groups, id)
			n++
		}
	}
	return n
}
