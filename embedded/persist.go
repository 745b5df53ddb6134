package embedded

// Persistence with a data directory:
//
//	<data_dir>/metadata.json                 users, tokens, streams, topics, partitions, groups
//	<data_dir>/partitions/<key>/log/         plog segment files of one partition
//	<data_dir>/partitions/<key>/offsets.json its consumer offsets
//
// Both JSON files are replaced atomically (temporary file, fsync, rename,
// directory fsync; the offsets file is fsynced only for topics with
// enforce_fsync). Partition directories are keyed by a counter that is
// never reused, so a deleted and re-created stream or topic never meets old
// files; directories the metadata does not name are removed at start.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

const (
	metadataFile   = "metadata.json"
	offsetsFile    = "offsets.json"
	snapshotFormat = 1
)

type snapshot struct {
	Format           int          `json:"format"`
	Commit           uint64       `json:"commit"`
	NextPartitionKey uint64       `json:"next_partition_key"`
	Users            []snapUser   `json:"users"`
	Streams          []snapStream `json:"streams"`
}

type snapUser struct {
	ID          uint32            `json:"id"`
	Username    string            `json:"username"`
	CreatedAt   uint64            `json:"created_at"`
	Status      uint8             `json:"status"`
	Salt        string            `json:"salt"`
	Hash        string            `json:"hash"`
	Permissions *iggy.Permissions `json:"permissions,omitempty"`
	Tokens      []snapToken       `json:"tokens,omitempty"`
}

type snapToken struct {
	Name     string `json:"name"`
	Hash     string `json:"hash"`
	ExpiryAt uint64 `json:"expiry_at"`
}

type snapStream struct {
	ID        uint32      `json:"id"`
	Name      string      `json:"name"`
	CreatedAt uint64      `json:"created_at"`
	Topics    []snapTopic `json:"topics"`
}

type snapTopic struct {
	ID          uint32          `json:"id"`
	Name        string          `json:"name"`
	CreatedAt   uint64          `json:"created_at"`
	Explicit    []snapOption    `json:"explicit_options"`
	Derived     []snapOption    `json:"derived_options"`
	NextGroupID uint32          `json:"next_group_id"`
	Partitions  []snapPartition `json:"partitions"`
	Groups      []snapGroup     `json:"groups"`
}

type snapOption struct {
	Key   string `json:"key"`
	Kind  uint8  `json:"kind"`
	Value []byte `json:"value"`
}

type snapPartition struct {
	ID        uint32 `json:"id"`
	CreatedAt uint64 `json:"created_at"`
	Key       uint64 `json:"key"`
	// DeletedUpTo is the delete watermark of DELETE_SEGMENTS (plog
	// Truncate), kept in the metadata as the real server keeps its
	// committed TruncatePartition watermark (Partition::deleted_up_to_offset).
	DeletedUpTo uint64 `json:"deleted_up_to_offset,omitempty"`
}

type snapGroup struct {
	ID   uint32 `json:"id"`
	Name string `json:"name"`
}

type snapOffset struct {
	Kind   uint8  `json:"kind"`
	ID     uint32 `json:"id"`
	Offset uint64 `json:"offset"`
}

func toSnapOptions(o iggy.Options) []snapOption {
	out := make([]snapOption, len(o))
	for i, v := range o {
		out[i] = snapOption{Key: v.Key, Kind: uint8(v.Kind), Value: v.Value}
	}
	return out
}

func fromSnapOptions(o []snapOption) iggy.Options {
	var out iggy.Options
	for _, v := range o {
		out = append(out, iggy.Option{Key: v.Key, Kind: iggy.HeaderKind(v.Kind), Value: v.Value})
	}
	return out
}

