package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Scenarios of the Go clients, in-process: franz-go (kgo + kadm), IBM sarama
// and segmentio/kafka-go.

// runMembers polls two group members in goroutines until stop; each run
// function returns when ctx ends.
func runMembers(t *testing.T, p scenarioParams, rebalanced func(a, b []int32), run func(ctx context.Context, i int, m *members) error) groupObs {
	t.Helper()
	m := newMembers()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make([]error, 2)
	var mu sync.Mutex
	start := func(i int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := run(ctx, i, m)
			if ctx.Err() == nil {
				mu.Lock()
				errs[i] = fmt.Errorf("member %c stopped: %v", 'A'+i, err)
				mu.Unlock()
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	failed := func() error {
		mu.Lock()
		defer mu.Unlock()
		return errors.Join(errs...)
	}
	who := "group " + p.Group
	start(0)
	if !m.wait(t, who, p.Partitions, false, failed) {
		return groupObs{}
	}
	obs := groupObs{Before: m.get(0)}
	start(1)
	if !m.wait(t, who, p.Partitions, true, failed) {
		return obs
	}
	obs.A, obs.B = m.get(0), m.get(1)
	rebalanced(obs.A, obs.B)
	return obs
}

// ---------------------------------------------------------------------------
// franz-go

func kgoScenarioClient() scenarioClient {
	return scenarioClient{
		name: "franz-go",
		group: func(t *testing.T, tg Target, p scenarioParams, rebalanced func(a, b []int32)) groupObs {
			return runMembers(t, p, rebalanced, func(ctx context.Context, i int, m *members) error {
				cl, err := kgo.NewClient(kgo.SeedBrokers(tg.Bootstrap), kgo.ConsumerGroup(p.Group), kgo.ConsumeTopics(p.Topic),
					kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond),
					kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) { m.add(i, a[p.Topic]...) }),
					kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) { m.remove(i, r[p.Topic]...) }),
					kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, r map[string][]int32) { m.remove(i, r[p.Topic]...) }))
				if err != nil {
					return err
				}
				defer cl.Close()
				for ctx.Err() == nil {
					fs := cl.PollFetches(ctx)
					if err := fs.Err0(); err != nil && !errors.Is(err, context.Canceled) {
						return err
					}
				}
				return ctx.Err()
			})
		},
		commit: func(t *testing.T, tg Target, p scenarioParams) commitObs {
			ctx := testCtx(t, 45*time.Second)
			open := func() *kgo.Client {
				return newKgo(t, tg, kgo.ConsumerGroup(p.Group), kgo.ConsumeTopics(p.Topic), kgo.DisableAutoCommit(),
					kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
			}
			cl := open()
			for n := 0; n < 4; {
				fs := cl.PollRecords(ctx, 4-n)
				if err := fs.Err0(); err != nil {
					t.Fatalf("franz-go first member: %v", err)
				}
				n += fs.NumRecords()
			}
			offs := map[string]map[int32]kgo.EpochOffset{p.Topic: {0: {Epoch: -1, Offset: 4}}}
			var cerr error
			cl.CommitOffsetsSync(ctx, offs, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
				cerr = err
				for _, rt := range resp.Topics {
					for _, rp := range rt.Partitions {
						if err := kerr.ErrorForCode(rp.ErrorCode); err != nil && cerr == nil {
							cerr = err
						}
					}
				}
			})
			if cerr != nil {
				t.Fatalf("franz-go commit: %v", cerr)
			}
			obs := commitObs{Committed: -1}
			if o, ok := cl.CommittedOffsets()[p.Topic][0]; ok {
				obs.Committed = o.Offset
			}
			cl.Close()
			cl2 := open()
			obs.Resumed = -1
			for last := int64(-1); last < int64(p.Records-1); {
				fs := cl2.PollFetches(ctx)
				if err := fs.Err0(); err != nil {
					t.Fatalf("franz-go second member: %v", err)
				}
				fs.EachRecord(func(r *kgo.Record) {
					if obs.Resumed < 0 {
						obs.Resumed = r.Offset
					}
					last = r.Offset
					obs.ResumedCount++
				})
			}
			return obs
		},
		seek: func(t *testing.T, tg Target, p scenarioParams) seekObs {
			ctx := testCtx(t, 30*time.Second)
			adm := kadm.NewClient(newKgo(t, tg))
			lookup := func(ts int64) int64 {
				lo, err := adm.ListOffsetsAfterMilli(ctx, ts, p.Topic)
				if err == nil {
					err = lo.Error()
				}
				if err != nil {
					t.Fatalf("franz-go ListOffsetsAfterMilli: %v", err)
				}
				o, _ := lo.Lookup(p.Topic, 0)
				if o.Timestamp < 0 {
					return -1 // kadm reports the end offset with timestamp -1 when no record is that late
				}
				return o.Offset
			}
			obs := seekObs{Offset: lookup(p.Timestamp), AfterOffset: lookup(p.After)}
			cl := newKgo(t, tg, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{p.Topic: {0: kgo.NewOffset().AfterMilli(p.Timestamp)}}))
			for {
				fs := cl.PollFetches(ctx)
				if err := fs.Err0(); err != nil {
					t.Fatalf("franz-go consume after AfterMilli: %v", err)
				}
				if recs := fs.Records(); len(recs) > 0 {
					obs.ReadOffset, obs.ReadTimestamp = recs[0].Offset, recs[0].Timestamp.UnixMilli()
					return obs
				}
			}
		},
		idempotent: func(t *testing.T, tg Target, p scenarioParams) idemObs {
			cl := newKgo(t, tg, kgo.DefaultProduceTopic(p.Topic))
			ctx := testCtx(t, 30*time.Second)
			var recs []*kgo.Record
			for i := range p.Records {
				recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i)})
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatalf("franz-go produce: %v", err)
			}
			obs := idemObs{IdempotentDefault: true}
			for _, r := range recs {
				obs.Offsets = append(obs.Offsets, r.Offset)
			}
			return obs
		},
		admin: func(t *testing.T, tg Target, p scenarioParams) adminObs {
			ctx := testCtx(t, 45*time.Second)
			adm := kadm.NewClient(newKgo(t, tg))
			var obs adminObs
			create := func() string {
				r, err := adm.CreateTopic(ctx, 3, 1, map[string]*string{"retention.ms": kadm.StringPtr("3600000")}, p.Topic)
				if err == nil {
					err = r.Err
				}
				return kafkaErrName(err)
			}
			retention := func() string {
				rc, err := adm.DescribeTopicConfigs(ctx, p.Topic)
				if err != nil || len(rc) != 1 || rc[0].Err != nil {
					return fmt.Sprintf("describe configs: %v", errors.Join(err, firstErr(rc)))
				}
				for _, c := range rc[0].Configs {
					if c.Key == "retention.ms" {
						return c.MaybeValue()
					}
				}
				return "(not reported)"
			}
			describe := func() (string, int) {
				td, err := adm.ListTopics(ctx, p.Topic)
				if err != nil {
					return kafkaErrName(err), 0
				}
				d := td[p.Topic]
				return kafkaErrName(d.Err), len(d.Partitions)
			}
			obs.Create = create()
			obs.CreateAgain = create()
			_, obs.Partitions = describe()
			obs.Retention = retention()
			ar, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("7200000")}}, p.Topic)
			if err == nil {
				err = firstAlterErr(ar)
			}
			if err != nil {
				t.Fatalf("franz-go alter configs: %v", err)
			}
			obs.RetentionAfterAlter = pollValue(retention, obs.Retention)
			dr, err := adm.DeleteTopics(ctx, p.Topic)
			if err == nil {
				err = dr.Error()
			}
			obs.Delete = kafkaErrName(err)
			deadline := time.Now().Add(20 * time.Second)
			for {
				obs.DescribeAfterDelete, _ = describe()
				if obs.DescribeAfterDelete != "NONE" || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			return obs
		},
	}
}

