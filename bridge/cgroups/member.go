package cgroups

import (
	"maps"
	"regexp"
	"time"
)

// memberState is where a member is in its reconciliation (Kafka's
// MemberState).
type memberState int8

const (
	// stable: the member owns its target assignment (or all of it that
	// it may have so far).
	stable memberState = iota
	// unrevokedPartitions: the member must give up partitions and has not
	// acknowledged it yet; its epoch stays until it does.
	unrevokedPartitions
	// unreleasedPartitions: the member is at the target epoch but waits
	// for partitions another member has not released yet.
	unreleasedPartitions
)

func (s memberState) String() string {
	switch s {
	case unrevokedPartitions:
		return "unrevoked_partitions"
	case unreleasedPartitions:
		return "unreleased_partitions"
	}
	return "stable"
}

// Epochs with a meaning of their own in ConsumerGroupHeartbeat.
const (
	joinEpoch        = 0
	leaveEpoch       = -1
	staticLeaveEpoch = -2
)

type member struct {
	id         string
	instanceID *string
	rackID     *string
	clientID   string
	clientHost string

	epoch, prevEpoch int32
	state            memberState

	topics   []string // subscribed names (sorted)
	regex    string   // subscribed regular expression ("" none)
	re       *regexp.Regexp
	assignor string // ServerAssignor asked for ("" none)

	rebalanceTimeout time.Duration

	assigned map[TP]struct{} // owned as far as the coordinator knows
	revoking map[TP]struct{} // to give up (unrevokedPartitions)

	sessionDeadline time.Time
	revokeDeadline  time.Time // unrevokedPartitions only

	classic *classicInfo // a classic-protocol member (classic.go); nil: consumer protocol
}

// subscribes reports whether the member subscribes to topic.
func (m *member) subscribes(topic string) bool {
	for _, t := range m.topics {
		if t == topic {
			return true
		}
	}
	return m.re != nil && m.re.MatchString(topic)
}

// reconcile moves the member towards target at targetEpoch (Kafka's
// CurrentAssignmentBuilder). owned is what the member reported owning (nil:
// not reported); takenByOther says whether a partition is still owned by
// another member.
func (m *member) reconcile(targetEpoch int32, target map[TP]struct{}, owned map[TP]struct{}, takenByOther func(TP) bool) {
	switch m.state {
	case stable:
		if m.epoch == targetEpoch {
			return
		}
		m.next(m.epoch, targetEpoch, target, owned, takenByOther)
	case unrevokedPartitions:
		if ownsAny(owned, m.revoking) {
			return
		}
		m.next(m.epoch+1, targetEpoch, target, owned, takenByOther)
	case unreleasedPartitions:
		m.next(m.epoch, targetEpoch, target, owned, takenByOther)
	}
}

// ownsAny reports whether owned (nil: unknown, so yes) holds any of set.
func ownsAny(owned, set map[TP]struct{}) bool {
	if owned == nil {
		return true
	}
	for tp := range owned {
		if _, ok := set[tp]; ok {
			return true
		}
	}
	return false
}

func (m *member) next(epoch, targetEpoch int32, target, owned map[TP]struct{}, takenByOther func(TP) bool) {
	keep := map[TP]struct{}{}
	revoke := map[TP]struct{}{}
	for tp := range m.assigned {
		if _, ok := target[tp]; ok {
			keep[tp] = struct{}{}
		} else {
			revoke[tp] = struct{}{}
		}
	}
	add := map[TP]struct{}{}
	unreleased := false
	for tp := range target {
		if _, ok := keep[tp]; ok {
			continue
		}
		if takenByOther(tp) {
			unreleased = true
			continue
		}
		add[tp] = struct{}{}
	}
	if len(revoke) > 0 && ownsAny(owned, revoke) {
		m.setEpoch(epoch)
		m.state = unrevokedPartitions
		m.assigned, m.revoking = keep, revoke
		return
	}
	maps.Copy(keep, add)
	m.setEpoch(targetEpoch)
	m.state = stable
	if unreleased {
		m.state = unreleasedPartitions
	}
	m.assigned, m.revoking = keep, nil
}

func (m *member) setEpoch(e int32) {
	if e != m.epoch {
		m.prevEpoch = m.epoch
	}
	m.epoch = e
}
