package producers

// Producer ids leased from Iggy (KAFKA-ON-IGGY §4): unique across restarts
// and across every sidecar of a deployment on one Iggy server. A sidecar
// appends one message to the one-partition topic producer_ids of stream
// __kafka_iggy; the offset Iggy gives it is a block number no other append
// ever gets, and the sidecar hands out the 2^20 producer ids of block
// offset+1 (block << 20 | counter), then leases the next block. The topic
// is created on first use (server defaults: no options). Offsets of a
// partition never repeat while the topic lives: deleting or purging it
// (or pointing the deployment at a new Iggy server) starts the blocks over,
// and producer ids of the old blocks still in use could then repeat.

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

const (
	// pidLeaseBits is the width of the counter inside a leased block.
	pidLeaseBits = 20
	// pidLeaseMaxBlock keeps producer ids positive.
	pidLeaseMaxBlock = 1<<(63-pidLeaseBits) - 1
)

// pidLeaseRef is where the blocks are leased.
var pidLeaseRef = iggy.TopicRef{Stream: "__kafka_iggy", Topic: "producer_ids"}

// errPIDLeaseExhausted: the lease topic's offsets passed what a producer id
// can carry (2^43 leases; never in practice).
var errPIDLeaseExhausted = errors.New("bridge: producer id blocks exhausted")

// pidLeaser hands out producer ids from leased blocks.
type pidLeaser struct {
	take func(ctx context.Context) (block int64, err error) // a new block, never handed out before

	mu    sync.Mutex // held across a lease: InitProducerIds queue behind it
	block int64      // current block; 0 = none yet
	next  int64      // next counter in it

	// ownMu guards owned alone, so that own (called by Produce under the
	// tracker's lock) never waits for a lease in progress.
	ownMu sync.Mutex
	owned map[int64]struct{}
}

func newPIDLeaser(take func(ctx context.Context) (int64, error)) *pidLeaser {
	return &pidLeaser{take: take, owned: map[int64]struct{}{}}
}

// id returns a new producer id, leasing a block first when none is left.
func (l *pidLeaser) id(ctx context.Context) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.block == 0 || l.next == 1<<pidLeaseBits {
		b, err := l.take(ctx)
		if err != nil {
			return -1, err
		}
		if b < 1 || b > pidLeaseMaxBlock {
			return -1, errPIDLeaseExhausted
		}
		l.block, l.next = b, 0
		l.ownMu.Lock()
		l.owned[b] = struct{}{}
		l.ownMu.Unlock()
	}
	id := l.block<<pidLeaseBits | l.next
	l.next++
	return id, nil
}

// own reports whether pid comes from a block this process leased.
func (l *pidLeaser) own(pid int64) bool {
	l.ownMu.Lock()
	defer l.ownMu.Unlock()
	_, ok := l.owned[pid>>pidLeaseBits]
	return ok
}

// NewID returns a producer id for InitProducerId: leased from Iggy, or
// without a leaser (unit tests) from the clock-seeded allocator.
func (t *State) NewID(ctx context.Context) (int64, error) {
	if t.ids != nil {
		return t.ids.id(ctx)
	}
	return t.alloc.next(), nil
}

// own reports whether pid was handed out by this process.
func (t *State) own(pid int64) bool {
	if t.ids != nil {
		return t.ids.own(pid)
	}
	return t.alloc.own(pid)
}

// pidLeaseRecord is the payload of a lease message (for operators).
type pidLeaseRecord struct {
	Host string `json:"host"`
	PID  int    `json:"pid"`
	At   string `json:"at"`
}

// takePIDBlock appends a lease message and returns its offset + 1.
func takePIDBlock(ctx context.Context, d Deps, log zerolog.Logger) (int64, error) {
	ctx = iggy.Sidecar(ctx) // the sidecar's lease log, never a principal's
	if _, err := d.Client.GetTopic(ctx, pidLeaseRef); err != nil {
		if !iggy.IsNotFound(err) {
			return 0, err
		}
		if _, err := d.Client.EnsureStream(ctx, pidLeaseRef.Stream); err != nil {
			return 0, err
		}
		if _, err := d.Client.CreateTopic(ctx, pidLeaseRef, 1, nil); err != nil && !errors.Is(err, icodec.StatusTopicNameAlreadyExists) {
			return 0, err
		}
	}
	host, _ := os.Hostname()
	payload, err := json.Marshal(pidLeaseRecord{Host: host, PID: os.Getpid(), At: time.Now().UTC().Format(time.RFC3339Nano)})
	if err != nil {
		return 0, err
	}
	id := randomV4ID()
	msgs := d.Client.NewMessages()
	if err := msgs.Add(id, uint64(time.Now().UnixMicro()), payload, nil); err != nil {
		msgs.Release()
		return 0, err
	}
	off, err := d.Client.Send(ctx, pidLeaseRef, 0, msgs)
	if err != nil {
		return 0, err
	}
	if off < 0 { // confirmed without an offset: find the message
		if off, err = findLease(ctx, d, id); err != nil {
			return 0, err
		}
	}
	log.Info().Int64("producer_id_block", off+1).Msg("producer ids: block leased from iggy")
	return off + 1, nil
}

// findLease returns the offset of the lease message with id among the
// partition's last ones.
func findLease(ctx context.Context, d Deps, id wire.U128) (int64, error) {
	pl, err := d.Poll(ctx, pidLeaseRef, 0, icodec.PollingKindLast, 0, 1024)
	if err != nil {
		return 0, err
	}
	defer pl.Release()
	it := pl.Messages()
	for it.Next() {
		if it.Message().ID == id {
			return int64(it.Message().Offset), nil
		}
	}
	return 0, errors.New("bridge: producer id lease written without an offset and not found")
}

// randomV4ID is a random UUID v4 as Iggy's u128 (wire bytes 6 and 8 carry
// the version and variant).
func randomV4ID() wire.U128 {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (Go 1.24+)
	lo, hi := binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:])
	lo = lo&^(0xf0<<48) | 0x40<<48
	hi = hi&^0xc0 | 0x80
	return wire.U128{Lo: lo, Hi: hi}
}
