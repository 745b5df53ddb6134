package proxy

import (
	"encoding/binary"
	"os"
	"strconv"
	"strings"

	"github.com/panjf2000/gnet/v2"
)

// cgroup files holding the process's memory limit: v2 first, then v1.
var cgroupMemoryFiles = []string{
	"/sys/fs/cgroup/memory.max",
	"/sys/fs/cgroup/memory/memory.limit_in_bytes",
}

// CgroupMemoryLimit returns the memory limit of the process's cgroup in
// bytes, and false when there is none ("max" in v2, the huge page-rounded
// "unlimited" value in v1, or no cgroup file).
func CgroupMemoryLimit() (int64, bool) {
	for _, f := range cgroupMemoryFiles {
		if n, ok := readMemoryLimit(f); ok {
			return n, true
		}
	}
	return 0, false
}

func readMemoryLimit(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v := strings.TrimSpace(string(b))
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n >= 1<<60 { // "max", or v1's "unlimited"
		return 0, false
	}
	return n, true
}

// cgroupReserve is the least of a container's memory limit left to the
// runtime when the budget is derived from it (64 MiB: an idle sidecar's
// RSS, goroutine stacks and gnet's buffers of many connections, garbage
// not yet collected; see docs/OPERATIONS.md "Memory").
const cgroupReserve = 64 << 20

// BudgetForLimit is the memory budget derived from a container memory
// limit of limit bytes: the limit less a quarter of it, at least 64 MiB,
// but never less than half the limit (and never below 4 MiB). 256 MiB gives
// 192 MiB, 128 MiB gives 64 MiB, 1 GiB gives 768 MiB.
func BudgetForLimit(limit int64) int64 {
	return max(limit-max(limit/4, cgroupReserve), limit/2, minMemoryBytes)
}

// Resolved returns c with limits.memory_bytes derived when 0
// (BudgetForLimit of the cgroup memory limit, else DefaultMemoryBytes), and limits.max_frame_bytes
// lowered to the budget when it is left at its default and the budget is
// smaller (a frame must fit the budget). source says where the budget came
// from: "config", "cgroup" or "default".
func (c Config) Resolved() (out Config, source string) {
	l := &c.Limits
	source = "config"
	if l.MemoryBytes == 0 {
		if n, ok := CgroupMemoryLimit(); ok {
			l.MemoryBytes, source = BudgetForLimit(n), "cgroup"
		} else {
			l.MemoryBytes, source = DefaultMemoryBytes, "default"
		}
	}
	if l.MaxFrameBytes == DefaultMaxFrameBytes && int64(l.MaxFrameBytes) > l.MemoryBytes {
		l.MaxFrameBytes = int(l.MemoryBytes)
	}
	return c, source
}

// Outcomes of reserveFrame.
const (
	reserveOK   = iota // the frame's budget is held (cs.held)
	reserveWait        // queued: the budget wakes the connection
	reserveMore        // the api key is not buffered yet: wait for input
)

// reserveFrame makes sure cs holds the budget of the frame of size bytes
// at the head of its input before any of it is taken or allocated: its
// size times its API's FrameCharge (the table row's; Produce draws 2). When
// the budget is short it queues the connection, which then takes nothing
// more until the budget wakes it (the event loop never waits). Event-loop
// only.
func (s *Server) reserveFrame(c gnet.Conn, cs *conn, size int) int {
	if s.budget == nil || cs.held > 0 {
		return reserveOK
	}
	if t := cs.ticket; t != nil {
		if !t.Granted() {
			return reserveWait
		}
		cs.held, cs.ticket = t.Bytes(), nil
		return reserveOK
	}
	charge := int64(size)
	if size >= 2 {
		hdr, err := c.Peek(FrameHeaderSize + 2)
		if err != nil || len(hdr) < FrameHeaderSize+2 {
			return reserveMore
		}
		charge *= s.d.FrameCharge(int16(binary.BigEndian.Uint16(hdr[FrameHeaderSize:])))
	}
	charge = max(s.budget.Clamp(charge), 1)
	if t := s.budget.Queue(charge, int64(c.InboundBuffered()), cs.wake); t != nil {
		cs.ticket = t
		return reserveWait
	}
	cs.held = charge
	return reserveOK
}

// dropReservation returns (or withdraws) the budget cs holds or waits for
// for its next frame. Event-loop only (OnClose).
func (s *Server) dropReservation(cs *conn) {
	if cs.ticket != nil {
		if s.budget.Cancel(cs.ticket) {
			s.budget.Release(cs.ticket.Bytes())
		}
		cs.ticket = nil
	}
	s.budget.Release(cs.held)
	cs.held = 0
}

// settleOutbound keeps the budget's account of the reply bytes gnet holds
// for cs (copied into its outbound buffer when the socket did not take
// them at once) equal to what it holds now. Event-loop only.
func (s *Server) settleOutbound(c gnet.Conn, cs *conn) {
	n := int64(c.OutboundBuffered())
	switch prev := cs.outHeld.Swap(n); {
	case n > prev:
		s.budget.Charge(n - prev)
	case n < prev:
		s.budget.Release(prev - n)
	}
}

// settleInbound keeps the budget's Outside account of the request bytes
// gnet holds for cs equal to what it holds now. Event-loop only.
func (s *Server) settleInbound(c gnet.Conn, cs *conn) {
	if s.budget == nil {
		return
	}
	n := int64(c.InboundBuffered())
	if d := n - cs.inHeld; d != 0 {
		s.budget.Outside(d)
		cs.inHeld = n
	}
}
