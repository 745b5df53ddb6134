package proxy

// CloseReason says why a client connection was closed. It is logged as
// close_reason in OnClose and passed to Metrics.ConnClosed. The first
// reason recorded for a connection wins.
type CloseReason uint32

// Close reasons, in the order a connection's life can meet them.
const (
	// CloseUnknown: no reason recorded (never logged; OnClose classifies).
	CloseUnknown CloseReason = iota
	// CloseClientClosed: the client closed its end (EOF).
	CloseClientClosed
	// CloseIOError: a socket read or write failed (reset, broken pipe).
	CloseIOError
	// CloseTooManyConnections: limits.max_connections was reached.
	CloseTooManyConnections
	// CloseFrameTooLarge: a size prefix exceeded limits.max_frame_bytes.
	CloseFrameTooLarge
	// CloseBadHeader: the request header was truncated or malformed.
	CloseBadHeader
	// CloseUnsupportedAPI: an API key or version we do not serve (other
	// than ApiVersions, which gets the KIP-511 answer instead).
	CloseUnsupportedAPI
	// CloseDecodeError: kmsg could not decode the request body.
	CloseDecodeError
	// CloseHandlerError: the handler returned an error or panicked, or its
	// response could not be encoded.
	CloseHandlerError
	// CloseInboundOverflow: limits.max_inbound_bytes were buffered while
	// reading was paused.
	CloseInboundOverflow
	// CloseIdleTimeout: nothing in flight and no traffic for
	// limits.idle_timeout.
	CloseIdleTimeout
	// CloseShutdown: the server is shutting down.
	CloseShutdown
	// CloseAuthentication: a request the connection's SASL state does not
	// admit (before authentication, after a failed one, past the session
	// lifetime).
	CloseAuthentication
	// CloseInternal: an internal invariant failed (a bug; logged at error).
	CloseInternal
	// ClosePanic: decoding the request, its handler or encoding its
	// response panicked (a bug; the stack is logged at error). Counted in
	// kafka_iggy_connections_closed_total{reason="panic"}.
	ClosePanic

	numCloseReasons
)

var closeReasonNames = [numCloseReasons]string{
	CloseUnknown:            "unknown",
	CloseClientClosed:       "client_closed",
	CloseIOError:            "io_error",
	CloseTooManyConnections: "too_many_connections",
	CloseFrameTooLarge:      "frame_too_large",
	CloseBadHeader:          "bad_header",
	CloseUnsupportedAPI:     "unsupported_api",
	CloseDecodeError:        "decode_error",
	CloseHandlerError:       "handler_error",
	CloseInboundOverflow:    "inbound_overflow",
	CloseIdleTimeout:        "idle_timeout",
	CloseShutdown:           "shutdown",
	CloseAuthentication:     "authentication",
	CloseInternal:           "internal_error",
	ClosePanic:              "panic",
}

// String returns the snake_case name logged as close_reason.
func (r CloseReason) String() string {
	if r < numCloseReasons {
		return closeReasonNames[r]
	}
	return "unknown"
}

// isProtocolError reports reasons caused by what a client sent, logged at
// warn level (the others are routine and logged at debug or info).
func (r CloseReason) isProtocolError() bool {
	switch r {
	case CloseFrameTooLarge, CloseBadHeader, CloseUnsupportedAPI, CloseDecodeError, CloseInboundOverflow, CloseAuthentication:
		return true
	}
	return false
}