func firstErr(rc kadm.ResourceConfigs) error {
	for _, r := range rc {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}

func firstAlterErr(ar kadm.AlterConfigsResponses) error {
	for _, r := range ar {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}

// kafkaErrName renders an error as Kafka's name for it when it is a Kafka error.
func kafkaErrName(err error) string {
	if err == nil {
		return "NONE"
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	var se sarama.KError
	if errors.As(err, &se) {
		return kerrName(int16(se))
	}
	var ge kafka.Error
	if errors.As(err, &ge) {
		return kerrName(int16(ge))
	}
	return "client error: " + err.Error()
}

// ---------------------------------------------------------------------------
// sarama

type saramaGroupHandler struct {
	i     int
	m     *members
	topic string
	ready func(s sarama.ConsumerGroupSession)
	read  func(msg *sarama.ConsumerMessage, s sarama.ConsumerGroupSession)
}

func (h *saramaGroupHandler) Setup(s sarama.ConsumerGroupSession) error {
	if h.m != nil {
		h.m.set(h.i, s.Claims()[h.topic])
	}
	if h.ready != nil {
		h.ready(s)
	}
	return nil
}

func (h *saramaGroupHandler) Cleanup(sarama.ConsumerGroupSession) error {
	if h.m != nil {
		h.m.set(h.i, nil)
	}
	return nil
}

func (h *saramaGroupHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for {
		select {
		case msg, ok := <-c.Messages():
			if !ok {
				return nil
			}
			if h.read != nil {
				h.read(msg, s)
			}
		case <-s.Context().Done():
			return nil
		}
	}
}

func saramaGroupConfig() *sarama.Config {
	cfg := saramaConfig("none")
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Group.Rebalance.Timeout = 20 * time.Second
	return cfg
}

func saramaScenarioClient() scenarioClient {
	return scenarioClient{
		name: "sarama",
		group: func(t *testing.T, tg Target, p scenarioParams, rebalanced func(a, b []int32)) groupObs {
			return runMembers(t, p, rebalanced, func(ctx context.Context, i int, m *members) error {
				g, err := sarama.NewConsumerGroup([]string{tg.Bootstrap}, p.Group, saramaGroupConfig())
				if err != nil {
					return err
				}
				defer g.Close()
				h := &saramaGroupHandler{i: i, m: m, topic: p.Topic}
				for ctx.Err() == nil {
					if err := g.Consume(ctx, []string{p.Topic}, h); err != nil && ctx.Err() == nil {
						return err
					}
				}
				return ctx.Err()
			})
		},
		commit: func(t *testing.T, tg Target, p scenarioParams) commitObs {
			obs := commitObs{Committed: -1, Resumed: -1}
			consume := func(stopAt func(msg *sarama.ConsumerMessage, s sarama.ConsumerGroupSession) bool) {
				g, err := sarama.NewConsumerGroup([]string{tg.Bootstrap}, p.Group, saramaGroupConfig())
				if err != nil {
					t.Fatalf("sarama consumer group: %v", err)
				}
				defer g.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
				defer cancel()
				var once sync.Once
				h := &saramaGroupHandler{topic: p.Topic, read: func(msg *sarama.ConsumerMessage, s sarama.ConsumerGroupSession) {
					if stopAt(msg, s) {
						once.Do(cancel)
					}
				}}
				for ctx.Err() == nil {
					if err := g.Consume(ctx, []string{p.Topic}, h); err != nil && ctx.Err() == nil {
						t.Fatalf("sarama Consume: %v", err)
					}
				}
				if errors.Is(ctx.Err(), context.DeadlineExceeded) {
					t.Fatalf("sarama group consumer: deadline before the records arrived")
				}
			}
			n := 0
			consume(func(msg *sarama.ConsumerMessage, s sarama.ConsumerGroupSession) bool {
				n++
				if n < 4 {
					return false
				}
				s.MarkOffset(p.Topic, 0, 4, "")
				s.Commit()
				return true
			})
			adm, err := sarama.NewClusterAdmin([]string{tg.Bootstrap}, saramaConfig("none"))
			if err != nil {
				t.Fatalf("sarama admin: %v", err)
			}
			defer adm.Close()
			if resp, err := adm.ListConsumerGroupOffsets(p.Group, map[string][]int32{p.Topic: {0}}); err == nil {
				if b := resp.GetBlock(p.Topic, 0); b != nil {
					obs.Committed = b.Offset
				}
			}
			consume(func(msg *sarama.ConsumerMessage, s sarama.ConsumerGroupSession) bool {
				if obs.Resumed < 0 {
					obs.Resumed = msg.Offset
				}
				obs.ResumedCount++
				return msg.Offset >= int64(p.Records-1)
			})
			return obs
		},
		seek: func(t *testing.T, tg Target, p scenarioParams) seekObs {
			cl, err := sarama.NewClient([]string{tg.Bootstrap}, saramaConfig("none"))
			if err != nil {
				t.Fatalf("sarama client: %v", err)
			}
			defer cl.Close()
			var obs seekObs
			if obs.Offset, err = cl.GetOffset(p.Topic, 0, p.Timestamp); err != nil {
				t.Fatalf("sarama GetOffset: %v", err)
			}
			if obs.AfterOffset, err = cl.GetOffset(p.Topic, 0, p.After); err != nil {
				t.Fatalf("sarama GetOffset: %v", err)
			}
			c, err := sarama.NewConsumerFromClient(cl)
			if err != nil {
				t.Fatalf("sarama consumer: %v", err)
			}
			defer c.Close()
			pc, err := c.ConsumePartition(p.Topic, 0, obs.Offset)
			if err != nil {
				t.Fatalf("sarama ConsumePartition at %d: %v", obs.Offset, err)
			}
			defer pc.AsyncClose()
			select {
			case m := <-pc.Messages():
				obs.ReadOffset, obs.ReadTimestamp = m.Offset, m.Timestamp.UnixMilli()
			case err := <-pc.Errors():
				t.Fatalf("sarama consumer: %v", err)
			case <-time.After(20 * time.Second):
				t.Fatalf("sarama consumer: no record after seeking to %d", obs.Offset)
			}
			return obs
		},
		idempotent: func(t *testing.T, tg Target, p scenarioParams) idemObs {
			// Stock settings, but for what a SyncProducer requires.
			cfg := sarama.NewConfig()
			cfg.Producer.Return.Successes = true
			prod, err := sarama.NewSyncProducer([]string{tg.Bootstrap}, cfg)
			if err != nil {
				t.Fatalf("sarama producer: %v", err)
			}
			defer prod.Close()
			obs := idemObs{IdempotentDefault: cfg.Producer.Idempotent}
			for i := range p.Records {
				_, off, err := prod.SendMessage(&sarama.ProducerMessage{Topic: p.Topic, Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)), Value: sarama.StringEncoder(fmt.Sprintf("v%d", i))})
				if err != nil {
					t.Fatalf("sarama SendMessage %d: %v", i, err)
				}
				obs.Offsets = append(obs.Offsets, off)
			}
			return obs
		},
		admin: func(t *testing.T, tg Target, p scenarioParams) adminObs {
			adm, err := sarama.NewClusterAdmin([]string{tg.Bootstrap}, saramaConfig("none"))
			if err != nil {
				t.Fatalf("sarama admin: %v", err)
			}
			defer adm.Close()
			var obs adminObs
			ret := "3600000"
			detail := &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1, ConfigEntries: map[string]*string{"retention.ms": &ret}}
			obs.Create = kafkaErrName(saramaTopicErr(adm.CreateTopic(p.Topic, detail, false)))
			obs.CreateAgain = kafkaErrName(saramaTopicErr(adm.CreateTopic(p.Topic, detail, false)))
			describe := func() (string, int) {
				md, err := adm.DescribeTopics([]string{p.Topic})
				if err != nil {
					return kafkaErrName(err), 0
				}
				if len(md) != 1 {
					return fmt.Sprintf("%d topics", len(md)), 0
				}
				return kafkaErrName(saramaKErr(md[0].Err)), len(md[0].Partitions)
			}
			_, obs.Partitions = describe()
			retention := func() string {
				rs, err := adm.DescribeConfigs([]*sarama.ConfigResource{{Type: sarama.TopicResource, Name: p.Topic, ConfigNames: []string{"retention.ms"}}}, sarama.DescribeConfigsOptions{})
				if err != nil {
					return "describe configs: " + err.Error()
				}
				for _, r := range rs {
					if r.ErrorCode != sarama.ErrNoError {
						return "describe configs: " + kafkaErrName(r.ErrorCode)
					}
					for _, e := range r.Configs {
						if e.Name == "retention.ms" {
							return e.Value
						}
					}
				}
				return "(not reported)"
			}
			obs.Retention = retention()
			v := "7200000"
			if err := adm.IncrementalAlterConfig(sarama.TopicResource, p.Topic, map[string]sarama.IncrementalAlterConfigsEntry{
				"retention.ms": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &v}}, false); err != nil {
				t.Fatalf("sarama IncrementalAlterConfig: %v", err)
			}
			obs.RetentionAfterAlter = pollValue(retention, obs.Retention)
			obs.Delete = kafkaErrName(saramaTopicErr(adm.DeleteTopic(p.Topic)))
			deadline := time.Now().Add(20 * time.Second)
			for {
				obs.DescribeAfterDelete, _ = describe()
				if obs.DescribeAfterDelete != "NONE" || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			return obs
		},
	}
}

