package groups

// A live group changing protocol (KIP-848's online migration): a classic
// group handed over whole to the consumer-protocol coordinator when a
// consumer-protocol member joins it (Upgrade), and a group handed back
// when only classic members remain (Downgrade). bridge/cgroups drives
// both; this side only gives its state away and takes it back.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Migrated is a group as it moves between the protocols: its generation,
// chosen protocol and members with what they joined and were assigned.
type Migrated struct {
	Group      string
	Generation int32
	Protocol   string // the generation's protocol ("" when none completed)
	Members    []MigratedMember
}

// MigratedMember is one member of a Migrated group.
type MigratedMember struct {
	ID               string
	InstanceID       *string
	ClientID         string
	ClientHost       string
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
	Protocols        []Protocol
	Assignment       []byte // ConsumerProtocol assignment ("" none)
}

// Metadata returns the member's metadata for the group's protocol (its
// first protocol's when the group has none).
func (m *MigratedMember) Metadata(protocol string) []byte {
	for _, p := range m.Protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	if len(m.Protocols) > 0 {
		return m.Protocols[0].Metadata
	}
	return nil
}

// UpgradeOutcome says what Upgrade did.
type UpgradeOutcome uint8

const (
	// UpgradeNone: no classic group with members holds the id.
	UpgradeNone UpgradeOutcome = iota
	// UpgradeRefused: a classic group with members holds the id and may
	// not be upgraded (another protocol type, or accept said no).
	UpgradeRefused
	// UpgradeDone: the group was removed here; the result holds it.
	UpgradeDone
)

// Upgrade hands a live classic group of consumers over to the consumer
// protocol: when a group with members of protocol type "consumer" holds
// the id and accept agrees, it leaves this coordinator (parked JoinGroup
// and SyncGroup requests answer REBALANCE_IN_PROGRESS, so their members
// rejoin at the consumer-protocol coordinator) and is returned. An Empty
// group is left alone (UpgradeNone).
func (c *Coordinator) Upgrade(id string, accept func(*Migrated) bool) (Migrated, UpgradeOutcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[id]
	if g == nil {
		return Migrated{}, UpgradeNone
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state == StateDead || len(g.members) == 0 {
		return Migrated{}, UpgradeNone
	}
	if g.protocolType != ConsumerProtocolType {
		return Migrated{}, UpgradeRefused
	}
	mg := Migrated{Group: id, Generation: g.generation, Protocol: g.protocol}
	for _, mid := range g.order {
		m := g.members[mid]
		mg.Members = append(mg.Members, MigratedMember{ID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost,
			SessionTimeout: m.sessionTimeout, RebalanceTimeout: m.rebalanceTimeout, Protocols: m.protocols, Assignment: m.assignment})
	}
	if !accept(&mg) {
		return Migrated{}, UpgradeRefused
	}
	for _, m := range g.members {
		if m.joinWait != nil {
			sendJoin(m.joinWait, JoinResult{Code: kerr.RebalanceInProgress.Code, MemberID: m.id, Generation: -1})
			m.joinWait = nil
		}
		if m.syncWait != nil {
			sendSync(m.syncWait, SyncResult{Code: kerr.RebalanceInProgress.Code})
			m.syncWait = nil
		}
	}
	g.kill()
	delete(c.groups, id)
	g.logInfo().Int("members", len(mg.Members)).Msg("classic group upgraded to a consumer group")
	return mg, UpgradeDone
}

// Downgrade takes a group back from the consumer protocol: it becomes a
// classic group of these members at the given generation, Stable with
// their assignments, and a rebalance starts at once (the members are told
// REBALANCE_IN_PROGRESS and rejoin), as Kafka's downgrade does. A group
// of that id held here already is replaced.
func (c *Coordinator) Downgrade(mg Migrated) {
	c.mu.Lock()
	if old := c.groups[mg.Group]; old != nil {
		old.mu.Lock()
		old.kill()
		old.mu.Unlock()
		delete(c.groups, mg.Group)
	}
	g := c.newGroup(mg.Group)
	c.insert(g)
	g.mu.Lock()
	c.mu.Unlock()
	defer g.mu.Unlock()
	g.generation = mg.Generation
	for _, mm := range mg.Members {
		m := &member{id: mm.ID, instanceID: mm.InstanceID, clientID: mm.ClientID, clientHost: mm.ClientHost,
			sessionTimeout: mm.SessionTimeout, rebalanceTimeout: mm.RebalanceTimeout, protocolType: ConsumerProtocolType,
			protocols: mm.Protocols, assignment: mm.Assignment}
		g.add(m, nil)
		g.armHeartbeat(m, m.sessionTimeout)
	}
	g.protocolType = ConsumerProtocolType
	g.protocol = g.selectProtocol()
	g.computeSubscribed()
	g.transition(StateStable)
	g.logInfo().Int("members", len(mg.Members)).Msg("consumer group downgraded to a classic group")
	g.prepareRebalance("downgrade from the consumer protocol")
}
