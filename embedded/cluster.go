package embedded

import (
	"net"
	"strconv"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// ClusterView makes the server answer as one node of a multi-leader
// cluster (Iggy 0.10, protocol 0.12), for tests of clients that route
// partition requests to each partition's primary. Nothing is replicated:
// each server keeps its own streams, topics and messages, so a test creates
// the same topics on every node and uses a partition only through its
// primary. What the server does with a view:
//
//   - GET_CLUSTER_METADATA lists Nodes (replica id, address, leader or
//     follower, healthy);
//   - GET_PARTITION_ROUTE names Primary's answer as primary_replica, in
//     view View;
//   - SEND_MESSAGES, POLL_MESSAGES(_DEFERRED) and GET/STORE/DELETE_
//     CONSUMER_OFFSET for a partition whose primary is not Self are refused
//     with 89 NotPrimary, as a 0.10 backup refuses them (the code and its
//     meaning come from the edge crate, docs/iggy-protocol-0.12.md §8).
//
// It is set through Server.SetCluster, not through the configuration: a
// fake cluster is a test fixture, not a deployment.
type ClusterView struct {
	// Self is this server's replica id.
	Self uint8
	// Nodes are the cluster's nodes.
	Nodes []ClusterMember
	// View is the partition groups' view number GET_PARTITION_ROUTE
	// reports.
	View uint32
	// Primary returns the replica id of the primary of partition of
	// stream/topic (their names). It must be safe for concurrent use.
	Primary func(stream, topic string, partition uint32) uint8
}

// ClusterMember is one node of a ClusterView.
type ClusterMember struct {
	ReplicaID uint8
	Name      string
	Addr      string // host:port of its TCP listener
	Leader    bool   // the metadata primary
}

// SetCluster makes the server answer as the node v.Self of v (nil: a
// one-node cluster again). It may be called at any time; requests already
// admitted finish under the view they met.
func (s *Server) SetCluster(v *ClusterView) { s.cluster.Store(v) }

// clusterMetadata returns the GET_CLUSTER_METADATA reply of the view.
func (v *ClusterView) clusterMetadata() *iggy.GetClusterMetadataResponseV12 {
	out := &iggy.GetClusterMetadataResponseV12{Name: "embedded-cluster", Nodes: make([]iggy.ClusterNodeV12, 0, len(v.Nodes))}
	for _, m := range v.Nodes {
		host, port, _ := net.SplitHostPort(m.Addr)
		p, _ := strconv.Atoi(port)
		role := iggy.NodeRoleFollower
		if m.Leader {
			role = iggy.NodeRoleLeader
		}
		out.Nodes = append(out.Nodes, iggy.ClusterNodeV12{ReplicaID: m.ReplicaID, Name: m.Name, IP: host, TCPPort: uint16(p),
			Role: role, Status: iggy.NodeStatusHealthy})
	}
	return out
}

// notPrimary reports whether a partition request for partition pid of t
// must be refused with NotPrimary: a view is set and names another primary.
// Caller holds Server.mu (t's names).
func (s *Server) notPrimary(t *topic, pid uint32) bool {
	v := s.cluster.Load()
	return v != nil && v.Primary != nil && v.Primary(t.stream.name, t.name, pid) != v.Self
}

// primaryOf returns the replica id GET_PARTITION_ROUTE names for partition
// pid of t and the view. Caller holds Server.mu.
func (s *Server) primaryOf(t *topic, pid uint32) (uint8, uint32) {
	v := s.cluster.Load()
	if v == nil || v.Primary == nil {
		return 0, 0
	}
	return v.Primary(t.stream.name, t.name, pid), v.View
}
