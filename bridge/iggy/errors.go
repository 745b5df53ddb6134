package iggy

import (
	"context"
	"errors"
	"strings"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Errors of the client itself. Iggy's own error codes reach callers as
// icodec.Status values (directly, inside *icodec.ResultError or mapped from
// an *icodec.EvictionError), so errors.Is(err, icodec.StatusTopicIDNotFound)
// and the like work on every error this package returns.
var (
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("iggy: client closed")
	// ErrTimeout: a deadline passed — the caller's context, or the request
	// deadline on the wire (the session is then dropped). An *Error with
	// Sent false says the request never reached the server.
	ErrTimeout = errors.New("iggy: timed out")
	// ErrNotSent matches every *Error whose request was never written to a
	// socket: the caller may retry without risking a duplicate.
	ErrNotSent = errors.New("iggy: request not sent")
	// ErrSessionLost: the connection failed or the session was evicted while
	// the request was in flight; its outcome is unknown.
	ErrSessionLost = errors.New("iggy: session lost")
	// ErrProtocol: the server's reply broke the protocol (out-of-sync
	// request number, malformed frame or body).
	ErrProtocol = errors.New("iggy: protocol error")
	// ErrNotFound: a lookup found nothing (GET_TOPIC and the other reads that
	// answer an unknown target with an empty body, §3.0).
	ErrNotFound = errors.New("iggy: not found")
	// ErrMessageTooLarge: one message exceeds MaxMessageSize.
	ErrMessageTooLarge = errors.New("iggy: message too large for one Iggy frame")
	// ErrNoMessages: Send was given no messages.
	ErrNoMessages = errors.New("iggy: no messages to send")
	// ErrMessagesSent: a Messages was used after it was handed to Send.
	ErrMessagesSent = errors.New("iggy: messages already handed to Send")
	// ErrUnsupported: Do was asked for a session command (login, logout),
	// which the client manages itself.
	ErrUnsupported = errors.New("iggy: command not supported through Do")
)

// Error is the error of a failed call: the command, whether the request
// reached the socket, and the cause. errors.Is(err, ErrNotSent) reports
// Sent == false; Unwrap gives the cause (a Status, ErrTimeout, ...).
type Error struct {
	Op   string // dotted command name, e.g. message.send
	Sent bool   // the request was written (its outcome may be unknown)
	Err  error  // the cause
}

// Error describes the failure.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("iggy: ")
	b.WriteString(e.Op)
	if !e.Sent {
		b.WriteString(" (not sent)")
	}
	b.WriteString(": ")
	if e.Err != nil {
		b.WriteString(strings.TrimPrefix(e.Err.Error(), "iggy: "))
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrNotSent) true for requests never written.
func (e *Error) Is(target error) bool { return target == ErrNotSent && !e.Sent }

// Retriable reports whether the same call may succeed when tried again:
// timeouts, lost sessions, protocol errors (the session is replaced),
// requests that were not sent for want of a session, evictions and the
// codes of class retriable in schema/errors.yaml (transient or session
// trouble: 8 Disconnected, 9, 30 StaleClient, 31, 40 Unauthenticated, 57/58
// transient). Everything else (class unauthorized — even when it came as an
// eviction —, incompatible protocol, not-found, validation, ErrClosed) is
// not retriable. A retried send may be stored twice unless
// errors.Is(err, ErrNotSent).
func Retriable(err error) bool {
	switch {
	case err == nil, errors.Is(err, ErrClosed), errors.Is(err, context.Canceled),
		IsUnauthorized(err), errors.Is(err, icodec.StatusIncompatibleProtocolVersion):
		return false
	case errors.Is(err, ErrTimeout), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, ErrSessionLost), errors.Is(err, ErrProtocol),
		errors.Is(err, icodec.ErrEmptySendReply):
		return true
	}
	if st, ok := status(err); ok {
		return st.Class() == icodec.StatusClassRetriable
	}
	// A request that never left for a reason other than the above (for
	// instance no session was up) can be retried.
	return errors.Is(err, ErrNotSent)
}

// IsTimeout reports whether err is a passed deadline (the caller's or the
// request's): the Kafka layer answers REQUEST_TIMED_OUT.
func IsTimeout(err error) bool {
	return errors.Is(err, ErrTimeout) || errors.Is(err, context.DeadlineExceeded)
}

// IsNotFound reports whether err says the stream, topic or partition does
// not exist: ErrNotFound, or a code of class not_found in
// schema/errors.yaml (20 ResourceNotFound, what SEND_MESSAGES and the
// offset writes return; the stream, topic and partition id and name
// not-found codes).
func IsNotFound(err error) bool {
	if errors.Is(err, ErrNotFound) {
		return true
	}
	st, ok := status(err)
	return ok && st.Class() == icodec.StatusClassNotFound
}

// IsUnauthorized reports whether err is an authorization or authentication
// refusal that a retry does not fix: a code of class unauthorized in
// schema/errors.yaml (41 Unauthorized, 42 InvalidCredentials, 53
// InvalidPersonalAccessToken).
func IsUnauthorized(err error) bool {
	st, ok := status(err)
	return ok && st.Class() == icodec.StatusClassUnauthorized
}

// status returns the Iggy error code err carries.
func status(err error) (icodec.Status, bool) {
	var st icodec.Status
	return st, errors.As(err, &st)
}

// ctxCause is the cause recorded when the caller's context ends: a passed
// deadline matches ErrTimeout and context.DeadlineExceeded.
func ctxCause(ctx context.Context) error {
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) {
		return errors.Join(ErrTimeout, err)
	}
	if err == nil {
		return ErrTimeout
	}
	return err
}
