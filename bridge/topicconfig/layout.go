package topicconfig

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// CreateLayout checks NumPartitions, ReplicationFactor and the replica
// assignment as a one-broker Kafka does and returns the partition count.
func CreateLayout(rt *kmsg.CreateTopicsRequestTopic, self, defaultPartitions int32) (int32, *Error) {
	var partitions int32
	if len(rt.ReplicaAssignment) > 0 {
		if rt.ReplicationFactor != -1 {
			return 0, &Error{Code: kerr.InvalidRequest.Code, Msg: "A manual partition assignment was specified, but replication factor was not set to -1."}
		}
		if rt.NumPartitions != -1 {
			return 0, &Error{Code: kerr.InvalidRequest.Code, Msg: "A manual partition assignment was specified, but numPartitions was not set to -1."}
		}
		seen := make(map[int32]bool, len(rt.ReplicaAssignment))
		for _, a := range rt.ReplicaAssignment {
			if seen[a.Partition] {
				return 0, &Error{Code: kerr.InvalidReplicaAssignment.Code, Msg: fmt.Sprintf("Found multiple manual partition assignments for partition %d", a.Partition)}
			}
			seen[a.Partition] = true
			if e := CheckReplicas(a.Replicas, self); e != nil {
				return 0, e
			}
		}
		for p := range int32(len(rt.ReplicaAssignment)) {
			if !seen[p] {
				return 0, &Error{Code: kerr.InvalidReplicaAssignment.Code, Msg: "partitions should be a consecutive 0-based integer sequence"}
			}
		}
		partitions = int32(len(rt.ReplicaAssignment))
	} else {
		switch rf := rt.ReplicationFactor; {
		case rf < -1 || rf == 0:
			return 0, &Error{Code: kerr.InvalidReplicationFactor.Code, Msg: "Replication factor must be larger than 0, or -1 to use the default value."}
		case rf > 1:
			return 0, &Error{Code: kerr.InvalidReplicationFactor.Code, Msg: fmt.Sprintf(
				"Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only 1 broker(s) are registered.", rf, rf)}
		}
		switch n := rt.NumPartitions; {
		case n < -1 || n == 0:
			return 0, &Error{Code: kerr.InvalidPartitions.Code, Msg: "Number of partitions was set to an invalid non-positive value."}
		case n == -1:
			partitions = defaultPartitions
		default:
			partitions = n
		}
	}
	if partitions > icodec.LimitMaxPartitionsPerRequest {
		return 0, &Error{Code: kerr.InvalidPartitions.Code, Msg: fmt.Sprintf(
			"Number of partitions %d is above Iggy's limit of %d per topic creation.", partitions, icodec.LimitMaxPartitionsPerRequest)}
	}
	return partitions, nil
}

// FillCreated sets the v5+ fields of a created (or validated) topic.
func FillCreated(st *kmsg.CreateTopicsResponseTopic, set Set, partitions uint32, bd BrokerDefaults) {
	st.NumPartitions = int32(partitions)
	st.ReplicationFactor = 1
	for _, e := range TopicEntries(set, partitions, bd, false) {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name = e.Name
		v := e.Value
		c.Value = &v
		c.ReadOnly = e.ReadOnly
		c.Source = int8(e.Source)
		st.Configs = append(st.Configs, c)
	}
}
