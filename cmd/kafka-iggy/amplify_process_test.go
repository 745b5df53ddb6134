package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ampConns is how many connections send each amplifying request at once;
// ampCount the count on the wire each request carries.
const (
	ampConns = 20
	ampCount = 20000
	// ampIggyCount is the count of the APIs whose every entry costs an
	// Iggy round trip (DescribeGroups, CreateTopics): 20 x 20,000 of them
	// took minutes.
	ampIggyCount = 5000
	// ampSmallRecords empty records fill a batch just under Kafka's
	// default max.message.bytes (1 MB): ~890 KB.
	ampSmallRecords = 100000
)

// TestAmplifyingRequestsStayInBudget: one request per API whose handling
// allocates from a count on the wire (DescribeConfigs naming the broker
// 20,000 times; Fetch, OffsetFetch, FindCoordinator and JoinGroup with
// 20,000 entries; DescribeGroups and CreateTopics with 5,000, each entry an
// Iggy round trip; Produce of 100,000 empty records (890 KB), Produce with a gzip batch of 100 MB of zeros), each sent by 20
// connections at once at a sidecar process with a 192 MiB budget: every
// request is answered or refused (its connection closed), the sidecar
// lives, and its peak RSS (VmHWM) stays under the budget plus 80 MiB.
func TestAmplifyingRequestsStayInBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sidecar and Iggy server processes")
	}
	p := startBudgetSidecar(t)
	pid := p.cmd.Process.Pid

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const topic = "amp"
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafka))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	brokers, err := adm.ListBrokers(ctx)
	if err != nil || len(brokers) == 0 {
		t.Fatalf("brokers: %v %v", brokers, err)
	}
	nodeID := strconv.Itoa(int(brokers[0].NodeID))
	idle := procStatusKiB(t, pid, "VmRSS")

	conns := ampConns
	if v, _ := strconv.Atoi(os.Getenv("KIGGY_AMP_CONNS")); v > 0 {
		conns = v // a lighter run while measuring one API
	}
	for _, c := range ampRequests(topic, nodeID) {
		if only := os.Getenv("KIGGY_AMP_ONLY"); only != "" && !strings.Contains(c.name, only) {
			continue
		}
		start := time.Now()
		frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("amp")).AppendRequest(nil, c.req, 1)
		binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
		var wg sync.WaitGroup
		var mu sync.Mutex
		answered, refused, respBytes := 0, 0, 0
		var failures []string
		for i := 0; i < conns; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := ampRoundTrip(ctx, p.kafka, frame, c.name == "Produce gzip batch")
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					answered++
					respBytes = max(respBytes, n)
				case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
					refused++
				default:
					failures = append(failures, err.Error())
				}
			}()
		}
		wg.Wait()
		peak := procStatusKiB(t, pid, "VmHWM") << 10
		t.Logf("%-22s frame %7d bytes, response %8d: %d answered, %d refused in %v; peak RSS so far %d MiB",
			c.name, len(frame), respBytes, answered, refused, time.Since(start).Round(time.Millisecond), peak>>20)
		for _, f := range failures {
			t.Errorf("%s: %s", c.name, f)
		}
	}
	peak := procStatusKiB(t, pid, "VmHWM") << 10
	t.Logf("idle RSS %d MiB; peak RSS (VmHWM) %d MiB = budget %d MiB + %d MiB",
		idle>>10, peak>>20, memBudget>>20, (peak-memBudget)>>20)
	if peak > memBudget+memOverhead {
		t.Errorf("peak RSS %d MiB above budget %d MiB + overhead %d MiB", peak>>20, memBudget>>20, memOverhead>>20)
	}
	// The sidecar still serves.
	if _, err := adm.ListTopics(ctx); err != nil {
		t.Fatalf("sidecar no longer serves: %v\n%s", err, tail(p.logText(), 4000))
	}
}

