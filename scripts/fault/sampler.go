package main

// The offset sampler: every second the group's committed offsets are read
// (OffsetFetch) through each sidecar in turn, so a committed offset that
// the store loses (an Iggy restart, an owner move) shows up as a read lower
// than a commit acknowledged before the read was sent, even when no member
// commits that partition again.

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// observed is one committed offset read back through a sidecar.
type observed struct {
	Via       string    `json:"via"`
	Partition int32     `json:"partition"`
	Offset    int64     `json:"offset"`
	Sent      time.Time `json:"sent"`
	Received  time.Time `json:"received"`
}

func (j *journal) observed(os []observed) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.samples = append(j.samples, os...)
}

// sampleOffsets runs until ctx ends; done is closed when it has.
func sampleOffsets(ctx context.Context, j *journal, sidecars []string, group string) (done chan struct{}, err error) {
	admins := make([]*kadm.Client, len(sidecars))
	for i, s := range sidecars {
		cl, err := kgo.NewClient(kgo.SeedBrokers(s), kgo.ClientID(fmt.Sprintf("fault-sampler%d", i)),
			kgo.RequestTimeoutOverhead(2*time.Second), kgo.RetryTimeout(3*time.Second))
		if err != nil {
			return nil, err
		}
		admins[i] = kadm.NewClient(cl)
	}
	done = make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			for _, a := range admins {
				a.Close()
			}
		}()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			k := i % len(admins)
			fctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			sent := time.Now()
			resp, err := admins[k].FetchOffsets(fctx, group)
			cancel()
			if err != nil || resp.Error() != nil {
				continue // its sidecar is down or stopped, or the group is moving
			}
			received := time.Now()
			var os []observed
			resp.Each(func(o kadm.OffsetResponse) {
				if o.Err == nil && o.At >= 0 {
					os = append(os, observed{Via: fmt.Sprintf("sidecar%d", k), Partition: o.Partition, Offset: o.At, Sent: sent, Received: received})
				}
			})
			j.observed(os)
		}
	}()
	return done, nil
}
