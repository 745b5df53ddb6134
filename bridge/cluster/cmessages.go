package cluster

// Bodies of the consumer-protocol (KIP-848) calls (ccalls.go), described
// once for both directions as messages.go describes the classic ones.

import (
	"sort"
	"time"

	"github.com/kafka-iggy/kafka-iggy/bridge/cgroups"
)

// strList is a nullable list of strings: set false is null.
func strList(w field, v *[]string, set *bool, f string) {
	*set = *v != nil
	w.boolean(set, f+".set")
	n := w.count(len(*v), f, 4)
	if !*set {
		return
	}
	*v = sized(*v, n)
	if *v == nil {
		*v = []string{}
	}
	for i := range *v {
		w.str(&(*v)[i], f+".item")
	}
}

func tpList(w field, v *[]cgroups.TP, f string) {
	*v = sized(*v, w.count(len(*v), f, 8))
	for i := range *v {
		w.str(&(*v)[i].Topic, f+".topic")
		w.i32(&(*v)[i].Partition, f+".partition")
	}
}

// topicCount is one entry of the metadata a heartbeat carries.
type topicCount struct {
	name       string
	partitions int32
}

// cgHeartbeatReq is a ConsumerGroupHeartbeat with its metadata.
type cgHeartbeatReq struct {
	p      cgroups.HeartbeatParams
	topics []topicCount
}

func newCGHeartbeatReq(p cgroups.HeartbeatParams, topics map[string]int32) *cgHeartbeatReq {
	r := &cgHeartbeatReq{p: p, topics: make([]topicCount, 0, len(topics))}
	for n, c := range topics {
		r.topics = append(r.topics, topicCount{n, c})
	}
	sort.Slice(r.topics, func(i, j int) bool { return r.topics[i].name < r.topics[j].name })
	return r
}

func (r *cgHeartbeatReq) topicMap() map[string]int32 {
	m := make(map[string]int32, len(r.topics))
	for _, t := range r.topics {
		m[t.name] = t.partitions
	}
	return m
}

func cgHeartbeatBody(w field, r *cgHeartbeatReq) {
	p := &r.p
	w.str(&p.Group, "cg_heartbeat.group")
	w.str(&p.MemberID, "cg_heartbeat.member_id")
	w.i32(&p.MemberEpoch, "cg_heartbeat.member_epoch")
	w.nstr(&p.InstanceID, "cg_heartbeat.instance_id")
	w.nstr(&p.RackID, "cg_heartbeat.rack_id")
	// Milliseconds, -1 for "unchanged" (a duration is never negative).
	ms := int32(-1)
	if p.RebalanceTimeout >= 0 {
		ms = int32(p.RebalanceTimeout / time.Millisecond)
	}
	w.i32(&ms, "cg_heartbeat.rebalance_timeout_ms")
	p.RebalanceTimeout = -1
	if ms >= 0 {
		p.RebalanceTimeout = time.Duration(ms) * time.Millisecond
	}
	var set bool
	strList(w, &p.SubscribedTopics, &set, "cg_heartbeat.subscribed_topics")
	if !set {
		p.SubscribedTopics = nil
	}
	w.nstr(&p.SubscribedRegex, "cg_heartbeat.subscribed_regex")
	w.nstr(&p.ServerAssignor, "cg_heartbeat.server_assignor")
	w.boolean(&p.OwnedSet, "cg_heartbeat.owned_set")
	tpList(w, &p.Owned, "cg_heartbeat.owned")
	w.str(&p.ClientID, "cg_heartbeat.client_id")
	w.str(&p.ClientHost, "cg_heartbeat.client_host")
	w.boolean(&p.NeedMemberID, "cg_heartbeat.need_member_id")
	r.topics = sized(r.topics, w.count(len(r.topics), "cg_heartbeat.topics", 8))
	for i := range r.topics {
		w.str(&r.topics[i].name, "cg_heartbeat.topic")
		w.i32(&r.topics[i].partitions, "cg_heartbeat.partitions")
	}
}

