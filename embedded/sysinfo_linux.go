//go:build linux

package embedded

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func readSystemInfo(dataDir string) systemInfo {
	si := systemInfo{osName: "Linux"}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 2 {
				continue
			}
			kb, _ := strconv.ParseUint(fields[1], 10, 64)
			switch fields[0] {
			case "MemTotal:":
				si.totalMemory = kb * 1024
			case "MemAvailable:":
				si.availableMemory = kb * 1024
			}
		}
		_ = f.Close()
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, line := range bytes.Split(b, []byte("\n")) {
			if v, ok := bytes.CutPrefix(line, []byte("PRETTY_NAME=")); ok {
				si.osVersion = strings.Trim(string(v), `"`)
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		si.kernelVersion = strings.TrimSpace(string(b))
	}
	dir := dataDir
	if dir == "" {
		dir = os.TempDir()
	}
	var fs syscall.Statfs_t
	if syscall.Statfs(dir, &fs) == nil {
		si.freeDisk = fs.Bavail * uint64(fs.Bsize)
		si.totalDisk = fs.Blocks * uint64(fs.Bsize)
	}
	return si
}

// processCPU is the CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// machineCPU returns the busy and total jiffies of /proc/stat.
func machineCPU() (busy, all uint64, ok bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0, 0, false
	}
	fields := strings.Fields(sc.Text())
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, 0, false
	}
	for i, f := range fields[1:] {
		v, _ := strconv.ParseUint(f, 10, 64)
		all += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, all, true
}
