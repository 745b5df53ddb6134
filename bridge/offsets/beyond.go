// Committed offsets Iggy refuses to store: the beyond log.
//
// Kafka stores any offset a member commits: 0 on a partition that never had
// a record (a consumer that started at latest on a new topic), 10 on an
// empty partition, an offset beyond the high watermark. Iggy 0.9 (protocol
// 0.11) refuses a consumer offset on an empty partition and one beyond the
// partition's current offset (4100 InvalidOffset; core/partitions
// iggy_partition.rs on_request, "out-of-range store denied"), so those
// commits are kept here instead, where every sidecar of the server reads
// them.
//
// Layout. Iggy stream "__kafka_iggy" (the sidecars' own stream, beside the
// topic-config store), topic "committed_offsets", one partition, never
// expiring, created by the first sidecar that writes. Each message is one
// JSON record: the key (group, Iggy stream and topic names, the topic's
// incarnation: Iggy topic id and creation time, partition) and the Kafka
// offset, or -1 when the entry is cleared:
//
//	{"v":1,"group":"g","stream":"kafka","topic":"orders","topic_id":3,
//	 "created_at":1764621000123456,"partition":0,"offset":10}
//
// The latest record of a key wins. An entry of another incarnation of the
// topic (deleted and created again) is ignored.
//
// Precedence. A live entry wins over what the Iggy consumer offsets hold:
// a commit Iggy refuses writes the entry; a commit Iggy stores, a negative
// commit, OffsetDelete and DeleteGroups clear the entry when one is live
// (one record). Reads take the entry when it is live, else the Iggy keys.
// A commit of the offset a live entry holds writes nothing (an idle
// consumer's periodic commit on an empty partition).
//
// An Iggy user without the right to read the log (a refusal, not an
// outage) is logged once at error level and the log is taken as empty:
// commits Iggy stores keep working, the ones it refuses fail with
// GROUP_AUTHORIZATION_FAILED.
//
// Reading. Every commit and read of a committed offset reads the log to
// its end first (one POLL_MESSAGES of the log's partition, shared by the
// calls that wait for it), so it sees the entries any sidecar wrote before.
// Until the log exists (no commit was ever refused), a GET_TOPIC at most
// every beyondAbsentRecheck stands for the poll: a log another sidecar
// creates is seen within that bound. The log is read whole at first use;
// it holds one record per refused commit and per clearing, and is not
// compacted.

package offsets

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Where the beyond log lives in Iggy.
const (
	beyondStream    = "__kafka_iggy"
	beyondTopic     = "committed_offsets"
	beyondPollCount = 1000
	beyondVersion   = 1
	// beyondAbsentRecheck is how long a sidecar that found no log goes on
	// without looking again.
	beyondAbsentRecheck = time.Second
)

var beyondRef = iggy.TopicRef{Stream: beyondStream, Topic: beyondTopic}

// beyondConsumer reads the log (no offset is stored for it).
var beyondConsumer = icodec.Consumer{Kind: icodec.ConsumerKindConsumer, ID: stringID("kafka-iggy.offsets")}