// saramaTopicErr unwraps sarama's *TopicError into its KError.
func saramaTopicErr(err error) error {
	var te *sarama.TopicError
	if errors.As(err, &te) {
		return saramaKErr(te.Err)
	}
	return err
}

func saramaKErr(e sarama.KError) error {
	if e == sarama.ErrNoError {
		return nil
	}
	return e
}

// ---------------------------------------------------------------------------
// kafka-go

func kafkaGoScenarioClient() scenarioClient {
	return scenarioClient{
		name: "kafka-go",
		group: func(t *testing.T, tg Target, p scenarioParams, rebalanced func(a, b []int32)) groupObs {
			return runMembers(t, p, rebalanced, func(ctx context.Context, i int, m *members) error {
				cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
					ID: p.Group, Brokers: []string{tg.Bootstrap}, Topics: []string{p.Topic},
					HeartbeatInterval: 500 * time.Millisecond, RebalanceTimeout: 20 * time.Second, JoinGroupBackoff: 200 * time.Millisecond,
				})
				if err != nil {
					return err
				}
				defer cg.Close()
				for {
					gen, err := cg.Next(ctx)
					if err != nil {
						return err
					}
					var ps []int32
					for _, a := range gen.Assignments[p.Topic] {
						ps = append(ps, int32(a.ID))
					}
					m.set(i, ps)
					gen.Start(func(ctx context.Context) { <-ctx.Done() })
				}
			})
		},
		commit: func(t *testing.T, tg Target, p scenarioParams) commitObs {
			ctx := testCtx(t, 45*time.Second)
			reader := func() *kafka.Reader {
				return kafka.NewReader(kafka.ReaderConfig{Brokers: []string{tg.Bootstrap}, GroupID: p.Group, Topic: p.Topic,
					StartOffset: kafka.FirstOffset, MaxWait: 200 * time.Millisecond, HeartbeatInterval: 500 * time.Millisecond})
			}
			r := reader()
			var last kafka.Message
			for range 4 {
				m, err := r.FetchMessage(ctx)
				if err != nil {
					t.Fatalf("kafka-go FetchMessage: %v", err)
				}
				last = m
			}
			if err := r.CommitMessages(ctx, last); err != nil {
				t.Fatalf("kafka-go CommitMessages: %v", err)
			}
			_ = r.Close()
			obs := commitObs{Committed: -1, Resumed: -1}
			cl := &kafka.Client{Addr: kafka.TCP(tg.Bootstrap), Timeout: 15 * time.Second}
			if resp, err := cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: p.Group, Topics: map[string][]int{p.Topic: {0}}}); err == nil {
				for _, po := range resp.Topics[p.Topic] {
					if po.Partition == 0 {
						obs.Committed = po.CommittedOffset
					}
				}
			}
			r = reader()
			defer r.Close()
			for obs.ResumedCount < p.Records-4 {
				m, err := r.FetchMessage(ctx)
				if err != nil {
					t.Fatalf("kafka-go second reader after %d records: %v", obs.ResumedCount, err)
				}
				if obs.Resumed < 0 {
					obs.Resumed = m.Offset
				}
				obs.ResumedCount++
				if m.Offset >= int64(p.Records-1) {
					break
				}
			}
			return obs
		},
		seek: func(t *testing.T, tg Target, p scenarioParams) seekObs {
			ctx := testCtx(t, 30*time.Second)
			cl := &kafka.Client{Addr: kafka.TCP(tg.Bootstrap), Timeout: 15 * time.Second}
			lookup := func(ts int64) int64 {
				resp, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{p.Topic: {{Partition: 0, Timestamp: ts}}}})
				if err != nil {
					t.Fatalf("kafka-go ListOffsets: %v", err)
				}
				for _, po := range resp.Topics[p.Topic] {
					if po.Error != nil {
						t.Fatalf("kafka-go ListOffsets: %v", po.Error)
					}
					for off := range po.Offsets {
						return off
					}
				}
				return -1
			}
			obs := seekObs{Offset: lookup(p.Timestamp), AfterOffset: lookup(p.After)}
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{tg.Bootstrap}, Topic: p.Topic, Partition: 0, MaxWait: 200 * time.Millisecond})
			defer r.Close()
			if err := r.SetOffsetAt(ctx, time.UnixMilli(p.Timestamp)); err != nil {
				t.Fatalf("kafka-go SetOffsetAt: %v", err)
			}
			m, err := r.ReadMessage(ctx)
			if err != nil {
				t.Fatalf("kafka-go ReadMessage after SetOffsetAt: %v", err)
			}
			obs.ReadOffset, obs.ReadTimestamp = m.Offset, m.Time.UnixMilli()
			return obs
		},
		idempotent: func(t *testing.T, tg Target, p scenarioParams) idemObs {
			// Stock settings: kafka-go's Writer has no idempotent mode, and its
			// zero RequiredAcks is acks=0 (RequireNone), so it reports no
			// offsets: the read-back checks them.
			tr := &kafka.Transport{}
			defer tr.CloseIdleConnections()
			w := &kafka.Writer{Addr: kafka.TCP(tg.Bootstrap), Topic: p.Topic, Transport: tr}
			defer w.Close()
			var msgs []kafka.Message
			for i := range p.Records {
				msgs = append(msgs, kafka.Message{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i)})
			}
			if err := w.WriteMessages(testCtx(t, 30*time.Second), msgs...); err != nil {
				t.Fatalf("kafka-go WriteMessages: %v", err)
			}
			return idemObs{}
		},
		admin: func(t *testing.T, tg Target, p scenarioParams) adminObs {
			ctx := testCtx(t, 45*time.Second)
			cl := &kafka.Client{Addr: kafka.TCP(tg.Bootstrap), Timeout: 15 * time.Second}
			var obs adminObs
			create := func() string {
				resp, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: p.Topic, NumPartitions: 3, ReplicationFactor: 1,
					ConfigEntries: []kafka.ConfigEntry{{ConfigName: "retention.ms", ConfigValue: "3600000"}}}}})
				if err != nil {
					return kafkaErrName(err)
				}
				return kafkaErrName(resp.Errors[p.Topic])
			}
			describe := func() (string, int) {
				md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{p.Topic}})
				if err != nil {
					return kafkaErrName(err), 0
				}
				if len(md.Topics) != 1 {
					return fmt.Sprintf("%d topics", len(md.Topics)), 0
				}
				return kafkaErrName(md.Topics[0].Error), len(md.Topics[0].Partitions)
			}
			retention := func() string {
				resp, err := cl.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{{
					ResourceType: kafka.ResourceTypeTopic, ResourceName: p.Topic, ConfigNames: []string{"retention.ms"}}}})
				if err != nil {
					return "describe configs: " + err.Error()
				}
				for _, r := range resp.Resources {
					for _, e := range r.ConfigEntries {
						if e.ConfigName == "retention.ms" {
							return e.ConfigValue
						}
					}
				}
				return "(not reported)"
			}
			obs.Create = create()
			obs.CreateAgain = create()
			_, obs.Partitions = describe()
			obs.Retention = retention()
			ar, err := cl.IncrementalAlterConfigs(ctx, &kafka.IncrementalAlterConfigsRequest{Resources: []kafka.IncrementalAlterConfigsRequestResource{{
				ResourceType: kafka.ResourceTypeTopic, ResourceName: p.Topic,
				Configs: []kafka.IncrementalAlterConfigsRequestConfig{{Name: "retention.ms", Value: "7200000", ConfigOperation: kafka.ConfigOperationSet}}}}})
			if err == nil {
				for _, r := range ar.Resources {
					err = errors.Join(err, r.Error)
				}
			}
			if err != nil {
				t.Fatalf("kafka-go IncrementalAlterConfigs: %v", err)
			}
			obs.RetentionAfterAlter = pollValue(retention, obs.Retention)
			dr, err := cl.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{p.Topic}})
			if err == nil {
				err = dr.Errors[p.Topic]
			}
			obs.Delete = kafkaErrName(err)
			deadline := time.Now().Add(20 * time.Second)
			for {
				obs.DescribeAfterDelete, _ = describe()
				if obs.DescribeAfterDelete != "NONE" || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			return obs
		},
	}
}
