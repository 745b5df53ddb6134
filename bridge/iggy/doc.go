// Package iggy is the bridge's Iggy client: a small pool of persistent Iggy
// 0.11 sessions that every Kafka connection of the sidecar shares.
//
// # Sessions
//
// Each of Config.PoolSize sessions is one TCP (optionally TLS) connection
// owned by one goroutine. It logs in with LOGIN_REGISTER (username and
// password) or LOGIN_REGISTER_WITH_PAT, announcing ClientVersionInfo
// {protocol 0.11.0, sdk "kafka-iggy", our version}, with a fresh random
// client id, and keeps the session epoch of the reply. Request numbers
// follow §1.8.3: the counter starts at 1 after login; reads, polls and
// partition writes carry its current value; metadata writes, DeleteSegments
// and Logout consume it. Exactly one request is in flight per session
// (§1.9): write, then read the reply within Config.RequestTimeout.
//
// A session is dropped — its connection closed — on an I/O error, a
// timeout, an Eviction frame, a reply whose request echo is not the request
// in flight, a malformed frame, 40 Unauthenticated or an empty send reply.
// It then registers again after an exponential backoff with jitter
// (BackoffMin doubling to BackoffMax). Replies 57/58 are answered by
// resending the identical frame after 50 ms while the deadline allows.
//
// Liveness: a session idle for 100 ms watches its connection (a goroutine
// blocked in a one-byte read, stopped by a past read deadline before the
// next request), so a server that closes or resets the connection, or
// evicts the session unasked, drops it at once and Ready turns false when
// no other session is up. A silent server is caught by the keep-alive: an
// idle session sends PING after KeepaliveInterval/2 and waits at most the
// other half for the answer.
//
// # Work distribution
//
// Reads and metadata commands (Poll, GetTopic, GetOffset, Do) are handed to
// whichever session is idle first. Partition writes (Send, StoreOffset,
// DeleteOffset) are pinned to a lane — the session chosen by a hash of
// stream, topic and partition — and wait in that partition's FIFO, so the
// writes of one partition leave in call order and are answered in that
// order. While the lane's session is busy, sends for the same partition
// accumulate and leave as one SEND_MESSAGES batch (bounded by MaxBatchBytes,
// MaxBatchMessages and the 2^32-1 µs timestamp span); each caller gets its
// own base offset from the single confirmation.
//
// # Clusters
//
// With iggy.follow_leader a session moves after login to the leader that
// GET_CLUSTER_METADATA names. On protocol 0.12 with iggy.route_partitions
// (router.go) partition requests go to the node of each partition's primary:
// GET_PARTITION_ROUTE (cached per partition) names the primary's replica id,
// the cluster metadata its address, and the request leaves on the home pool
// when the home sessions are on that node, otherwise on a peer pool (a
// Client of its own for that node, opened on first use), with the route's
// incarnation and metadata op stamped in the request header. A 89
// NotPrimary or 87 HistoryUnavailable answer drops the route; the request
// (a send too: 89 hands its unadmitted messages back) is then tried once
// more on the fresh route. While the metadata lists one node nothing of
// this costs a round trip.
//
// # Buffers
//
// Callers build message frames directly in pooled buffers (Messages). The
// session patches each frame once in place (offset delta, timestamp delta,
// checksum), builds the request header, metadata and batch header in its
// own scratch buffer, and writes everything with one writev: the frames are
// never copied between the caller's buffer and the socket. Requests of the
// other commands are encoded into pooled buffers by the caller, replies are
// read into pooled buffers (Polled.Release returns a poll's).
//
// # Deadlines and failures
//
// Every call has a deadline: the caller's context, or RequestTimeout when
// it has none. A call still queued when it passes is withdrawn and fails
// with an error matching ErrTimeout and ErrNotSent: it is never sent later.
// A call on the wire when its session fails, or whose caller left, has an
// unknown outcome (the error does not match ErrNotSent). Nothing is ever
// resent after it may have reached the server, so a send is confirmed at
// most once. Iggy's codes arrive as icodec.Status errors (errors.Is works
// through *Error, *icodec.ResultError and *icodec.EvictionError); Retriable,
// IsTimeout, IsNotFound and IsUnauthorized classify errors for the Kafka
// layer.
//
// # Locking
//
// Lock order: none. Each mutex is a leaf, never held while another is taken
// or while doing I/O: lane.mu (a lane's partition queues and the lane state
// of its calls), metaCache.mu (cached lookups), session.connMu (the
// connection Close interrupts), Client.mu (start/close state and wg.Add).
// A call's completion is a lock-free state machine (pending, done,
// abandoned) so a caller that leaves never races the session answering it.
//
// # Shutdown
//
// Close cancels the client, closes every connection, waits for every
// session goroutine, then fails the calls still queued with ErrClosed.
// After Close returns no goroutine of the client is left.
package iggy
