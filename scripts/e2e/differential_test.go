package e2e

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The differential test runs one scripted admin and data scenario (kadm,
// kgo, and raw kmsg requests sent straight to the partition leader, so that
// the broker's own answer is recorded rather than a client-side shortcut)
// against the reference (a real Apache Kafka broker when one runs, see
// kafka_target.go; else kfake) and against every other target, records what a
// client sees as a transcript of named steps and fields, and compares the
// transcripts field by field. A transcript holds no run-specific value (topic names,
// wall-clock times, node ids), so two runs against the same broker are
// identical: with kfake alone, the test diffs two kfake runs and checks
// kfake against Kafka's documented behaviour (kafkaSemantics).

// intendedDifference is a field where a target may differ from kfake on
// purpose. With a real Kafka broker as the reference, an entry without Target
// whose Want is set records where kfake itself deviates from Kafka: it then
// excuses kfake alone, and every other target must match Kafka.
type intendedDifference struct {
	Step  string // step name
	Field string // field name; "" = every field of the step
	// Want, when set, is the value the other target must show (Kafka's own
	// behaviour where kfake deviates from it); "" accepts any value.
	Want string
	// Target, when set, limits the entry to the target of that name;
	// "sidecar" means every kafka-iggy sidecar (Target.Sidecar), whatever
	// its name, and no other broker (a real Kafka broker is held to
	// kfake's value).
	Target string
	Why    string
}

// intendedDifferences documents every accepted difference from kfake.
var intendedDifferences = []intendedDifference{
	{Step: "create topic with an illegal name", Field: "error",
		Want: "17 INVALID_TOPIC_EXCEPTION",
		Why:  "kfake does not validate topic names; Kafka and the sidecar (KAFKA-ON-IGGY.md §1) refuse them with INVALID_TOPIC_EXCEPTION"},
	{Step: "delete records", Field: "p0 to 2 (below the log start)",
		Want: "0 NONE low_watermark=5",
		Why:  "kfake refuses an offset below the log start; Kafka and the sidecar leave the log start where it is and answer it"},
	{Step: "delete records", Field: "p0 to 13 (above the high watermark)",
		Want: "1 OFFSET_OUT_OF_RANGE low_watermark=-1",
		Why:  "kfake answers low watermark 0 with the error; Kafka and the sidecar answer -1"},
	{Step: "fetch after delete records", Field: "below the log start",
		Want: "1 OFFSET_OUT_OF_RANGE log_start_offset=-1",
		Why:  "kfake fills log_start_offset in an OFFSET_OUT_OF_RANGE answer; Kafka and the sidecar answer -1"},
}

// kafkaSemantics are values Apache Kafka gives for the scenario; every
// target must show them (a reference target is excused where an
// intendedDifference with Want says kfake deviates).
var kafkaSemantics = map[string]map[string]string{
	"create topic":                             {"error": "0 NONE"},
	"create the same topic again":              {"error": "36 TOPIC_ALREADY_EXISTS"},
	"create topic with an illegal name":        {"error": "17 INVALID_TOPIC_EXCEPTION"},
	"create topic with cleanup.policy=compact": {"error": "0 NONE"},
	"metadata of an unknown topic":             {"error": "3 UNKNOWN_TOPIC_OR_PARTITION"},
	"describe configs of an unknown topic":     {"error": "3 UNKNOWN_TOPIC_OR_PARTITION"},
	"fetch beyond the high watermark":          {"error": "1 OFFSET_OUT_OF_RANGE"},
	"list offsets of an unknown partition":     {"error": "3 UNKNOWN_TOPIC_OR_PARTITION"},
	"metadata": {"partitions": "3", "p0 error": "0 NONE", "p1 error": "0 NONE", "p2 error": "0 NONE",
		"p0 leader known": "true", "p1 leader known": "true", "p2 leader known": "true"},
	"list offsets earliest": {"p0": "0 NONE offset=0", "p1": "0 NONE offset=0", "p2": "0 NONE offset=0"},
	"list offsets latest":   {"p0": "0 NONE offset=12", "p1": "0 NONE offset=3", "p2": "0 NONE offset=5"},
	"list offsets by timestamp on p2 (monotonic CreateTime)": {
		"t=base-1":             fmt.Sprintf("0 NONE offset=0 timestamp=%d", tsBase),
		"t=base":               fmt.Sprintf("0 NONE offset=0 timestamp=%d", tsBase),
		"t=base+1500":          fmt.Sprintf("0 NONE offset=2 timestamp=%d", tsBase+2000),
		"t=base+4000":          fmt.Sprintf("0 NONE offset=4 timestamp=%d", tsBase+4000),
		"t=base+1000000":       "0 NONE offset=-1 timestamp=-1",
		"t=-3 (max timestamp)": fmt.Sprintf("0 NONE offset=4 timestamp=%d", tsBase+4000),
	},
	"delete records": {"p0 to 5": "0 NONE low_watermark=5", "p0 to 2 (below the log start)": "0 NONE low_watermark=5",
		"p0 to 13 (above the high watermark)": "1 OFFSET_OUT_OF_RANGE low_watermark=-1", "p1 to -1 (the high watermark)": "0 NONE low_watermark=3"},
	"list offsets earliest after delete records": {"p0": "0 NONE offset=5", "p1": "0 NONE offset=3", "p2": "0 NONE offset=0"},
	"fetch after delete records":                 {"below the log start": "1 OFFSET_OUT_OF_RANGE log_start_offset=-1", "at the log start": "0 NONE log_start_offset=5"},
	"describe configs": {"error": "0 NONE",
		"retention.ms": "3600000 (DYNAMIC_TOPIC_CONFIG)", "cleanup.policy": "delete (DYNAMIC_TOPIC_CONFIG)"},
}

// transcript is what a client saw, step by step.
type transcript struct {
	steps []step
}

type step struct {
	name   string
	fields []field
}

type field struct{ key, value string }

func (tr *transcript) add(name string, kv ...string) {
	s := step{name: name}
	for i := 0; i+1 < len(kv); i += 2 {
		s.fields = append(s.fields, field{kv[i], kv[i+1]})
	}
	tr.steps = append(tr.steps, s)
}

func (tr *transcript) get(stepName, key string) (string, bool) {
	for _, s := range tr.steps {
		if s.name != stepName {
			continue
		}
		for _, f := range s.fields {
			if f.key == key {
				return f.value, true
			}
		}
	}
	return "", false
}

func (tr *transcript) String() string {
	var b strings.Builder
	for _, s := range tr.steps {
		fmt.Fprintf(&b, "%s:\n", s.name)
		for _, f := range s.fields {
			fmt.Fprintf(&b, "    %s = %s\n", f.key, shorten(f.value))
		}
	}
	return b.String()
}

func shorten(s string) string {
	if len(s) > 160 {
		return fmt.Sprintf("%s...(%d chars)", s[:150], len(s))
	}
	return s
}

func TestDifferential(t *testing.T) {
	ref := referenceTarget(t)
	refTr := runScenario(t, ref)
	checkKafkaSemantics(t, ref, refTr)
	if testing.Verbose() {
		t.Logf("%s transcript (the reference):\n%s", ref.Name, refTr)
	}
	if t.Failed() {
		t.Logf("%s transcript (the reference):\n%s", ref.Name, refTr)
		return
	}
	others := 0
	for _, tg := range targets(t) {
		if tg.Name == ref.Name {
			continue
		}
		others++
		t.Run(tg.Name, func(t *testing.T) {
			tr := runScenario(t, tg)
			checkKafkaSemantics(t, tg, tr)
			diffTranscripts(t, ref.Name, tg.Name, refTr, tr, intendedFor(tg, ref))
			if t.Failed() {
				t.Logf("%s transcript:\n%s\n%s transcript (the reference):\n%s", tg.Name, tr, ref.Name, refTr)
			}
		})
	}
	if others == 0 {
		// Only the reference: a second run proves the transcript carries
		// nothing run-specific, so a future diff against the sidecar is
		// meaningful.
		again := runScenario(t, ref)
		diffTranscripts(t, ref.Name+" (run 1)", ref.Name+" (run 2)", refTr, again, nil)
		t.Logf("only %s is available: the scenario matched Kafka's documented values, and two runs gave identical transcripts (%d steps)", ref.Name, len(refTr.steps))
	}
}

// checkKafkaSemantics compares a transcript with kafkaSemantics.
func checkKafkaSemantics(t *testing.T, tg Target, tr *transcript) {
	t.Helper()
	for stepName, fields := range kafkaSemantics {
		for key, want := range fields {
			got, ok := tr.get(stepName, key)
			if tg.Reference && referenceExcused(stepName, key, want) {
				continue
			}
			if ok && targetExcused(tg, stepName, key, got) {
				continue
			}
			if !ok {
				t.Errorf("%s: step %q has no field %q", tg.Name, stepName, key)
			} else if got != want {
				t.Errorf("%s: step %q, %s: got %s, want %s (Kafka's behaviour)", tg.Name, stepName, key, shorten(got), want)
			}
		}
	}
}

// intendedFor returns the intended differences that apply to a target
// compared with ref.
func intendedFor(target, ref Target) []intendedDifference {
	var out []intendedDifference
	for _, d := range intendedDifferences {
		switch {
		case ref.Kafka && d.Target == "" && d.Want != "":
			// kfake deviates from Kafka here: excuse kfake only.
			if target.Reference {
				d.Want = ""
				out = append(out, d)
			}
		case d.Target == "" || d.appliesTo(target):
			out = append(out, d)
		}
	}
	return out
}

// appliesTo reports whether an entry with a Target is meant for tg.
func (d intendedDifference) appliesTo(tg Target) bool {
	if d.Target == "sidecar" {
		return tg.Sidecar
	}
	return d.Target == tg.Name
}

// targetExcused reports whether a documented intended difference of this
// target (Target set) allows it to show got instead of Kafka's value.
func targetExcused(tg Target, stepName, key, got string) bool {
	for _, d := range intendedDifferences {
		if d.Target != "" && d.appliesTo(tg) && d.Step == stepName && (d.Field == "" || d.Field == key) && d.Want == got {
			return true
		}
	}
	return false
}

// referenceExcused reports whether kfake is known to deviate from Kafka here.
func referenceExcused(stepName, key, want string) bool {
	for _, d := range intendedDifferences {
		if d.Step == stepName && (d.Field == "" || d.Field == key) && d.Want == want {
			return true
		}
	}
	return false
}

// diffTranscripts reports every field that differs between a and b, except
// intended differences (whose Want, when set, b must show).
func diffTranscripts(t *testing.T, aName, bName string, a, b *transcript, intended []intendedDifference) {
	t.Helper()
	if diffs := transcriptDiffs(aName, bName, a, b, intended); len(diffs) > 0 {
		t.Errorf("%s differs from %s in %d fields (add a documented entry to intendedDifferences only if the difference is on purpose):\n  %s",
			bName, aName, len(diffs), strings.Join(diffs, "\n  "))
	}
}

// transcriptDiffs lists the differences diffTranscripts reports.
func transcriptDiffs(aName, bName string, a, b *transcript, intended []intendedDifference) []string {
	type loc struct{ step, key string }
	index := func(tr *transcript) (map[loc]string, []loc) {
		m := map[loc]string{}
		var order []loc
		for _, s := range tr.steps {
			for _, f := range s.fields {
				l := loc{s.name, f.key}
				m[l] = f.value
				order = append(order, l)
			}
		}
		return m, order
	}
	am, aOrder := index(a)
	bm, bOrder := index(b)
	for _, l := range bOrder {
		if _, ok := am[l]; !ok {
			aOrder = append(aOrder, l)
		}
	}
	var diffs []string
	for _, l := range aOrder {
		av, aok := am[l]
		bv, bok := bm[l]
		var d *intendedDifference
		for i := range intended {
			if intended[i].Step == l.step && (intended[i].Field == "" || intended[i].Field == l.key) {
				d = &intended[i]
			}
		}
		if d != nil {
			if d.Want != "" && bv != d.Want {
				diffs = append(diffs, fmt.Sprintf("%q %s: %s shows %s, want %s (intended difference: %s)", l.step, l.key, bName, orMissing(bv, bok), d.Want, d.Why))
			}
			continue
		}
		if av != bv || aok != bok {
			diffs = append(diffs, fmt.Sprintf("%q %s:\n      %s: %s\n      %s: %s", l.step, l.key, aName, shorten(orMissing(av, aok)), bName, shorten(orMissing(bv, bok))))
		}
	}
	return diffs
}

func orMissing(v string, ok bool) string {
	if !ok {
		return "(missing)"
	}
	return v
}

// errStr renders a Kafka error code as "code NAME".
func errStr(code int16) string {
	if code == 0 {
		return "0 NONE"
	}
	name := fmt.Sprintf("UNKNOWN_CODE_%d", code)
	var ke *kerr.Error
	if errors.As(kerr.ErrorForCode(code), &ke) {
		name = ke.Message
	}
	return fmt.Sprintf("%d %s", code, name)
}

// errOf renders an error from kadm/kgo: a Kafka error code when it is one.
func errOf(err error) string {
	if err == nil {
		return "0 NONE"
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return errStr(ke.Code)
	}
	return "client error: " + err.Error()
}

// exactBytes renders bytes exactly: null, a quoted string, or hex.
func exactBytes(b []byte) string {
	if b == nil {
		return "null"
	}
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return fmt.Sprintf("hex:%x", b)
		}
	}
	return fmt.Sprintf("%q", b)
}

