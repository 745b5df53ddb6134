package iggy

import (
	"encoding/binary"
	"errors"
	"strconv"
)

// Protocol generations. A ProtocolVersion names what a session announced at
// login; its Generation is the schema protocol whose wire it speaks. The
// bridge works with the 0.11 Go types of the bodies; the methods below are
// the only place that turns them into, or fills them from, the shapes of a
// later generation (see docs/iggy-protocol-0.12.md), so no caller branches
// on a protocol number.

// Generation returns the newest schema protocol with v's major.minor that is
// not newer than v (patch releases share a wire), or 0 when the schema
// describes no protocol of that line.
func (v ProtocolVersion) Generation() ProtocolVersion {
	var g ProtocolVersion
	for _, p := range Protocols {
		if p>>versionFieldBits == v>>versionFieldBits && p <= v {
			g = p
		}
	}
	return g
}

// Known reports whether the schema describes v's generation.
func (v ProtocolVersion) Known() bool { return v.Generation() != 0 }

// Label is the metric and log label of v's generation, "0.11" or "0.12".
func (v ProtocolVersion) Label() string {
	g := v.Generation()
	if g == 0 {
		g = v
	}
	return strconv.FormatUint(uint64(g.Major()), 10) + "." + strconv.FormatUint(uint64(g.Minor()), 10)
}

// ExternalGroupOffsets reports whether the generation has the consumer kind
// ExternalGroup (3) for offsets that no native consumer group owns.
func (v ProtocolVersion) ExternalGroupOffsets() bool {
	return ConsumerKindExternalGroup.ValidIn(v.Generation())
}

// Accepts reports whether a server of generation v, applying the 0.10
// connection-lifecycle gate (client >= the server's version with patch 0,
// and the client's major.minor not newer than the server's), lets client in.
func (v ProtocolVersion) Accepts(client ProtocolVersion) bool {
	g := v.Generation()
	if g == 0 {
		g = v
	}
	return Compatible(client, g&^versionFieldMask, g)
}

// PickProtocol returns the version to announce to a server whose window is
// [lo, hi] (an IncompatibleProtocol eviction's bounds): the newest schema
// generation the server's gate lets in (at least lo, major.minor not above
// hi's), raised to lo's patch when lo is of the same line (edge servers
// count patches). False when no generation fits.
func PickProtocol(lo, hi ProtocolVersion) (ProtocolVersion, bool) {
	for i := len(Protocols) - 1; i >= 0; i-- {
		a := Protocols[i]
		if lo>>versionFieldBits == a>>versionFieldBits && lo > a {
			a = lo
		}
		if a >= lo && a>>versionFieldBits <= hi>>versionFieldBits {
			return a, true
		}
	}
	return 0, false
}

// ChecksumIsBodyHash reports whether a request header's request_checksum
// is the XXH3-64 of the body (0.11: a wrong nonzero stamp is refused) rather
// than a random id of the logical request that retries keep (0.12, edge
// crate RequestHeader).
func (v ProtocolVersion) ChecksumIsBodyHash() bool { return v.Generation() < Protocol012 }

// BindSecretSize is the size of the bind secret of the 0.12 login bodies.
const BindSecretSize = 32

// LoginRequest returns the LOGIN_REGISTER body of generation v. The secret
// is used by generations that carry one (0.12).
func (v ProtocolVersion) LoginRequest(vi ClientVersionInfo, username, password string, secret [BindSecretSize]byte) Request {
	vi.ProtocolVersion = uint32(v)
	if v.Generation() >= Protocol012 {
		return &LoginRegisterRequestV12{VersionInfo: vi, BindSecret: secret, Username: username, Password: password}
	}
	return &LoginRegisterRequest{VersionInfo: vi, Username: username, Password: password}
}

