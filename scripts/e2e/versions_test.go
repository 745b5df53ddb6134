package e2e

import "sync"

var (
	versionsOnce sync.Once
	v4, v3       string
	versionsErr  error
)

func loadVersions() {
	versionsOnce.Do(func() { v4, v3, versionsErr = KafkaVersions() })
}

// kafka4Version and kafka3Version are the versions of scripts/kafka/versions.sh
// ("4.x" / "3.9.x" when it cannot be read; the Java tests then fail naming it).
func kafka4Version() string {
	loadVersions()
	if v4 == "" {
		return "4.x"
	}
	return v4
}

func kafka3Version() string {
	loadVersions()
	if v3 == "" {
		return "3.9.x"
	}
	return v3
}
