package cluster

// Stats is a snapshot of this sidecar's part in its coordination domain,
// for the admin listener's metrics.
type Stats struct {
	Shards int // shards of the domain (0 before the ownership set-up)
	Owned  int // shards this sidecar serves now (active, lease valid)
	Peers  int // peer links with an open connection
	// PeersIn is the peer connections this sidecar's listener holds
	// (peers.max_connections caps them); PeersRefused counts those it
	// refused or closed over a fault of the peer.
	PeersIn      int
	PeersRefused int64
}

// Stats returns the current Stats. Safe for concurrent use; it takes the
// ownership and peer locks briefly (call it per scrape, not per request).
func (r *Router) Stats() Stats {
	st := Stats{Shards: r.own.count()}
	if r.srv != nil {
		st.PeersIn, st.PeersRefused = r.srv.stats()
	}
	for k := 0; k < st.Shards; k++ {
		if r.own.serving(k) == shardActive {
			st.Owned++
		}
	}
	r.peersMu.Lock()
	peers := make([]*peerClient, 0, len(r.peers))
	for _, p := range r.peers {
		peers = append(peers, p)
	}
	r.peersMu.Unlock()
	for _, p := range peers {
		p.mu.Lock()
		if p.conn != nil {
			st.Peers++
		}
		p.mu.Unlock()
	}
	return st
}
