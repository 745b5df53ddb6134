package embedded

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Cluster metadata of a single-node server (§3.1).
const (
	clusterName = "single-node"
	nodeName    = "iggy-node"
)

func (s *Server) getClusterMetadata(c *conn, r *request) outcome {
	if v := s.cluster.Load(); v != nil && s.proto.RoutesPartitions() {
		return c.okBody(v.clusterMetadata())
	}
	ip, port := "127.0.0.1", uint16(0)
	if a, ok := s.Addr().(*net.TCPAddr); ok {
		port = uint16(a.Port)
		if !a.IP.IsUnspecified() {
			ip = a.IP.String()
		}
	}
	return c.okBody(&iggy.GetClusterMetadataResponse{Name: clusterName, Nodes: []iggy.ClusterNode{{
		Name: nodeName, IP: ip, TCPPort: port, Role: iggy.NodeRoleLeader, Status: iggy.NodeStatusHealthy,
	}}})
}

// getPartitionRoute serves GET_PARTITION_ROUTE (0.12) as a one-node
// cluster: replica 0 is every partition's primary, in view 0. Needs send or
// poll permission on the topic.
func (s *Server) getPartitionRoute(c *conn, r *request) outcome {
	var req iggy.GetPartitionRouteRequest
	if err := decodeBody(&req, r.body); err != nil {
		return statusOf(iggy.StatusInvalidCommand)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, status := s.resolveTopic(&req.StreamID, &req.TopicID)
	if status != 0 {
		return statusOf(status)
	}
	acc := s.accessOf(r.sess)
	if !acc.sendMessages(t.stream.id, t.id) && !acc.pollMessages(t.stream.id, t.id) {
		return statusOf(iggy.StatusUnauthorized)
	}
	var p *partition
	for _, q := range t.partitions {
		if q.id == req.PartitionID {
			p = q
		}
	}
	if p == nil {
		return statusOf(iggy.StatusPartitionNotFound)
	}
	primary, view := s.primaryOf(t, p.id)
	return c.okBody(&iggy.GetPartitionRouteResponse{Incarnation: p.createdAt, MetadataOp: s.commit, View: view,
		PartitionsCount: uint32(len(t.partitions)), PrimaryReplica: primary})
}

func (s *Server) describeOptions(c *conn, r *request) outcome {
	var req iggy.DescribeOptionsRequest
	if err := decodeBody(&req, r.body); err != nil {
		return statusOf(iggy.StatusInvalidCommand)
	}
	return c.okBody(s.proto.DescribeOptionsReply(s.describeCatalog(req.Scope), func(key string) bool {
		spec, ok := s.topicOption(key)
		return req.Scope == iggy.OptionScopeTopic && ok && spec.Updatable
	}))
}

// flushUnsavedBuffer always answers 5: the command is not supported at 0.11.
func (s *Server) flushUnsavedBuffer(c *conn, r *request) outcome {
	return statusOf(iggy.StatusFeatureUnavailable)
}

// clientResponse is the wire view of a connection. Caller holds Server.mu.
func clientResponse(c *conn) iggy.ClientResponse {
	cr := iggy.ClientResponse{ClientID: c.id, UserID: iggy.LimitClientNoUserID, Transport: iggy.TransportTCP,
		Address: c.addr, ConsumerGroupsCount: uint32(len(c.groups))}
	if c.sess != nil {
		cr.UserID = c.sess.userID
	}
	return cr
}

// clientDetails adds the memberships. Caller holds Server.mu.
func clientDetails(c *conn) iggy.ClientDetails {
	d := iggy.ClientDetails{ClientResponse: clientResponse(c)}
	for g := range c.groups {
		d.Memberships = append(d.Memberships, iggy.ConsumerGroupMembership{StreamID: g.topic.stream.id, TopicID: g.topic.id, GroupID: g.id})
	}
	slices.SortFunc(d.Memberships, func(a, b iggy.ConsumerGroupMembership) int {
		switch {
		case a.StreamID != b.StreamID:
			return cmpU32(a.StreamID, b.StreamID)
		case a.TopicID != b.TopicID:
			return cmpU32(a.TopicID, b.TopicID)
		}
		return cmpU32(a.GroupID, b.GroupID)
	})
	d.ConsumerGroupsCount = uint32(len(d.Memberships))
	return d
}

func cmpU32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (s *Server) getMe(c *conn, r *request) outcome {
	s.mu.Lock()
	d := clientDetails(c)
	s.mu.Unlock()
	return c.okBody(&d)
}

func (s *Server) getClient(c *conn, r *request) outcome {
	var req iggy.GetClientRequest
	if err := decodeBody(&req, r.body); err != nil {
		return statusOf(iggy.StatusInvalidCommand)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.accessOf(r.sess).readServers() {
		return statusOf(iggy.StatusUnauthorized)
	}
	other := s.conns[req.ClientID]
	if other == nil {
		return outcome{}
	}
	d := clientDetails(other)
	return c.okBody(&d)
}

func (s *Server) getClients(c *conn, r *request) outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.accessOf(r.sess).readServers() {
		return statusOf(iggy.StatusUnauthorized)
	}
	var resp iggy.GetClientsResponse
	resp.Clients = inKeyOrder(s.conns, clientResponse)
	return c.okBody(&resp)
}

// semver packs "major.minor.patch[-...]" as major, 3-digit minor, 3-digit
// patch (0.9.0 → 9000); 0 when it does not parse.
func semver(v string) uint32 {
	v, _, _ = strings.Cut(v, "-")
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return 0
	}
	var n [3]uint64
	for i, p := range parts {
		x, err := strconv.ParseUint(p, 10, 32)
		if err != nil || (i > 0 && x > 999) {
			return 0
		}
		n[i] = x
	}
	total := n[0]*1_000_000 + n[1]*1_000 + n[2]
	if total > 1<<32-1 {
		return 0
	}
	return uint32(total)
}

