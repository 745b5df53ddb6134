package embedded

// The command table and routing: which handler a request reaches, after the
// header, session and request-number rules. What handlers answer with is in
// reply.go.

import (
	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

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
