// Package fetchsession keeps Fetch sessions (KIP-227) as Kafka's broker keeps them (FetchSession.scala,
// FetchSessionCache): a consumer's full fetch (epoch 0) creates a session
// holding its partitions and what was last answered for each; its
// incremental fetches (the session id and the next epoch) send only the
// partitions that changed (added, or a new fetch offset or max bytes) and
// forget others, and are answered with only the partitions that have
// records, a new high watermark or log start offset, or an error. The
// rules:
//   - epoch -1: a sessionless full fetch; a session id with it closes that
//     session. Epoch 0: a full fetch that closes the session it names (if
//     any) and creates a new one, answered with its id (or id 0 when the
//     cache has no room).
//   - any other epoch: the session must exist (else
//     FETCH_SESSION_ID_NOT_FOUND) and expect that epoch (else
//     INVALID_FETCH_SESSION_EPOCH); a session created by names (Fetch
//     v7-v12) takes no request by topic ids (v13+) and the other way round
//     (FETCH_SESSION_TOPIC_ID_ERROR). Each accepted request moves the
//     expected epoch on by one (after MaxInt32 comes 1). A session left
//     with no partition is closed and the fetch answered sessionless.
//   - partitions that return records move to the end of the session's
//     order, so the next fetches serve the others first (Kafka's fairness).
//   - eviction: the cache holds at most fetch.session_cache_slots sessions
//     (Kafka's max.incremental.fetch.session.cache.slots, default 1000).
//     When it is full a new session takes the place of the least recently
//     used one if that has been idle for fetchSessionEvictAfter (Kafka's
//     two minutes), else of the smallest session (fewest partitions) that
//     has existed that long, if the new one is strictly larger; else it is
//     not created (id 0: the client keeps sending full fetches).
//
// Cost: an incremental fetch asks Iggy once per topic (GET_TOPIC) for the
// end offsets of its caught-up partitions (fetch offset = the high
// watermark last answered) and polls only those whose log end moved, and
// the others it had nothing to answer for (bridge/01_fetch.go, sessionEnds): a
// consumer of 200 partitions of which one receives data costs one topic
// lookup and one poll per fetch, not 200 polls. The one thing this misses
// is a log start moved by retention on a caught-up partition whose end did
// not move: it is answered when the partition is next read.
// Sessions live in this process: a client that reconnects to another
// sidecar gets FETCH_SESSION_ID_NOT_FOUND and starts a new one, as after a
// Kafka broker restart.
package fetchsession

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchSessionEvictAfter is Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS:
// the idle time after which a session may give its slot to a new one, and
// the age after which a larger new session may take a smaller one's slot.
const fetchSessionEvictAfter = 2 * time.Minute

// sessionKey names a partition of a session: by topic name (v7-v12) or
// topic id (v13+), as the requests do.
type sessionKey struct {
	topic     string
	topicID   [16]byte
	partition int32
}

// sessionPart is one partition of a session: the request fields last sent
// for it, and what was last answered (high watermark -1 after an error, so
// the partition is answered again once the error clears).
type sessionPart struct {
	key      sessionKey
	req      kmsg.FetchRequestTopicPartition
	hw       int64
	logStart int64
	gone     bool // forgotten; dropped from order at the next compaction
}

// fetchSession is one client's session.
type fetchSession struct {
	id       int32
	epoch    int32 // the epoch the next incremental request must carry
	topicIDs bool  // created by a v13+ request (topic ids)
	order    []*sessionPart
	parts    map[sessionKey]*sessionPart
	created  time.Time
	lastUsed time.Time
}

// Cache is the session cache of one sidecar (safe for concurrent use).
type Cache struct {
	mu    sync.Mutex
	slots int
	m     map[int32]*fetchSession
	now   func() time.Time
}

// New returns a cache of at most slots sessions (0: no session is ever
// created, every fetch is answered sessionless).
func New(slots int) *Cache {
	return &Cache{slots: slots, m: map[int32]*fetchSession{}, now: time.Now}
}

// Fetch is what a session-aware Fetch carries from Begin to Finish.
type Fetch struct {
	full  bool          // epoch 0: create a session from the answer
	sess  *fetchSession // incremental: the session
	epoch int32         // incremental: the session's epoch once this request is accepted
	req   *kmsg.FetchRequest
	last  []sessionLast // incremental: per partition of req, in order
}

// sessionLast is what a session last answered for a partition.
type sessionLast struct {
	hw, logStart int64 // hw -1: nothing answered yet, or an error
}

