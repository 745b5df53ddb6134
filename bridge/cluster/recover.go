package cluster

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
)

// Bounds of the peer listener (constants for now; see docs/OPERATIONS.md
// "One Kafka group across the sidecars of a deployment").
const (
	// peerMaxConns caps the peer connections open at once: more are
	// refused (close_reason too_many_connections). Sidecars of one
	// deployment keep one connection to each owner.
	peerMaxConns = 256
	// peerMaxInflight caps the calls of one peer connection served at
	// once (Kafka's queued.max.requests, 500): past it the connection is
	// not read until one ends, instead of a goroutine per frame.
	peerMaxInflight = 500
)

// errPeerPanic marks a peer call whose handler panicked.
var errPeerPanic = errors.New("cluster: peer handler panicked")

// safeHandle serves one peer call, turning a panic in its handler into an
// error (logged with the stack): the peer connection closes, so the
// caller's call fails, and the process lives.
func (s *linkServer) safeHandle(ctx context.Context, kind uint8, body []byte) (resp []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error().Uint8("peer_kind", kind).Str("panic", fmt.Sprint(p)).Bytes("stack", debug.Stack()).
				Msg("peer call panicked; closing its connection")
			resp, err = nil, fmt.Errorf("%w: %v", errPeerPanic, p)
		}
	}()
	return s.handle(ctx, kind, body)
}

// closeReason is how a failed peer call closes its connection.
func closeReason(err error) string {
	if errors.Is(err, errPeerPanic) {
		return "handler_panic"
	}
	return "frame_malformed"
}
