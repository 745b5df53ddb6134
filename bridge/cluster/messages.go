package cluster

// Bodies of the peer-link requests and responses: the groups.Service calls
// and their answers, field by field (frame.go has the primitives).

import (
	"github.com/kafka-iggy/kafka-iggy/bridge/groups"
)

func putJoinParams(e *enc, p *groups.JoinParams) {
	e.str(p.Group)
	e.str(p.MemberID)
	e.nstr(p.InstanceID)
	e.str(p.ClientID)
	e.str(p.ClientHost)
	e.dur(p.SessionTimeout)
	e.dur(p.RebalanceTimeout)
	e.str(p.ProtocolType)
	e.u32(uint32(len(p.Protocols)))
	for _, pr := range p.Protocols {
		e.str(pr.Name)
		e.bytes(pr.Metadata)
	}
	e.boolean(p.RequireKnownID)
	e.boolean(p.CanSkipAssign)
	e.str(p.Reason)
}

func getJoinParams(d *dec) groups.JoinParams {
	var p groups.JoinParams
	p.Group = d.str("join.group")
	p.MemberID = d.str("join.member_id")
	p.InstanceID = d.nstr("join.instance_id")
	p.ClientID = d.str("join.client_id")
	p.ClientHost = d.str("join.client_host")
	p.SessionTimeout = d.dur("join.session_timeout")
	p.RebalanceTimeout = d.dur("join.rebalance_timeout")
	p.ProtocolType = d.str("join.protocol_type")
	n := d.count("join.protocols", 8)
	p.Protocols = make([]groups.Protocol, 0, n)
	for range n {
		p.Protocols = append(p.Protocols, groups.Protocol{Name: d.str("join.protocol.name"), Metadata: d.bytes("join.protocol.metadata")})
	}
	p.RequireKnownID = d.boolean("join.require_known_id")
	p.CanSkipAssign = d.boolean("join.can_skip_assign")
	p.Reason = d.str("join.reason")
	return p
}

func putJoinResult(e *enc, r *groups.JoinResult) {
	e.i16(r.Code)
	e.str(r.MemberID)
	e.i32(r.Generation)
	e.boolean(r.HasProtocol)
	e.str(r.ProtocolType)
	e.str(r.Protocol)
	e.str(r.Leader)
	e.boolean(r.SkipAssign)
	e.u32(uint32(len(r.Members)))
	for _, m := range r.Members {
		e.str(m.MemberID)
		e.nstr(m.InstanceID)
		e.bytes(m.Metadata)
	}
}

func getJoinResult(d *dec) groups.JoinResult {
	var r groups.JoinResult
	r.Code = d.i16("join.code")
	r.MemberID = d.str("join.member_id")
	r.Generation = d.i32("join.generation")
	r.HasProtocol = d.boolean("join.has_protocol")
	r.ProtocolType = d.str("join.protocol_type")
	r.Protocol = d.str("join.protocol")
	r.Leader = d.str("join.leader")
	r.SkipAssign = d.boolean("join.skip_assign")
	n := d.count("join.members", 12)
	for range n {
		r.Members = append(r.Members, groups.JoinMember{MemberID: d.str("join.member.id"), InstanceID: d.nstr("join.member.instance_id"), Metadata: d.bytes("join.member.metadata")})
	}
	return r
}

func putSyncParams(e *enc, p *groups.SyncParams) {
	e.str(p.Group)
	e.str(p.MemberID)
	e.nstr(p.InstanceID)
	e.i32(p.Generation)
	e.nstr(p.ProtocolType)
	e.nstr(p.Protocol)
	if p.Assignments == nil {
		e.i32(-1)
		return
	}
	e.i32(int32(len(p.Assignments)))
	for id, a := range p.Assignments {
		e.str(id)
		e.bytes(a)
	}
}

func getSyncParams(d *dec) groups.SyncParams {
	var p groups.SyncParams
	p.Group = d.str("sync.group")
	p.MemberID = d.str("sync.member_id")
	p.InstanceID = d.nstr("sync.instance_id")
	p.Generation = d.i32("sync.generation")
	p.ProtocolType = d.nstr("sync.protocol_type")
	p.Protocol = d.nstr("sync.protocol")
	n := d.i32("sync.assignments")
	switch {
	case d.err != nil || n == -1:
		return p
	case n < -1 || int64(n)*8 > int64(len(d.b)):
		d.fail("sync.assignments", "count does not fit the frame")
		return p
	}
	p.Assignments = make(map[string][]byte, n)
	for range n {
		id := d.str("sync.assignment.member_id")
		p.Assignments[id] = d.bytes("sync.assignment.bytes")
	}
	return p
}

