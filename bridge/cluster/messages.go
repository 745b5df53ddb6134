package cluster

// Bodies of the peer-link requests and answers: the groups.Service calls
// and their answers, field by field (frame.go has the primitives). Each body
// is described once, as a function over a field codec that writes (encField)
// or reads (decField) every field in turn, so the encoder and the decoder of
// a body cannot drift apart; calls.go names each call's two bodies.

import (
	"time"

	"github.com/kafka-iggy/kafka-iggy/bridge/groups"
)

// field is one direction of the body codec: encField appends the value a
// pointer holds, decField reads into it (sticky: after an error every read
// is a no-op and dec.done reports the first error with its field name).
type field interface {
	u8(v *uint8, f string)
	i16(v *int16, f string)
	i32(v *int32, f string)
	i64(v *int64, f string)
	dur(v *time.Duration, f string)
	boolean(v *bool, f string)
	str(v *string, f string)
	nstr(v **string, f string)
	bytes(v *[]byte, f string)
	// count writes n, or reads a list count whose elements take at least
	// min bytes each, and returns it.
	count(n int, f string, min int) int
	// assignments is SyncGroup's member -> assignment map, -1 for none.
	assignments(v *map[string][]byte, f string)
	// check fails the decoding with why when ok is false; encoding ignores it.
	check(ok bool, f, why string)
}

type encField struct{ e *enc }

func (w encField) u8(v *uint8, _ string)            { w.e.u8(*v) }
func (w encField) i16(v *int16, _ string)           { w.e.i16(*v) }
func (w encField) i32(v *int32, _ string)           { w.e.i32(*v) }
func (w encField) i64(v *int64, _ string)           { w.e.i64(*v) }
func (w encField) dur(v *time.Duration, _ string)   { w.e.dur(*v) }
func (w encField) boolean(v *bool, _ string)        { w.e.boolean(*v) }
func (w encField) str(v *string, _ string)          { w.e.str(*v) }
func (w encField) nstr(v **string, _ string)        { w.e.nstr(*v) }
func (w encField) bytes(v *[]byte, _ string)        { w.e.bytes(*v) }
func (w encField) count(n int, _ string, _ int) int { w.e.u32(uint32(n)); return n }
func (w encField) check(bool, string, string)       {}
func (w encField) assignments(v *map[string][]byte, _ string) {
	if *v == nil {
		w.e.i32(-1)
		return
	}
	w.e.i32(int32(len(*v)))
	for id, a := range *v {
		w.e.str(id)
		w.e.bytes(a)
	}
}

type decField struct{ d *dec }

func (w decField) u8(v *uint8, f string)              { *v = w.d.u8(f) }
func (w decField) i16(v *int16, f string)             { *v = w.d.i16(f) }
func (w decField) i32(v *int32, f string)             { *v = w.d.i32(f) }
func (w decField) i64(v *int64, f string)             { *v = w.d.i64(f) }
func (w decField) dur(v *time.Duration, f string)     { *v = w.d.dur(f) }
func (w decField) boolean(v *bool, f string)          { *v = w.d.boolean(f) }
func (w decField) str(v *string, f string)            { *v = w.d.str(f) }
func (w decField) nstr(v **string, f string)          { *v = w.d.nstr(f) }
func (w decField) bytes(v *[]byte, f string)          { *v = w.d.bytes(f) }
func (w decField) count(_ int, f string, min int) int { return w.d.count(f, min) }
func (w decField) check(ok bool, f, why string) {
	if !ok {
		w.d.fail(f, why)
	}
}
func (w decField) assignments(v *map[string][]byte, f string) {
	n := w.d.i32(f)
	switch {
	case w.d.r.Failed() || n == -1:
		return
	case n < -1 || int64(n)*8 > int64(w.d.r.Remaining()):
		w.d.fail(f, "count does not fit the frame")
		return
	}
	*v = make(map[string][]byte, n)
	for range n {
		id := w.d.str(f + ".member_id")
		(*v)[id] = w.d.bytes(f + ".bytes")
	}
}

// sized is s when it already holds n elements (encoding, or an empty list),
// else n zero elements for the decoder to fill.
func sized[T any](s []T, n int) []T {
	if len(s) == n {
		return s
	}
	return make([]T, n)
}

func joinParams(w field, p *groups.JoinParams) {
	w.str(&p.Group, "join.group")
	w.str(&p.MemberID, "join.member_id")
	w.nstr(&p.InstanceID, "join.instance_id")
	w.str(&p.ClientID, "join.client_id")
	w.str(&p.ClientHost, "join.client_host")
	w.dur(&p.SessionTimeout, "join.session_timeout")
	w.dur(&p.RebalanceTimeout, "join.rebalance_timeout")
	w.str(&p.ProtocolType, "join.protocol_type")
	p.Protocols = sized(p.Protocols, w.count(len(p.Protocols), "join.protocols", 8))
	for i := range p.Protocols {
		w.str(&p.Protocols[i].Name, "join.protocol.name")
		w.bytes(&p.Protocols[i].Metadata, "join.protocol.metadata")
	}
	w.boolean(&p.RequireKnownID, "join.require_known_id")
	w.boolean(&p.CanSkipAssign, "join.can_skip_assign")
	w.str(&p.Reason, "join.reason")
}

func joinResult(w field, r *groups.JoinResult) {
	w.i16(&r.Code, "join.code")
	w.str(&r.MemberID, "join.member_id")
	w.i32(&r.Generation, "join.generation")
	w.boolean(&r.HasProtocol, "join.has_protocol")
	w.str(&r.ProtocolType, "join.protocol_type")
	w.str(&r.Protocol, "join.protocol")
	w.str(&r.Leader, "join.leader")
	w.boolean(&r.SkipAssign, "join.skip_assign")
	r.Members = sized(r.Members, w.count(len(r.Members), "join.members", 12))
	for i := range r.Members {
		m := &r.Members[i]
		w.str(&m.MemberID, "join.member.id")
		w.nstr(&m.InstanceID, "join.member.instance_id")
		w.bytes(&m.Metadata, "join.member.metadata")
	}
}