// LoginPATRequest returns the LOGIN_REGISTER_WITH_PAT body of generation v.
func (v ProtocolVersion) LoginPATRequest(vi ClientVersionInfo, token string, secret [BindSecretSize]byte) Request {
	vi.ProtocolVersion = uint32(v)
	if v.Generation() >= Protocol012 {
		return &LoginRegisterWithPATRequestV12{VersionInfo: vi, BindSecret: secret, Token: token}
	}
	return &LoginRegisterWithPATRequest{VersionInfo: vi, Token: token}
}

// Request is a request body with its command code and operation.
type Request interface {
	Code() uint32
	Operation() Operation
	EncodedSize() int
	AppendTo(dst []byte) []byte
}

// Decoder is a reply body.
type Decoder interface {
	DecodeFrom(src []byte) (int, error)
}

// ErrRetired is returned by Request for a command that generation v no
// longer has and that has no replacement.
var ErrRetired = errors.New("iggy: command retired in this protocol generation")

// Request returns req as generation v sends it: unchanged when v has the
// command, translated to its replacement when v retired it (UPDATE_TOPIC
// becomes an UPDATE_RESOURCE topic patch at 0.12), ErrRetired otherwise.
func (v ProtocolVersion) Request(req Request) (Request, error) {
	meta, ok := LookupCommand(req.Code())
	if !ok || meta.In(v.Generation()) {
		return req, nil
	}
	switch r := req.(type) {
	case *UpdateTopicRequest:
		// The gateway always sends the current name, so the patch only
		// carries the options (a rename is not representable).
		p := ResourcePatchTopic{StreamID: r.StreamID, TopicID: r.TopicID, Options: r.Options}
		return &UpdateResourceRequest{Scope: OptionScopeTopic, Patch: p.AppendTo(make([]byte, 0, p.EncodedSize()))}, nil
	}
	return nil, ErrRetired
}

// Reply returns the decoder that reads generation v's shape of a reply into
// resp (a 0.11-shaped body): resp itself when the shapes agree.
func (v ProtocolVersion) Reply(resp Decoder) Decoder {
	if v.Generation() < Protocol012 {
		return resp
	}
	switch r := resp.(type) {
	case *TopicDetails:
		return &topicDetails12{dst: r}
	case *StreamResponse:
		return &streamResponse12{dst: r}
	case *StreamDetails:
		return &streamDetails12{dst: r}
	case *GetTopicsResponse:
		return &getTopics12{dst: r}
	case *GetStreamsResponse:
		return &getStreams12{dst: r}
	case *GetClusterMetadataResponse:
		return &clusterMetadata12{dst: r}
	case *PollMessagesResponse:
		return &pollReply12{dst: r}
	}
	return resp
}

// DecodePoll decodes a POLL_MESSAGES reply of generation v into dst without
// allocating.
func (v ProtocolVersion) DecodePoll(src []byte, dst *PollMessagesResponse) (int, error) {
	if v.Generation() < Protocol012 {
		return dst.DecodeFrom(src)
	}
	var r PollMessagesResponseV12
	n, err := r.DecodeFrom(src)
	*dst = PollMessagesResponse{PartitionID: r.PartitionID, CurrentOffset: r.CurrentOffset, Count: r.Count, Batches: r.Batches}
	return n, err
}

type pollReply12 struct{ dst *PollMessagesResponse }

func (d *pollReply12) DecodeFrom(src []byte) (int, error) { return Protocol012.DecodePoll(src, d.dst) }

type topicDetails12 struct{ dst *TopicDetails }

func (d *topicDetails12) DecodeFrom(src []byte) (int, error) {
	var t TopicDetailsV12
	n, err := t.DecodeFrom(src)
	if err == nil {
		*d.dst = TopicDetailsFrom12(&t)
	}
	return n, err
}

type streamResponse12 struct{ dst *StreamResponse }

func (d *streamResponse12) DecodeFrom(src []byte) (int, error) {
	var s StreamResponseV12
	n, err := s.DecodeFrom(src)
	if err == nil {
		*d.dst = s.StreamResponse
	}
	return n, err
}

