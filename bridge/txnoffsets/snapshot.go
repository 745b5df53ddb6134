package txnoffsets

// Snapshots of one group's pending offsets, the records Durable persists
// in Iggy before it answers a change and restores after a restart or an
// owner move.
//
// Layout (big-endian): version u8 (1), group (u16 length + bytes),
// producer count u32, then per producer in producer id order: producer id
// i64, epoch i16, partition count u32, then per partition in (topic,
// partition) order: topic (u16 length + bytes), partition i32, offset i64.
// A snapshot with no producer is the group's tombstone.

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

const snapshotVersion = 1

// Snapshot encodes what group holds pending (no producer: the tombstone).
// Equal states encode to equal bytes.
func (s *Pending) Snapshot(group string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := []byte{snapshotVersion}
	b = appendStr(b, group)
	g := s.groups[group]
	if g == nil {
		return binary.BigEndian.AppendUint32(b, 0)
	}
	pids := make([]int64, 0, len(g.prods))
	for pid := range g.prods {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	b = binary.BigEndian.AppendUint32(b, uint32(len(pids)))
	for _, pid := range pids {
		p := g.prods[pid]
		b = binary.BigEndian.AppendUint64(b, uint64(pid))
		b = binary.BigEndian.AppendUint16(b, uint16(p.epoch))
		keys := make([]tp, 0, len(p.offs))
		for k := range p.offs {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(x, y tp) int {
			return cmp.Or(cmp.Compare(x.topic, y.topic), cmp.Compare(x.partition, y.partition))
		})
		b = binary.BigEndian.AppendUint32(b, uint32(len(keys)))
		for _, k := range keys {
			b = appendStr(b, k.topic)
			b = binary.BigEndian.AppendUint32(b, uint32(k.partition))
			b = binary.BigEndian.AppendUint64(b, uint64(p.offs[k]))
		}
	}
	return b
}

func appendStr(b []byte, v string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(v)))
	return append(b, v...)
}

var errSnapshot = errors.New("txnoffsets: malformed snapshot")

// Restore replaces what group holds with snapshot b (Snapshot's encoding
// of the same group). A malformed snapshot, one of another group, or one
// that would pass MaxEntries changes nothing and is an error.
func (s *Pending) Restore(group string, b []byte) error {
	d := dec{b: b}
	if v := d.u8(); v != snapshotVersion {
		return fmt.Errorf("txnoffsets: snapshot version %d", v)
	}
	if g := d.str(); d.err == nil && g != group {
		return fmt.Errorf("txnoffsets: snapshot of group %q restored as %q", g, group)
	}
	type prod struct {
		pid int64
		p   *pending
	}
	var prods []prod
	total := 0
	np := d.count(14) // a producer takes at least 14 bytes
	for range np {
		pid, epoch := int64(d.u64()), int16(d.u16())
		n := d.count(14) // a partition at least 14
		p := &pending{epoch: epoch, offs: make(map[tp]int64, n)}
		for range n {
			k := tp{topic: d.str(), partition: int32(d.u32())}
			p.offs[k] = int64(d.u64())
		}
		total += len(p.offs)
		prods = append(prods, prod{pid, p})
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = errSnapshot
	}
	if d.err != nil {
		return d.err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	held := 0
	if g := s.groups[group]; g != nil {
		for _, p := range g.prods {
			held += len(p.offs)
		}
	}
	if s.n-held+total > MaxEntries {
		return fmt.Errorf("txnoffsets: restoring group %q passes %d pending partitions", group, MaxEntries)
	}
	if g := s.groups[group]; g != nil {
		for pid := range g.prods {
			s.dropLocked(group, pid)
		}
	}
	if len(prods) == 0 {
		return nil
	}
	g := s.groupLocked(group)
	for _, pr := range prods {
		g.prods[pr.pid] = pr.p
		for k := range pr.p.offs {
			g.parts[k]++
		}
		s.n += len(pr.p.offs)
		s.budget.Charge(int64(len(pr.p.offs)) * entryBytes)
	}
	return nil
}

// dec reads a snapshot; the first error sticks and zero values follow.
type dec struct {
	b   []byte
	err error
}

func (d *dec) take(n int) []byte {
	if d.err != nil || len(d.b) < n {
		d.err = errSnapshot
		return make([]byte, n)
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) u8() uint8   { return d.take(1)[0] }
func (d *dec) u16() uint16 { return binary.BigEndian.Uint16(d.take(2)) }
func (d *dec) u32() uint32 { return binary.BigEndian.Uint32(d.take(4)) }
func (d *dec) u64() uint64 { return binary.BigEndian.Uint64(d.take(8)) }
func (d *dec) str() string { return string(d.take(int(d.u16()))) }

// count reads a count of items of at least min bytes each: one the rest of
// the snapshot cannot hold is an error (no allocation a count can push).
func (d *dec) count(size int) int {
	n := int(d.u32())
	if d.err == nil && n > len(d.b)/size {
		d.err = errSnapshot
	}
	if d.err != nil {
		return 0
	}
	return n
}
