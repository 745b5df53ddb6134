package bridge

// OffsetFetch: v0-v10
//
// Behavior (KAFKA-ON-IGGY §6; the store is bridge/offsets):
//   - Each requested partition answers the group's committed offset, or -1
//     when none is stored, when the topic or partition does not exist, or
//     the group is unknown (no error in these cases, as on a broker).
//     Metadata is always "" and the leader epoch -1: neither is stored.
//   - Consumer mode: the main key kafka.cg.<group> (offset - 1) is read
//     first; only when it is absent the zero marker kafka.cz.<group>,
//     which answers 0 (a commit of 0; bridge/offsets). A partition never
//     committed therefore costs two GET_CONSUMER_OFFSET, a committed one
//     one. A commit of 0 on a partition that never had a message reads
//     back as -1 (Iggy refuses offset 0 there; the consumer lands on the
//     same position while the partition stays empty).
//   - Any other failed read answers COORDINATOR_LOAD_IN_PROGRESS (14) for
//     the partition and the group (top-level code from v2, group code from
//     v8), never a fake -1 (which would make the consumer apply its reset
//     policy); GROUP_AUTHORIZATION_FAILED when Iggy refuses the read.
//   - Null topic list (v2+, and per group from v8): every Kafka topic that
//     has the group is read (external-group mode: the topics holding Iggy
//     group kafka.cg.<group>; consumer mode: every topic), and only
//     partitions with an offset (a commit of 0 included) come back,
//     topics sorted by name.
//   - Group id 1..246 bytes of UTF-8, else INVALID_GROUP_ID (24), per
//     partition (v0-v1) and at the top / group level (v2+).
//   - No membership check for classic groups (none on a broker either);
//     a consumer-protocol (KIP-848) group checks the v9+ member id and
//     epoch (bridge/cgroups): UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH as the
//     group's code; none given (admin tools) passes.
//   - RequireStable (v7+): a partition with transactional offsets pending
//     for the group (TxnOffsetCommit, bridge/txnoffsets, asked at the
//     group's owner) answers UNSTABLE_OFFSET_COMMIT (88) and offset -1, as
//     Kafka's coordinator does; the client retries until the transaction
//     ends.
//
// Version notes: v1 Kafka-stored offsets (same here); v2 top-level error
// code and null topics; v3 throttle; v5 leader epoch; v6 flexible; v7
// RequireStable; v8 several groups per request; v9 member id and epoch
// (KIP-848, checked for consumer-protocol groups); v10 topics by id
// (UNKNOWN_TOPIC_ID (100) for an id no Kafka topic has).
//
// Iggy commands: GET_CONSUMER_OFFSET (120), GET_TOPIC (300), GET_TOPICS
// (301: null topic lists, v10 topic ids), GET_CONSUMER_GROUP (600: null
// topic lists in external-group mode).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/bridge/offsets"
	"github.com/kafka-iggy/kafka-iggy/bridge/txnoffsets"
)

// noMetadata is the metadata every fetched offset carries (shared,
// read-only).
var noMetadata = ""

// offsetFetchGroupsParallel bounds the groups of one v8+ request read at
// once.
const offsetFetchGroupsParallel = 4

// offsetFetcher serves OffsetFetch.
type offsetFetcher struct {
	b *Bridge
}

// offsetFetchCharge is the row's memory charge (API.FrameCharge): a 4-byte
// partition id answers a partition entry (struct ~56 bytes, encoded 20).
const offsetFetchCharge = 24

func (b *Bridge) offsetFetchAPI() API {
	f := &offsetFetcher{b: b}
	return API{Key: 9, Name: "OffsetFetch", MinVersion: 0, MaxVersion: 10, Handle: f.handle, FrameCharge: offsetFetchCharge, ErrorCodes: errorCodes(offsetFetchErrorCodes)}
}

func init() { registerAPI((*Bridge).offsetFetchAPI) }

// fetchWant is one requested topic.
type fetchWant struct {
	name       string
	id         [16]byte
	byID       bool
	partitions []int32
}

// fetchedTopic is one answered topic.
type fetchedTopic struct {
	name  string
	id    [16]byte
	parts []fetchedPart
}

// fetchedPart is one answered partition.
type fetchedPart struct {
	partition int32
	offset    int64
	code      int16
}