type streamDetails12 struct{ dst *StreamDetails }

func (d *streamDetails12) DecodeFrom(src []byte) (int, error) {
	var s StreamDetailsV12
	n, err := s.DecodeFrom(src)
	if err == nil {
		*d.dst = StreamDetails{StreamResponse: s.StreamResponse, Topics: make([]TopicHeader, len(s.Topics))}
		for i := range s.Topics {
			d.dst.Topics[i] = TopicHeaderFrom12(&s.Topics[i])
		}
	}
	return n, err
}

type getTopics12 struct{ dst *GetTopicsResponse }

func (d *getTopics12) DecodeFrom(src []byte) (int, error) {
	var s GetTopicsResponseV12
	n, err := s.DecodeFrom(src)
	if err == nil {
		d.dst.Topics = make([]TopicHeader, len(s.Topics))
		for i := range s.Topics {
			d.dst.Topics[i] = TopicHeaderFrom12(&s.Topics[i])
		}
	}
	return n, err
}

type getStreams12 struct{ dst *GetStreamsResponse }

func (d *getStreams12) DecodeFrom(src []byte) (int, error) {
	var s GetStreamsResponseV12
	n, err := s.DecodeFrom(src)
	if err == nil {
		d.dst.Streams = make([]StreamResponse, len(s.Streams))
		for i := range s.Streams {
			d.dst.Streams[i] = s.Streams[i].StreamResponse
		}
	}
	return n, err
}

type clusterMetadata12 struct{ dst *GetClusterMetadataResponse }

func (d *clusterMetadata12) DecodeFrom(src []byte) (int, error) {
	var s GetClusterMetadataResponseV12
	n, err := s.DecodeFrom(src)
	if err == nil {
		d.dst.Name = s.Name
		d.dst.Nodes = make([]ClusterNode, len(s.Nodes))
		for i, nd := range s.Nodes {
			d.dst.Nodes[i] = ClusterNode{Name: nd.Name, IP: nd.IP, TCPPort: nd.TCPPort, QUICPort: nd.QUICPort,
				HTTPPort: nd.HTTPPort, WebsocketPort: nd.WebsocketPort, Role: nd.Role, Status: nd.Status}
		}
	}
	return n, err
}

// TopicHeaderFrom12 fills the 0.11 header from a 0.12 one: message expiry,
// compression and the size cap come from the option blocks (explicit first,
// then derived), as 0.12 keeps them only there.
func TopicHeaderFrom12(h *TopicHeaderV12) TopicHeader {
	out := TopicHeader{ID: h.ID, CreatedAt: h.CreatedAt, PartitionsCount: h.PartitionsCount,
		SizeBytes: h.SizeBytes, MessagesCount: h.MessagesCount, Name: h.Name,
		ExplicitOptions: h.ExplicitOptions, DerivedOptions: h.DerivedOptions}
	out.MessageExpiry = topicOption(h, "message_expiry")
	out.CompressionAlgorithm = CompressionAlgorithm(topicOption(h, "compression_algorithm"))
	out.MaxTopicSize = topicOption(h, "max_topic_size")
	return out
}

// TopicHeaderTo12 is the inverse of TopicHeaderFrom12 (the fixed fields the
// 0.12 header dropped must already be in the option blocks).
func TopicHeaderTo12(h *TopicHeader) TopicHeaderV12 {
	return TopicHeaderV12{ID: h.ID, CreatedAt: h.CreatedAt, PartitionsCount: h.PartitionsCount,
		SizeBytes: h.SizeBytes, MessagesCount: h.MessagesCount, Name: h.Name,
		ExplicitOptions: h.ExplicitOptions, DerivedOptions: h.DerivedOptions}
}

