package main

import (
	"strings"
	"testing"
)

// TestTxnColumn: the "transactions / read_committed" column maps each
// client's transaction tests per target: franz-go's consume-transform-
// produce and read-side tests aggregate (a failure of either fails the
// cell), kfake counts the scenario alone (java-<v> adds TestTransactions'
// java-producer and TestReadCommittedJava elsewhere), and a client no
// transaction test covers is "not run" with the reason.
func TestTxnColumn(t *testing.T) {
	events := []testEvent{
		ev("pass", "TestTxnGroupTransactSession/kafka"),
		ev("pass", "TestTxnGroupTransactSession/sidecar"),
		ev("pass", "TestTxnGroupTransactSession/kfake"),
		ev("pass", "TestTxnGroupTransactSession"),
		ev("pass", "TestReadCommittedDiff/kafka"),
		{Action: "output", Test: "TestReadCommittedDiff/sidecar", Output: "    txnread_diff_test.go:1: sidecar differs from kafka\n"},
		ev("fail", "TestReadCommittedDiff/sidecar"),
		ev("fail", "TestReadCommittedDiff"),
		ev("pass", "TestTransactions/kafka/answers"),
		ev("pass", "TestTransactions/kafka/java-producer"),
		ev("pass", "TestTransactions/kafka"),
		ev("pass", "TestTransactions/kfake/answers"),
		ev("pass", "TestTransactions/kfake"),
		ev("pass", "TestTransactions"),
		ev("pass", "TestReadCommittedJava/kafka"),
		ev("pass", "TestReadCommittedJava"),
		ev("pass", "TestTxnProducerJava/kafka"),
		ev("pass", "TestTxnProducerJava/kfake"),
		ev("pass", "TestTxnProducerConfluent/sidecar"),
		ev("pass", "TestReadCommittedConfluent/sidecar"),
	}
	r := &report{KafkaVersion: "4.4.0", Kafka3Version: "3.9.1"}
	r.build(events)
	cells := map[string]map[string]cell{}
	for _, rw := range r.Rows {
		cells[rw.Client] = rw.Cells["txn"]
	}
	for _, c := range []struct{ client, target, status, detail string }{
		{"franz-go", "kafka", "pass", ""},
		{"franz-go", "sidecar", "fail", "sidecar differs from kafka"},
		{"franz-go", "kfake", "pass", ""},
		{"java-4.4.0", "kafka", "pass", ""},
		{"java-4.4.0", "kfake", "pass", ""},
		{"java-4.4.0", "sidecar", "not run", "no test ran"},
		{"confluent-kafka-go", "sidecar", "pass", ""},
		{"sarama", "sidecar", "not run", "not covered: the transaction scenarios run with"},
		{"java-3.9.1", "kafka", "not run", "not covered"},
	} {
		got := cells[c.client][c.target]
		if got.Status != c.status || !strings.Contains(got.Detail, c.detail) {
			t.Errorf("%s on %s: %+v, want %s (%q)", c.client, c.target, got, c.status, c.detail)
		}
	}
	if md := r.markdown(); !strings.Contains(md, "transactions / read_committed") {
		t.Error("the matrix has no transactions / read_committed column")
	}
}
