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

// Resolved returns c with limits.memory_bytes derived when 0 (3/4 of the
// cgroup memory limit, else DefaultMemoryBytes), and limits.max_frame_bytes
// lowered to the budget when it is left at its default and the budget is
// smaller (a frame must fit the budget). source says where the budget came
// from: "config", "cgroup" or "default".
func (c Config) Resolved() (out Config, source string) {
	l := &c.Limits
	source = "config"
	if l.MemoryBytes == 0 {
		if n, ok := CgroupMemoryLimit(); ok {
			l.MemoryBytes, source = max(n/4*3, minMemoryBytes), "cgroup"
		} else {
			l.MemoryBytes, source = DefaultMemoryBytes, "default"
		}
	}
	if l.MaxFrameBytes == DefaultMaxFrameBytes && int64(l.MaxFrameBytes) > l.MemoryBytes {
		l.MaxFrameBytes = int(l.MemoryBytes)
	}
	return c, source
}
