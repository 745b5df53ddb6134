package embedded

// A minimal lockstep Iggy client for the tests: real TCP, frames built and
// read with the codec only.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// replyTimeout bounds every read of a test client: a server that stays
// silent fails the read instead of hanging the test.
const replyTimeout = 5 * time.Second

// silenceWindow is how long a test waits to conclude that no reply comes.
const silenceWindow = 300 * time.Millisecond

func testLogger(t testing.TB) zerolog.Logger {
	if os.Getenv("EMBEDDED_TEST_LOG") != "" {
		return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel)
	}
	return zerolog.Nop()
}

// startServer starts a server on a free loopback port with cfg adjusted by
// mutate; it is closed when the test ends.
func startServer(t testing.TB, mutate func(*Config)) *Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.ServerVersion = "0.9.0-edge.5"
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := New(cfg, testLogger(t))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

var clientSeq atomic.Uint64

// tclient is a lockstep test client.
type tclient struct {
	t       testing.TB
	nc      net.Conn
	br      *bufio.Reader
	client  wire.U128
	session uint64
	next    uint64 // request number of the next metadata request
	user    uint32
}

func dial(t testing.TB, s *Server) *tclient {
	t.Helper()
	nc, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return &tclient{t: t, nc: nc, br: bufio.NewReader(nc), client: wire.U128{Lo: 0x1000 + clientSeq.Add(1), Hi: 0xC0FFEE}, next: 1}
}

// reply is one frame received from the server.
type reply struct {
	frame   []byte
	hdr     iggy.ReplyHeader
	evicted *iggy.EvictionHeader
	body    []byte
}

// status is the reply's status channel.
func (r reply) status() iggy.Status { return r.hdr.Status }

// result parses the result section: the business code (0 = success) and
// the payload.
func (r reply) result(t testing.TB) (iggy.Status, []byte) {
	t.Helper()
	payload, err := iggy.ParseResult(r.body)
	var re *iggy.ResultError
	switch {
	case errors.As(err, &re):
		return re.Code, nil
	case err != nil:
		t.Fatalf("bad result section %x: %v", r.body, err)
	}
	return 0, payload
}

// writeRaw writes bytes as they are.
func (c *tclient) writeRaw(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// frame builds a request frame.
func frame(h *iggy.RequestHeader, body []byte) []byte {
	out := h.AppendTo(make([]byte, 0, iggy.HeaderSize+len(body)), len(body))
	return append(out, body...)
}

// recv reads one frame.
func (c *tclient) recv() reply {
	c.t.Helper()
	r, err := c.tryRecv(replyTimeout)
	if err != nil {
		c.t.Fatalf("recv: %v", err)
	}
	return r
}

func (c *tclient) tryRecv(timeout time.Duration) (reply, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(timeout))
	f, err := iggy.ReadFrame(c.br, nil, iggy.LimitMaxFrameSize)
	if err != nil {
		return reply{}, err
	}
	r := reply{frame: f, body: f[iggy.HeaderSize:]}
	switch iggy.HeaderCommand(f[iggy.ReplyHeaderCommandOffset]) {
	case iggy.HeaderCommandEviction:
		r.evicted = new(iggy.EvictionHeader)
		if _, err := r.evicted.DecodeFrom(f); err != nil {
			return r, err
		}
	case iggy.HeaderCommandReply:
		if _, err := r.hdr.DecodeFrom(f); err != nil {
			return r, err
		}
	default:
		return r, errors.New("unexpected command")
	}
	return r, nil
}

// expectSilence asserts that nothing arrives within silenceWindow.
func (c *tclient) expectSilence() {
	c.t.Helper()
	r, err := c.tryRecv(silenceWindow)
	if err == nil {
		c.t.Fatalf("expected no reply, got %+v (evicted %+v)", r.hdr, r.evicted)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		c.t.Fatalf("expected a read timeout, got %v", err)
	}
}