// ampRoundTrip sends frame on a new connection and reads one response: its
// size, or io.EOF when the sidecar closed the connection instead.
func ampRoundTrip(ctx context.Context, addr string, frame []byte, allowTooLarge bool) (int, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	dl, _ := ctx.Deadline()
	_ = c.SetDeadline(dl)
	if _, err := c.Write(frame); err != nil {
		return 0, io.EOF // closed while writing: refused
	}
	var hdr [4]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		if errors.Is(err, io.EOF) || isReset(err) {
			return 0, io.EOF
		}
		return 0, err
	}
	n := int64(binary.BigEndian.Uint32(hdr[:]))
	if n <= 4096 {
		body := make([]byte, n)
		if _, err := io.ReadFull(c, body); err != nil {
			return 0, err
		}
		return int(n), checkProduceAnswer(frame, body, allowTooLarge)
	}
	if _, err := io.CopyN(io.Discard, c, n); err != nil {
		if isReset(err) {
			return 0, io.EOF
		}
		return 0, err
	}
	return int(n), nil
}

// checkProduceAnswer: a Produce is written, or (allowTooLarge: its
// compressed batch decompresses past the budget's share) refused with
// MESSAGE_TOO_LARGE; anything else is an error.
func checkProduceAnswer(frame, body []byte, allowTooLarge bool) error {
	if binary.BigEndian.Uint16(frame[4:]) != uint16(kmsg.Produce.Int16()) {
		return nil
	}
	r := kmsg.NewPtrProduceResponse()
	r.SetVersion(7)
	if err := r.ReadFrom(body[4:]); err != nil {
		return err
	}
	code := r.Topics[0].Partitions[0].ErrorCode
	if code != 0 && (!allowTooLarge || code != kerr.MessageTooLarge.Code) {
		return fmt.Errorf("produce answered with error code %d", code)
	}
	return nil
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

type ampRequest struct {
	name string
	req  kmsg.Request
}

// ampRequests builds one amplifying request per API.
func ampRequests(topic, nodeID string) []ampRequest {
	var out []ampRequest

	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.SetVersion(4)
	dc.IncludeSynonyms = true
	for i := 0; i < ampCount; i++ {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, nodeID
		dc.Resources = append(dc.Resources, r)
	}
	out = append(out, ampRequest{"DescribeConfigs", dc})

	f := kmsg.NewPtrFetchRequest()
	f.SetVersion(4)
	f.ReplicaID, f.MaxWaitMillis, f.MaxBytes = -1, 0, 1<<30
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	for i := 0; i < ampCount; i++ {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes = int32(i), 1<<20
		ft.Partitions = append(ft.Partitions, fp)
	}
	f.Topics = append(f.Topics, ft)
	out = append(out, ampRequest{"Fetch", f})

	of := kmsg.NewPtrOffsetFetchRequest()
	of.SetVersion(5)
	of.Group = "amp-group"
	ot := kmsg.NewOffsetFetchRequestTopic()
	ot.Topic = topic
	for i := 0; i < ampCount; i++ {
		ot.Partitions = append(ot.Partitions, int32(i))
	}
	of.Topics = append(of.Topics, ot)
	out = append(out, ampRequest{"OffsetFetch", of})

	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.SetVersion(0)
	for i := 0; i < ampIggyCount; i++ {
		dg.Groups = append(dg.Groups, "amp-group")
	}
	out = append(out, ampRequest{"DescribeGroups", dg})

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(4)
	for i := 0; i < ampCount; i++ {
		fc.CoordinatorKeys = append(fc.CoordinatorKeys, "amp-group-"+strconv.Itoa(i))
	}
	out = append(out, ampRequest{"FindCoordinator", fc})

	jg := kmsg.NewPtrJoinGroupRequest()
	jg.SetVersion(5)
	jg.Group, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis, jg.ProtocolType = "amp-join", 10000, 10000, "consumer"
	for i := 0; i < ampCount; i++ {
		pr := kmsg.NewJoinGroupRequestProtocol()
		pr.Name = "p" + strconv.Itoa(i)
		jg.Protocols = append(jg.Protocols, pr)
	}
	out = append(out, ampRequest{"JoinGroup", jg})

	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.SetVersion(4)
	ct.ValidateOnly, ct.TimeoutMillis = true, 10000
	for i := 0; i < ampIggyCount; i++ {
		tt := kmsg.NewCreateTopicsRequestTopic()
		tt.Topic, tt.NumPartitions, tt.ReplicationFactor = "amp-ct-"+strconv.Itoa(i), 1, 1
		ct.Topics = append(ct.Topics, tt)
	}
	out = append(out, ampRequest{"CreateTopics", ct})

	out = append(out, ampRequest{"Produce small records", ampProduce(topic, smallRecords(ampSmallRecords), 0, ampSmallRecords)})
	out = append(out, ampRequest{"Produce gzip batch", ampProduce(topic, gzipped(zeroRecords(1000, 100<<10)), 1, 1000)})
	return out
}

// ampProduce is a Produce v7 (acks=1) of one batch with the given records
// section (compressed with codec when codec != 0) of n records.
func ampProduce(topic string, records []byte, codec int16, n int) *kmsg.ProduceRequest {
	b := make([]byte, 0, 61+len(records))
	b = binary.BigEndian.AppendUint64(b, 0)                              // base offset
	b = binary.BigEndian.AppendUint32(b, uint32(49+len(records)))        // batch length
	b = binary.BigEndian.AppendUint32(b, 0)                              // leader epoch
	b = append(b, 2)                                                     // magic
	b = binary.BigEndian.AppendUint32(b, 0)                              // crc, below
	b = binary.BigEndian.AppendUint16(b, uint16(codec))                  // attributes
	b = binary.BigEndian.AppendUint32(b, uint32(n-1))                    // last offset delta
	b = binary.BigEndian.AppendUint64(b, uint64(time.Now().UnixMilli())) // first ts
	b = binary.BigEndian.AppendUint64(b, uint64(time.Now().UnixMilli())) // max ts
	b = binary.BigEndian.AppendUint64(b, ^uint64(0))                     // producer id -1
	b = binary.BigEndian.AppendUint16(b, ^uint16(0))                     // epoch -1
	b = binary.BigEndian.AppendUint32(b, ^uint32(0))                     // sequence -1
	b = binary.BigEndian.AppendUint32(b, uint32(n))                      // records
	b = append(b, records...)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))

	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(7)
	req.Acks, req.TimeoutMillis = 1, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = b
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// smallRecords is the records section of n records with no key, no value
// and no headers.
func smallRecords(n int) []byte {
	var b []byte
	for i := 0; i < n; i++ {
		var body []byte
		body = append(body, 0)                     // attributes
		body = binary.AppendVarint(body, 0)        // timestamp delta
		body = binary.AppendVarint(body, int64(i)) // offset delta
		body = binary.AppendVarint(body, -1)       // key
		body = binary.AppendVarint(body, 0)        // value length
		body = binary.AppendVarint(body, 0)        // headers
		b = binary.AppendVarint(b, int64(len(body)))
		b = append(b, body...)
	}
	return b
}

// zeroRecords is the records section of n records of size zero bytes each.
func zeroRecords(n, size int) []byte {
	var b []byte
	val := make([]byte, size)
	for i := 0; i < n; i++ {
		var body []byte
		body = append(body, 0)
		body = binary.AppendVarint(body, 0)
		body = binary.AppendVarint(body, int64(i))
		body = binary.AppendVarint(body, -1)
		body = binary.AppendVarint(body, int64(size))
		body = append(body, val...)
		body = binary.AppendVarint(body, 0)
		b = binary.AppendVarint(b, int64(len(body)))
		b = append(b, body...)
	}
	return b
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Bytes()
}
