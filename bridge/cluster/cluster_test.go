package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/bridge/groups"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// The shard function is a contract between sidecar versions.
func TestShardGoldenVectors(t *testing.T) {
	for _, v := range []struct {
		group     string
		k8, k1000 int
	}{
		{"", 0, 241},
		{"g", 7, 958},
		{"g-across", 6, 566},
		{"orders-consumer", 6, 10},
		{"payments", 4, 556},
		{"my-group-123", 0, 188},
	} {
		if got := Shard(v.group, 8); got != v.k8 {
			t.Errorf("Shard(%q, 8) = %d, want %d", v.group, got, v.k8)
		}
		if got := Shard(v.group, 1000); got != v.k1000 {
			t.Errorf("Shard(%q, 1000) = %d, want %d", v.group, got, v.k1000)
		}
	}
	if Shard("x", 1) != 0 || Shard("x", 0) != 0 {
		t.Error("one shard: always 0")
	}
}

func strp(s string) *string { return &s }

// roundTrip encodes v with body and decodes it back.
func roundTrip[T any](t *testing.T, body func(field, *T), v T) T {
	t.Helper()
	var e enc
	body(encField{&e}, &v)
	d := newDec(e.b, "test")
	var got T
	body(decField{d}, &got)
	if err := d.done(); err != nil {
		t.Fatalf("%T: %v", v, err)
	}
	return got
}

// Every body round-trips through its encoder and decoder.
func TestMessagesRoundTrip(t *testing.T) {
	jp := groups.JoinParams{Group: "g", MemberID: "m-1", InstanceID: strp("i"), ClientID: "c", ClientHost: "/127.0.0.1",
		SessionTimeout: 10 * time.Second, RebalanceTimeout: time.Minute, ProtocolType: "consumer",
		Protocols:      []groups.Protocol{{Name: "range", Metadata: []byte{1, 2}}, {Name: "sticky", Metadata: []byte{}}},
		RequireKnownID: true, CanSkipAssign: true, Reason: "why"}
	jr := groups.JoinResult{Code: 0, MemberID: "m-1", Generation: 7, HasProtocol: true, ProtocolType: "consumer", Protocol: "range", Leader: "m-1",
		Members: []groups.JoinMember{{MemberID: "m-1", Metadata: []byte{9}}, {MemberID: "m-2", InstanceID: strp("x"), Metadata: []byte{}}}}
	sp := groups.SyncParams{Group: "g", MemberID: "m", Generation: 3, Protocol: strp("range"), Assignments: map[string][]byte{"m": {1}, "n": nil}}
	da := describeAnswer{found: true, desc: groups.Description{State: "Stable", ProtocolType: "consumer", Protocol: "range",
		Members: []groups.MemberDescription{{MemberID: "m", ClientID: "c", ClientHost: "/h", Metadata: []byte{1}, Assignment: []byte{2}}}}}
	la := listAnswer{groups: []groups.Listing{{Group: "a", ProtocolType: "consumer", State: groups.StateStable}}}
	lr := leaveReq{group: "g", ids: []groups.LeaveIdentity{{MemberID: "m", InstanceID: strp("i"), Reason: "bye"}, {MemberID: "n"}}}
	oa := offsetDeleteAnswer{code: 0, all: false, subscribed: []string{"t1", "t2"}}
	mr := memberReq{group: "g", memberID: "m", instanceID: strp("i"), generation: 4}
	for name, ok := range map[string]bool{
		"join params":   reflect.DeepEqual(roundTrip(t, joinParams, jp), jp),
		"join result":   reflect.DeepEqual(roundTrip(t, joinResult, jr), jr),
		"sync params":   reflect.DeepEqual(roundTrip(t, syncParams, sp), sp),
		"describe":      reflect.DeepEqual(roundTrip(t, describeBody, da), da),
		"list":          reflect.DeepEqual(roundTrip(t, listBody, la), la),
		"leave":         reflect.DeepEqual(roundTrip(t, leaveBody, lr), lr),
		"offset delete": reflect.DeepEqual(roundTrip(t, offsetDeleteBody, oa), oa),
		"member call":   reflect.DeepEqual(roundTrip(t, memberReqBody, mr), mr),
		"leave answer":  reflect.DeepEqual(roundTrip(t, leaveAnswerBody, leaveAnswer{1, []int16{2, 3}}), leaveAnswer{1, []int16{2, 3}}),
		"delete answer": roundTrip(t, deleteBody, deleteAnswer{42, "m"}) == deleteAnswer{42, "m"},
		"validate":      roundTrip(t, validateBody, validateAnswer{5, true}) == validateAnswer{5, true},
	} {
		if !ok {
			t.Errorf("%s does not round-trip", name)
		}
	}
}

