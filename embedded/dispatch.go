package embedded

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

// handler serves one command.
type handler struct {
	meta *iggy.CommandMeta
	// fn serves the request. For the metadata plane (and Logout and
	// DeleteSegments) it runs with Server.mu held; otherwise it takes the
	// locks it needs.
	fn func(c *conn, r *request) outcome
}

// handlerKey is a command code.
type handlerKey = uint32

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

// handlerTable builds the command dispatch table from iggy.Commands.
func (s *Server) handlerTable() map[handlerKey]*handler {
	fns := map[uint32]func(c *conn, r *request) outcome{
		iggy.CodeGetStats:                  s.getStats,
		iggy.CodeGetSnapshotFile:           s.getSnapshotFile,
		iggy.CodeGetClusterMetadata:        s.getClusterMetadata,
		iggy.CodeDescribeOptions:           s.describeOptions,
		iggy.CodeGetMe:                     s.getMe,
		iggy.CodeGetClient:                 s.getClient,
		iggy.CodeGetClients:                s.getClients,
		iggy.CodeGetUser:                   s.getUser,
		iggy.CodeGetUsers:                  s.getUsers,
		iggy.CodeCreateUser:                s.createUser,
		iggy.CodeDeleteUser:                s.deleteUser,
		iggy.CodeUpdateUser:                s.updateUser,
		iggy.CodeUpdatePermissions:         s.updatePermissions,
		iggy.CodeChangePassword:            s.changePassword,
		iggy.CodeLogoutUser:                s.logout,
		iggy.CodeGetPersonalAccessTokens:   s.getTokens,
		iggy.CodeCreatePersonalAccessToken: s.createToken,
		iggy.CodeDeletePersonalAccessToken: s.deleteToken,
		iggy.CodePollMessages:              s.pollMessages,
		iggy.CodeSendMessages:              s.sendMessages,
		iggy.CodeFlushUnsavedBuffer:        s.flushUnsavedBuffer,
		iggy.CodeGetConsumerOffset:         s.getConsumerOffset,
		iggy.CodeStoreConsumerOffset:       s.storeConsumerOffset,
		iggy.CodeDeleteConsumerOffset:      s.deleteConsumerOffset,
		iggy.CodeGetStream:                 s.getStream,
		iggy.CodeGetStreams:                s.getStreams,
		iggy.CodeCreateStream:              s.createStream,
		iggy.CodeDeleteStream:              s.deleteStream,
		iggy.CodeUpdateStream:              s.updateStream,
		iggy.CodePurgeStream:               s.purgeStream,
		iggy.CodeGetTopic:                  s.getTopic,
		iggy.CodeGetTopics:                 s.getTopics,
		iggy.CodeCreateTopic:               s.createTopic,
		iggy.CodeDeleteTopic:               s.deleteTopic,
		iggy.CodeUpdateTopic:               s.updateTopic,
		iggy.CodeUpdateResource:            s.updateResource,
		iggy.CodeGetPartitionRoute:         s.getPartitionRoute,
		iggy.CodePollMessagesDeferred:      s.pollMessagesDeferred,
		iggy.CodePurgeTopic:                s.purgeTopic,
		iggy.CodeCreatePartitions:          s.createPartitions,
		iggy.CodeDeletePartitions:          s.deletePartitions,
		iggy.CodeDeleteSegments:            s.deleteSegments,
		iggy.CodeGetConsumerGroup:          s.getConsumerGroup,
		iggy.CodeGetConsumerGroups:         s.getConsumerGroups,
		iggy.CodeCreateConsumerGroup:       s.createConsumerGroup,
		iggy.CodeDeleteConsumerGroup:       s.deleteConsumerGroup,
		iggy.CodeJoinConsumerGroup:         s.joinConsumerGroup,
		iggy.CodeLeaveConsumerGroup:        s.leaveConsumerGroup,
		iggy.CodeSyncConsumerGroup:         s.syncConsumerGroup,
	}
	t := make(map[handlerKey]*handler, len(fns))
	for i := range iggy.Commands {
		m := &iggy.Commands[i]
		fn, ok := fns[m.Code]
		if !ok || m.Legacy || !m.In(s.proto) {
			continue
		}
		t[m.Code] = &handler{meta: m, fn: fn}
	}
	return t
}

// operationTable maps each operation other than NonReplicated and
// Register to the command it implies (§1.4).
func operationTable(handlers map[handlerKey]*handler) map[iggy.Operation]*handler {
	t := make(map[iggy.Operation]*handler)
	for _, h := range handlers {
		if op := h.meta.Operation; op != iggy.OperationNonReplicated && op != iggy.OperationRegister {
			t[op] = h
		}
	}
	return t
}

// serve answers one decoded request.
func (s *Server) serve(c *conn, r *request) outcome {
	if err := r.h.Validate(); err != nil {
		return silence("invalid header: " + err.Error())
	}
	if !r.h.Operation.ValidIn(s.proto) {
		return silence("operation not in this protocol")
	}
	c.lastSeen.Store(s.now().UnixNano())
	if !r.h.RequestChecksum.IsZero() && s.proto.ChecksumIsBodyHash() {
		if r.h.RequestChecksum.Hi != 0 || r.h.RequestChecksum.Lo != iggy.XXH3(r.body) {
			return statusOf(iggy.StatusInvalidFormat)
		}
	}
	switch op := r.h.Operation; {
	case op == iggy.OperationRegister:
		return s.login(c, r)
	case op == iggy.OperationNonReplicated:
		return s.serveNonReplicated(c, r)
	case op.Plane() == iggy.PlaneInternal:
		return evictWith(iggy.EvictionReasonInvalidRequestOperation)
	default:
		return s.serveReplicated(c, r)
	}
}