// LastAnswered returns what the session last answered for the i-th
// partition of the request to read (in its order); ok false for a full
// fetch or a partition with nothing answered yet. An incremental fetch
// need not read a partition whose fetch offset is that high watermark
// while its log end has not moved: Kafka would not answer it.
func (sf *Fetch) LastAnswered(i int) (hw, logStart int64, ok bool) {
	if sf == nil || i >= len(sf.last) || sf.last[i].hw < 0 {
		return 0, 0, false
	}
	return sf.last[i].hw, sf.last[i].logStart, true
}

// nextFetchEpoch is Kafka's FetchMetadata.nextEpoch.
func nextFetchEpoch(e int32) int32 {
	switch {
	case e < 0:
		return -1
	case e == math.MaxInt32:
		return 1
	default:
		return e + 1
	}
}

// Begin applies a v7+ request's session fields. It returns the request to
// read (for an incremental fetch, every partition of the session in its
// order) and the state Finish needs (nil: a sessionless fetch), or a
// top-level error code.
func (c *Cache) Begin(version int16, req *kmsg.FetchRequest) (*kmsg.FetchRequest, *Fetch, int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.SessionEpoch == 0 || req.SessionEpoch == -1 {
		if req.SessionID != 0 {
			delete(c.m, req.SessionID)
		}
		if req.SessionEpoch == -1 {
			return req, nil, 0
		}
		return req, &Fetch{full: true, req: req}, 0
	}
	s := c.m[req.SessionID]
	switch {
	case s == nil:
		return req, nil, kerr.FetchSessionIDNotFound.Code
	case s.epoch != req.SessionEpoch:
		return req, nil, kerr.InvalidFetchSessionEpoch.Code
	case s.topicIDs != (version >= 13):
		return req, nil, kerr.FetchSessionTopicIDError.Code
	}
	s.update(req)
	if len(s.parts) == 0 {
		delete(c.m, s.id)
		return req, nil, 0
	}
	s.lastUsed = c.now()
	s.epoch = nextFetchEpoch(s.epoch)
	all := *req
	all.Topics = s.request()
	all.ForgottenTopics = nil
	last := make([]sessionLast, len(s.order))
	for i, sp := range s.order {
		last[i] = sessionLast{sp.hw, sp.logStart}
	}
	return &all, &Fetch{sess: s, epoch: s.epoch, req: &all, last: last}, 0
}

// update adds or updates the request's partitions and drops the forgotten
// ones.
func (s *fetchSession) update(req *kmsg.FetchRequest) {
	for i := range req.Topics {
		t := &req.Topics[i]
		for j := range t.Partitions {
			p := &t.Partitions[j]
			k := sessionKey{t.Topic, t.TopicID, p.Partition}
			if sp := s.parts[k]; sp != nil {
				sp.req = *p
				continue
			}
			sp := &sessionPart{key: k, req: *p, hw: -1, logStart: -1}
			s.parts[k] = sp
			s.order = append(s.order, sp)
		}
	}
	forgot := false
	for i := range req.ForgottenTopics {
		t := &req.ForgottenTopics[i]
		for _, p := range t.Partitions {
			k := sessionKey{t.Topic, t.TopicID, p}
			if sp := s.parts[k]; sp != nil {
				sp.gone, forgot = true, true
				delete(s.parts, k)
			}
		}
	}
	if forgot {
		kept := s.order[:0]
		for _, sp := range s.order {
			if !sp.gone {
				kept = append(kept, sp)
			}
		}
		clear(s.order[len(kept):])
		s.order = kept
	}
}

// request lists the session's partitions in its order, a topic entry per
// run of partitions of one topic.
func (s *fetchSession) request() []kmsg.FetchRequestTopic {
	var topics []kmsg.FetchRequestTopic
	for _, sp := range s.order {
		n := len(topics)
		if n == 0 || topics[n-1].Topic != sp.key.topic || topics[n-1].TopicID != sp.key.topicID {
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = sp.key.topic, sp.key.topicID
			topics = append(topics, t)
			n++
		}
		topics[n-1].Partitions = append(topics[n-1].Partitions, sp.req)
	}
	return topics
}

