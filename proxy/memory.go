package proxy

import (
	"os"
	"strconv"
	"strings"
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
