package embedded

// What a handler works with and answers with: the request being served, its
// outcome, and the helpers that build an outcome or decode a body.

import (
	"errors"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// request is one request being served.
type request struct {
	h    iggy.RequestHeader
	body []byte
	sess *session // the bound session (nil before login)
	// dirty is set by a metadata handler that changed persisted state.
	dirty bool
}

// outcome is how a request is answered.
type outcome struct {
	status    iggy.Status    // status channel (§1.6); the body is then empty
	body      []byte         // whole reply body, result section included
	op        iggy.Operation // reply operation; 0 echoes the request's
	logOp     uint64         // reply header "op" (informational)
	commit    uint64         // reply header "commit" (informational)
	anonymous bool           // put the connection number in the reply's client field
	evicted   bool
	evict     iggy.EvictionReason
	// uncommitted answers a metadata-numbered request without committing
	// it: the request number is not consumed and the reply not cached
	// (DELETE_SEGMENTS with an undecodable body).
	uncommitted bool
	silent      bool   // no reply at all (§1.9)
	why         string // for the log when silent
}

func statusOf(code iggy.Status) outcome { return outcome{status: code} }

func evictWith(reason iggy.EvictionReason) outcome { return outcome{evicted: true, evict: reason} }

func silence(why string) outcome { return outcome{silent: true, why: why} }

// resultErr is a committed business rejection in the result section.
func resultErr(code iggy.Status) outcome { return outcome{body: iggy.AppendResultError(nil, code)} }

// encoder is a generated body type.
type encoder interface {
	EncodedSize() int
	AppendTo(dst []byte) []byte
}

// okResult is a successful result-framed reply with an optional payload.
func (c *conn) okResult(payload encoder) outcome {
	body := iggy.AppendResultOK(c.out[:0])
	if payload != nil {
		body = c.s.proto.Outgoing(payload).AppendTo(body)
	}
	c.out = body
	return outcome{body: body}
}

// okBody is a successful reply whose body is payload (not result-framed).
func (c *conn) okBody(payload encoder) outcome {
	if payload == nil {
		return outcome{}
	}
	c.out = c.s.proto.Outgoing(payload).AppendTo(c.out[:0])
	return outcome{body: c.out}
}

// malformed answers a request the real server drops without a reply: silent
// unless Config.ReplyToMalformed, then with status code.
func (s *Server) malformed(code iggy.Status, why string) outcome {
	if s.cfg.ReplyToMalformed {
		return statusOf(code)
	}
	return silence(why)
}

// decodeBody decodes a request body into m.
func decodeBody(m interface{ DecodeFrom([]byte) (int, error) }, body []byte) error {
	_, err := m.DecodeFrom(body)
	return err
}

// decodeField reports whether err is a decode error of the named top-level
// field.
func decodeField(err error, field string) bool {
	var de *wire.DecodeError
	return errors.As(err, &de) && de.Field == field
}