// A count or length larger than the bytes left is refused before any
// allocation it would size, as a structured codec/wire error.
func TestDecoderRefusesOversizedCounts(t *testing.T) {
	var e enc
	e.str("g")
	e.u32(1 << 30) // leave: a billion members in a few bytes
	d := newDec(e.b, "peer.leave.request")
	leaveBody(decField{d}, &leaveReq{})
	var de *wire.DecodeError
	if err := d.done(); !errors.As(err, &de) || !errors.Is(err, wire.ErrTooLarge) || de.Field != "leave.members" || !malformed(err) {
		t.Fatalf("oversized count: %v", err)
	}
	d = newDec([]byte{0xff, 0xff, 0xff, 0x7f}, "t")
	if d.str("s"); !errors.Is(d.done(), wire.ErrShortBuffer) {
		t.Fatal("oversized string accepted")
	}
	d = newDec([]byte{2}, "t")
	if d.boolean("b"); !errors.Is(d.done(), wire.ErrConstraint) {
		t.Fatal("boolean 2 accepted")
	}
	d = newDec([]byte{1, 2}, "t")
	if d.u8("b"); !errors.Is(d.done(), wire.ErrTrailingBytes) {
		t.Fatal("trailing bytes accepted")
	}
}

// The table declares the calls of kinds 10-21, 23, 30-37, 50-53 and 60
// (19-21, 23, 60: the consumer protocol, ccalls.go; 22 and 24 were the
// consumer-protocol checks of classic calls, now made by the owner within
// them; 30-37 transactions, tcalls.go; 50-53 pending transactional
// offsets, ocalls.go); handshake kinds, responses and undeclared kinds are
// not requests.
func TestPeerCallTable(t *testing.T) {
	for k := range 256 {
		want := (k >= 10 && k <= 23 && k != 22) || (k >= 30 && k <= 37) || (k >= 50 && k <= 53) || k == 60
		switch declared := requestKind(uint8(k)); {
		case want != declared && k >= 10 && k < int(kindResponse):
			t.Errorf("kind %d: declared %v, want %v", k, declared, want)
		case (k < 10 || k >= int(kindResponse)) && declared:
			t.Errorf("kind %d: a request", k)
		}
	}
}

// The stored coordination records keep their big-endian layout: records
// written by earlier versions stay readable.
func TestRecordsGolden(t *testing.T) {
	a := announcement{typ: recActive, epoch: 7, node: "n", addr: "a:1"}
	want := "kiggy1" + string([]byte{recActive, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 1}) + "n" + string([]byte{0, 0, 0, 3}) + "a:1"
	if got := encodeAnnouncement(a); string(got) != want {
		t.Fatalf("announcement % x", got)
	}
	if got, ok := decodeAnnouncement([]byte(want)); !ok || got != a {
		t.Fatalf("decoded %+v %v", got, ok)
	}
	gen := "kiggy1" + string([]byte{recGen, 0, 0, 0, 1}) + "g" + string([]byte{0, 0, 1, 2})
	if g, c, ok := decodeGen([]byte(gen)); !ok || g != "g" || c != 258 {
		t.Fatalf("generation record: %q %d %v", g, c, ok)
	}
	if _, ok := decodeAnnouncement([]byte(want + "x")); ok {
		t.Fatal("trailing bytes accepted")
	}
}

// FuzzPeerRequest feeds arbitrary bodies to every declared call's request
// and answer decoders, and arbitrary bytes to the frame reader: they never
// panic and never read past the input.
func FuzzPeerRequest(f *testing.F) {
	var e enc
	jp := groups.JoinParams{Group: "g", Protocols: []groups.Protocol{{Name: "range"}}}
	joinParams(encField{&e}, &jp)
	f.Add(joinCall.kind, e.b)
	e = enc{}
	leaveBody(encField{&e}, &leaveReq{group: "g", ids: []groups.LeaveIdentity{{MemberID: "m"}}})
	f.Add(leaveCall.kind, e.b)
	f.Add(syncCall.kind, []byte{1, 0, 0, 0, 'g'})
	f.Add(listCall.kind, []byte{})
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		if c := peerCalls[kind%kindResponse]; c != nil {
			_ = c.decode(body, false)
			_ = c.decode(body, true)
		}
		br := bufio.NewReader(bytes.NewReader(body))
		if p, err := readFrame(br, 1<<16); err == nil {
			_, _, _, _ = parseHeader(p)
		}
	})
}

