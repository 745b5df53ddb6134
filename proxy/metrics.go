package proxy

import "time"

// Outcome classifies a finished request for Metrics.Request.
type Outcome uint8

// Request outcomes.
const (
	// OutcomeOK: a response was encoded and queued for writing.
	OutcomeOK Outcome = iota
	// OutcomeNoResponse: the handler asked for no response (acks=0).
	OutcomeNoResponse
	// OutcomeUnsupportedVersion: ApiVersions at a version we do not serve,
	// answered with the KIP-511 fallback.
	OutcomeUnsupportedVersion
	// OutcomeDecodeError: the body did not decode; the connection closes.
	OutcomeDecodeError
	// OutcomeHandlerError: the handler failed; the connection closes.
	OutcomeHandlerError
	// OutcomeErrorCode: a response was queued, and it carries at least one
	// non-zero Kafka error code (a refused topic, an unknown partition, ...).
	OutcomeErrorCode
)

var outcomeNames = [...]string{"ok", "no_response", "unsupported_version", "decode_error", "handler_error", "error_code"}

// String returns the snake_case name of the outcome (a metric label).
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}

// Metrics receives the front door's measurements. Implementations must be
// safe for concurrent use, cheap and non-blocking: methods are called from
// event loops and workers on the hot path. The default is NopMetrics; the
// admin listener supplies a Prometheus-backed one through WithMetrics.
type Metrics interface {
	// ConnOpened counts an accepted connection (before the
	// max_connections check, so refused ones are opened then closed).
	ConnOpened()
	// ConnClosed counts a closed connection by reason.
	ConnClosed(reason CloseReason)
	// Request records one served request: key, version, the time from
	// taking its frame off the socket to queueing its reply, and outcome.
	Request(key, version int16, latency time.Duration, outcome Outcome)
	// BytesIn counts request bytes taken off sockets (prefixes included).
	BytesIn(n int)
	// BytesOut counts response bytes handed to sockets (prefixes included).
	BytesOut(n int)
}

// NopMetrics discards every measurement.
type NopMetrics struct{}

// ConnOpened does nothing.
func (NopMetrics) ConnOpened() {}

// ConnClosed does nothing.
func (NopMetrics) ConnClosed(CloseReason) {}

// Request does nothing.
func (NopMetrics) Request(int16, int16, time.Duration, Outcome) {}

// BytesIn does nothing.
func (NopMetrics) BytesIn(int) {}

// BytesOut does nothing.
func (NopMetrics) BytesOut(int) {}
