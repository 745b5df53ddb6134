// Package embedded is an Iggy-protocol server (protocol 0.11, the 256-byte
// frame headers of shared/iggy-protocol.md §1) built on the generated codec
// in codec/iggy. It is the default upstream of the sidecar when no Iggy
// address is configured and the server every test runs against, so it
// follows the real server's rules rather than being lenient: where it is
// more permissive than Iggy, tests pass and users fail.
//
// # What it serves
//
// Sessions (PING before login, Register with username/password or a
// personal access token, the version window, evictions, session epochs,
// request-number deduplication with a per-client reply cache, logout),
// users and personal access tokens with permissions, streams, topics and
// partitions with the topic option catalog, SEND_MESSAGES and POLL_MESSAGES
// over stored batch records (package plog), consumer offsets, consumer
// groups with server-side assignment, and the system commands
// (DESCRIBE_OPTIONS, GET_CLUSTER_METADATA, GET_ME, GET_CLIENT(S), GET_STATS,
// GET_SNAPSHOT_FILE).
//
// # Channels
//
// Every refusal comes back where the reference puts it: the reply status
// (pre-execution refusals), the result section of a metadata reply
// (committed business outcomes), an Eviction frame (login and session
// problems), or silence (malformed headers, malformed SEND_MESSAGES
// batches, JOIN/LEAVE with undecodable bodies). Config.ReplyToMalformed
// turns the silent SEND_MESSAGES cases into status replies for debugging.
//
// # Storage
//
// In memory by default. With Config.DataDir the metadata (users, tokens,
// streams, topics, partitions, groups) is a snapshot file rewritten
// atomically on every change, each partition's messages live in plog
// segment files and its consumer offsets in a small file rewritten
// atomically (and fsynced when the topic has enforce_fsync) on every store.
//
// # Concurrency and locking
//
// One goroutine per connection; clients are lockstep. Server.mu guards all
// metadata, sessions and group state and is held for the whole of a
// metadata operation (including its snapshot write). Message appends and
// polls run outside it (plog is safe for concurrent use). partition.omu
// guards a partition's consumer offsets and their file. Lock order:
// Server.mu, then partition.omu, then conn.wmu; never the reverse.
package embedded