func (f *offsetFetcher) handle(ctx context.Context, rq *Request) (kmsg.Response, error) {
	req := rq.Msg.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if rq.Version >= 8 {
		resp.Groups = make([]kmsg.OffsetFetchResponseGroup, len(req.Groups))
		offsets.Parallel(len(req.Groups), offsetFetchGroupsParallel, func(i int) {
			g := &req.Groups[i]
			if rq.Version >= 9 && (g.MemberID != nil || g.MemberEpoch >= 0) && offsets.ValidGroupID(g.Group) {
				if code, cg := f.b.cgroups.ValidateFetch(ctx, g.Group, g.MemberID, g.MemberEpoch); cg && code != 0 {
					resp.Groups[i] = kmsg.NewOffsetFetchResponseGroup()
					resp.Groups[i].Group, resp.Groups[i].ErrorCode = g.Group, code
					return
				}
			}
			wants := make([]fetchWant, len(g.Topics))
			for k := range g.Topics {
				t := &g.Topics[k]
				wants[k] = fetchWant{name: t.Topic, id: t.TopicID, byID: rq.Version >= 10, partitions: t.Partitions}
			}
			topics, code := f.fetchGroup(ctx, rq, g.Group, wants, g.Topics == nil)
			if req.RequireStable {
				f.unstable(ctx, g.Group, topics)
			}
			rg := &resp.Groups[i]
			*rg = kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, code
			rg.Topics = make([]kmsg.OffsetFetchResponseGroupTopic, len(topics))
			for k := range topics {
				ft := &topics[k]
				rt := &rg.Topics[k]
				*rt = kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic, rt.TopicID = ft.name, ft.id
				rt.Partitions = make([]kmsg.OffsetFetchResponseGroupTopicPartition, len(ft.parts))
				for j, p := range ft.parts {
					rp := &rt.Partitions[j]
					*rp = kmsg.NewOffsetFetchResponseGroupTopicPartition()
					rp.Partition, rp.Offset, rp.ErrorCode, rp.Metadata = p.partition, p.offset, p.code, &noMetadata
				}
			}
		})
		return resp, nil
	}

	wants := make([]fetchWant, len(req.Topics))
	for k := range req.Topics {
		wants[k] = fetchWant{name: req.Topics[k].Topic, partitions: req.Topics[k].Partitions}
	}
	topics, code := f.fetchGroup(ctx, rq, req.Group, wants, req.Topics == nil && rq.Version >= 2)
	if rq.Version >= 7 && req.RequireStable {
		f.unstable(ctx, req.Group, topics)
	}
	if rq.Version >= 2 {
		resp.ErrorCode = code
	}
	resp.Topics = make([]kmsg.OffsetFetchResponseTopic, len(topics))
	for k := range topics {
		ft := &topics[k]
		rt := &resp.Topics[k]
		*rt = kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = ft.name
		rt.Partitions = make([]kmsg.OffsetFetchResponseTopicPartition, len(ft.parts))
		for j, p := range ft.parts {
			rp := &rt.Partitions[j]
			*rp = kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.ErrorCode, rp.Metadata = p.partition, p.offset, p.code, &noMetadata
		}
	}
	return resp, nil
}

// unstable marks the answered partitions whose transactional offsets are
// pending UNSTABLE_OFFSET_COMMIT with offset -1 (require_stable).
func (f *offsetFetcher) unstable(ctx context.Context, group string, topics []fetchedTopic) {
	var q []txnoffsets.Offset
	for i := range topics {
		for _, p := range topics[i].parts {
			q = append(q, txnoffsets.Offset{Topic: topics[i].name, Partition: p.partition})
		}
	}
	if len(q) == 0 {
		return
	}
	res, code := f.b.txnOffsets.Unstable(ctx, group, q)
	k := 0
	for i := range topics {
		for j := range topics[i].parts {
			p := &topics[i].parts[j]
			switch {
			case p.code != 0:
			case code != 0:
				p.code, p.offset = code, -1
			case res[k]:
				p.code, p.offset = kerr.UnstableOffsetCommit.Code, -1
			}
			k++
		}
	}
}

