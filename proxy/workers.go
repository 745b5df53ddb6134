package proxy

import (
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"

	"github.com/kafka-iggy/kafka-iggy/bridge"
)

// job is one request on its way through a worker. Jobs are pooled.
type job struct {
	cs      *conn
	seq     uint64
	frame   *bytebufferpool.ByteBuffer // request frame, size prefix excluded
	held    int64                      // memory budget of the frame (and its produce copy)
	bodyOff int
	rq      bridge.Request
}

// serve runs a connection's requests on a worker, one after the other in
// the order they were read, starting with j.
func (s *Server) serve(j *job) {
	for j != nil {
		cs := j.cs
		s.serveOne(j)
		cs.mu.Lock()
		if len(cs.queue) > 0 {
			j = cs.queue[0]
			cs.queue[0] = nil
			cs.queue = cs.queue[1:]
		} else {
			cs.running = false
			j = nil
		}
		cs.mu.Unlock()
		if j != nil && s.holdMuted(j) {
			return
		}
	}
}

// holdMuted keeps j, the next request of a connection a client-quota
// throttle muted (muteFor), until the mute ends or the connection closes,
// and reports whether it did: requests the client pipelined before the
// throttle are served after it, as Kafka reads nothing from a muted
// channel. The worker goes back to the pool; a timer's goroutine (one per
// muted connection at most: its queue runs one request at a time) serves
// the connection's queue from j on.
func (s *Server) holdMuted(j *job) bool {
	wait := time.Duration(j.cs.mutedUntil.Load() - time.Now().UnixNano())
	if wait <= 0 {
		return false
	}
	go func() {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-j.cs.ctx.Done():
			t.Stop()
		}
		s.serve(j)
	}()
	return true
}

// serveOne runs one request: decode, dispatch, encode, complete.
func (s *Server) serveOne(j *job) {
	cs, rq := j.cs, &j.rq
	seq := j.seq
	if cs.ctx.Err() != nil && !s.d.Completes(rq.Key) { // connection already gone
		s.putJob(j)
		cs.complete(seq, reply{})
		return
	}
	if cs.sasl != nil { // before authentication only ApiVersions and SASL, unanswered otherwise
		if err := cs.sasl.Gate(rq.Key, time.Now()); err != nil {
			cs.closeWith(reqClose(CloseAuthentication, rq.Key, rq.Version, rq.CorrID, err))
			s.putJob(j)
			cs.complete(seq, reply{})
			return
		}
	}
	if err := s.decode(cs, rq, j.frame.B[j.bodyOff:]); err != nil {
		s.metrics.Request(rq.Key, rq.Version, time.Since(rq.Received), OutcomeDecodeError)
		cs.closeWith(reqClose(closeReasonOf(err, CloseDecodeError), rq.Key, rq.Version, rq.CorrID, err))
		s.putJob(j)
		cs.complete(seq, reply{})
		return
	}
	if av, ok := rq.Msg.(*kmsg.ApiVersionsRequest); ok && rq.Version >= 3 {
		cs.software.Store(&[2]string{av.ClientSoftwareName, av.ClientSoftwareVersion})
	}
	rq.Software = cs.software.Load()
	resp, err := s.dispatch(cs, rq)
	if err == nil && resp != nil {
		cs.muteFor(resp) // client-quota throttle, before the reply goes out
	}
	var out reply
	if err == nil && resp != nil {
		out, err = s.safeEncode(cs, rq, resp)
	}
	if err != nil {
		s.metrics.Request(rq.Key, rq.Version, time.Since(rq.Received), OutcomeHandlerError)
		if errors.Is(err, errPanic) {
			cs.closeWith(reqClose(ClosePanic, rq.Key, rq.Version, rq.CorrID, err))
		} else if cs.ctx.Err() != nil {
			// The connection closed (or the drain deadline passed) under
			// the handler: its failure is a consequence, not the cause.
			s.log.Debug().Uint64("conn_id", cs.id).Int16("api_key", rq.Key).Int16("api_version", rq.Version).
				Int32("corr_id", rq.CorrID).Err(err).Msg("handler ended after its connection closed")
		} else {
			cs.closeWith(reqClose(CloseHandlerError, rq.Key, rq.Version, rq.CorrID, err))
		}
		s.putJob(j)
		cs.complete(seq, reply{})
		return
	}
	outcome := OutcomeOK
	switch {
	case out.buf == nil:
		outcome = OutcomeNoResponse
	case rq.ErrorCodes > 0:
		outcome = OutcomeErrorCode
	}
	latency := time.Since(rq.Received)
	s.metrics.Request(rq.Key, rq.Version, latency, outcome)
	if ev := s.log.Debug(); ev.Enabled() {
		ev = ev.Uint64("conn_id", cs.id).Int16("api_key", rq.Key).Int16("api_version", rq.Version).
			Int32("corr_id", rq.CorrID).Dur("latency", latency).Str("outcome", outcome.String())
		if rq.ErrorCodes > 0 {
			ev = ev.Int16("error_code", rq.FirstErrorCode).Int32("error_codes", rq.ErrorCodes)
		}
		ev.Msg("request served")
	}
	// The request's budget stays held until its reply is written (or
	// dropped): the encoded response is part of what it made us hold.
	out.held, j.held = j.held, 0
	s.putJob(j) // after encoding: the response may alias the request
	cs.complete(seq, out)
}

// errPanic marks the error a recovered panic became: the connection
// closes with ClosePanic.
var errPanic = errors.New("panic")

// closeReasonOf is ClosePanic for a recovered panic, else def.
func closeReasonOf(err error, def CloseReason) CloseReason {
	if errors.Is(err, errPanic) {
		return ClosePanic
	}
	return def
}

// recovered turns a panic recovered while serving rq (where: "decode",
// "handler", "encode") into an error wrapping errPanic, and logs it with
// its stack: one bad request closes its connection, never the process.
func (s *Server) recovered(cs *conn, rq *bridge.Request, where string, p any) error {
	s.log.Error().Uint64("conn_id", cs.id).Int16("api_key", rq.Key).Int16("api_version", rq.Version).
		Int32("corr_id", rq.CorrID).Str("panic_in", where).Str("panic", fmt.Sprint(p)).
		Bytes("stack", debug.Stack()).Msg("request panicked; closing its connection")
	return fmt.Errorf("%s %w: %v", where, errPanic, p)
}

// decode reads the request body into rq.Msg, turning a panic into an
// error.
func (s *Server) decode(cs *conn, rq *bridge.Request, body []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = s.recovered(cs, rq, "decode", p)
		}
	}()
	return rq.Msg.ReadFrom(body)
}

// dispatch calls the Dispatcher, turning a panic into an error.
func (s *Server) dispatch(cs *conn, rq *bridge.Request) (resp kmsg.Response, err error) {
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, s.recovered(cs, rq, "handler", p)
		}
	}()
	return s.d.Dispatch(cs.ctx, rq)
}

// safeEncode encodes resp, turning a panic into an error (the reply
// buffer is left to the collector).
func (s *Server) safeEncode(cs *conn, rq *bridge.Request, resp kmsg.Response) (out reply, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = reply{}, s.recovered(cs, rq, "encode", p)
		}
	}()
	return s.encode(rq, resp)
}

func (s *Server) getJob() *job {
	j, _ := s.jobPool.Get().(*job)
	if j == nil {
		j = new(job)
	}
	return j
}

func (s *Server) putJob(j *job) {
	if j.frame != nil {
		s.putFrame(j.frame)
	}
	s.budget.Release(j.held)
	*j = job{}
	s.jobPool.Put(j)
}