// saveMetadataLocked writes the metadata snapshot. Caller holds Server.mu.
func (s *Server) saveMetadataLocked() error {
	if s.cfg.DataDir == "" {
		return nil
	}
	snap := snapshot{Format: snapshotFormat, Commit: s.commit, NextPartitionKey: s.nextPartKey}
	for _, id := range sortedKeys(s.users) {
		u := s.users[id]
		su := snapUser{ID: u.id, Username: u.username, CreatedAt: u.createdAt, Status: uint8(u.status), Salt: u.salt, Hash: u.hash, Permissions: u.perms}
		for _, name := range sortedTokenNames(u) {
			t := u.tokens[name]
			su.Tokens = append(su.Tokens, snapToken{Name: t.name, Hash: t.hash, ExpiryAt: t.expiryAt})
		}
		snap.Users = append(snap.Users, su)
	}
	for _, sid := range sortedKeys(s.streams) {
		st := s.streams[sid]
		ss := snapStream{ID: st.id, Name: st.name, CreatedAt: st.createdAt}
		for _, tid := range sortedKeys(st.topics) {
			t := st.topics[tid]
			stp := snapTopic{ID: t.id, Name: t.name, CreatedAt: t.createdAt, Explicit: toSnapOptions(t.explicit),
				Derived: toSnapOptions(t.derived), NextGroupID: t.nextGroupID}
			for _, p := range t.partitions {
				stp.Partitions = append(stp.Partitions, snapPartition{ID: p.id, CreatedAt: p.createdAt, Key: p.key, DeletedUpTo: p.log.TruncatedTo()})
			}
			for _, gid := range sortedKeys(t.groups) {
				stp.Groups = append(stp.Groups, snapGroup{ID: gid, Name: t.groups[gid].name})
			}
			ss.Topics = append(ss.Topics, stp)
		}
		snap.Streams = append(snap.Streams, ss)
	}
	data, err := json.MarshalIndent(&snap, "", " ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(s.cfg.DataDir, metadataFile), data, true)
}

// saveOffsetsFile writes p's consumer offsets (fsynced when fsync). Caller
// holds p.omu.
func (s *Server) saveOffsetsFile(p *partition, fsync bool) error {
	dir := s.partitionDir(p.key)
	if dir == "" || p.removed {
		return nil
	}
	list := make([]snapOffset, 0, len(p.offsets))
	for k, v := range p.offsets {
		list = append(list, snapOffset{Kind: uint8(k.Kind), ID: k.ID, Offset: v})
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].Kind != list[j].Kind {
			return list[i].Kind < list[j].Kind
		}
		return list[i].ID < list[j].ID
	})
	data, err := json.Marshal(list)
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, offsetsFile), data, fsync)
}