// fetchGroup reads the committed offsets of one group: the wanted topics,
// or every topic holding the group when all is set. code is the group's
// error code (0, INVALID_GROUP_ID, or the code of a failed read).
func (f *offsetFetcher) fetchGroup(ctx context.Context, rq *Request, group string, wants []fetchWant, all bool) (topics []fetchedTopic, code int16) {
	b := f.b
	if !offsets.ValidGroupID(group) {
		return skeleton(wants, kerr.InvalidGroupID.Code), kerr.InvalidGroupID.Code
	}
	if all {
		stored, _, err := b.offsets.Scan(ctx, group)
		if err != nil {
			return nil, f.readFailed(ctx, rq, err, group, "", "offset fetch: listing the group's offsets failed")
		}
		for i := range stored {
			st := &stored[i]
			if len(st.Partitions) == 0 {
				continue
			}
			ft := fetchedTopic{name: st.Name, id: topicID(st.Info), parts: make([]fetchedPart, len(st.Partitions))}
			for j, p := range st.Partitions {
				ft.parts[j] = fetchedPart{partition: p.Partition, offset: p.Offset}
			}
			topics = append(topics, ft)
		}
		return topics, 0
	}

	type read struct {
		t, p int
		ref  iggy.TopicRef
	}
	var reads []read
	topics = skeleton(wants, 0)
	for i := range wants {
		ft := &topics[i]
		name, info, tcode := f.resolve(ctx, rq, group, &wants[i])
		if wants[i].byID && name != "" {
			ft.name = name
		}
		for j := range ft.parts {
			fp := &ft.parts[j]
			switch {
			case tcode != 0:
				fp.code = tcode
				continue
			case info == nil:
				continue // unknown topic: -1, no error
			}
			var pcode int16
			pcode, info = checkPartition(ctx, b.iggy, info, fp.partition)
			switch pcode {
			case 0:
				reads = append(reads, read{t: i, p: j, ref: info.Ref})
			case kerr.UnknownTopicOrPartition.Code: // -1, no error
			default:
				fp.code = readScoped(pcode)
			}
		}
	}
	if len(reads) > 0 {
		mode, err := b.offsets.ResolveMode(ctx, reads[0].ref)
		if err != nil {
			c := f.readFailed(ctx, rq, err, group, reads[0].ref.Topic, "offset fetch: offsets mode undecided")
			for _, r := range reads {
				topics[r.t].parts[r.p].code = c
			}
		} else {
			offsets.Parallel(len(reads), offsets.MaxParallel, func(k int) {
				r := reads[k]
				fp := &topics[r.t].parts[r.p]
				off, err := b.offsets.Read(ctx, mode, group, r.ref, fp.partition)
				if err != nil {
					fp.code = f.readFailed(ctx, rq, err, group, topics[r.t].name, "offset fetch: read failed")
					return
				}
				fp.offset = off
			})
		}
	}
	for i := range topics {
		for _, p := range topics[i].parts {
			if p.code != 0 && p.code != kerr.UnknownTopicID.Code && code == 0 {
				code = p.code
			}
		}
	}
	return topics, code
}

// resolve finds a wanted topic: by name (nil info with code 0 when it does
// not exist) or by id (UNKNOWN_TOPIC_ID when no topic has it).
func (f *offsetFetcher) resolve(ctx context.Context, rq *Request, group string, w *fetchWant) (string, *iggy.TopicInfo, int16) {
	if w.byID {
		name, info, err := f.b.topicIDs.Lookup(ctx, w.id, receivedAt(rq))
		if err != nil {
			return name, nil, f.readFailed(ctx, rq, err, group, name, "offset fetch: topic id lookup failed")
		}
		if info == nil {
			return "", nil, kerr.UnknownTopicID.Code
		}
		return name, info, 0
	}
	if validTopicName(w.name) != nil {
		return w.name, nil, 0
	}
	info, err := f.b.lookupTopic(ctx, w.name)
	switch {
	case err == nil:
		return w.name, info, 0
	case iggy.IsNotFound(err):
		return w.name, nil, 0
	}
	return w.name, nil, f.readFailed(ctx, rq, err, group, w.name, "offset fetch: topic lookup failed")
}

// skeleton answers every wanted partition with offset -1 and code.
func skeleton(wants []fetchWant, code int16) []fetchedTopic {
	topics := make([]fetchedTopic, len(wants))
	for i := range wants {
		w := &wants[i]
		topics[i] = fetchedTopic{name: w.name, id: w.id, parts: make([]fetchedPart, len(w.partitions))}
		for j, p := range w.partitions {
			topics[i].parts[j] = fetchedPart{partition: p, offset: -1, code: code}
		}
	}
	return topics
}

// readScoped turns a failure code of the shared partition check into the
// code of a failed offset read.
func readScoped(code int16) int16 {
	if code == kerr.TopicAuthorizationFailed.Code {
		return code
	}
	return kerr.CoordinatorLoadInProgress.Code
}

// readFailed logs a failed read and returns its code (offsetReadCode).
func (f *offsetFetcher) readFailed(ctx context.Context, rq *Request, err error, group, topic, msg string) int16 {
	code := offsets.ReadCode(err)
	ev := f.b.log.Debug()
	if ctx.Err() == nil {
		ev = f.b.log.Warn()
	}
	ev.Err(err).Uint64("conn_id", rq.ConnID).Int16("api_key", rq.Key).Int32("corr_id", rq.CorrID).
		Str("group_id", group).Str("topic", topic).Uint32("iggy_code", iggyCode(err)).Int16("error_code", code).Msg(msg)
	return code
}

// offsetFetchErrorCodes walks a OffsetFetch response for the metrics.
func offsetFetchErrorCodes(r *kmsg.OffsetFetchResponse, f func(int16)) {
	f(r.ErrorCode)
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			f(p.ErrorCode)
		}
	}
	for _, g := range r.Groups {
		f(g.ErrorCode)
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				f(p.ErrorCode)
			}
		}
	}
}
