package iggy

import (
	"context"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// follower is a scripted cluster node that logs in, names leader (host:port)
// as the cluster's leader and itself a follower, and counts what it gets.
func follower(t *testing.T, leader func() string, other *atomic.Int32) *scriptServer {
	return newScriptServer(t, nil, basic(func(sc *scriptConn, h icodec.RequestHeader, body []byte) [][]byte {
		if h.Operation == icodec.OperationNonReplicated && h.Code == icodec.CodeGetClusterMetadata {
			host, port, _ := net.SplitHostPort(leader())
			p, _ := strconv.Atoi(port)
			md := icodec.GetClusterMetadataResponse{Name: "c", Nodes: []icodec.ClusterNode{
				{Name: "follower", IP: "127.0.0.1", TCPPort: 1, Role: icodec.NodeRoleFollower, Status: icodec.NodeStatusHealthy},
				{Name: "leader", IP: host, TCPPort: uint16(p), Role: icodec.NodeRoleLeader, Status: icodec.NodeStatusHealthy},
			}}
			return [][]byte{reply(h, 0, md.AppendTo(nil))}
		}
		other.Add(1)
		return [][]byte{reply(h, icodec.StatusFeatureUnavailable, nil)}
	}))
}

// TestFollowLeader: a session that logs in on a follower moves to the
// leader GET_CLUSTER_METADATA names and does its work there; the follower
// sees only the login and the metadata request.
func TestFollowLeader(t *testing.T) {
	leader := startEmbeddedProtocol(t, "0.11")
	var other atomic.Int32
	f := follower(t, func() string { return leader.Addr().String() }, &other)
	cfg := testConfig(f.addr())
	cfg.FollowLeader = true
	c := startClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.CreateStream(ctx, "led"); err != nil {
		t.Fatalf("create stream through the leader: %v", err)
	}
	direct := startClient(t, testConfig(leader.Addr().String()))
	var sd icodec.StreamDetails
	if err := direct.Do(ctx, &icodec.GetStreamRequest{StreamID: icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte("led")}}, &sd); err != nil || sd.Name != "led" {
		t.Fatalf("the stream is not on the leader: %+v %v", sd, err)
	}
	if n := other.Load(); n != 0 {
		t.Fatalf("the follower got %d requests besides login and metadata", n)
	}
}

// TestFollowLeaderUnreachable: a leader that cannot be reached leaves the
// session on the follower it came from (logged in again there).
func TestFollowLeaderUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	_ = ln.Close()
	var other atomic.Int32
	f := follower(t, func() string { return dead }, &other)
	cfg := testConfig(f.addr())
	cfg.FollowLeader = true
	c := startClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("ping on the follower: %v", err)
	}
	if got := f.accepts.Load(); got != 2 {
		t.Fatalf("follower connections %d, want 2 (first login, then back after the failed hop)", got)
	}
}

// TestFollowLeaderHopsBounded: two nodes that each name the other as leader
// stop bouncing a session after maxLeaderHops moves.
func TestFollowLeaderHopsBounded(t *testing.T) {
	var a, b *scriptServer
	var other atomic.Int32
	a = follower(t, func() string { return b.addr() }, &other)
	b = follower(t, func() string { return a.addr() }, &other)
	cfg := testConfig(a.addr())
	cfg.FollowLeader = true
	c := startClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if got := a.accepts.Load() + b.accepts.Load(); got != 1+maxLeaderHops {
		t.Fatalf("%d logins, want %d", got, 1+maxLeaderHops)
	}
}