func exactRecord(r Rec) string {
	var hs []string
	for _, h := range r.Headers {
		hs = append(hs, fmt.Sprintf("%q=%s", h.Key, exactBytes(h.Value)))
	}
	return fmt.Sprintf("ts=%d key=%s value=%s headers=[%s]", r.Timestamp, exactBytes(r.Key), exactBytes(r.Value), strings.Join(hs, " "))
}

// monotonicRecords go to partition 2, one second apart, for timestamp lookups
// whose answer does not depend on how a broker indexes time.
func monotonicRecords() []Rec {
	var out []Rec
	for i := range 5 {
		out = append(out, Rec{Label: fmt.Sprintf("ts-%d", i), Partition: 2, Offset: -1,
			Key: []byte(fmt.Sprintf("ts-%d", i)), Value: []byte("monotonic"), Timestamp: tsBase + int64(i)*1000})
	}
	return out
}

// runScenario runs the scripted scenario against tg and returns its transcript.
func runScenario(t *testing.T, tg Target) *transcript {
	t.Helper()
	tr := &transcript{}
	cl := newKgo(t, tg, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	ctx := testCtx(t, 60*time.Second)
	topic := uniqueTopic("diff")

	// Admin: create, create again, illegal name, compact.
	configs := map[string]*string{"retention.ms": kadm.StringPtr("3600000"), "cleanup.policy": kadm.StringPtr("delete")}
	_, err := adm.CreateTopic(ctx, 3, 1, configs, topic)
	tr.add("create topic", "error", errOf(err))
	if err != nil {
		t.Fatalf("%s: create topic %s: %v", tg.Name, topic, err)
	}
	_, err = adm.CreateTopic(ctx, 3, 1, configs, topic)
	tr.add("create the same topic again", "error", errOf(err))
	_, err = adm.CreateTopic(ctx, 1, 1, nil, topic+"/illegal?name")
	tr.add("create topic with an illegal name", "error", errOf(err))
	_, err = adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, topic+"-compact")
	tr.add("create topic with cleanup.policy=compact", "error", errOf(err))

	// Metadata of the topic (raw, auto-creation off) and of an unknown one.
	meta := func(name string) *kmsg.MetadataResponse {
		req := kmsg.NewPtrMetadataRequest()
		req.AllowAutoTopicCreation = false
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, mt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("%s: metadata request for %s: %v", tg.Name, name, err)
		}
		if len(resp.Topics) != 1 {
			t.Fatalf("%s: metadata for %s returned %d topics", tg.Name, name, len(resp.Topics))
		}
		return resp
	}
	m := meta(topic).Topics[0]
	leaders := map[int32]int32{}
	kv := []string{"error", errStr(m.ErrorCode), "partitions", fmt.Sprint(len(m.Partitions))}
	slices.SortFunc(m.Partitions, func(a, b kmsg.MetadataResponseTopicPartition) int { return int(a.Partition - b.Partition) })
	for _, p := range m.Partitions {
		leaders[p.Partition] = p.Leader
		kv = append(kv, fmt.Sprintf("p%d error", p.Partition), errStr(p.ErrorCode), fmt.Sprintf("p%d leader known", p.Partition), fmt.Sprint(p.Leader >= 0))
	}
	tr.add("metadata", kv...)
	tr.add("metadata of an unknown topic", "error", errStr(meta(topic + "-unknown").Topics[0].ErrorCode))
	broker := func(p int32) *kgo.Broker { return cl.Broker(int(leaders[p])) }

	// Produce: the canonical records (p0, p1) and monotonic ones (p2).
	recs := append(canonicalRecords(), monotonicRecords()...)
	var pkv []string
	produced := cloneRecs(recs)
	for i, r := range recs {
		res := cl.ProduceSync(ctx, toKgo(topic, r))
		rec, err := res.First()
		pkv = append(pkv, fmt.Sprintf("#%d %s", i, r.Label), fmt.Sprintf("%s p%d@%d", errOf(err), r.Partition, offsetOf(rec, err)))
		produced[i].Offset = offsetOf(rec, err)
	}
	tr.add("produce", pkv...)

	// Consume everything from the earliest offsets.
	consumed := kgoConsume(t, tg, topic, 3, len(recs))
	assertRecords(t, tg.Name+" differential scenario", produced, consumed)
	sortByPosition(consumed)
	var ckv []string
	for _, r := range consumed {
		ckv = append(ckv, fmt.Sprintf("p%d@%d", r.Partition, r.Offset), exactRecord(r))
	}
	tr.add("consume from earliest", ckv...)

	// ListOffsets, raw, to each partition's leader.
	listOffsets := func(p int32, ts int64) string {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = topic
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition = p
		lp.Timestamp = ts
		lp.CurrentLeaderEpoch = -1
		lt.Partitions = append(lt.Partitions, lp)
		req.Topics = append(req.Topics, lt)
		kresp, err := broker(p).Request(ctx, req)
		if err != nil {
			return "client error: " + err.Error()
		}
		resp := kresp.(*kmsg.ListOffsetsResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return fmt.Sprintf("malformed response: %d topics", len(resp.Topics))
		}
		rp := resp.Topics[0].Partitions[0]
		if rp.ErrorCode != 0 {
			return errStr(rp.ErrorCode)
		}
		if ts >= 0 || ts == -3 {
			return fmt.Sprintf("%s offset=%d timestamp=%d", errStr(rp.ErrorCode), rp.Offset, rp.Timestamp)
		}
		return fmt.Sprintf("%s offset=%d", errStr(rp.ErrorCode), rp.Offset)
	}
	tr.add("list offsets earliest", "p0", listOffsets(0, -2), "p1", listOffsets(1, -2), "p2", listOffsets(2, -2))
	tr.add("list offsets latest", "p0", listOffsets(0, -1), "p1", listOffsets(1, -1), "p2", listOffsets(2, -1))
	tr.add("list offsets by timestamp on p2 (monotonic CreateTime)",
		"t=base-1", listOffsets(2, tsBase-1),
		"t=base", listOffsets(2, tsBase),
		"t=base+1500", listOffsets(2, tsBase+1500),
		"t=base+4000", listOffsets(2, tsBase+4000),
		"t=base+1000000", listOffsets(2, tsBase+1_000_000),
		"t=-3 (max timestamp)", listOffsets(2, -3),
	)
	{
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = topic
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition = 99
		lp.Timestamp = -1
		lp.CurrentLeaderEpoch = -1
		lt.Partitions = append(lt.Partitions, lp)
		req.Topics = append(req.Topics, lt)
		v := "no answer"
		if kresp, err := broker(0).Request(ctx, req); err != nil {
			v = "client error: " + err.Error()
		} else if resp := kresp.(*kmsg.ListOffsetsResponse); len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
			v = errStr(resp.Topics[0].Partitions[0].ErrorCode)
		}
		tr.add("list offsets of an unknown partition", "error", v)
	}

	// Fetch beyond the high watermark: OFFSET_OUT_OF_RANGE.
	{
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxWaitMillis = 100
		req.MaxBytes = 1 << 20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = topic
		ft.TopicID = m.TopicID
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition = 0
		fp.FetchOffset = 1000
		fp.PartitionMaxBytes = 1 << 20
		fp.CurrentLeaderEpoch = -1
		fp.LastFetchedEpoch = -1
		fp.LogStartOffset = -1
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		v := "no answer"
		if kresp, err := broker(0).Request(ctx, req); err != nil {
			v = "client error: " + err.Error()
		} else if resp := kresp.(*kmsg.FetchResponse); resp.ErrorCode != 0 {
			v = "top-level " + errStr(resp.ErrorCode)
		} else if len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
			v = errStr(resp.Topics[0].Partitions[0].ErrorCode)
		}
		tr.add("fetch beyond the high watermark", "error", v)
	}

	// DescribeConfigs: the two keys set on create, and an unknown topic.
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	dkv := []string{"error", errOf(err)}
	if err == nil {
		if len(rcs) != 1 {
			dkv = []string{"error", fmt.Sprintf("%d resources", len(rcs))}
		} else {
			dkv = []string{"error", errOf(rcs[0].Err)}
			for _, key := range []string{"retention.ms", "cleanup.policy"} {
				v := "(not reported)"
				for _, c := range rcs[0].Configs {
					if c.Key == key {
						v = fmt.Sprintf("%s (%s)", c.MaybeValue(), c.Source)
					}
				}
				dkv = append(dkv, key, v)
			}
		}
	}
	tr.add("describe configs", dkv...)
	rcs, err = adm.DescribeTopicConfigs(ctx, topic+"-unknown")
	if err == nil && len(rcs) == 1 {
		err = rcs[0].Err
	}
	tr.add("describe configs of an unknown topic", "error", errOf(err))

	// DeleteRecords on p0 (12 records) and p1 (3), raw, to the leader: a
	// move, a lower offset (no change), one above the high watermark, -1
	// (the high watermark); then what ListOffsets and Fetch make of it.
	deleteRecords := func(p int32, offset int64) string {
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.TimeoutMillis = 5000
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = p, offset
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		kresp, err := broker(p).Request(ctx, req)
		if err != nil {
			return "client error: " + err.Error()
		}
		resp := kresp.(*kmsg.DeleteRecordsResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return fmt.Sprintf("malformed response: %d topics", len(resp.Topics))
		}
		dp := resp.Topics[0].Partitions[0]
		return fmt.Sprintf("%s low_watermark=%d", errStr(dp.ErrorCode), dp.LowWatermark)
	}
	tr.add("delete records",
		"p0 to 5", deleteRecords(0, 5),
		"p0 to 2 (below the log start)", deleteRecords(0, 2),
		"p0 to 13 (above the high watermark)", deleteRecords(0, 13),
		"p1 to -1 (the high watermark)", deleteRecords(1, -1))
	tr.add("list offsets earliest after delete records", "p0", listOffsets(0, -2), "p1", listOffsets(1, -2), "p2", listOffsets(2, -2))
	fetchAt := func(offset int64) string {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxWaitMillis = 100
		req.MaxBytes = 1 << 20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = topic
		ft.TopicID = m.TopicID
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition = 0
		fp.FetchOffset = offset
		fp.PartitionMaxBytes = 1 << 20
		fp.CurrentLeaderEpoch = -1
		fp.LastFetchedEpoch = -1
		fp.LogStartOffset = -1
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		kresp, err := broker(0).Request(ctx, req)
		if err != nil {
			return "client error: " + err.Error()
		}
		resp := kresp.(*kmsg.FetchResponse)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return "top-level " + errStr(resp.ErrorCode)
		}
		fp2 := resp.Topics[0].Partitions[0]
		return fmt.Sprintf("%s log_start_offset=%d", errStr(fp2.ErrorCode), fp2.LogStartOffset)
	}
	tr.add("fetch after delete records", "below the log start", fetchAt(2), "at the log start", fetchAt(5))
	return tr
}

func offsetOf(r *kgo.Record, err error) int64 {
	if err != nil || r == nil {
		return -1
	}
	return r.Offset
}