// linkPair runs a linkServer with secret on loopback; handle counts calls.
// opts adjust the server before it serves.
func linkPair(t *testing.T, secret string, handle handler, opts ...func(*linkServer)) (*linkServer, *strings.Builder, *sync.Mutex) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var logBuf strings.Builder
	var mu sync.Mutex
	w := zerolog.SyncWriter(writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logBuf.Write(p) }))
	s := &linkServer{ln: ln, secret: []byte(secret), domain: "d", maxFrame: 1 << 16, hsTime: 2 * time.Second,
		log: zerolog.New(w), handle: handle, conns: map[net.Conn]struct{}{}}
	for _, o := range opts {
		o(s)
	}
	go s.serve()
	t.Cleanup(s.close)
	return s, &logBuf, &mu
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func echo(_ context.Context, kind uint8, body []byte) ([]byte, error) {
	d := newDec(body, "echo")
	s := d.str("s")
	if err := d.done(); err != nil {
		return nil, err
	}
	var e enc
	e.str(strings.ToUpper(s))
	return e.b, nil
}

func client(addr, secret string) *peerClient {
	return &peerClient{addr: addr, node: "n1", domain: "d", secret: []byte(secret), dialTime: time.Second, hsTime: 2 * time.Second, maxFrame: 1 << 16, log: zerolog.Nop()}
}

