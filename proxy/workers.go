package proxy

import (
	"fmt"
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
	}
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
	if err := rq.Msg.ReadFrom(j.frame.B[j.bodyOff:]); err != nil {
		s.metrics.Request(rq.Key, rq.Version, time.Since(rq.Received), OutcomeDecodeError)
		cs.closeWith(reqClose(CloseDecodeError, rq.Key, rq.Version, rq.CorrID, err))
		s.putJob(j)
		cs.complete(seq, reply{})
		return
	}
	resp, err := s.dispatch(cs, rq)
	if err == nil && resp != nil {
		cs.muteFor(resp) // client-quota throttle, before the reply goes out
	}
	var out reply
	if err == nil && resp != nil {
		out, err = s.encode(rq, resp)
	}
	if err != nil {
		s.metrics.Request(rq.Key, rq.Version, time.Since(rq.Received), OutcomeHandlerError)
		if cs.ctx.Err() != nil {
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
	s.putJob(j) // after encoding: the response may alias the request
	cs.complete(seq, out)
}

// dispatch calls the Dispatcher, turning a panic into a handler error.
func (s *Server) dispatch(cs *conn, rq *bridge.Request) (resp kmsg.Response, err error) {
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, fmt.Errorf("handler panic: %v", p)
		}
	}()
	return s.d.Dispatch(cs.ctx, rq)
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