// TopicDetailsFrom12 converts a 0.12 GET_TOPIC reply to the 0.11 shape.
func TopicDetailsFrom12(t *TopicDetailsV12) TopicDetails {
	out := TopicDetails{TopicHeader: TopicHeaderFrom12(&t.TopicHeaderV12), Partitions: make([]PartitionResponse, len(t.Partitions))}
	for i, p := range t.Partitions {
		out.Partitions[i] = PartitionResponse{ID: p.ID, CreatedAt: p.CreatedAt, SegmentsCount: p.SegmentsCount,
			CurrentOffset: p.CurrentOffset, SizeBytes: p.SizeBytes, MessagesCount: p.MessagesCount}
	}
	return out
}

// topicOption reads a topic option as a number (Uint64, Uint8 or a String
// the catalog parses), 0 when absent or unreadable.
func topicOption(h *TopicHeaderV12, key string) uint64 {
	o, ok := h.ExplicitOptions.Get(key)
	if !ok {
		if o, ok = h.DerivedOptions.Get(key); !ok {
			return 0
		}
	}
	switch o.Kind {
	case HeaderKindUint64:
		if len(o.Value) == 8 {
			return binary.LittleEndian.Uint64(o.Value)
		}
	case HeaderKindUint8:
		if len(o.Value) == 1 {
			return uint64(o.Value[0])
		}
	case HeaderKindString:
		if spec, ok := LookupOption(TopicOptions, key); ok {
			if n, ok := ParseOptionString(spec, string(o.Value)); ok {
				return n
			}
		}
	}
	return 0
}

// Appender is a body that encodes itself.
type Appender interface {
	AppendTo(dst []byte) []byte
}

// Encoder is an Appender that knows its size.
type Encoder interface {
	EncodedSize() int
	AppendTo(dst []byte) []byte
}

// Outgoing returns the body a server of generation v sends for resp, a
// 0.11-shaped reply (the inverse of Reply): resp itself when the shapes
// agree. A one-node server's 0.12 fields are filled as such: every
// partition is stored on and in sync at node 0, whose replica id is 0.
func (v ProtocolVersion) Outgoing(resp Appender) Appender {
	if v.Generation() < Protocol012 {
		return resp
	}
	switch r := resp.(type) {
	case *TopicDetails:
		t := TopicDetailsTo12(r)
		return &t
	case *StreamResponse:
		return &StreamResponseV12{StreamResponse: *r}
	case *StreamDetails:
		d := StreamDetailsV12{StreamResponseV12: StreamResponseV12{StreamResponse: r.StreamResponse}, Topics: make([]TopicHeaderV12, len(r.Topics))}
		for i := range r.Topics {
			d.Topics[i] = TopicHeaderTo12(&r.Topics[i])
		}
		return &d
	case *GetTopicsResponse:
		d := GetTopicsResponseV12{Topics: make([]TopicHeaderV12, len(r.Topics))}
		for i := range r.Topics {
			d.Topics[i] = TopicHeaderTo12(&r.Topics[i])
		}
		return &d
	case *GetStreamsResponse:
		d := GetStreamsResponseV12{Streams: make([]StreamResponseV12, len(r.Streams))}
		for i := range r.Streams {
			d.Streams[i] = StreamResponseV12{StreamResponse: r.Streams[i]}
		}
		return &d
	case *GetClusterMetadataResponse:
		d := GetClusterMetadataResponseV12{Name: r.Name, Nodes: make([]ClusterNodeV12, len(r.Nodes))}
		for i, nd := range r.Nodes {
			d.Nodes[i] = ClusterNodeV12{ReplicaID: uint8(i), Name: nd.Name, IP: nd.IP, TCPPort: nd.TCPPort, QUICPort: nd.QUICPort,
				HTTPPort: nd.HTTPPort, WebsocketPort: nd.WebsocketPort, Role: nd.Role, Status: nd.Status}
		}
		return &d
	case *PollMessagesResponse:
		return &PollMessagesResponseV12{PartitionID: r.PartitionID, CurrentOffset: r.CurrentOffset, Count: r.Count, Batches: r.Batches}
	}
	return resp
}

