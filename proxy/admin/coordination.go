package admin

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// CoordinationStats is a snapshot of the sidecar's part in its
// coordination domain (cmd fills it from cluster.Router.Stats; admin does
// not import bridge/cluster).
type CoordinationStats struct {
	Shards int // shards of the domain
	Owned  int // shards this sidecar serves now
	Peers  int // peer links with an open connection
	// PeersIn is the peer connections the listener holds; PeersRefused
	// counts those it refused or closed over the peer's fault.
	PeersIn      int
	PeersRefused int64
}

// coordinationSeries are the series of the coordination domain (one Kafka
// group across the sidecars of a deployment), read when scraped. Without
// the peer link they report 0.
type coordinationSeries struct {
	stats  atomic.Pointer[func() CoordinationStats]
	domain *prometheus.GaugeVec
}

func (c *coordinationSeries) register(f factory) {
	read := func(fn func(CoordinationStats) int) func() float64 {
		return func() float64 {
			if s := c.stats.Load(); s != nil {
				return float64(fn((*s)()))
			}
			return 0
		}
	}
	f.gaugeFunc("coordination_shards",
		"Shards of this sidecar's coordination domain (coordination.shards; 0 without the peer link). Summed owned shards below it across the domain's sidecars means a shard without an owner.",
		read(func(s CoordinationStats) int { return s.Shards }))
	f.gaugeFunc("coordination_shards_owned",
		"Shards of the coordination domain this sidecar serves now (active, lease valid).",
		read(func(s CoordinationStats) int { return s.Owned }))
	f.gaugeFunc("peer_links_up",
		"Peer links to other sidecars of the domain with an open connection.",
		read(func(s CoordinationStats) int { return s.Peers }))
	f.gaugeFunc("peer_connections_in",
		"Peer connections this sidecar's peer listener holds now (peers.max_connections caps them).",
		read(func(s CoordinationStats) int { return s.PeersIn }))
	f.counterFunc("peer_connections_refused_total",
		"Peer connections refused (past peers.max_connections, failed or timed-out handshake) or closed over a fault (malformed frame, past peers.max_message_bytes, a handler panic); the log line says which.",
		func() float64 {
			if s := c.stats.Load(); s != nil {
				return float64((*s)().PeersRefused)
			}
			return 0
		})
	c.domain = f.gaugeVec("coordination_domain_info",
		"Always 1 while the peer link is on; the domain label is coordination.domain (join on instance to group the series above by domain).", "domain")
}

// SetCoordination makes the coordination series report stats (a Router's
// Stats) for domain.
func (m *Metrics) SetCoordination(domain string, stats func() CoordinationStats) {
	m.coordination.stats.Store(&stats)
	m.coordination.domain.WithLabelValues(domain).Set(1)
}