// beyondRecord is one message of the log.
type beyondRecord struct {
	V         int    `json:"v"`
	Group     string `json:"group"`
	Stream    string `json:"stream"`
	Topic     string `json:"topic"`
	TopicID   uint32 `json:"topic_id"`
	CreatedAt uint64 `json:"created_at"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// beyondEntry is a live entry: the offset and the topic incarnation it
// belongs to.
type beyondEntry struct {
	offset  int64
	topicID uint32
	created uint64
}

// beyondLog is a sidecar's view of the log.
type beyondLog struct {
	client  *iggy.Client
	log     zerolog.Logger
	refused atomic.Bool // a read was refused (logged once)

	syncMu   sync.Mutex // one reader of Iggy at a time
	syncedAt time.Time  // when the last read to the end began (under syncMu)
	absentAt time.Time  // when the log was last found missing (under syncMu)

	mu      sync.RWMutex
	entries map[commitKey]beyondEntry
	tail    iggy.LogFollower // where the view's read of the log stands
}

func newBeyondLog(client *iggy.Client, log zerolog.Logger) *beyondLog {
	return &beyondLog{client: client, log: log, entries: map[commitKey]beyondEntry{}}
}

// sync reads the log to its end, unless a read that began after this call
// did so already.
func (b *beyondLog) sync(ctx context.Context) error {
	asked := time.Now()
	b.syncMu.Lock()
	defer b.syncMu.Unlock()
	if b.syncedAt.After(asked) {
		return nil
	}
	began := time.Now()
	if err := b.syncLocked(ctx); err != nil {
		if !iggy.IsUnauthorized(err) {
			return err
		}
		if b.refused.CompareAndSwap(false, true) {
			b.log.Error().Err(err).Str("iggy_stream", beyondStream).Str("iggy_topic", beyondTopic).
				Msg("offsets: the Iggy user may not read the log of commits Iggy refuses; it is taken as empty")
		}
		// Looked up again like a missing log: at most once a
		// beyondAbsentRecheck.
		b.mu.Lock()
		b.tail.Known = false
		b.mu.Unlock()
		b.absentAt = time.Now()
	}
	b.syncedAt = began
	return nil
}

func (b *beyondLog) syncLocked(ctx context.Context) error {
	b.mu.RLock()
	known := b.tail.Known
	b.mu.RUnlock()
	if !known && !b.absentAt.IsZero() && time.Since(b.absentAt) < beyondAbsentRecheck {
		return nil // no poll, nor a lookup, of a log found missing just now
	}
	exists, err := b.tail.Sync(ctx, b.client, beyondConsumer, beyondRef, beyondPollCount, &b.mu, b.apply)
	if err != nil {
		return err
	}
	if !exists {
		b.absentAt = time.Now()
	}
	return nil
}

// apply takes one record into the view (mu held).
func (b *beyondLog) apply(payload []byte) {
	var r beyondRecord
	if json.Unmarshal(payload, &r) != nil || r.V != beyondVersion {
		return
	}
	k := commitKey{group: r.Group, ref: iggy.TopicRef{Stream: r.Stream, Topic: r.Topic}, partition: r.Partition}
	if r.Offset < 0 {
		delete(b.entries, k)
		return
	}
	b.entries[k] = beyondEntry{offset: r.Offset, topicID: r.TopicID, created: r.CreatedAt}
}

// live returns the key's entry when one is live for the topic's current
// incarnation (the view as last read; call sync first).
func (b *beyondLog) live(ctx context.Context, k commitKey) (int64, bool, error) {
	b.mu.RLock()
	e, ok := b.entries[k]
	b.mu.RUnlock()
	if !ok {
		return -1, false, nil
	}
	info, err := b.client.GetTopic(ctx, k.ref)
	if err != nil {
		if iggy.IsNotFound(err) {
			return -1, false, nil
		}
		return -1, false, err
	}
	if info.Details.ID != e.topicID || info.Details.CreatedAt != e.created {
		return -1, false, nil
	}
	return e.offset, true, nil
}

// has reports whether the view holds an entry for the key, of any
// incarnation.
func (b *beyondLog) has(k commitKey) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	_, ok := b.entries[k]
	return ok
}

// put appends the key's record (offset -1 clears it), creating the log on
// first use, and reads the log up to it.
func (b *beyondLog) put(ctx context.Context, k commitKey, offset int64) error {
	r := beyondRecord{V: beyondVersion, Group: k.group, Stream: k.ref.Stream, Topic: k.ref.Topic, Partition: k.partition, Offset: offset}
	if offset >= 0 {
		info, err := b.client.GetTopic(ctx, k.ref)
		if err != nil {
			return err
		}
		r.TopicID, r.CreatedAt = info.Details.ID, info.Details.CreatedAt
	}
	payload, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := b.tail.Append(ctx, b.client, beyondRef, iggy.NeverExpire(), &b.mu, payload); err != nil {
		return err
	}
	b.syncMu.Lock()
	defer b.syncMu.Unlock()
	return b.syncLocked(ctx)
}