// expectClosed asserts that the server closed the connection.
func (c *tclient) expectClosed() {
	c.t.Helper()
	_, err := c.tryRecv(replyTimeout)
	if err == nil || !(errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isNetErr(err) && !isTimeout(err)) {
		c.t.Fatalf("expected the connection to be closed, got %v", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func (c *tclient) header(op iggy.Operation, request uint64) iggy.RequestHeader {
	return iggy.RequestHeader{Client: c.client, Request: request, Operation: op, Session: c.session}
}

// roundTrip sends a request and reads its answer.
func (c *tclient) roundTrip(h iggy.RequestHeader, body []byte) reply {
	c.t.Helper()
	c.writeRaw(frame(&h, body))
	return c.recv()
}

func encode(m encoder) []byte {
	if m == nil {
		return nil
	}
	return m.AppendTo(nil)
}

// call sends a NonReplicated command (op 2) with the current request
// number.
func (c *tclient) call(code uint32, body encoder) reply {
	c.t.Helper()
	h := c.header(iggy.OperationNonReplicated, c.next)
	h.Code = code
	return c.roundTrip(h, encode(body))
}

// meta sends a metadata (or partition) operation with the next request
// number, stamping the request checksum like the Rust SDK.
func (c *tclient) meta(op iggy.Operation, body encoder) reply {
	c.t.Helper()
	b := encode(body)
	h := c.header(op, c.next)
	h.RequestChecksum = wire.U128{Lo: iggy.XXH3(b)}
	c.next++
	return c.roundTrip(h, b)
}

// ok asserts status 0 and result 0 and returns the payload.
func (c *tclient) ok(r reply) []byte {
	c.t.Helper()
	if r.evicted != nil {
		c.t.Fatalf("evicted with reason %d", r.evicted.Reason)
	}
	if r.status() != 0 {
		c.t.Fatalf("status %d (%v)", r.status(), r.status())
	}
	if r.hdr.Operation.ResultFramed() || r.hdr.Operation == iggy.OperationRegister && len(r.body) > 0 {
		code, payload := r.result(c.t)
		if code != 0 {
			c.t.Fatalf("result %d (%v)", code, code)
		}
		return payload
	}
	return r.body
}

// loginBody encodes LOGIN_REGISTER.
func loginBody(user, pass string) []byte {
	return encode(&iggy.LoginRegisterRequest{
		VersionInfo: iggy.ClientVersionInfo{ProtocolVersion: uint32(iggy.Protocol011), SdkName: "go-test", SdkVersion: "1"},
		Username:    user, Password: pass,
	})
}

// login logs in with user/password and binds the session.
func (c *tclient) login(user, pass string) {
	c.t.Helper()
	r := c.roundTrip(iggy.RequestHeader{Client: c.client, Operation: iggy.OperationRegister}, loginBody(user, pass))
	c.bind(r)
}

func (c *tclient) bind(r reply) {
	c.t.Helper()
	payload := c.ok(r)
	var ls iggy.LoginSession
	if _, err := ls.DecodeFrom(payload); err != nil {
		c.t.Fatalf("login reply: %v", err)
	}
	c.session, c.user, c.next = ls.Session, ls.UserID, 1
}

// root dials and logs in as iggy/iggy.
func root(t testing.TB, s *Server) *tclient {
	c := dial(t, s)
	c.login("iggy", "iggy")
	return c
}

func numID(v uint32) iggy.Identifier {
	return iggy.Identifier{Kind: iggy.IdentifierKindNumeric, Value: binary.LittleEndian.AppendUint32(nil, v)}
}

func nameID(s string) iggy.Identifier {
	return iggy.Identifier{Kind: iggy.IdentifierKindString, Value: []byte(s)}
}

func (c *tclient) createStream(name string) uint32 {
	c.t.Helper()
	var sr iggy.StreamResponse
	if _, err := sr.DecodeFrom(c.ok(c.meta(iggy.OperationCreateStream, &iggy.CreateStreamRequest{Name: name}))); err != nil {
		c.t.Fatal(err)
	}
	return sr.ID
}

func (c *tclient) createTopic(stream iggy.Identifier, name string, partitions uint32, opts iggy.Options) iggy.TopicDetails {
	c.t.Helper()
	var td iggy.TopicDetails
	payload := c.ok(c.meta(iggy.OperationCreateTopic, &iggy.CreateTopicRequest{StreamID: stream, PartitionsCount: partitions, Name: name, Options: opts}))
	if _, err := td.DecodeFrom(payload); err != nil {
		c.t.Fatal(err)
	}
	return td
}

// batch builds a batch record of the payloads (origin timestamps 1000 + i).
func batch(t testing.TB, payloads ...string) []byte {
	t.Helper()
	var b iggy.BatchBuilder
	for i, p := range payloads {
		if err := b.Add(wire.U128{Lo: uint64(i + 1)}, 1000+uint64(i), []byte(p), nil); err != nil {
			t.Fatal(err)
		}
	}
	out, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func toPartition(id uint32) iggy.Partitioning {
	return iggy.Partitioning{Kind: iggy.PartitioningKindPartitionID, Value: binary.LittleEndian.AppendUint32(nil, id)}
}

// send sends payloads to a partition and returns the confirmation.
func (c *tclient) send(stream, topic iggy.Identifier, partition uint32, payloads ...string) iggy.SendConfirmation {
	c.t.Helper()
	r := c.meta(iggy.OperationSendMessages, &iggy.SendMessagesRequest{
		StreamID: stream, TopicID: topic, Partitioning: toPartition(partition),
		MessagesCount: uint32(len(payloads)), Batch: batch(c.t, payloads...),
	})
	var resp iggy.SendMessagesResponse
	if _, err := resp.DecodeFrom(c.ok(r)); err != nil {
		c.t.Fatal(err)
	}
	if len(resp.Confirmations) != 1 {
		c.t.Fatalf("%d confirmations", len(resp.Confirmations))
	}
	return resp.Confirmations[0]
}

// polled is a decoded poll reply.
type polled struct {
	partition uint32
	current   uint64
	count     uint32
	offsets   []uint64
	payloads  []string
}

func decodePoll(t testing.TB, body []byte) polled {
	t.Helper()
	var resp iggy.PollMessagesResponse
	if _, err := resp.DecodeFrom(body); err != nil {
		t.Fatalf("poll reply: %v", err)
	}
	p := polled{partition: resp.PartitionID, current: resp.CurrentOffset, count: resp.Count}
	it := iggy.NewMessageIter(resp.Batches)
	for it.Next() {
		if !it.ChecksumOK() {
			t.Fatalf("message checksum mismatch at offset %d", it.Message().Offset)
		}
		m := it.Message()
		p.offsets = append(p.offsets, m.Offset)
		p.payloads = append(p.payloads, string(m.Payload))
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if uint32(len(p.offsets)) != p.count {
		t.Fatalf("count field %d, %d messages", p.count, len(p.offsets))
	}
	return p
}

func pollReq(consumer iggy.Consumer, stream, topic iggy.Identifier, partition *uint32, kind iggy.PollingKind, value uint64, count uint32, auto bool) *iggy.PollMessagesRequest {
	req := &iggy.PollMessagesRequest{Consumer: consumer, StreamID: stream, TopicID: topic,
		Strategy: iggy.PollingStrategy{Kind: kind, Value: value}, Count: count, AutoCommit: auto}
	if partition != nil {
		req.PartitionID = iggy.OptionalPartition{Present: true, PartitionID: *partition}
	}
	return req
}

func (c *tclient) poll(req *iggy.PollMessagesRequest) polled {
	c.t.Helper()
	return decodePoll(c.t, c.ok(c.call(iggy.CodePollMessages, req)))
}

func single(id uint32) iggy.Consumer {
	return iggy.Consumer{Kind: iggy.ConsumerKindConsumer, ID: numID(id)}
}

func ptr[T any](v T) *T { return &v }