// Finish completes a session-aware fetch once resp holds every partition
// read: a full fetch creates its session and answers its id; an
// incremental one keeps in resp only the partitions Kafka would answer
// (records, a moved high watermark or log start, an error) and records
// what was answered.
func (c *Cache) Finish(sf *Fetch, version int16, resp *kmsg.FetchResponse) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sf.full {
		resp.SessionID = c.create(sf.req, version, resp)
		return
	}
	s := sf.sess
	if c.m[s.id] != s || s.epoch != sf.epoch {
		// Closed or moved on by another request meanwhile.
		resp.ErrorCode = kerr.InvalidFetchSessionEpoch.Code
		resp.SessionID = s.id
		resp.Topics = nil
		return
	}
	resp.SessionID = s.id
	var keep []kmsg.FetchResponseTopic
	var moved []*sessionPart
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := s.parts[sessionKey{sf.req.Topics[i].Topic, sf.req.Topics[i].TopicID, rp.Partition}]
			if sp == nil || !sp.answer(rp) {
				continue
			}
			if len(rp.RecordBatches) > 0 {
				moved = append(moved, sp)
			}
			n := len(keep)
			if n == 0 || keep[n-1].Topic != rt.Topic || keep[n-1].TopicID != rt.TopicID {
				t := kmsg.NewFetchResponseTopic()
				t.Topic, t.TopicID = rt.Topic, rt.TopicID
				keep = append(keep, t)
				n++
			}
			keep[n-1].Partitions = append(keep[n-1].Partitions, *rp)
		}
	}
	resp.Topics = keep
	if len(moved) > 0 {
		s.moveToEnd(moved)
	}
}

// answer records what a partition's answer says and reports whether
// Kafka would send it (CachedPartition.maybeUpdateResponseData).
func (sp *sessionPart) answer(rp *kmsg.FetchResponseTopicPartition) bool {
	must := len(rp.RecordBatches) > 0
	if rp.HighWatermark != sp.hw {
		must, sp.hw = true, rp.HighWatermark
	}
	if rp.LogStartOffset != sp.logStart {
		must, sp.logStart = true, rp.LogStartOffset
	}
	if rp.ErrorCode != 0 {
		must, sp.hw = true, -1
	}
	return must
}

// moveToEnd puts the partitions that returned records after the others,
// each group keeping its order.
func (s *fetchSession) moveToEnd(moved []*sessionPart) {
	in := make(map[*sessionPart]bool, len(moved))
	for _, sp := range moved {
		in[sp] = true
	}
	order := make([]*sessionPart, 0, len(s.order))
	for _, sp := range s.order {
		if !in[sp] {
			order = append(order, sp)
		}
	}
	s.order = append(order, moved...)
}

// create makes a session of a full fetch's partitions and answers, if the
// cache has room or can evict for it; it returns the id (0: none).
func (c *Cache) create(req *kmsg.FetchRequest, version int16, resp *kmsg.FetchResponse) int32 {
	size := 0
	for i := range req.Topics {
		size += len(req.Topics[i].Partitions)
	}
	now := c.now()
	if len(c.m) >= c.slots && !c.evict(size, now) {
		return 0
	}
	s := &fetchSession{epoch: 1, topicIDs: version >= 13, parts: make(map[sessionKey]*sessionPart, size), created: now, lastUsed: now}
	s.update(req)
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			rp := &resp.Topics[i].Partitions[j]
			if sp := s.parts[sessionKey{req.Topics[i].Topic, req.Topics[i].TopicID, rp.Partition}]; sp != nil {
				sp.answer(rp)
			}
		}
	}
	for {
		id := rand.Int32N(math.MaxInt32) + 1 // 1..MaxInt32, as Kafka's ids are positive
		if c.m[id] == nil {
			s.id = id
			break
		}
	}
	c.m[s.id] = s
	return s.id
}

// evict frees a slot for a new session of size partitions, as Kafka's
// FetchSessionCache.tryEvict: the least recently used session if it is
// stale, else the smallest session old enough to be evicted if the new one
// is larger.
func (c *Cache) evict(size int, now time.Time) bool {
	var lru, small *fetchSession
	for _, s := range c.m {
		if lru == nil || s.lastUsed.Before(lru.lastUsed) {
			lru = s
		}
		if now.Sub(s.created) > fetchSessionEvictAfter &&
			(small == nil || len(s.parts) < len(small.parts) || (len(s.parts) == len(small.parts) && s.id < small.id)) {
			small = s
		}
	}
	switch {
	case lru != nil && now.Sub(lru.lastUsed) > fetchSessionEvictAfter:
		delete(c.m, lru.id)
	case small != nil && size > len(small.parts):
		delete(c.m, small.id)
	default:
		return false
	}
	return true
}

// Len returns the number of sessions cached.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
