package main

// The rebalance workload's members and how it judges a group whole: a
// franz-go consumer per member, the group's assignment read through
// DescribeGroups (classic) or ConsumerGroupDescribe (consumer protocol),
// and the sidecars' logs read for the shards they own.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// rbMember is one group consumer of the workload, polling in its own loop.
type rbMember struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

func startMember(ctx context.Context, seed, group, topic string, session, heartbeat time.Duration, cp bool) (*rbMember, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(seed), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic)}
	if cp { // the coordinator hands out the heartbeat interval and keeps the session timeout
		opts = append(opts, kgo.ServerSideBalancer())
	} else {
		opts = append(opts, kgo.SessionTimeout(session), kgo.HeartbeatInterval(heartbeat))
	}
	cl, err := newKgo(opts...)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithCancel(ctx)
	m := &rbMember{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for pctx.Err() == nil {
			f := cl.PollFetches(pctx)
			if f.IsClientClosed() {
				return
			}
			if len(f.Errors()) > 0 && f.NumRecords() == 0 {
				// An error is reported once; do not spin on a run of them.
				select {
				case <-pctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}()
	return m, nil
}

// id is the member id the client holds now ("" before its first join).
func (m *rbMember) id() string {
	id, _ := m.cl.GroupMetadata()
	return id
}

// close leaves the group (kgo's Close sends LeaveGroup) and ends the poll
// loop.
func (m *rbMember) close() {
	m.cancel()
	m.cl.Close()
	<-m.done
}

// closeWithin is close, waited for at most d (a member whose sidecar is
// gone cannot leave; its Close ends in the background).
func (m *rbMember) closeWithin(d time.Duration) {
	done := make(chan struct{})
	go func() { m.close(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// abandon is what an app whose sidecar died looks like to the group: it
// sends nothing more (the leave is cancelled at once; Close then ends in
// the background).
func (m *rbMember) abandon() {
	m.cancel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = m.cl.LeaveGroupContext(ctx)
	go m.cl.Close()
}

// assignments reads a described group: each member's partitions of topic.
func assignments(d kadm.DescribedGroup, topic string) (map[string][]int32, error) {
	if d.Err != nil {
		return nil, d.Err
	}
	out := map[string][]int32{}
	for _, m := range d.Members {
		ca, ok := m.Assigned.AsConsumer()
		if !ok {
			return nil, fmt.Errorf("member %s has no consumer assignment", m.MemberID)
		}
		out[m.MemberID] = nil
		for _, tp := range ca.Topics {
			if tp.Topic == topic {
				out[m.MemberID] = append(out[m.MemberID], tp.Partitions...)
			}
		}
	}
	return out, nil
}

// groupWhole reports nil when a group in state with these assignments
// (member id -> partitions of the topic) is Stable with exactly the members
// want (every id known), every partition 0..partitions-1 assigned to
// exactly one of them and each of them holding at least one; else what is
// missing.
func groupWhole(state string, assigned map[string][]int32, partitions int, want []string) error {
	if state != "Stable" {
		return fmt.Errorf("state %s", state)
	}
	wanted := map[string]bool{}
	for _, id := range want {
		if id == "" {
			return errors.New("a member has no member id yet")
		}
		wanted[id] = true
	}
	if len(assigned) != len(wanted) {
		return fmt.Errorf("%d members, want %d", len(assigned), len(wanted))
	}
	owner := map[int32]string{}
	for id, ps := range assigned {
		if !wanted[id] {
			return fmt.Errorf("member %s is not one of the live members", id)
		}
		if len(ps) == 0 {
			return fmt.Errorf("member %s holds no partition", id)
		}
		for _, p := range ps {
			if p < 0 || int(p) >= partitions {
				return fmt.Errorf("member %s holds partition %d of %d", id, p, partitions)
			}
			if prev, dup := owner[p]; dup {
				return fmt.Errorf("partition %d assigned to %s and %s", p, prev, id)
			}
			owner[p] = id
		}
	}
	if len(owner) != partitions {
		return fmt.Errorf("%d of %d partitions assigned", len(owner), partitions)
	}
	return nil
}

// cgAssignments reads a consumer-protocol group (ConsumerGroupDescribe):
// its state and each member's partitions of topic.
func cgAssignments(ctx context.Context, adm *kadm.Client, group, topic string) (string, map[string][]int32, error) {
	ds, err := adm.DescribeConsumerGroups(ctx, group)
	if err != nil {
		return "", nil, err
	}
	d := ds[group]
	if d.Err != nil {
		return "", nil, d.Err
	}
	out := map[string][]int32{}
	for _, m := range d.Members {
		out[m.MemberID] = nil
		for p := range m.Assignment[topic] {
			out[m.MemberID] = append(out[m.MemberID], p)
		}
	}
	return d.State, out, nil
}

// waitWhole polls DescribeGroups (ConsumerGroupDescribe with cp) through
// adm until the group is whole (groupWhole with the ids of members, read at
// each poll) and returns when that answer arrived; bounded by d.
func waitWhole(ctx context.Context, adm *kadm.Client, group, topic string, partitions int, members []*rbMember, d time.Duration, cp bool) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		want := make([]string, len(members))
		for i, m := range members {
			want[i] = m.id()
		}
		dctx, dcancel := context.WithTimeout(ctx, 2*time.Second)
		var state string
		var as map[string][]int32
		var err error
		if cp {
			state, as, err = cgAssignments(dctx, adm, group, topic)
		} else {
			var ds kadm.DescribedGroups
			if ds, err = adm.DescribeGroups(dctx, group); err == nil {
				state = ds[group].State
				as, err = assignments(ds[group], topic)
			}
		}
		dcancel()
		at := time.Now()
		if err == nil {
			if err = groupWhole(state, as, partitions, want); err == nil {
				return at, nil
			}
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("group %s not whole within %s: %v", group, d, err)
		case <-time.After(rebalancePoll):
		}
	}
}

// activeShards reads a sidecar's JSON log: the shards it activated and has
// not released since (the lines "coordination: shard active here" and
// "coordination: shard released" with their `shard` field).
func activeShards(logText string) map[int]bool {
	active := map[int]bool{}
	for _, l := range strings.Split(logText, "\n") {
		if !strings.Contains(l, "coordination: shard") {
			continue
		}
		var line struct {
			Message string `json:"message"`
			Shard   *int   `json:"shard"`
		}
		if json.Unmarshal([]byte(l), &line) != nil || line.Shard == nil {
			continue
		}
		switch line.Message {
		case "coordination: shard active here":
			active[*line.Shard] = true
		case "coordination: shard released":
			delete(active, *line.Shard)
		}
	}
	return active
}

// shardsSettled reports nil when every shard 0..shards-1 is active on
// exactly one of the sidecars whose logs are given.
func shardsSettled(logs []string, shards int) error {
	owners := make([]int, shards)
	for _, l := range logs {
		for k := range activeShards(l) {
			if k >= 0 && k < shards {
				owners[k]++
			}
		}
	}
	for k, n := range owners {
		if n != 1 {
			return fmt.Errorf("shard %d active on %d sidecars", k, n)
		}
	}
	return nil
}
