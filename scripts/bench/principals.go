package main

// The principals workload (issue 27): what per-principal Iggy sessions
// cost. Ten SASL/PLAIN principals, each its own Iggy user, produce at once
// through one sidecar, first with every request on the sidecar's own Iggy
// sessions (sasl.authorization sidecar), then with each principal's
// requests on a pool logged in as its Iggy user (sasl.authorization
// principal, one session per principal), the two interleaved over the
// passes (A B, B A).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

const (
	wPrincipals    = "principals"
	benchPrincipal = 10
)

var principalVariants = []struct{ name, authorization string }{
	{"10 principals, one Iggy user (sasl.authorization sidecar)", "sidecar"},
	{"10 principals, each its Iggy user (sasl.authorization principal)", "principal"},
}

// principalUsers creates the bench's Iggy users (bench-p0..9) with every
// message permission on the stream kafka.
func (b *bench) principalUsers() error {
	cfg := iggy.DefaultConfig()
	cfg.Address, cfg.PoolSize = b.embedded.addr, 1
	cl, err := iggy.New(cfg, zerolog.New(io.Discard))
	if err != nil {
		return err
	}
	defer func() { _ = cl.Close() }()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := cl.Start(ctx); err != nil {
		return err
	}
	sid, err := cl.EnsureStream(ctx, "kafka")
	if err != nil {
		return err
	}
	perms := &icodec.SizedPermissions{Permissions: icodec.Permissions{Streams: []icodec.StreamPermissions{{StreamID: sid,
		ReadStream: true, ManageTopics: true, ReadTopics: true, PollMessages: true, SendMessages: true}}}}
	for i := range benchPrincipal {
		err := cl.Do(ctx, &icodec.CreateUserRequest{Username: fmt.Sprintf("bench-p%d", i), Password: "bench-pw", Status: icodec.UserStatusActive, Permissions: perms}, nil)
		if err != nil && !isExists(err) {
			return err
		}
	}
	return nil
}

func isExists(err error) bool { return errors.Is(err, icodec.StatusUserAlreadyExists) }

func (b *bench) runPrincipals() {
	if _, ok := b.targets[tSidecar]; !ok || b.embedded == nil {
		return
	}
	if err := b.principalUsers(); err != nil {
		b.note("principals run skipped: creating the Iggy users: %v", firstLine(err.Error()))
		return
	}
	passes := max(1, b.plan.Passes)
	for pass := 1; pass <= passes; pass++ {
		for k := range principalVariants {
			v := principalVariants[k]
			if pass%2 == 0 {
				v = principalVariants[len(principalVariants)-1-k]
			}
			b.runPrincipalVariant(v.name, v.authorization, pass)
		}
	}
}

func (b *bench) runPrincipalVariant(name, authorization string, pass int) {
	r := &Result{Workload: wPrincipals, Variant: name, Target: tSidecar, Pass: pass}
	defer b.add(r)
	if r.Skipped = b.skipFor(b.plan.Warm + b.plan.Measure + b.slack(30*time.Second)); r.Skipped != "" {
		return
	}
	old := b.targets[tSidecar]
	old.proc.stop(10 * time.Second)
	s, err := b.startSidecar(map[string]string{"sasl.enabled": "true", "sasl.mechanisms": "PLAIN",
		"sasl.authorization": authorization, "sasl.principals.pool_size": "1"})
	if err != nil {
		r.Error = "start: " + err.Error()
		delete(b.targets, tSidecar)
		return
	}
	b.targets[tSidecar] = s
	topic := b.topicName("principals", tSidecar)
	if err := kafkaCreateTopicWith(b.ctx, s.addr, topic, b.plan.Partitions, principalAuth(0)...); err != nil {
		r.Error = err.Error()
		return
	}
	res, err := kafkaProduce(b.ctx, produceSpec{
		bootstrap: s.addr, topic: topic, acks: kgo.LeaderAck(), codec: kgo.NoCompression(),
		linger: 5 * time.Millisecond, records: b.plan.Records, win: b.plan.win(), clients: benchPrincipal,
		clientOpts: principalAuth,
	}, b.pool, b.meterFor(tSidecar))
	*r = mergeResult(r, res)
	if err != nil {
		r.Error = err.Error()
	}
}

// principalAuth is client i's SASL/PLAIN login as Iggy user bench-p<i>.
func principalAuth(i int) []kgo.Opt {
	return []kgo.Opt{kgo.SASL(plain.Auth{User: fmt.Sprintf("bench-p%d", i%benchPrincipal), Pass: "bench-pw"}.AsMechanism())}
}

// writePrincipals is the report's section of the principals workload.
func (b *bench) writePrincipals(p func(string, ...any)) {
	if b.anyResult(wPrincipals, principalVariants[0].name, tSidecar) == nil {
		return
	}
	p("## Per-principal Iggy sessions (10 principals)\n\n")
	p("Ten franz-go producers (acks=1, linger 5 ms), each authenticated with SASL/PLAIN as its own Iggy user (bench-p0..9, checked by an Iggy login), produce at once through one sidecar restarted for each row (`sasl.enabled`, everything else default). The first row runs every request on the sidecar's own Iggy sessions; the second on a pool of one session per principal, logged in as its Iggy user (what `sasl.authorization: principal` costs). Rows interleaved over the passes.\n\n")
	p("| setting | records/s | MB/s | ack latency p50 / p99 | sidecar CPU s/GB | Iggy CPU s/GB | sidecar RSS max | Iggy connections | load / others |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, v := range principalVariants {
		runs := b.runsOf(wPrincipals, v.name, tSidecar)
		r := meanResult(runs)
		if r == nil {
			if a := b.anyResult(wPrincipals, v.name, tSidecar); a != nil {
				p("| %s | %s ||||||||\n", v.name, status(a))
			}
			continue
		}
		lat := "–"
		if r.Latency != nil {
			lat = fmtUS(r.Latency.P50) + " / " + fmtUS(r.Latency.P99)
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", v.name, fmtNum(r.RecPerS), statOf(runs, mbps).show("%.1f"), lat,
			statOf(runs, serverPerGB).show("%.2f"), statOf(runs, iggyPerGB).show("%.2f"), fmtMiB(r.ServerRSSMax), fmtConns(r.IggyConns), loadCell(runs))
	}
	p("\n")
}
