// Package proxy is the Kafka front door of kafka-iggy: a gnet v2 server that
// speaks the Kafka wire protocol to unmodified Kafka clients and hands each
// request to a Dispatcher (the bridge's Table).
//
// Life of a request:
//
//  1. An event loop's OnTraffic drains every complete frame (4-byte
//     big-endian size, checked against limits.max_frame_bytes before
//     anything is allocated), copies it into a pooled buffer and stamps it
//     with the connection's next sequence number.
//  2. The loop parses the request header (v1, or v2 with tagged fields when
//     the request is flexible) and checks (key, version) against the
//     Dispatcher before the body is decoded. An ApiVersions request at a
//     version we do not serve is answered with the KIP-511 v0 fallback;
//     anything else unserved closes the connection.
//  3. A worker decodes the body with kmsg, calls Dispatch and encodes the
//     response header and body into a pooled buffer.
//  4. The connection's reorder ring releases replies in sequence order. The
//     worker that completes them writes them to the socket itself (one
//     writev) when gnet holds none of the connection's output; otherwise,
//     and for what the socket did not take, they go out with AsyncWritev
//     and the write callback returns the buffers to the pool. A request
//     without a reply (acks=0 produce) still takes its turn.
//
// Backpressure: at limits.max_in_flight requests in flight, or with the
// worker queue full, or with too many unsent reply bytes, a connection's
// input is left unread (gnet keeps it buffered, bounded by
// limits.max_inbound_bytes) until replies drain. Nothing is dropped.
//
// Every closed connection is logged once with its close_reason (see
// CloseReason). Log keys: conn_id, api_key, api_version, corr_id,
// close_reason.
package proxy
