package main

import (
	"fmt"
	"strings"
)

// kafkaAPI is one API key Apache Kafka 4.4 advertises on its client
// listener, and what the sidecar does with it. The bridge's test
// TestCompatibilityAPITable (bridge/compat_table_test.go) holds the
// Sidecar column to the dispatch table, so the report cannot claim a
// version the sidecar does not serve.
type kafkaAPI struct {
	Key     int16
	Name    string
	Kafka   string // versions Kafka 4.4.0 advertises, "vA-vB"
	Sidecar string // "served vA-vB", "answered as disabled" or "not advertised"
	Why     string
}

// issue links an open issue of the project.
func issue(n int, what string) string { return fmt.Sprintf("%s (issue %d)", what, n) }

// kafkaAPIs lists every API key of Kafka 4.4.0's ApiVersions answer on a
// client listener (KRaft combined node), in key order; the telemetry pair
// 71/72 is advertised by Kafka only with a metrics reporter that accepts
// client metrics, and by the sidecar only with telemetry.enabled.
var kafkaAPIs = []kafkaAPI{
	{0, "Produce", "v0-v13", "served v0-v13", ""},
	{1, "Fetch", "v4-v18", "served v0-v18", "v0-v3 down-converted to message sets; sessions (KIP-227) kept per sidecar; max_bytes 0 returns the first record, where Kafka returns the producer's whole first batch (the sidecar does not keep batches); read_committed: last stable offset and aborted transactions from a per-partition tracker (KAFKA-ON-IGGY \"Transactions\")"},
	{2, "ListOffsets", "v1-v11", "served v0-v11", "read_committed latest = the last stable offset"},
	{3, "Metadata", "v0-v13", "served v0-v13", "every sidecar is the one broker leading every partition, leader epoch 0"},
	{8, "OffsetCommit", "v2-v10", "served v0-v10", ""},
	{9, "OffsetFetch", "v1-v10", "served v0-v10", "require_stable: UNSTABLE_OFFSET_COMMIT while transactional offsets are pending"},
	{10, "FindCoordinator", "v0-v6", "served v0-v6", ""},
	{11, "JoinGroup", "v0-v9", "served v0-v9", ""},
	{12, "Heartbeat", "v0-v4", "served v0-v4", ""},
	{13, "LeaveGroup", "v0-v5", "served v0-v5", ""},
	{14, "SyncGroup", "v0-v5", "served v0-v5", ""},
	{15, "DescribeGroups", "v0-v6", "served v0-v6", ""},
	{16, "ListGroups", "v0-v5", "served v0-v5", ""},
	{17, "SASLHandshake", "v0-v1", "served v0-v1", "PLAIN (an Iggy login), SCRAM-SHA-256/512 (sasl.scram_file), OAUTHBEARER (JWKS, or unsigned tokens with sasl.oauthbearer.unsecured on loopback), over SASL_PLAINTEXT and SASL_SSL; on a listener without sasl.enabled answered ILLEGAL_SASL_STATE, as Kafka on PLAINTEXT"},
	{18, "ApiVersions", "v0-v5", "served v0-v5", ""},
	{19, "CreateTopics", "v2-v7", "served v0-v7", ""},
	{20, "DeleteTopics", "v1-v6", "served v0-v6", ""},
	{21, "DeleteRecords", "v0-v2", "served v0-v2", ""},
	{22, "InitProducerID", "v0-v5", "served v0-v5", ""},
	{23, "OffsetForLeaderEpoch", "v2-v4", "served v2-v4", "epoch 0 answers the partition's end offset"},
	{24, "AddPartitionsToTxn", "v0-v5", "served v0-v5", "v4+ is the brokers' batched form (VerifyOnly or add, per transaction); Kafka 4.x clients under transaction protocol v2 send none"},
	{25, "AddOffsetsToTxn", "v0-v4", "served v0-v4", ""},
	{26, "EndTxn", "v0-v5", "served v0-v5", "v5: transaction protocol v2 (KIP-890 part 2; ApiVersions finalizes transaction.version 2): the epoch moves on at every EndTxn"},
	{27, "WriteTxnMarkers", "v1-v2", "not advertised", issue(25, "transactions") + "; broker-to-broker"},
	{28, "TxnOffsetCommit", "v0-v6", "served v0-v6", "offsets pending at the group's owner until the transaction ends, persisted in Iggy before the answer (a restarted sidecar or a new owner of the group recovers them); v5 adds the group to the transaction (transaction protocol v2); v6 names topics by id"},
	{29, "DescribeACLs", "v1-v3", "served v1-v3", "with sasl.authorization principal: the asking principal's Iggy permissions as ACLs; otherwise SECURITY_DISABLED, as Kafka without an authorizer"},
	{30, "CreateACLs", "v1-v3", "served v1-v3", "SECURITY_DISABLED, as Kafka without an authorizer (with per-principal authorization the ACLs are Iggy permissions, changed in Iggy)"},
	{31, "DeleteACLs", "v1-v3", "served v1-v3", "SECURITY_DISABLED, as Kafka without an authorizer (with per-principal authorization the ACLs are Iggy permissions, changed in Iggy)"},
	{32, "DescribeConfigs", "v1-v4", "served v0-v4", ""},
	{33, "AlterConfigs", "v0-v2", "served v0-v2", ""},
	{34, "AlterReplicaLogDirs", "v1-v2", "not advertised", "moving replicas between a broker's disks: Iggy places partition data itself"},
	{35, "DescribeLogDirs", "v1-v5", "served v1-v5", "one dir, \"iggy\", partition sizes from Iggy's statistics; total and usable bytes -1 (not available)"},
	{36, "SASLAuthenticate", "v0-v2", "served v0-v2", "KIP-368 session lifetime reported and enforced (sasl.session_lifetime, a token's expiry)"},
	{37, "CreatePartitions", "v0-v3", "served v0-v3", ""},
	{38, "CreateDelegationToken", "v1-v3", "not advertised", "delegation tokens need SASL: " + issue(27, "client authentication")},
	{39, "RenewDelegationToken", "v1-v2", "not advertised", "delegation tokens need SASL: " + issue(27, "client authentication")},
	{40, "ExpireDelegationToken", "v1-v2", "not advertised", "delegation tokens need SASL: " + issue(27, "client authentication")},
	{41, "DescribeDelegationToken", "v1-v3", "not advertised", "delegation tokens need SASL: " + issue(27, "client authentication")},
	{42, "DeleteGroups", "v0-v3", "served v0-v3", ""},
	{43, "ElectLeaders", "v0-v2", "served v0-v2", "ELECTION_NOT_NEEDED: each partition has its only leader"},
	{44, "IncrementalAlterConfigs", "v0-v1", "served v0-v1", ""},
	{45, "AlterPartitionAssignments", "v0-v1", "served v0-v1", "only the current assignment is valid; others get Kafka's INVALID_REPLICA_ASSIGNMENT"},
	{46, "ListPartitionReassignments", "v0", "served v0", "never a reassignment in progress: an empty list"},
	{47, "OffsetDelete", "v0", "served v0", ""},
	{48, "DescribeClientQuotas", "v0-v1", "served v0-v1", "user and client-id quotas kept in Iggy (__kafka_iggy/client_quotas), Kafka's filter matching and validation"},
	{49, "AlterClientQuotas", "v0-v1", "served v0-v1", "user and client-id quotas kept in Iggy; producer_byte_rate, consumer_byte_rate, request_percentage (handler time) and controller_mutation_rate (CreateTopics, DeleteTopics) enforced per sidecar with Kafka's throttle; ip quotas (connection_creation_rate) refused with UNSUPPORTED_VERSION"},
	{50, "DescribeUserSCRAMCredentials", "v0", "served v0", "the SCRAM store: sasl.scram_file with the changes of AlterUserScramCredentials kept in Iggy"},
	{51, "AlterUserSCRAMCredentials", "v0", "served v0", "changes kept in Iggy (__kafka_iggy/scram_credentials), read by every sidecar's SCRAM authentication within a second"},
	{55, "DescribeQuorum", "v0-v2", "not advertised", "the KRaft controller quorum: the sidecar has none (Iggy's cluster is described by DescribeCluster)"},
	{57, "UpdateFeatures", "v0-v2", "not advertised", "KRaft feature levels: the sidecar finalizes only transaction.version (2), fixed"},
	{60, "DescribeCluster", "v0-v2", "served v0-v2", ""},
	{61, "DescribeProducers", "v0", "served v0", "transactional producers only (from the partition's transaction headers, within the tracker's window); idempotent producers outside transactions not listed"},
	{64, "UnregisterBroker", "v0", "not advertised", "KRaft broker registration: sidecars do not register"},
	{65, "DescribeTransactions", "v0", "served v0", ""},
	{66, "ListTransactions", "v0-v2", "served v0-v1", "v2 (transactional id pattern) " + issue(25, "transactions")},
	{68, "ConsumerGroupHeartbeat", "v0-v1", "served v0-v1", "the KIP-848 group protocol (bridge/cgroups; docs/OPERATIONS.md, \"Two group protocols\")"},
	{69, "ConsumerGroupDescribe", "v0-v1", "served v0-v1", "the KIP-848 group protocol"},
	{71, "GetTelemetrySubscriptions", "v0", "served v0", "KIP-714, advertised only with telemetry.enabled (default false; Kafka only with a client-metrics reporter): the client metrics subscriptions a client matches, combined as Kafka combines them (telemetry.metrics and push_interval while none is stored), the subscription id computed as Kafka's, cumulative temporality where Kafka asks for delta"},
	{72, "PushTelemetry", "v0", "served v0", "KIP-714, advertised only with telemetry.enabled: Kafka's error codes; the pushed Gauge and Sum points are exported on the admin /metrics labelled client_id and client_instance_id; a client moving to another sidecar keeps pushing there (the subscription id depends on the configuration and the instance only)"},
	{74, "ListConfigResources", "v0-v1", "served v0-v1", "as Kafka 4.4: v0 the client metrics subscriptions (kept in Iggy, bridge/clientmetrics; kafka-client-metrics.sh alters and describes them through DescribeConfigs/IncrementalAlterConfigs on CLIENT_METRICS), v1 also the sidecar as BROKER and BROKER_LOGGER, every topic, no GROUP; an unknown type UNSUPPORTED_VERSION"},
	{75, "DescribeTopicPartitions", "v0", "served v0", "KIP-966, with Kafka's paging"},
	{76, "ShareGroupHeartbeat", "v1", "not advertised", "share groups (KIP-932): advertised only once served"},
	{77, "ShareGroupDescribe", "v1", "not advertised", "share groups (KIP-932): advertised only once served"},
	{78, "ShareFetch", "v1-v2", "not advertised", "share groups (KIP-932): advertised only once served"},
	{79, "ShareAcknowledge", "v1-v2", "not advertised", "share groups (KIP-932): advertised only once served"},
	{80, "AddRaftVoter", "v0-v1", "not advertised", "KRaft controller quorum: the sidecar has none"},
	{81, "RemoveRaftVoter", "v0", "not advertised", "KRaft controller quorum: the sidecar has none"},
	{83, "InitializeShareGroupState", "v0", "not advertised", "share groups (KIP-932), broker-internal"},
	{84, "ReadShareGroupState", "v0", "not advertised", "share groups (KIP-932), broker-internal"},
	{85, "WriteShareGroupState", "v0-v1", "not advertised", "share groups (KIP-932), broker-internal"},
	{86, "DeleteShareGroupState", "v0", "not advertised", "share groups (KIP-932), broker-internal"},
	{87, "ReadShareGroupStateSummary", "v0-v1", "not advertised", "share groups (KIP-932), broker-internal"},
	{88, "StreamsGroupHeartbeat", "v0-v1", "not advertised", "the streams group protocol (KIP-1071): advertised only once served"},
	{89, "StreamsGroupDescribe", "v0-v1", "not advertised", "the streams group protocol (KIP-1071): advertised only once served"},
	{90, "DescribeShareGroupOffsets", "v0-v1", "not advertised", "share groups (KIP-932): advertised only once served"},
	{91, "AlterShareGroupOffsets", "v0", "not advertised", "share groups (KIP-932): advertised only once served"},
	{92, "DeleteShareGroupOffsets", "v0", "not advertised", "share groups (KIP-932): advertised only once served"},
	{93, "StreamsGroupTopologyDescriptionUpdate", "v0", "not advertised", "the streams group protocol (KIP-1071): advertised only once served"},
	{94, "UnregisterController", "v0", "not advertised", "KRaft controller registration: sidecars have no controller"},
}

