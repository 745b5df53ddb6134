package offsets

import (
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

func TestValidGroupID(t *testing.T) {
	for _, c := range []struct {
		g  string
		ok bool
	}{
		{"", false},
		{"g", true},
		{strings.Repeat("a", 246), true},
		{strings.Repeat("a", 247), false},
		{"caf\xc3\xa9", true},
		{"bad\xff", false},
	} {
		if got := ValidGroupID(c.g); got != c.ok {
			t.Errorf("ValidGroupID(%q) = %v", c.g, got)
		}
	}
	if n := len(iggyGroupName(strings.Repeat("a", maxGroupIDLen))); n != 255 {
		t.Fatalf("longest Iggy group name is %d bytes", n)
	}
}

func TestConsumerOf(t *testing.T) {
	c := consumerOf(ModeExternal, "orders")
	if c.Kind != icodec.ConsumerKindExternalGroup || c.ID.Kind != icodec.IdentifierKindString || string(c.ID.Value) != "kafka.cg.orders" {
		t.Fatalf("external: %+v", c)
	}
	c = consumerOf(ModeConsumer, "orders")
	if c.Kind != icodec.ConsumerKindConsumer || string(c.ID.Value) != "kafka.cg.orders" {
		t.Fatalf("consumer: %+v", c)
	}
}

func TestKafkaOffset(t *testing.T) {
	for _, c := range []struct {
		mode Mode
		v    uint64
		want int64
	}{
		{ModeExternal, 0, 0},
		{ModeExternal, 42, 42},
		{ModeExternal, math.MaxInt64, math.MaxInt64},
		{ModeExternal, math.MaxInt64 + 1, -1},
		{ModeConsumer, 0, 1},
		{ModeConsumer, 41, 42},
		{ModeConsumer, math.MaxInt64 - 1, math.MaxInt64},
		{ModeConsumer, math.MaxInt64, -1},
		{ModeConsumer, math.MaxUint64, -1},
	} {
		if got := kafkaOffset(c.mode, c.v); got != c.want {
			t.Errorf("kafkaOffset(%v, %d) = %d, want %d", c.mode, c.v, got, c.want)
		}
	}
}

func TestOffsetReadCode(t *testing.T) {
	if c := ReadCode(icodec.StatusUnauthorized); c != kerr.GroupAuthorizationFailed.Code {
		t.Fatal(c)
	}
	for _, err := range []error{iggy.ErrTimeout, iggy.ErrSessionLost, icodec.StatusInvalidCommand, errors.New("x")} {
		if c := ReadCode(err); c != kerr.CoordinatorLoadInProgress.Code {
			t.Fatalf("%v: %d", err, c)
		}
	}
}

func TestCommitTicketBefore(t *testing.T) {
	t0 := time.Unix(100, 0)
	a := Ticket{Conn: 1, At: t0, Corr: 5}
	for _, c := range []struct {
		x, y Ticket
		want bool
	}{
		{a, Ticket{Conn: 1, At: t0, Corr: 6}, true},
		{a, Ticket{Conn: 1, At: t0, Corr: 5}, false},
		{a, Ticket{Conn: 1, At: t0, Corr: 4}, false},
		{a, Ticket{Conn: 1, At: t0.Add(time.Millisecond), Corr: 1}, true},
		{a, Ticket{Conn: 1, At: t0.Add(-time.Millisecond), Corr: 9}, false},
		{a, Ticket{Conn: 2, At: t0.Add(time.Hour), Corr: 9}, false}, // other connection
		{Ticket{}, a, false}, // internal writes
		{a, Ticket{}, false},
		{Ticket{Conn: 1, At: t0, Corr: math.MaxInt32}, Ticket{Conn: 1, At: t0, Corr: math.MinInt32}, true}, // wrap
	} {
		if got := c.x.before(c.y); got != c.want {
			t.Errorf("%+v before %+v = %v", c.x, c.y, got)
		}
	}
}

func TestCommitOrder(t *testing.T) {
	var o commitOrder
	o.slots = map[commitKey]*commitSlot{}
	key := commitKey{group: "g", ref: iggy.TopicRef{Stream: "s", Topic: "t"}, partition: 0}
	t0 := time.Unix(100, 0)
	var applied []int
	write := func(v int) func(*commitSlot) error {
		return func(*commitSlot) error { applied = append(applied, v); return nil }
	}
	// The later commit of a connection lands first: the earlier one is
	// skipped (and reported as success).
	if err := o.run(key, Ticket{Conn: 1, At: t0, Corr: 2}, write(2)); err != nil {
		t.Fatal(err)
	}
	if err := o.run(key, Ticket{Conn: 1, At: t0, Corr: 1}, write(1)); err != nil {
		t.Fatal(err)
	}
	// Another connection's commit always applies.
	_ = o.run(key, Ticket{Conn: 2, At: t0, Corr: 1}, write(3))
	// A failed write does not make older writes stale.
	fail := errors.New("boom")
	if err := o.run(key, Ticket{Conn: 1, At: t0, Corr: 9}, func(*commitSlot) error { return fail }); err != fail {
		t.Fatal(err)
	}
	_ = o.run(key, Ticket{Conn: 1, At: t0, Corr: 3}, write(4))
	if got := applied; len(got) != 3 || got[0] != 2 || got[1] != 3 || got[2] != 4 {
		t.Fatalf("applied %v, want [2 3 4]", got)
	}
	// Other keys are independent.
	other := key
	other.partition = 1
	_ = o.run(other, Ticket{Conn: 1, At: t0, Corr: 1}, write(5))
	if applied[len(applied)-1] != 5 {
		t.Fatal("other key skipped")
	}
}

func TestCommitOrderSerializesKey(t *testing.T) {
	var o commitOrder
	o.slots = map[commitKey]*commitSlot{}
	key := commitKey{group: "g", partition: 3}
	var inside, maxInside atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_ = o.run(key, Ticket{Conn: uint64(i + 1)}, func(*commitSlot) error {
				n := inside.Add(1)
				for {
					m := maxInside.Load()
					if n <= m || maxInside.CompareAndSwap(m, n) {
						break
					}
				}
				inside.Add(-1)
				return nil
			})
		}(i)
	}
	wg.Wait()
	if m := maxInside.Load(); m != 1 {
		t.Fatalf("%d writes of one key ran at once", m)
	}
}

