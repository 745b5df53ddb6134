package groups

// The values the Service calls take and return: decoded requests and the
// answers the bridge encodes (bridge/cluster carries them over the peer
// link).

import (
	"net"
	"time"
)

// Protocol is one protocol a member supports, with its opaque metadata.
type Protocol struct {
	Name     string
	Metadata []byte
}

// JoinParams is a decoded JoinGroup request.
type JoinParams struct {
	Group            string
	MemberID         string
	InstanceID       *string
	ClientID         string
	ClientHost       string
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
	ProtocolType     string
	Protocols        []Protocol
	RequireKnownID   bool // v4+: KIP-394 MEMBER_ID_REQUIRED round trip
	CanSkipAssign    bool // v9+: KIP-814 SkipAssignment understood
	Reason           string
}

// JoinMember is one entry of the leader's member list.
type JoinMember struct {
	MemberID   string
	InstanceID *string
	Metadata   []byte
}

// JoinResult is the answer to a JoinGroup.
type JoinResult struct {
	Code         int16
	MemberID     string
	Generation   int32
	HasProtocol  bool // false: protocol type and name are null
	ProtocolType string
	Protocol     string
	Leader       string
	SkipAssign   bool
	Members      []JoinMember
}

// SyncParams is a decoded SyncGroup request.
type SyncParams struct {
	Group        string
	MemberID     string
	InstanceID   *string
	Generation   int32
	ProtocolType *string // v5+, nil when absent
	Protocol     *string // v5+, nil when absent
	Assignments  map[string][]byte
}

// SyncResult is the answer to a SyncGroup.
type SyncResult struct {
	Code         int16
	HasProtocol  bool
	ProtocolType string
	Protocol     string
	Assignment   []byte
}

// LeaveIdentity is one member named in a LeaveGroup.
type LeaveIdentity struct {
	MemberID   string
	InstanceID *string
	Reason     string
}

// Description is a group as DescribeGroups shows it.
type Description struct {
	State        string
	ProtocolType string
	Protocol     string
	Members      []MemberDescription
}

type MemberDescription struct {
	MemberID   string
	InstanceID *string
	ClientID   string
	ClientHost string
	Metadata   []byte
	Assignment []byte
}

// Listing is a group as ListGroups shows it.
type Listing struct {
	Group        string
	ProtocolType string
	State        State
}

// ClientHost is a client's host as Kafka shows it ("/" and the IP) in
// DescribeGroups and ConsumerGroupDescribe.
func ClientHost(remote string) string {
	if host, _, err := net.SplitHostPort(remote); err == nil {
		return "/" + host
	}
	return "/" + remote
}
