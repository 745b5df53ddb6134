package cluster

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
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