// writeFileAtomic replaces path with data: temporary file, optional fsync,
// rename, optional directory fsync.
func writeFileAtomic(path string, data []byte, fsync bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && fsync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil && fsync {
		err = syncDir(dir)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("embedded: write %s: %w", path, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// load restores the stored state (or creates the root user on a first
// start) and opens every partition log.
func (s *Server) load() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.nowMicros()
	if s.cfg.DataDir == "" {
		s.addRootUser(now)
		return nil
	}
	if err := os.MkdirAll(s.cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("embedded: data dir: %w", err)
	}
	data, err := os.ReadFile(filepath.Join(s.cfg.DataDir, metadataFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		s.addRootUser(now)
		if err := s.saveMetadataLocked(); err != nil {
			return err
		}
		return s.removeOrphans()
	case err != nil:
		return fmt.Errorf("embedded: read metadata: %w", err)
	}
	var snap snapshot
	if err := json.Unmarshal(data, &snap); err != nil {
		return fmt.Errorf("embedded: metadata snapshot %s is corrupt: %w", filepath.Join(s.cfg.DataDir, metadataFile), err)
	}
	if snap.Format != snapshotFormat {
		return fmt.Errorf("embedded: metadata snapshot format %d, want %d", snap.Format, snapshotFormat)
	}
	s.commit, s.nextPartKey = snap.Commit, snap.NextPartitionKey
	for _, su := range snap.Users {
		u := &user{id: su.ID, username: su.Username, createdAt: su.CreatedAt, status: iggy.UserStatus(su.Status),
			salt: su.Salt, hash: su.Hash, perms: su.Permissions, tokens: map[string]*token{}}
		for _, t := range su.Tokens {
			u.tokens[t.Name] = &token{name: t.Name, hash: t.Hash, expiryAt: t.ExpiryAt}
		}
		s.users[u.id] = u
		s.userByName[u.username] = u.id
	}
	if _, ok := s.users[rootUserID]; !ok {
		s.addRootUser(now)
	}
	for _, ss := range snap.Streams {
		st := &stream{id: ss.ID, name: ss.Name, createdAt: ss.CreatedAt, topics: map[uint32]*topic{}, byName: map[string]uint32{}}
		s.streams[st.id] = st
		s.streamByName[st.name] = st.id
		for _, stp := range ss.Topics {
			if err := s.loadTopic(st, &stp); err != nil {
				return err
			}
		}
	}
	return s.removeOrphans()
}

func (s *Server) loadTopic(st *stream, stp *snapTopic) error {
	t := &topic{id: stp.ID, name: stp.Name, createdAt: stp.CreatedAt, stream: st,
		explicit: fromSnapOptions(stp.Explicit), derived: fromSnapOptions(stp.Derived),
		groups: map[uint32]*group{}, groupByName: map[string]uint32{}, nextGroupID: stp.NextGroupID}
	cfg, status := s.resolveTopicConfig(t.explicit, t.derived)
	if status != 0 {
		return fmt.Errorf("embedded: topic %q of stream %q has invalid stored options", t.name, st.name)
	}
	t.cfg = cfg
	st.topics[t.id] = t
	st.byName[t.name] = t.id
	for _, sp := range stp.Partitions {
		p, err := s.openPartition(t, sp.ID, sp.Key, sp.CreatedAt, len(stp.Partitions))
		if err != nil {
			return fmt.Errorf("embedded: open partition %d of topic %q: %w", sp.ID, t.name, err)
		}
		if err := s.loadOffsets(p); err != nil {
			return err
		}
		if _, err := p.log.Truncate(sp.DeletedUpTo); err != nil {
			s.log.Error().Err(err).Str("topic", t.name).Uint32("partition_id", sp.ID).Msg("deleting segments below the stored delete watermark failed")
		}
		t.partitions = append(t.partitions, p)
		s.nextPartKey = max(s.nextPartKey, sp.Key)
	}
	for _, sg := range stp.Groups {
		t.groups[sg.ID] = &group{id: sg.ID, name: sg.Name, topic: t, timeout: s.cfg.RebalanceTimeout}
		t.groupByName[sg.Name] = sg.ID
	}
	return nil
}

func (s *Server) loadOffsets(p *partition) error {
	data, err := os.ReadFile(filepath.Join(s.partitionDir(p.key), offsetsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("embedded: read offsets: %w", err)
	}
	var list []snapOffset
	if err := json.Unmarshal(data, &list); err != nil {
		return fmt.Errorf("embedded: offsets of partition %d are corrupt: %w", p.id, err)
	}
	p.omu.Lock()
	defer p.omu.Unlock()
	for _, o := range list {
		p.offsets[offsetKey{Kind: iggy.ConsumerKind(o.Kind), ID: o.ID}] = o.Offset
	}
	s.pinLocked(p)
	return nil
}

// removeOrphans deletes partition directories the metadata does not name
// (left by a crash between a metadata change and the file cleanup).
func (s *Server) removeOrphans() error {
	root := filepath.Join(s.cfg.DataDir, "partitions")
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	known := map[uint64]bool{}
	for _, st := range s.streams {
		for _, t := range st.topics {
			for _, p := range t.partitions {
				known[p.key] = true
			}
		}
	}
	for _, e := range entries {
		key, err := strconv.ParseUint(e.Name(), 10, 64)
		if err != nil || known[key] {
			continue
		}
		s.log.Warn().Str("dir", filepath.Join(root, e.Name())).Msg("removing an orphaned partition directory")
		if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// addRootUser creates the root user (id 0) from the configuration.
func (s *Server) addRootUser(now uint64) {
	u := newUser(rootUserID, s.cfg.RootUsername, s.cfg.RootPassword, iggy.UserStatusActive, nil, now)
	s.users[u.id] = u
	s.userByName[u.username] = u.id
}