func (s *Server) getStats(c *conn, r *request) outcome {
	s.mu.Lock()
	if !s.accessOf(r.sess).readServers() {
		s.mu.Unlock()
		return statusOf(iggy.StatusUnauthorized)
	}
	st := iggy.GetStatsResponse{
		ProcessID:         pid,
		StartTime:         uint64(s.startTime.UnixMicro()),
		RunTime:           uint64(s.now().Sub(s.startTime).Microseconds()),
		ReadBytes:         s.readBytes.Load(),
		WrittenBytes:      s.wrBytes.Load(),
		StreamsCount:      uint32(len(s.streams)),
		ClientsCount:      uint32(len(s.conns)),
		IggyServerVersion: s.cfg.ServerVersion,
		IggyServerSemver:  semver(s.cfg.ServerVersion),
	}
	for _, stm := range s.streams {
		st.TopicsCount += uint32(len(stm.topics))
		for _, t := range stm.topics {
			st.ConsumerGroupsCount += uint32(len(t.groups))
			st.PartitionsCount += uint32(len(t.partitions))
			for _, p := range t.partitions {
				ps := p.stateOf()
				st.SegmentsCount += max(ps.SegmentsCount, 1)
				st.MessagesCount += ps.MessagesCount
				st.MessagesSizeBytes += ps.SizeBytes
			}
		}
	}
	s.mu.Unlock()

	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st.MemoryUsage = ms.Sys
	sys := readSystemInfo(s.cfg.DataDir)
	st.TotalMemory, st.AvailableMemory = sys.totalMemory, sys.availableMemory
	st.FreeDiskSpace, st.TotalDiskSpace = sys.freeDisk, sys.totalDisk
	st.OSName, st.OSVersion, st.KernelVersion = sys.osName, sys.osVersion, sys.kernelVersion
	st.CPUUsage, st.TotalCPUUsage = s.cpu.sample(s.now())
	st.Hostname, _ = os.Hostname()
	st.ThreadsCount = uint32(pprof.Lookup("threadcreate").Count())
	return c.okBody(&st)
}

// getSnapshotFile builds a small ZIP archive with the requested diagnostic
// entries (stored or deflated; other compressions are refused with 5).
func (s *Server) getSnapshotFile(c *conn, r *request) outcome {
	var req iggy.GetSnapshotFileRequest
	if err := decodeBody(&req, r.body); err != nil {
		return statusOf(iggy.StatusInvalidCommand)
	}
	s.mu.Lock()
	ok := s.accessOf(r.sess).readServers()
	s.mu.Unlock()
	if !ok {
		return statusOf(iggy.StatusUnauthorized)
	}
	method := zip.Store
	switch req.Compression {
	case iggy.SnapshotCompressionStored:
	case iggy.SnapshotCompressionDeflated:
		method = zip.Deflate
	default:
		return statusOf(iggy.StatusFeatureUnavailable)
	}
	want := func(t iggy.SnapshotType) bool {
		return slices.Contains(req.Types, t) || slices.Contains(req.Types, iggy.SnapshotTypeAll)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	add := func(name string, data []byte) {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: method, Modified: s.now()})
		if err == nil {
			_, _ = w.Write(data)
		}
	}
	if want(iggy.SnapshotTypeServerConfig) {
		cfg := s.cfg
		cfg.RootPassword = "<redacted>"
		data, _ := json.MarshalIndent(cfg, "", "  ")
		add("server_config.json", data)
	}
	if want(iggy.SnapshotTypeResourceUsage) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		add("resource_usage.txt", []byte("goroutines "+strconv.Itoa(runtime.NumGoroutine())+"\nmemory_sys_bytes "+
			strconv.FormatUint(ms.Sys, 10)+"\nuptime "+s.now().Sub(s.startTime).Round(time.Second).String()+"\n"))
	}
	if want(iggy.SnapshotTypeTest) {
		add("test.txt", []byte("test\n"))
	}
	if err := zw.Close(); err != nil {
		return statusOf(iggy.StatusSnapshotFileCompletionFailed)
	}
	return c.okBody(&iggy.GetSnapshotFileResponse{Archive: buf.Bytes()})
}
