package clientmetrics

import (
	"context"
	"net"
	"regexp"
	"slices"
	"strconv"
	"time"
)

// Client is what a client's subscription is matched on (KIP-714's client
// selectors).
type Client struct {
	InstanceID      string
	ClientID        string
	SoftwareName    string
	SoftwareVersion string
	SourceAddress   string
	SourcePort      string
}

func (c Client) selector(key string) string {
	switch key {
	case "client_instance_id":
		return c.InstanceID
	case "client_id":
		return c.ClientID
	case "client_software_name":
		return c.SoftwareName
	case "client_software_version":
		return c.SoftwareVersion
	case "client_source_address":
		return c.SourceAddress
	}
	return c.SourcePort
}

// subscription is one stored subscription, parsed.
type subscription struct {
	metrics  []string
	interval int
	match    map[string]*regexp.Regexp
}

// Matched is what the subscriptions a client matches ask of it.
type Matched struct {
	// Any is false when no subscription is stored at all.
	Any bool
	// Count is how many subscriptions matched.
	Count int
	// Metrics is the union of their metric prefixes, in subscription name
	// order; IntervalMs the smallest of their intervals (DefaultInterval
	// when none matched).
	Metrics    []string
	IntervalMs int
}

// Match returns the subscriptions c matches, as Kafka's ClientMetricsManager
// combines them: every pattern of a subscription's match must match the
// selector's whole value (a subscription without match takes every
// client).
func (s *Store) Match(ctx context.Context, c Client) Matched {
	s.fresh(ctx)
	subs := s.parsed()
	m := Matched{Any: len(subs) > 0, IntervalMs: DefaultInterval}
	for _, sub := range subs {
		ok := true
		for k, re := range sub.match {
			ok = ok && re.MatchString(c.selector(k))
		}
		if !ok {
			continue
		}
		if m.Count == 0 || sub.interval < m.IntervalMs {
			m.IntervalMs = sub.interval
		}
		m.Count++
		for _, x := range sub.metrics {
			if !slices.Contains(m.Metrics, x) {
				m.Metrics = append(m.Metrics, x)
			}
		}
	}
	return m
}

// parsed returns the stored subscriptions parsed, rebuilt when the view
// changed.
func (s *Store) parsed() []subscription {
	s.mu.RLock()
	gen := s.gen
	s.mu.RUnlock()
	s.matchMu.Lock()
	defer s.matchMu.Unlock()
	if gen == s.matchGen && s.compiled != nil {
		return s.compiled
	}
	s.mu.RLock()
	names := make([]string, 0, len(s.subs))
	for n := range s.subs {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]subscription, 0, len(names))
	for _, n := range names {
		cfg := s.subs[n]
		sub := subscription{interval: DefaultInterval, match: map[string]*regexp.Regexp{}}
		if v, ok := cfg[KeyInterval]; ok {
			sub.interval, _ = strconv.Atoi(v)
		}
		sub.metrics, _ = list(cfg[KeyMetrics])
		pats, _ := list(cfg[KeyMatch])
		for _, p := range pats {
			if k, re, ok := parsePattern(p); ok {
				sub.match[k] = re
			}
		}
		out = append(out, sub)
	}
	s.mu.RUnlock()
	s.matchGen, s.compiled = gen, out
	return out
}

// TelemetrySource is the telemetry service's view of the subscriptions
// (its Source): the metrics and interval of those a client matches; ok
// false when none is stored. Kafka's "*" asks for every metric ("").
func (s *Store) TelemetrySource(ctx context.Context, instanceID, clientID, software, version, remote string) ([]string, time.Duration, bool) {
	c := Client{InstanceID: instanceID, ClientID: clientID, SoftwareName: software, SoftwareVersion: version}
	if host, port, err := net.SplitHostPort(remote); err == nil {
		c.SourceAddress, c.SourcePort = host, port
	}
	m := s.Match(ctx, c)
	metrics := make([]string, 0, len(m.Metrics))
	for _, x := range m.Metrics {
		if x == "*" {
			x = ""
		}
		metrics = append(metrics, x)
	}
	return metrics, time.Duration(m.IntervalMs) * time.Millisecond, m.Any
}