func cgHeartbeatResult(w field, r *cgroups.HeartbeatResult) {
	w.i16(&r.Code, "cg_heartbeat.code")
	w.str(&r.Message, "cg_heartbeat.message")
	w.str(&r.MemberID, "cg_heartbeat.member_id")
	w.i32(&r.MemberEpoch, "cg_heartbeat.member_epoch")
	w.dur(&r.HeartbeatInterval, "cg_heartbeat.heartbeat_interval")
	w.boolean(&r.HasAssignment, "cg_heartbeat.has_assignment")
	tpList(w, &r.Assignment, "cg_heartbeat.assignment")
}

// cgDescribeAnswer answers a ConsumerGroupDescribe of one group.
type cgDescribeAnswer struct {
	d     cgroups.Description
	found bool
	code  int16
}

func cgDescribeBody(w field, a *cgDescribeAnswer) {
	w.i16(&a.code, "cg_describe.code")
	w.boolean(&a.found, "cg_describe.found")
	d := &a.d
	w.str(&d.Group, "cg_describe.group")
	w.str(&d.State, "cg_describe.state")
	w.i32(&d.Epoch, "cg_describe.epoch")
	w.i32(&d.AssignmentEpoch, "cg_describe.assignment_epoch")
	w.str(&d.Assignor, "cg_describe.assignor")
	d.Members = sized(d.Members, w.count(len(d.Members), "cg_describe.members", 24))
	for i := range d.Members {
		m := &d.Members[i]
		w.str(&m.MemberID, "cg_describe.member_id")
		w.nstr(&m.InstanceID, "cg_describe.instance_id")
		w.nstr(&m.RackID, "cg_describe.rack_id")
		w.i32(&m.MemberEpoch, "cg_describe.member_epoch")
		w.str(&m.ClientID, "cg_describe.client_id")
		w.str(&m.ClientHost, "cg_describe.client_host")
		var set bool
		strList(w, &m.SubscribedTopics, &set, "cg_describe.subscribed_topics")
		w.nstr(&m.SubscribedRegex, "cg_describe.subscribed_regex")
		tpList(w, &m.Assignment, "cg_describe.assignment")
		tpList(w, &m.Target, "cg_describe.target")
		w.boolean(&m.Classic, "cg_describe.classic") // ConsumerGroupDescribe v1 MemberType 0 (peer link version 4)
	}
}

// cgListAnswer answers the consumer-protocol part of a ListGroups.
type cgListAnswer struct {
	groups []cgroups.Listing
	code   int16
}

func cgListBody(w field, a *cgListAnswer) {
	w.i16(&a.code, "cg_list.code")
	a.groups = sized(a.groups, w.count(len(a.groups), "cg_list.groups", 8))
	for i := range a.groups {
		w.str(&a.groups[i].Group, "cg_list.group")
		w.str(&a.groups[i].State, "cg_list.state")
	}
}

// cgValidateReq is the member check of an OffsetCommit (version set) or
// an OffsetFetch (memberID nullable).
type cgValidateReq struct {
	group    string
	memberID *string
	epoch    int32
	version  int16
}

func cgValidateBody(w field, r *cgValidateReq) {
	w.str(&r.group, "cg_validate.group")
	w.nstr(&r.memberID, "cg_validate.member_id")
	w.i32(&r.epoch, "cg_validate.epoch")
	w.i16(&r.version, "cg_validate.version")
}

// cgValidateAnswer answers a cgValidateReq.
type cgValidateAnswer struct {
	code    int16
	isGroup bool
}

func cgValidateAnswerBody(w field, a *cgValidateAnswer) {
	w.i16(&a.code, "cg_validate.code")
	w.boolean(&a.isGroup, "cg_validate.is_group")
}

// commitCheckReq is the body of the OffsetCommit group check of both
// protocols (cgCommitCall).
type commitCheckReq struct {
	group, memberID string
	instanceID      *string
	generation      int32 // the member epoch for a consumer-protocol group
	version         int16 // the OffsetCommit version
}

func commitCheckBody(w field, r *commitCheckReq) {
	w.str(&r.group, "commit_check.group")
	w.str(&r.memberID, "commit_check.member_id")
	w.nstr(&r.instanceID, "commit_check.instance_id")
	w.i32(&r.generation, "commit_check.generation")
	w.i16(&r.version, "commit_check.version")
}