func syncParams(w field, p *groups.SyncParams) {
	w.str(&p.Group, "sync.group")
	w.str(&p.MemberID, "sync.member_id")
	w.nstr(&p.InstanceID, "sync.instance_id")
	w.i32(&p.Generation, "sync.generation")
	w.nstr(&p.ProtocolType, "sync.protocol_type")
	w.nstr(&p.Protocol, "sync.protocol")
	w.assignments(&p.Assignments, "sync.assignments")
}

func syncResult(w field, r *groups.SyncResult) {
	w.i16(&r.Code, "sync.code")
	w.boolean(&r.HasProtocol, "sync.has_protocol")
	w.str(&r.ProtocolType, "sync.protocol_type")
	w.str(&r.Protocol, "sync.protocol")
	w.bytes(&r.Assignment, "sync.assignment")
}

// memberReq is the body of Heartbeat and ValidateCommit requests.
type memberReq struct {
	group, memberID string
	instanceID      *string
	generation      int32
}

func memberReqBody(w field, c *memberReq) {
	w.str(&c.group, "group")
	w.str(&c.memberID, "member_id")
	w.nstr(&c.instanceID, "instance_id")
	w.i32(&c.generation, "generation")
}

// groupReq is the body of requests that name only a group.
type groupReq struct{ group string }

func groupReqBody(w field, c *groupReq) { w.str(&c.group, "group") }

// leaveReq is the body of a LeaveGroup request.
type leaveReq struct {
	group string
	ids   []groups.LeaveIdentity
}

func leaveBody(w field, c *leaveReq) {
	w.str(&c.group, "leave.group")
	c.ids = sized(c.ids, w.count(len(c.ids), "leave.members", 12))
	for i := range c.ids {
		id := &c.ids[i]
		w.str(&id.MemberID, "leave.member_id")
		w.nstr(&id.InstanceID, "leave.instance_id")
		w.str(&id.Reason, "leave.reason")
	}
}

// listReq is the (empty) body of a ListGroups request.
type listReq struct{}

func listReqBody(field, *listReq) {}

// codeAnswer answers a Heartbeat.
type codeAnswer struct{ code int16 }

func codeBody(w field, a *codeAnswer) { w.i16(&a.code, "code") }

// validateAnswer answers a ValidateCommit.
type validateAnswer struct {
	code  int16
	known bool
}

func validateBody(w field, a *validateAnswer) {
	w.i16(&a.code, "code")
	w.boolean(&a.known, "known")
}

// leaveAnswer answers a LeaveGroup: the request's code and one per member.
type leaveAnswer struct {
	top   int16
	codes []int16
}

func leaveAnswerBody(w field, a *leaveAnswer) {
	w.i16(&a.top, "code")
	a.codes = sized(a.codes, w.count(len(a.codes), "codes", 2))
	for i := range a.codes {
		w.i16(&a.codes[i], "codes.code")
	}
}

// describeAnswer answers a DescribeGroups of one group.
type describeAnswer struct {
	desc  groups.Description
	found bool
	code  int16
}

func describeBody(w field, a *describeAnswer) {
	w.i16(&a.code, "describe.code")
	w.boolean(&a.found, "describe.found")
	desc := &a.desc
	w.str(&desc.State, "describe.state")
	w.str(&desc.ProtocolType, "describe.protocol_type")
	w.str(&desc.Protocol, "describe.protocol")
	desc.Members = sized(desc.Members, w.count(len(desc.Members), "describe.members", 24))
	for i := range desc.Members {
		m := &desc.Members[i]
		w.str(&m.MemberID, "describe.member_id")
		w.nstr(&m.InstanceID, "describe.instance_id")
		w.str(&m.ClientID, "describe.client_id")
		w.str(&m.ClientHost, "describe.client_host")
		w.bytes(&m.Metadata, "describe.metadata")
		w.bytes(&m.Assignment, "describe.assignment")
	}
}

// listAnswer answers a ListGroups: the owner's own groups.
type listAnswer struct {
	groups []groups.Listing
	code   int16
}

func listBody(w field, a *listAnswer) {
	w.i16(&a.code, "list.code")
	a.groups = sized(a.groups, w.count(len(a.groups), "list.groups", 9))
	for i := range a.groups {
		l := &a.groups[i]
		w.str(&l.Group, "list.group")
		w.str(&l.ProtocolType, "list.protocol_type")
		st := uint8(l.State)
		w.u8(&st, "list.state")
		w.check(st <= uint8(groups.StateDead), "list.state", "unknown state")
		l.State = groups.State(st)
	}
}

// deleteAnswer answers a DeleteGroups of one group.
type deleteAnswer struct {
	code int16
	msg  string
}

func deleteBody(w field, a *deleteAnswer) {
	w.i16(&a.code, "code")
	w.str(&a.msg, "message")
}

// offsetDeleteAnswer answers an OffsetDelete group check.
type offsetDeleteAnswer struct {
	code       int16
	all        bool
	subscribed []string
}

func offsetDeleteBody(w field, a *offsetDeleteAnswer) {
	w.i16(&a.code, "code")
	w.boolean(&a.all, "all")
	a.subscribed = sized(a.subscribed, w.count(len(a.subscribed), "subscribed", 4))
	for i := range a.subscribed {
		w.str(&a.subscribed[i], "subscribed")
	}
}