func putSyncResult(e *enc, r *groups.SyncResult) {
	e.i16(r.Code)
	e.boolean(r.HasProtocol)
	e.str(r.ProtocolType)
	e.str(r.Protocol)
	e.bytes(r.Assignment)
}

func getSyncResult(d *dec) groups.SyncResult {
	return groups.SyncResult{
		Code:         d.i16("sync.code"),
		HasProtocol:  d.boolean("sync.has_protocol"),
		ProtocolType: d.str("sync.protocol_type"),
		Protocol:     d.str("sync.protocol"),
		Assignment:   d.bytes("sync.assignment"),
	}
}

// memberCall is the body of Heartbeat and Validate requests.
type memberCall struct {
	group, memberID string
	instanceID      *string
	generation      int32
}

func putMemberCall(e *enc, c *memberCall) {
	e.str(c.group)
	e.str(c.memberID)
	e.nstr(c.instanceID)
	e.i32(c.generation)
}

func getMemberCall(d *dec) memberCall {
	return memberCall{group: d.str("group"), memberID: d.str("member_id"), instanceID: d.nstr("instance_id"), generation: d.i32("generation")}
}

func putLeave(e *enc, group string, ids []groups.LeaveIdentity) {
	e.str(group)
	e.u32(uint32(len(ids)))
	for _, id := range ids {
		e.str(id.MemberID)
		e.nstr(id.InstanceID)
		e.str(id.Reason)
	}
}

func getLeave(d *dec) (string, []groups.LeaveIdentity) {
	group := d.str("leave.group")
	n := d.count("leave.members", 12)
	ids := make([]groups.LeaveIdentity, 0, n)
	for range n {
		ids = append(ids, groups.LeaveIdentity{MemberID: d.str("leave.member_id"), InstanceID: d.nstr("leave.instance_id"), Reason: d.str("leave.reason")})
	}
	return group, ids
}

func putCodes(e *enc, top int16, codes []int16) {
	e.i16(top)
	e.u32(uint32(len(codes)))
	for _, c := range codes {
		e.i16(c)
	}
}

func getCodes(d *dec) (int16, []int16) {
	top := d.i16("code")
	n := d.count("codes", 2)
	codes := make([]int16, 0, n)
	for range n {
		codes = append(codes, d.i16("codes.code"))
	}
	return top, codes
}

func putDescription(e *enc, desc *groups.Description, found bool, code int16) {
	e.i16(code)
	e.boolean(found)
	e.str(desc.State)
	e.str(desc.ProtocolType)
	e.str(desc.Protocol)
	e.u32(uint32(len(desc.Members)))
	for _, m := range desc.Members {
		e.str(m.MemberID)
		e.nstr(m.InstanceID)
		e.str(m.ClientID)
		e.str(m.ClientHost)
		e.bytes(m.Metadata)
		e.bytes(m.Assignment)
	}
}

func getDescription(d *dec) (groups.Description, bool, int16) {
	code := d.i16("describe.code")
	found := d.boolean("describe.found")
	var desc groups.Description
	desc.State = d.str("describe.state")
	desc.ProtocolType = d.str("describe.protocol_type")
	desc.Protocol = d.str("describe.protocol")
	n := d.count("describe.members", 24)
	for range n {
		desc.Members = append(desc.Members, groups.MemberDescription{
			MemberID: d.str("describe.member_id"), InstanceID: d.nstr("describe.instance_id"),
			ClientID: d.str("describe.client_id"), ClientHost: d.str("describe.client_host"),
			Metadata: d.bytes("describe.metadata"), Assignment: d.bytes("describe.assignment"),
		})
	}
	return desc, found, code
}

func putListing(e *enc, ls []groups.Listing, code int16) {
	e.i16(code)
	e.u32(uint32(len(ls)))
	for _, l := range ls {
		e.str(l.Group)
		e.str(l.ProtocolType)
		e.u8(uint8(l.State))
	}
}

func getListing(d *dec) ([]groups.Listing, int16) {
	code := d.i16("list.code")
	n := d.count("list.groups", 9)
	ls := make([]groups.Listing, 0, n)
	for range n {
		l := groups.Listing{Group: d.str("list.group"), ProtocolType: d.str("list.protocol_type")}
		st := d.u8("list.state")
		if st > uint8(groups.StateDead) {
			d.fail("list.state", "unknown state")
		}
		l.State = groups.State(st)
		ls = append(ls, l)
	}
	return ls, code
}

func putStrings(e *enc, ss []string) {
	e.u32(uint32(len(ss)))
	for _, s := range ss {
		e.str(s)
	}
}

func getStrings(d *dec, f string) []string {
	n := d.count(f, 4)
	ss := make([]string, 0, n)
	for range n {
		ss = append(ss, d.str(f))
	}
	return ss
}
