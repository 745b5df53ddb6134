//go:build !linux

package embedded

import (
	"runtime"
	"time"
)

func readSystemInfo(string) systemInfo { return systemInfo{osName: runtime.GOOS} }

func processCPU() time.Duration { return 0 }

func machineCPU() (busy, all uint64, ok bool) { return 0, 0, false }