// serveNonReplicated answers operation 2: the command code is in the header.
func (s *Server) serveNonReplicated(c *conn, r *request) outcome {
	switch r.h.Code {
	case iggy.CodePing:
		s.mu.Lock()
		commit := s.commit
		s.mu.Unlock()
		return outcome{commit: commit}
	case iggy.CodeLoginUser, iggy.CodeLoginWithPersonalAccessToken:
		return evictWith(iggy.EvictionReasonMalformedLogin)
	}
	s.mu.Lock()
	r.sess = c.sess
	commit := s.commit
	s.mu.Unlock()
	if r.sess == nil {
		return outcome{status: iggy.StatusUnauthenticated, anonymous: true}
	}
	h, ok := s.handlers[r.h.Code]
	if !ok {
		if m, ok := iggy.LookupCommand(r.h.Code); ok && m.In(s.proto) && m.Operation != iggy.OperationNonReplicated {
			return statusOf(iggy.StatusFeatureUnavailable) // e.g. a login code sent as operation 2
		}
		return statusOf(iggy.StatusInvalidCommand)
	}
	if h.meta.Operation != iggy.OperationNonReplicated {
		return statusOf(iggy.StatusFeatureUnavailable) // a replicated command sent as operation 2
	}
	out := h.fn(c, r)
	out.logOp, out.commit = r.sess.epoch, commit
	return out
}

// serveReplicated answers metadata, partition and session operations after
// the session checks, applying the request-number rules of §1.8.3 to the
// metadata plane (and Logout and DeleteSegments).
func (s *Server) serveReplicated(c *conn, r *request) outcome {
	h, ok := s.byOperation[r.h.Operation]
	if !ok {
		return silence("no command for operation")
	}
	s.mu.Lock()
	sess := c.sess
	switch {
	case sess == nil && r.h.Operation == iggy.OperationLogout:
		s.mu.Unlock()
		return outcome{}
	case sess == nil:
		s.mu.Unlock()
		return evictWith(iggy.EvictionReasonNoSession)
	case sess.fenced || r.h.Session < sess.epoch:
		s.mu.Unlock()
		return evictWith(iggy.EvictionReasonSessionTooLow)
	case r.h.Session > sess.epoch:
		s.mu.Unlock()
		return evictWith(iggy.EvictionReasonSessionError)
	}
	r.sess = sess
	if r.h.Operation.Plane() == iggy.PlanePartition {
		commit := s.commit
		s.mu.Unlock()
		out := h.fn(c, r)
		out.logOp, out.commit = sess.epoch, commit
		return out
	}
	defer s.mu.Unlock()

	// Request-number rules (§1.8.3).
	if r.h.Request <= sess.highest {
		if cr := sess.cached(r.h.Request); cr != nil {
			if !r.h.RequestChecksum.IsZero() && (s.proto.ChecksumIsBodyHash() && r.h.RequestChecksum.Lo != cr.bodyHash ||
				!s.proto.ChecksumIsBodyHash() && r.h.RequestChecksum != cr.requestID) {
				return s.malformed(iggy.StatusInvalidCommand, "request number reused with another checksum")
			}
			return outcome{status: cr.status, op: cr.op, body: cr.body, logOp: s.commit, commit: s.commit}
		}
		if r.h.Operation.ResultFramed() {
			return outcome{body: iggy.AppendResultError(nil, iggy.StatusRequestAlreadyApplied), logOp: s.commit, commit: s.commit}
		}
		return statusOf(iggy.StatusRequestAlreadyApplied)
	}
	out := h.fn(c, r)
	if out.uncommitted {
		out.logOp, out.commit = s.commit, s.commit
		return out
	}
	if out.silent || out.evicted || out.status != 0 {
		return out // not committed: the number is not consumed
	}
	s.commit++
	out.logOp, out.commit = s.commit, s.commit
	if r.dirty {
		if err := s.saveMetadataLocked(); err != nil {
			s.log.Error().Err(err).Msg("cannot write the metadata snapshot")
		}
	}
	if s2 := c.sess; s2 == sess { // logout ends the session: nothing to cache
		sess.remember(r.h.Request, iggy.XXH3(r.body), r.h.RequestChecksum, out, s.cfg.ReplyCacheSize)
	}
	return out
}

// cached returns the cached reply of request n, or nil.
func (ss *session) cached(n uint64) *cachedReply {
	for i := range ss.cache {
		if ss.cache[i].request == n {
			return &ss.cache[i]
		}
	}
	return nil
}

// remember caches the reply of a committed request and raises the
// session's high-water mark.
func (ss *session) remember(n, bodyHash uint64, requestID wire.U128, out outcome, size int) {
	ss.highest = n
	cr := cachedReply{request: n, bodyHash: bodyHash, requestID: requestID, op: out.op, status: out.status, body: append([]byte(nil), out.body...)}
	if len(ss.cache) < size {
		ss.cache = append(ss.cache, cr)
		return
	}
	ss.cache[ss.next] = cr
	ss.next = (ss.next + 1) % size
}

// endSession unbinds c's session, removes its consumer-group memberships
// (the groups rebalance) and forgets it. Caller holds Server.mu.
func (s *Server) endSession(c *conn) {
	sess := c.sess
	if sess == nil {
		return
	}
	c.sess = nil
	s.leaveAllGroups(c)
	if s.sessions[sess.client] == sess {
		delete(s.sessions, sess.client)
	}
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
