package embedded

import (
	"fmt"
	"sync"
	"testing"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// The poll snapshot tests hold POLL_MESSAGES to the real server's guarantee
// while SEND_MESSAGES to the same partition runs: a poll reads the messages
// and the current offset from one moment (the real 0.9 server loads the
// partition's commit offset once in IggyPartition::build_poll_plan,
// core/partitions/src/iggy_partition.rs, and uses it both as the read's
// ceiling and as the reply's current_offset). So a poll at offset o either
// returns messages o, o+1, ... up to at most the current offset it reports,
// or returns none and reports a current offset below o. The old embedded
// server read the log and then, separately, the current offset: an append
// landing in between gave "0 messages, current offset >= o", which the
// bridge took for an offset below retention (OFFSET_OUT_OF_RANGE; franz-go:
// "lost records").
//
// Pollers follow the tail of one partition (each poll at the next offset
// they have not seen) while senders append one-message batches; every reply
// is checked. No timing help is needed: a poller sits at the tail, so its
// empty polls overlap appends. The number of sends bounds the run.

const raceSenders = 2

// tailFollower checks the replies of a poller that follows the tail.
type tailFollower struct {
	next                uint64 // the next offset not yet seen
	polls, empty, stale int
}

// check takes the reply of a poll at f.next; it returns an error for a
// reply no snapshot explains and counts the stale empty polls.
func (f *tailFollower) check(p polled) error {
	f.polls++
	if p.count == 0 {
		f.empty++
		if p.current >= f.next {
			f.stale++
			return fmt.Errorf("poll %d at offset %d: 0 messages with current_offset %d (the real server reports messages from %d or a current offset below it)",
				f.polls, f.next, p.current, f.next)
		}
		return nil
	}
	for i, o := range p.offsets {
		if o != f.next+uint64(i) {
			return fmt.Errorf("poll %d at offset %d: message %d has offset %d (offsets %v)", f.polls, f.next, i, o, p.offsets)
		}
	}
	last := p.offsets[len(p.offsets)-1]
	if last > p.current {
		return fmt.Errorf("poll %d at offset %d: message offset %d past the reported current_offset %d", f.polls, f.next, last, p.current)
	}
	f.next = last + 1
	return nil
}

// raceFixture is a server with stream 0, topic 0 of one partition holding
// one message (an empty partition reports current offset 0 for "nothing
// yet", which would be ambiguous for a poll at 0).
func raceFixture(t *testing.T) (*Server, *tclient) {
	s := startServer(t, nil)
	c := root(t, s)
	c.createStream("s")
	c.createTopic(numID(0), "t", 1, nil)
	c.send(numID(0), numID(0), 0, "seed")
	return s, c
}

// runTailRace runs raceSenders goroutines calling send sends times each and
// pollers goroutines calling poll(o) from offset 1 until they have seen
// every message, and fails the test on any reply no snapshot explains.
func runTailRace(t *testing.T, sends, pollers int, send func(sender int) error, poll func(poller int, o uint64) (polled, error)) {
	total := uint64(1 + raceSenders*sends)
	errs := make(chan error, raceSenders+pollers)
	var wg sync.WaitGroup
	for i := range raceSenders {
		wg.Go(func() {
			for range sends {
				if err := send(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	followers := make([]tailFollower, pollers)
	for i := range followers {
		f := &followers[i]
		f.next = 1
		wg.Go(func() {
			var first error
			for f.next < total && f.polls < 100*int(total) {
				p, err := poll(i, f.next)
				if err == nil {
					err = f.check(p)
				}
				if err != nil && first == nil {
					first = err
				}
				if err != nil && f.stale == 0 { // not a stale poll: the reply is wrong, stop
					break
				}
			}
			if first != nil {
				errs <- first
			} else if f.next < total {
				errs <- fmt.Errorf("poller %d saw %d of %d messages in %d polls", i, f.next, total, f.polls)
			}
		})
	}
	wg.Wait()
	close(errs)
	var polls, empty, stale int
	for _, f := range followers {
		polls, empty, stale = polls+f.polls, empty+f.empty, stale+f.stale
	}
	t.Logf("%d pollers, %d polls (%d empty) over %d messages: %d empty polls reported a current offset at or past the polled one",
		pollers, polls, empty, total, stale)
	for err := range errs {
		t.Error(err)
	}
}

// TestPollSnapshotUnderConcurrentSends runs the race over TCP, as the
// sidecar meets it.
func TestPollSnapshotUnderConcurrentSends(t *testing.T) {
	const pollers = 2
	s, _ := raceFixture(t)
	body := encode(&iggy.SendMessagesRequest{StreamID: numID(0), TopicID: numID(0), Partitioning: toPartition(0),
		MessagesCount: 1, Batch: batch(t, "m")})
	var senders, polling []*tclient
	for range raceSenders {
		senders = append(senders, root(t, s))
	}
	for range pollers {
		polling = append(polling, root(t, s))
	}
	runTailRace(t, 10000, pollers, func(i int) error {
		sc := senders[i]
		h := sc.header(iggy.OperationSendMessages, sc.next)
		sc.next++
		if r := sc.roundTrip(h, body); r.status() != 0 || r.evicted != nil {
			return fmt.Errorf("send: status %d evicted %+v", r.status(), r.evicted)
		}
		return nil
	}, func(i int, o uint64) (polled, error) {
		c := polling[i]
		r := c.call(iggy.CodePollMessages, pollReq(single(1), numID(0), numID(0), ptr(uint32(0)), iggy.PollingKindOffset, o, 100, false))
		if r.status() != 0 || r.evicted != nil {
			return polled{}, fmt.Errorf("poll: status %d evicted %+v", r.status(), r.evicted)
		}
		return decodePoll(t, r.body), nil
	})
}

// TestPollSnapshotHandlers runs the race through the server's handlers
// (no network between the calls, so many more polls meet an append: the
// old code failed in each of 20 runs, with 2 to 26 stale empty polls).
func TestPollSnapshotHandlers(t *testing.T) { pollSnapshotRace(t, 100000) }

// pollSnapshotRace runs the race through the handlers with sends messages
// per sender.
func pollSnapshotRace(t *testing.T, sends int) {
	const pollers = 2
	s, _ := raceFixture(t)
	root := &session{userID: rootUserID}
	sendBody := encode(&iggy.SendMessagesRequest{StreamID: numID(0), TopicID: numID(0), Partitioning: toPartition(0),
		MessagesCount: 1, Batch: batch(t, "m")})
	conns := make([]*conn, raceSenders+pollers)
	for i := range conns {
		conns[i] = &conn{s: s}
	}
	runTailRace(t, sends, pollers, func(i int) error {
		// A fresh copy each time: the log may keep the batch it is given.
		out := s.sendMessages(conns[i], &request{body: append([]byte(nil), sendBody...), sess: root})
		if out.status != 0 || out.body == nil {
			return fmt.Errorf("send: status %d", out.status)
		}
		return nil
	}, func(i int, o uint64) (polled, error) {
		body := encode(pollReq(single(1), numID(0), numID(0), ptr(uint32(0)), iggy.PollingKindOffset, o, 100, false))
		out := s.pollMessages(conns[raceSenders+i], &request{body: body, sess: root})
		if out.status != 0 {
			return polled{}, fmt.Errorf("poll: status %d", out.status)
		}
		return decodePoll(t, out.body), nil
	})
}