// An authenticated peer gets its answers; a peer with the wrong secret is
// refused and logged with its address.
func TestLinkAuthentication(t *testing.T) {
	s, logs, mu := linkPair(t, "the-right-secret-123", echo)
	good := client(s.ln.Addr().String(), "the-right-secret-123")
	defer good.close()
	var e enc
	e.str("hi")
	resp, err := good.call(context.Background(), describeCall.kind, e.b)
	if err != nil {
		t.Fatal(err)
	}
	d := newDec(resp, "echo")
	if got := d.str("s"); got != "HI" || d.done() != nil {
		t.Fatalf("answer %q", got)
	}
	bad := client(s.ln.Addr().String(), "the-wrong-secret-12")
	defer bad.close()
	if _, err := bad.call(context.Background(), describeCall.kind, e.b); !errors.Is(err, errPeerAuth) {
		t.Fatalf("wrong secret: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		l := logs.String()
		mu.Unlock()
		if strings.Contains(l, `"close_reason":"wrong_secret"`) && strings.Contains(l, `"peer_address":"127.0.0.1:`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("refusal not logged with reason and address:\n%s", l)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The good peer is unaffected.
	if _, err := good.call(context.Background(), describeCall.kind, e.b); err != nil {
		t.Fatalf("good peer after a refused one: %v", err)
	}
}

// A forged or malformed frame closes that peer connection (logged); other
// peer connections keep working.
func TestLinkMalformedFrameClosesConnection(t *testing.T) {
	s, logs, mu := linkPair(t, "the-right-secret-123", echo)
	other := client(s.ln.Addr().String(), "the-right-secret-123")
	defer other.close()
	var e enc
	e.str("x")
	if _, err := other.call(context.Background(), describeCall.kind, e.b); err != nil {
		t.Fatal(err)
	}
	for name, frame := range map[string][]byte{
		"oversized":     binary.LittleEndian.AppendUint32(nil, 1<<30),
		"not a request": appendFrame(nil, describeCall.kind|kindResponse, 1, nil),
		"bad body":      appendFrame(nil, describeCall.kind, 1, []byte{0xff, 0xff, 0xff, 0xff}),
	} {
		p := client(s.ln.Addr().String(), "the-right-secret-123")
		c, err := p.connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		// Write the raw frame on the authenticated connection.
		p.wmu.Lock()
		_, _ = c.Write(frame)
		p.wmu.Unlock()
		// The reader goroutine owns the socket; wait for it to see the close.
		deadline := time.Now().Add(5 * time.Second)
		for {
			p.mu.Lock()
			gone := p.conn == nil
			p.mu.Unlock()
			if gone {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: connection not closed", name)
			}
			time.Sleep(10 * time.Millisecond)
		}
		p.close()
	}
	mu.Lock()
	l := logs.String()
	mu.Unlock()
	if strings.Count(l, "frame_") < 3 {
		t.Fatalf("malformed frames not logged:\n%s", l)
	}
	if _, err := other.call(context.Background(), describeCall.kind, e.b); err != nil {
		t.Fatalf("other peer after malformed frames: %v", err)
	}
}

// A call whose connection drops answers errPeerGone (NOT_COORDINATOR to the
// client) at once.
func TestLinkDropFailsParkedCalls(t *testing.T) {
	block := make(chan struct{})
	parked := make(chan struct{}, 1)
	s, _, _ := linkPair(t, "the-right-secret-123", func(ctx context.Context, kind uint8, body []byte) ([]byte, error) {
		parked <- struct{}{}
		select {
		case <-block:
		case <-ctx.Done():
		}
		return nil, nil
	})
	defer close(block)
	p := client(s.ln.Addr().String(), "the-right-secret-123")
	defer p.close()
	errc := make(chan error, 1)
	go func() {
		_, err := p.call(context.Background(), joinCall.kind, nil)
		errc <- err
	}()
	<-parked
	s.close()
	select {
	case err := <-errc:
		if !errors.Is(err, errPeerGone) {
			t.Fatalf("parked call after drop: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("parked call not answered after the connection dropped")
	}
	if kerr.NotCoordinator.Code != 16 {
		t.Fatal("kerr changed")
	}
}

// ownerRouter is a Router owning its one shard (ACTIVE) or not (PENDING),
// with a real local coordinator and no Iggy (the calls below never seed).
func ownerRouter(state shardState) *Router {
	return &Router{local: groups.New(groups.DefaultConfig(), zerolog.Nop(), nil), log: zerolog.Nop(), ceiling: map[string]int32{},
		own: &ownership{k: 1, shards: []shard{{state: state, validUntil: time.Now().Add(time.Hour)}}}}
}

// serveCall sends one request body through the owner's dispatch and
// decodes the answer.
func serveCall[P, R any](t *testing.T, r *Router, c *call[P, R], p P) R {
	t.Helper()
	var e enc
	c.params(encField{&e}, &p)
	resp, err := r.serve(context.Background(), c.kind, e.b)
	if err != nil {
		t.Fatal(err)
	}
	d := newDec(resp, "t")
	var a R
	c.answer(decField{d}, &a)
	if err := d.done(); err != nil {
		t.Fatal(err)
	}
	return a
}

// The owner answers a forwarded call from its local coordinator when the
// group's shard is ACTIVE here, and NOT_COORDINATOR when it is not;
// malformed requests and unknown kinds are errors (the link drops the
// connection).
func TestOwnerServesForwardedCalls(t *testing.T) {
	own := ownerRouter(shardActive)
	own.local.Seed("g", 3, false)
	if a := serveCall(t, own, describeCall, groupReq{"g"}); a.code != 0 || !a.found || a.desc.State != "Empty" {
		t.Fatalf("describe at the owner: %+v", a)
	}
	if a := serveCall(t, own, heartbeatCall, memberReq{group: "g", memberID: "m", generation: 3}); a.code != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat at the owner: %+v", a)
	}
	if a := serveCall(t, own, listCall, listReq{}); len(a.groups) != 1 || a.groups[0].Group != "g" {
		t.Fatalf("list at the owner: %+v", a)
	}
	moved := ownerRouter(shardPending)
	moved.local.Seed("g", 3, false)
	if a := serveCall(t, moved, describeCall, groupReq{"g"}); a.code != kerr.NotCoordinator.Code || a.found {
		t.Fatalf("describe after the shard moved: %+v", a)
	}
	if a := serveCall(t, moved, deleteCall, groupReq{"g"}); a.code != kerr.NotCoordinator.Code || a.msg != "this sidecar no longer coordinates the group" {
		t.Fatalf("delete after the shard moved: %+v", a)
	}
	if a := serveCall(t, moved, leaveCall, leaveReq{group: "g", ids: make([]groups.LeaveIdentity, 2)}); a.top != kerr.NotCoordinator.Code || len(a.codes) != 2 {
		t.Fatalf("leave after the shard moved: %+v", a)
	}
	if _, err := own.serve(context.Background(), heartbeatCall.kind, []byte{1}); !malformed(err) {
		t.Fatalf("malformed request: %v", err)
	}
	if _, err := own.serve(context.Background(), 9, nil); !malformed(err) {
		t.Fatalf("unknown kind: %v", err)
	}
}
