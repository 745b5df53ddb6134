package iggy

import "time"

// Metrics receives the client's measurements. Implementations must be safe
// for concurrent use, cheap and non-blocking: methods are called from the
// session goroutines between requests. The default is NopMetrics; the
// sidecar's admin listener supplies a Prometheus-backed one via WithMetrics.
type Metrics interface {
	// SessionsUp reports the number of logged-in sessions after a change.
	SessionsUp(n int)
	// Protocol reports the protocol generation ("0.11", "0.12") a session
	// logged in with; it changes only when iggy.protocol is auto and the
	// server's window asks for another.
	Protocol(label string)
	// Reconnect counts a session registered again after it was dropped.
	Reconnect()
	// InFlight reports the requests on the wire after a change (at most
	// one per session).
	InFlight(n int)
	// QueueDepth reports the partition writes queued on a lane (sends and
	// offset writes waiting for the lane's session) after it took work.
	QueueDepth(lane, depth int)
	// Batch records one SEND_MESSAGES that left: its messages, its message
	// bytes, and how many Send calls it carries (more than 1 = coalesced).
	Batch(messages, bytes, callers int)
	// Request records one finished request: the dotted command name (e.g.
	// message.send), its time on the wire, and its error (nil on success).
	Request(op string, latency time.Duration, err error)
}

// NopMetrics discards every measurement.
type NopMetrics struct{}

// SessionsUp does nothing.
func (NopMetrics) SessionsUp(int) {}

// Protocol does nothing.
func (NopMetrics) Protocol(string) {}

// Reconnect does nothing.
func (NopMetrics) Reconnect() {}

// InFlight does nothing.
func (NopMetrics) InFlight(int) {}

// QueueDepth does nothing.
func (NopMetrics) QueueDepth(int, int) {}

// Batch does nothing.
func (NopMetrics) Batch(int, int, int) {}

// Request does nothing.
func (NopMetrics) Request(string, time.Duration, error) {}
