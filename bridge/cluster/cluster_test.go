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

// Every body round-trips through its encoder and decoder.
func TestMessagesRoundTrip(t *testing.T) {
	jp := groups.JoinParams{Group: "g", MemberID: "m-1", InstanceID: strp("i"), ClientID: "c", ClientHost: "/127.0.0.1",
		SessionTimeout: 10 * time.Second, RebalanceTimeout: time.Minute, ProtocolType: "consumer",
		Protocols:      []groups.Protocol{{Name: "range", Metadata: []byte{1, 2}}, {Name: "sticky", Metadata: []byte{}}},
		RequireKnownID: true, CanSkipAssign: true, Reason: "why"}
	var e enc
	putJoinParams(&e, &jp)
	d := dec{b: e.b}
	if got := getJoinParams(&d); d.done() != nil || !reflect.DeepEqual(got, jp) {
		t.Fatalf("join params: %+v (%v)", got, d.err)
	}
	jr := groups.JoinResult{Code: 0, MemberID: "m-1", Generation: 7, HasProtocol: true, ProtocolType: "consumer", Protocol: "range", Leader: "m-1",
		Members: []groups.JoinMember{{MemberID: "m-1", Metadata: []byte{9}}, {MemberID: "m-2", InstanceID: strp("x"), Metadata: []byte{}}}}
	e = enc{}
	putJoinResult(&e, &jr)
	d = dec{b: e.b}
	if got := getJoinResult(&d); d.done() != nil || !reflect.DeepEqual(got, jr) {
		t.Fatalf("join result: %+v (%v)", got, d.err)
	}
	sp := groups.SyncParams{Group: "g", MemberID: "m", Generation: 3, Protocol: strp("range"), Assignments: map[string][]byte{"m": {1}, "n": nil}}
	e = enc{}
	putSyncParams(&e, &sp)
	d = dec{b: e.b}
	if got := getSyncParams(&d); d.done() != nil || !reflect.DeepEqual(got, sp) {
		t.Fatalf("sync params: %+v (%v)", got, d.err)
	}
	desc := groups.Description{State: "Stable", ProtocolType: "consumer", Protocol: "range",
		Members: []groups.MemberDescription{{MemberID: "m", ClientID: "c", ClientHost: "/h", Metadata: []byte{1}, Assignment: []byte{2}}}}
	e = enc{}
	putDescription(&e, &desc, true, 0)
	d = dec{b: e.b}
	if got, found, code := getDescription(&d); d.done() != nil || !found || code != 0 || !reflect.DeepEqual(got, desc) {
		t.Fatalf("description: %+v (%v)", got, d.err)
	}
	ls := []groups.Listing{{Group: "a", ProtocolType: "consumer", State: groups.StateStable}}
	e = enc{}
	putListing(&e, ls, 0)
	d = dec{b: e.b}
	if got, _ := getListing(&d); d.done() != nil || !reflect.DeepEqual(got, ls) {
		t.Fatalf("listing: %+v (%v)", got, d.err)
	}
}

// A count or length larger than the bytes left is refused before any
// allocation it would size.
func TestDecoderRefusesOversizedCounts(t *testing.T) {
	var e enc
	e.str("g")
	e.u32(1 << 30) // leave: a billion members in a few bytes
	d := dec{b: e.b}
	getLeave(&d)
	var fe *frameError
	if err := d.done(); !errors.As(err, &fe) || !errors.Is(err, errFrame) {
		t.Fatalf("oversized count: %v", err)
	}
	d = dec{b: []byte{0x7f, 0xff, 0xff, 0xff}}
	if d.str("s"); d.done() == nil {
		t.Fatal("oversized string accepted")
	}
	d = dec{b: []byte{2}}
	if d.boolean("b"); d.done() == nil {
		t.Fatal("boolean 2 accepted")
	}
}

// FuzzPeerRequest feeds arbitrary request bodies and frames to the
// decoders: they never panic and never read past the input.
func FuzzPeerRequest(f *testing.F) {
	var e enc
	jp := groups.JoinParams{Group: "g", Protocols: []groups.Protocol{{Name: "range"}}}
	putJoinParams(&e, &jp)
	f.Add(kindJoin, e.b)
	e = enc{}
	putLeave(&e, "g", []groups.LeaveIdentity{{MemberID: "m"}})
	f.Add(kindLeave, e.b)
	f.Add(kindSync, []byte{0, 0, 0, 1, 'g'})
	f.Add(kindList, []byte{})
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		d := dec{b: body}
		switch kind % 9 {
		case 0:
			getJoinParams(&d)
		case 1:
			getSyncParams(&d)
		case 2:
			getMemberCall(&d)
		case 3:
			getLeave(&d)
		case 4:
			getDescription(&d)
		case 5:
			getListing(&d)
		case 6:
			getJoinResult(&d)
		case 7:
			getSyncResult(&d)
		case 8:
			getCodes(&d)
		}
		_ = d.done()
		br := bufio.NewReader(bytes.NewReader(body))
		if p, err := readFrame(br, 1<<16); err == nil {
			_, _, _, _ = parseHeader(p)
		}
	})
}

// linkPair runs a linkServer with secret on loopback; handle counts calls.
func linkPair(t *testing.T, secret string, handle handler) (*linkServer, *strings.Builder, *sync.Mutex) {
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
	go s.serve()
	t.Cleanup(s.close)
	return s, &logBuf, &mu
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func echo(_ context.Context, kind uint8, body []byte) ([]byte, error) {
	d := dec{b: body}
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
	resp, err := good.call(context.Background(), kindDescribe, e.b)
	if err != nil {
		t.Fatal(err)
	}
	d := dec{b: resp}
	if got := d.str("s"); got != "HI" || d.done() != nil {
		t.Fatalf("answer %q", got)
	}
	bad := client(s.ln.Addr().String(), "the-wrong-secret-12")
	defer bad.close()
	if _, err := bad.call(context.Background(), kindDescribe, e.b); !errors.Is(err, errPeerAuth) {
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
	if _, err := good.call(context.Background(), kindDescribe, e.b); err != nil {
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
	if _, err := other.call(context.Background(), kindDescribe, e.b); err != nil {
		t.Fatal(err)
	}
	for name, frame := range map[string][]byte{
		"oversized":     binary.BigEndian.AppendUint32(nil, 1<<30),
		"not a request": appendFrame(nil, kindDescribe|kindResponse, 1, nil),
		"bad body":      appendFrame(nil, kindDescribe, 1, []byte{0xff, 0xff, 0xff, 0xff}),
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
	if _, err := other.call(context.Background(), kindDescribe, e.b); err != nil {
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
		_, err := p.call(context.Background(), kindJoin, nil)
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
