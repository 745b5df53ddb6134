package embedded

import (
	"bytes"
	"testing"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// TestRequestNumbers checks §1.8.3: idempotent resends from the reply
// cache, 59 for numbers that aged out, silence for a reused number with
// another checksum, gaps allowed, refusals not consuming a number.
func TestRequestNumbers(t *testing.T) {
	s := startServer(t, func(c *Config) { c.ReplyCacheSize = 2 })
	c := root(t, s)
	send := func(n uint64, body []byte, checksum bool) {
		h := c.header(iggy.OperationCreateStream, n)
		if checksum {
			h.RequestChecksum = wire.U128{Lo: iggy.XXH3(body)}
		}
		c.writeRaw(frame(&h, body))
	}
	a := encode(&iggy.CreateStreamRequest{Name: "a"})
	b := encode(&iggy.CreateStreamRequest{Name: "b"})

	send(5, a, true) // gaps are allowed
	first := c.recv()
	c.ok(first)
	send(5, a, true) // same number, same body: the cached reply
	if again := c.recv(); !bytes.Equal(again.frame, first.frame) {
		t.Fatalf("resend: %x\nwant %x", again.frame, first.frame)
	}
	send(5, a, false) // unstamped resend: cached reply too
	if again := c.recv(); !bytes.Equal(again.body, first.body) {
		t.Fatalf("unstamped resend: %x", again.body)
	}
	send(5, b, true) // same number, another checksum: dropped
	c.expectSilence()
	send(3, b, true) // older than the highest committed, not cached: 59
	expect{ch: chResult, code: iggy.StatusRequestAlreadyApplied}.check(t, c)

	// A status-channel refusal does not consume its number.
	bad := encode(&iggy.CreateStreamRequest{Name: "x", Options: iggy.Options{opt("k", iggy.HeaderKindString, []byte("v"))}})
	send(6, bad, true)
	expect{ch: chStatus, code: iggy.StatusUnsupportedOptionKey}.check(t, c)
	send(6, b, true)
	c.ok(c.recv())
	// A committed business rejection does.
	send(7, b, true)
	expect{ch: chResult, code: iggy.StatusStreamNameAlreadyExists}.check(t, c)
	send(7, b, true)
	expect{ch: chResult, code: iggy.StatusStreamNameAlreadyExists}.check(t, c)

	// With a cache of 2, number 5 has aged out after 6 and 7.
	send(5, a, true)
	expect{ch: chResult, code: iggy.StatusRequestAlreadyApplied}.check(t, c)

	// Partition operations are not deduplicated: the same number stores
	// the batch twice.
	c.next = 8
	c.createTopic(numID(0), "t", 1, nil)
	h := c.header(iggy.OperationSendMessages, 100)
	body := encode(&iggy.SendMessagesRequest{StreamID: numID(0), TopicID: numID(0), Partitioning: toPartition(0), MessagesCount: 1, Batch: batch(t, "dup")})
	for want := range uint64(2) {
		var conf iggy.SendMessagesResponse
		if _, err := conf.DecodeFrom(c.ok(c.roundTrip(h, body))); err != nil || conf.Confirmations[0].BaseOffset != want {
			t.Fatalf("send #%d: %+v %v", want, conf, err)
		}
	}

	// With ReplyToMalformed the reused number is answered with status 3.
	dbg := root(t, startServer(t, func(c *Config) { c.ReplyToMalformed = true }))
	h = dbg.header(iggy.OperationCreateStream, 1)
	h.RequestChecksum = wire.U128{Lo: iggy.XXH3(a)}
	dbg.ok(dbg.roundTrip(h, a))
	h.RequestChecksum = wire.U128{Lo: iggy.XXH3(b)}
	dbg.writeRaw(frame(&h, b))
	expect{ch: chStatus, code: iggy.StatusInvalidCommand}.check(t, dbg)
}

// TestSessions covers re-login, fencing of an older session by a newer
// login of the same client id, logout, and PING with session 0 after login.
func TestSessions(t *testing.T) {
	s := startServer(t, nil)
	a := root(t, s)
	sessA := a.session

	// Logging in again on a bound connection returns the same session.
	a.login("iggy", "iggy")
	if a.session != sessA {
		t.Fatalf("re-login session %d, want %d", a.session, sessA)
	}
	// PING (and reads) with session 0 work on a logged-in connection.
	if r := a.roundTrip(iggy.RequestHeader{Client: a.client, Operation: iggy.OperationNonReplicated, Code: iggy.CodePing, Request: 1}, nil); r.status() != 0 {
		t.Fatalf("ping with session 0: %d", r.status())
	}
	h := iggy.RequestHeader{Client: a.client, Operation: iggy.OperationNonReplicated, Code: iggy.CodeGetMe, Request: 1}
	a.ok(a.roundTrip(h, nil))

	// The same client id logs in on another connection: the first session
	// is fenced (SessionTooLow) on its next replicated request.
	b := dial(t, s)
	b.client = a.client
	b.login("iggy", "iggy")
	if b.session <= sessA {
		t.Fatalf("new session %d not above %d", b.session, sessA)
	}
	a.writeRaw(frame(ptr(a.header(iggy.OperationCreateStream, 1)), encode(&iggy.CreateStreamRequest{Name: "x"})))
	expect{ch: chEviction, reason: iggy.EvictionReasonSessionTooLow}.check(t, a)
	// After the eviction the connection has no session.
	a.writeRaw(frame(ptr(a.header(iggy.OperationCreateStream, 2)), encode(&iggy.CreateStreamRequest{Name: "x"})))
	expect{ch: chEviction, reason: iggy.EvictionReasonNoSession}.check(t, a)
	b.createStream("x")

	// Logout ends the session (reads: 40, metadata: NoSession).
	b.ok(b.meta(iggy.OperationLogout, nil))
	expect{ch: chStatus, code: iggy.StatusUnauthenticated}.check(t, func() *tclient { b.writeRaw(frame(ptr(b.header(iggy.OperationNonReplicated, b.next)), nil)); return b }())
	b.writeRaw(frame(ptr(b.header(iggy.OperationCreateStream, b.next)), encode(&iggy.CreateStreamRequest{Name: "y"})))
	expect{ch: chEviction, reason: iggy.EvictionReasonNoSession}.check(t, b)
	// A fresh login on the same connection works.
	b.login("iggy", "iggy")
	b.createStream("y")
	// Any eviction ends the session, here InvalidRequestBody.
	b.writeRaw(frame(ptr(b.header(iggy.OperationDeleteStream, b.next)), []byte{7}))
	expect{ch: chEviction, reason: iggy.EvictionReasonInvalidRequestBody}.check(t, b)
	b.writeRaw(frame(ptr(b.header(iggy.OperationCreateStream, b.next+1)), encode(&iggy.CreateStreamRequest{Name: "z"})))
	expect{ch: chEviction, reason: iggy.EvictionReasonNoSession}.check(t, b)
}

// TestPersonalAccessTokens covers create, login with the token, list,
// duplicate names, delete and expiry.
func TestPersonalAccessTokens(t *testing.T) {
	s, clk := startWithClock(t, nil)
	c := root(t, s)
	create := func(name string, expiry uint64) string {
		var resp iggy.CreatePersonalAccessTokenResponse
		if _, err := resp.DecodeFrom(c.ok(c.meta(iggy.OperationCreatePersonalAccessToken, &iggy.CreatePersonalAccessTokenRequest{Name: name, Expiry: expiry}))); err != nil {
			t.Fatal(err)
		}
		return resp.Token
	}
	patLogin := func(token string) reply {
		d := dial(t, s)
		body := encode(&iggy.LoginRegisterWithPATRequest{VersionInfo: iggy.ClientVersionInfo{ProtocolVersion: uint32(iggy.Protocol011), SdkName: "t", SdkVersion: "1"}, Token: token})
		return d.roundTrip(iggy.RequestHeader{Client: d.client, Operation: iggy.OperationRegister}, body)
	}
	forever := create("forever", ^uint64(0))
	short := create("short", 60_000_000) // one minute
	if r := patLogin(forever); r.status() != 0 || r.evicted != nil {
		t.Fatalf("PAT login: %+v %+v", r.hdr, r.evicted)
	} else if code, payload := r.result(t); code != 0 || len(payload) < 16 {
		t.Fatalf("PAT login result %d", code)
	}
	expect{ch: chResult, code: iggy.StatusPersonalAccessTokenAlreadyExists}.check(t, func() *tclient {
		c.writeRaw(frame(ptr(c.header(iggy.OperationCreatePersonalAccessToken, c.next)), encode(&iggy.CreatePersonalAccessTokenRequest{Name: "forever"})))
		c.next++
		return c
	}())
	var list iggy.GetPersonalAccessTokensResponse
	if _, err := list.DecodeFrom(c.ok(c.call(iggy.CodeGetPersonalAccessTokens, nil))); err != nil || len(list.Tokens) != 2 ||
		list.Tokens[0].Name != "forever" || list.Tokens[0].ExpiryAt != 0 || list.Tokens[1].ExpiryAt != uint64(clk.now().UnixMicro())+60_000_000 {
		t.Fatalf("tokens %+v %v", list.Tokens, err)
	}
	clk.advance(2 * 60e9)
	if r := patLogin(short); r.evicted == nil || r.evicted.Reason != iggy.EvictionReasonInvalidToken {
		t.Fatalf("expired token: %+v", r.evicted)
	}
	c.ok(c.meta(iggy.OperationDeletePersonalAccessToken, &iggy.DeletePersonalAccessTokenRequest{Name: "forever"}))
	if r := patLogin(forever); r.evicted == nil || r.evicted.Reason != iggy.EvictionReasonInvalidToken {
		t.Fatalf("deleted token: %+v", r.evicted)
	}
	expect{ch: chResult, code: iggy.StatusResourceNotFound}.check(t, func() *tclient {
		c.writeRaw(frame(ptr(c.header(iggy.OperationDeletePersonalAccessToken, c.next)), encode(&iggy.DeletePersonalAccessTokenRequest{Name: "forever"})))
		c.next++
		return c
	}())

	// A token of an inactive user: UserInactive.
	c.ok(c.meta(iggy.OperationCreateUser, &iggy.CreateUserRequest{Username: "bob", Password: "secret", Status: iggy.UserStatusActive}))
	bob := dial(t, s)
	bob.login("bob", "secret")
	var resp iggy.CreatePersonalAccessTokenResponse
	if _, err := resp.DecodeFrom(bob.ok(bob.meta(iggy.OperationCreatePersonalAccessToken, &iggy.CreatePersonalAccessTokenRequest{Name: "b"}))); err != nil {
		t.Fatal(err)
	}
	st := iggy.UserStatusInactive
	c.ok(c.meta(iggy.OperationUpdateUser, &iggy.UpdateUserRequest{UserID: nameID("bob"), Status: &st}))
	if r := patLogin(resp.Token); r.evicted == nil || r.evicted.Reason != iggy.EvictionReasonUserInactive {
		t.Fatalf("inactive user's token: %+v", r.evicted)
	}
}
