package groups

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
)

func newCappedHarness(t *testing.T, adjust func(*Config)) *groupHarness {
	clk := newGroupFakeClock()
	cfg := DefaultConfig()
	adjust(&cfg)
	return &groupHarness{t: t, c: New(cfg, zerolog.Nop(), clk), clk: clk}
}

// groups.max_pending_members: a flood of JoinGroup v4+ without member id
// (each a new group) holds at most the cap of pending ids; past it the
// answer is COORDINATOR_LOAD_IN_PROGRESS (retriable). The ids lapse after
// the session timeout and the groups they made are forgotten with them,
// so the flood leaves nothing behind.
func TestPendingMembersCapped(t *testing.T) {
	h := newCappedHarness(t, func(c *Config) { c.MaxPendingMembers = 3 })
	for i := range 3 {
		h.memberID(joinP(fmt.Sprint("flood-", i), "", "x", "range"))
	}
	for i := 3; i < 100; i++ {
		r := h.joinNow(joinP(fmt.Sprint("flood-", i), "", "x", "range"))
		wantGroupCode(t, fmt.Sprint("join past the cap ", i), r.Code, kerr.CoordinatorLoadInProgress.Code)
	}
	h.clk.Advance(0) // timers due now run
	if groups, _ := h.c.Counts(); groups > 3 {
		t.Fatalf("%d groups held after the refused joins, want at most 3", groups)
	}
	h.clk.Advance(11 * time.Second) // past the 10s session timeout
	if groups, members := h.c.Counts(); groups != 0 || members != 0 {
		t.Fatalf("after the pending ids lapsed: %d groups, %d members held, want none", groups, members)
	}
	// The slots are free again; a pending id used in time makes a member.
	p := joinP("real", "", "r", "range")
	p.MemberID = h.memberID(p)
	ch := h.joinAsync(p)
	h.clk.Advance(4 * time.Second)
	if r := mustReply(t, ch, "join with the pending id"); r.Code != 0 {
		t.Fatalf("join with the pending id: code %d", r.Code)
	}
	if got := h.c.pendingIDs.Load(); got != 0 {
		t.Fatalf("%d pending ids counted after the member joined, want 0", got)
	}
}

// groups.max_rebalance_timeout: a member asking for a 24h rebalance
// timeout (Kafka Streams asks for 2^31-1 ms) holds a rebalance for the
// cap at most: the join phase completes without it after 1m.
func TestRebalanceTimeoutCapped(t *testing.T) {
	h := newCappedHarness(t, func(c *Config) { c.MaxRebalanceTimeout = time.Minute })
	ids := h.stableGroup("g", 1)
	// The leader rejoins asking for a day; alone, it completes at once.
	lp := joinP("g", ids[0], "m0", "range")
	lp.RebalanceTimeout = 24 * time.Hour
	r := mustReply(t, h.joinAsync(lp), "leader rejoin")
	if r.Code != 0 {
		t.Fatalf("leader rejoin: code %d", r.Code)
	}
	if s := h.syncNow("g", ids[0], r.Generation, map[string][]byte{ids[0]: []byte("a")}); s.Code != 0 {
		t.Fatalf("sync: code %d", s.Code)
	}
	// A new member joins; the leader keeps heartbeating but never rejoins.
	np := joinP("g", "", "n", "range")
	np.MemberID = h.memberID(np)
	ch := h.joinAsync(np)
	for range 14 { // 70s of heartbeats every 5s
		if len(ch) > 0 {
			break
		}
		h.clk.Advance(5 * time.Second)
		h.c.heartbeat("g", ids[0], nil, r.Generation)
	}
	got, ok := pollReply(ch)
	if !ok {
		t.Fatal("the rebalance still waits for a member asking for 24h after 70s; cap 1m")
	}
	if got.Code != 0 || got.Leader != np.MemberID {
		t.Fatalf("new member's join: code %d leader %q, want 0 and itself", got.Code, got.Leader)
	}
}

// Group ids whose offsets cannot be stored are INVALID_GROUP_ID; an
// absurd client id does not make an absurd member id.
func TestGroupAndClientIDLengths(t *testing.T) {
	h := newGroupHarness(t)
	long := joinP(strings.Repeat("g", MaxGroupIDBytes+1), "", "x", "range")
	wantGroupCode(t, "group id of 247 bytes", h.joinNow(long).Code, kerr.InvalidGroupID.Code)
	fits := joinP(strings.Repeat("g", MaxGroupIDBytes), "", "x", "range")
	fits.ClientID = strings.Repeat("c", 32767)
	id := h.memberID(fits)
	if len(id) != MaxMemberIDPrefixBytes+37 || !strings.HasPrefix(id, strings.Repeat("c", MaxMemberIDPrefixBytes)+"-") {
		t.Fatalf("member id of a 32767-byte client id: %d bytes, want %d", len(id), MaxMemberIDPrefixBytes+37)
	}
}
