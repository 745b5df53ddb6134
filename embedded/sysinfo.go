package embedded

import (
	"runtime"
	"sync"
	"time"
)

// systemInfo is what GET_STATS reports about the machine.
type systemInfo struct {
	totalMemory, availableMemory uint64 // bytes
	freeDisk, totalDisk          uint64 // bytes, of the data directory's file system
	osName, osVersion            string
	kernelVersion                string
}

// cpuSampler turns cumulative CPU counters into percentages between two
// GET_STATS calls (the first call measures since the process started).
type cpuSampler struct {
	mu       sync.Mutex
	wall     time.Time
	proc     time.Duration
	busy     uint64
	all      uint64
	haveBusy bool
}

// sample returns the process CPU usage and the machine's total CPU usage
// in percent since the previous sample.
func (c *cpuSampler) sample(now time.Time) (proc, total float32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := processCPU()
	if c.wall.IsZero() {
		c.wall = processStart
	}
	if wall := now.Sub(c.wall); wall > 0 && p >= c.proc {
		proc = float32(float64(p-c.proc) / float64(wall) / float64(runtime.NumCPU()) * 100)
	}
	c.wall, c.proc = now, p
	if busy, all, ok := machineCPU(); ok {
		if c.haveBusy && all > c.all && busy >= c.busy {
			total = float32(float64(busy-c.busy) / float64(all-c.all) * 100)
		}
		c.busy, c.all, c.haveBusy = busy, all, true
	}
	return proc, total
}

// processStart approximates the process start for the first CPU sample.
var processStart = time.Now()