// Option descriptor flags of 0.12 (DESCRIBE_OPTIONS).
const (
	OptionFlagUpdatable  = 1 << 0
	OptionFlagResettable = 1 << 1
)

// DescribeOptionsReply returns the DESCRIBE_OPTIONS reply of generation v
// for the catalog entries d; updatable keys are also resettable.
func (v ProtocolVersion) DescribeOptionsReply(d []OptionDescriptor, updatable func(key string) bool) Encoder {
	if v.Generation() < Protocol012 {
		return &DescribeOptionsResponse{Options: d}
	}
	out := &DescribeOptionsResponseV12{Options: make([]OptionDescriptorV12, len(d))}
	for i, o := range d {
		var f uint8
		if updatable(o.Key) {
			f = OptionFlagUpdatable | OptionFlagResettable
		}
		out.Options[i] = OptionDescriptorV12{Key: o.Key, Kind: o.Kind, Flags: f, Default: o.Default, Description: o.Description}
	}
	return out
}

// oneNode lists node 0, the only node of a single-node server.
var oneNode = []byte{0}

// TopicDetailsTo12 converts a 0.11-shaped GET_TOPIC reply to the 0.12 one
// of a single-node server (incarnation = the partition's creation time).
func TopicDetailsTo12(t *TopicDetails) TopicDetailsV12 {
	out := TopicDetailsV12{TopicHeaderV12: TopicHeaderTo12(&t.TopicHeader), Partitions: make([]PartitionResponseV12, len(t.Partitions))}
	for i, p := range t.Partitions {
		out.Partitions[i] = PartitionResponseV12{ID: p.ID, CreatedAt: p.CreatedAt, SegmentsCount: p.SegmentsCount,
			CurrentOffset: p.CurrentOffset, SizeBytes: p.SizeBytes, MessagesCount: p.MessagesCount,
			Context: PartitionContext{Incarnation: p.CreatedAt}, Members: oneNode, InSyncMembers: oneNode}
	}
	return out
}

// RoutesPartitions reports whether generation v has per-partition primaries
// a client looks up (GET_PARTITION_ROUTE 105, protocol 0.12): on a cluster
// of several nodes, partition requests go to the node the route names.
func (v ProtocolVersion) RoutesPartitions() bool {
	m, ok := LookupCommand(CodeGetPartitionRoute)
	return ok && m.In(v.Generation())
}

// ReplicaNode is one node of a GET_CLUSTER_METADATA reply with the replica
// id that GET_PARTITION_ROUTE's primary_replica names.
type ReplicaNode struct {
	ReplicaID uint8
	ClusterNode
}

// DecodeReplicaNodes reads the nodes of a GET_CLUSTER_METADATA reply of
// generation v with their replica ids: the replica_id field at 0.12, the
// position in the list before (0.11 has no such field; a 0.11 server has
// no partition routes either).
func (v ProtocolVersion) DecodeReplicaNodes(src []byte) ([]ReplicaNode, error) {
	if v.Generation() < Protocol012 {
		var r GetClusterMetadataResponse
		if _, err := r.DecodeFrom(src); err != nil {
			return nil, err
		}
		out := make([]ReplicaNode, len(r.Nodes))
		for i, nd := range r.Nodes {
			out[i] = ReplicaNode{ReplicaID: uint8(i), ClusterNode: nd}
		}
		return out, nil
	}
	var r GetClusterMetadataResponseV12
	if _, err := r.DecodeFrom(src); err != nil {
		return nil, err
	}
	out := make([]ReplicaNode, len(r.Nodes))
	for i, nd := range r.Nodes {
		out[i] = ReplicaNode{ReplicaID: nd.ReplicaID, ClusterNode: ClusterNode{Name: nd.Name, IP: nd.IP, TCPPort: nd.TCPPort,
			QUICPort: nd.QUICPort, HTTPPort: nd.HTTPPort, WebsocketPort: nd.WebsocketPort, Role: nd.Role, Status: nd.Status}}
	}
	return out, nil
}
