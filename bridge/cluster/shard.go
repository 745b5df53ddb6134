package cluster

import (
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Shard maps a Kafka group id to one of k shards:
// jump_consistent_hash(XXH3_64(group), k) (Lamping & Veach). Every sidecar
// of a domain must compute the same shard for a group, so this mapping is
// a wire contract between sidecar versions (golden vectors in
// shard_test.go).
func Shard(group string, k int) int {
	if k <= 1 {
		return 0
	}
	key := icodec.XXH3([]byte(group))
	var b, j int64 = -1, 0
	for j < int64(k) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int(b)
}