// apiTableHeading opens the section apiTableMarkdown writes.
const apiTableHeading = "## Kafka APIs"

// apiTableMarkdown renders the API table section (heading to the blank line
// after the table).
func apiTableMarkdown() string {
	var b strings.Builder
	served := 0
	for _, a := range kafkaAPIs {
		if strings.HasPrefix(a.Sidecar, "served") {
			served++
		}
	}
	fmt.Fprintf(&b, "%s\n\nEvery API key Apache Kafka 4.4.0 advertises on a client listener (%d keys), and what the sidecar does with it: served (the versions it advertises), answered as disabled, or not advertised (a client then does not send it), and why. The sidecar serves %d of them. Kafka 4.4 advertises GetTelemetrySubscriptions (71) and PushTelemetry (72) only with a metrics reporter that accepts client telemetry (KIP-714), none by default; the sidecar advertises them only with telemetry.enabled (default false), and counts them as served. This table is scripts/e2e/compat/apis.go; bridge/compat_table_test.go holds it to the sidecar's dispatch table, and scripts/e2e/adminapis_diff_test.go and fetchsession_diff_test.go compare the answers of the newer ones with Kafka's.\n\n", apiTableHeading, len(kafkaAPIs), served)
	b.WriteString("| key | API | Kafka 4.4.0 | sidecar | notes |\n|---|---|---|---|---|\n")
	for _, a := range kafkaAPIs {
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", a.Key, a.Name, a.Kafka, a.Sidecar, mdEscape(a.Why))
	}
	b.WriteString("\n")
	return b.String()
}