func TestCommitOrderPrunes(t *testing.T) {
	var o commitOrder
	o.slots = map[commitKey]*commitSlot{}
	for i := 0; i < commitSlotsPrune; i++ {
		_ = o.run(commitKey{partition: int32(i)}, Ticket{}, func(*commitSlot) error { return nil })
	}
	// Make every slot idle for long, then add one more key (the threshold
	// doubled when the first prune found nothing idle).
	o.mu.Lock()
	o.pruneNext = 0
	for _, sl := range o.slots {
		sl.used = time.Now().Add(-2 * commitSlotIdle)
	}
	o.mu.Unlock()
	_ = o.run(commitKey{partition: -1}, Ticket{}, func(*commitSlot) error { return nil })
	o.mu.Lock()
	n := len(o.slots)
	o.mu.Unlock()
	if n > 1 {
		t.Fatalf("%d slots left after pruning", n)
	}
}

func TestParallel(t *testing.T) {
	for _, n := range []int{0, 1, 2, 17, 100} {
		var hits [100]atomic.Int32
		var running, peak atomic.Int32
		Parallel(n, 4, func(i int) {
			r := running.Add(1)
			for {
				p := peak.Load()
				if r <= p || peak.CompareAndSwap(p, r) {
					break
				}
			}
			hits[i].Add(1)
			running.Add(-1)
		})
		for i := 0; i < n; i++ {
			if hits[i].Load() != 1 {
				t.Fatalf("n=%d: index %d ran %d times", n, i, hits[i].Load())
			}
		}
		if peak.Load() > 4 {
			t.Fatalf("n=%d: %d ran at once", n, peak.Load())
		}
	}
}
