package main

import "strings"

// intendedDifference is a matrix cell where the sidecar may fail although
// Apache Kafka passes, on purpose, with the reason a user would read. This is
// the one list of them for the client matrix; the protocol-level list of the
// differential test (intendedDifferences in scripts/e2e/differential_test.go)
// is copied into the report by the test binary itself, and the kgo suite's
// exclusions live with their reasons in kgo-suite.txt.
type intendedDifference struct {
	Client   string // client row; "*" is every client, "java-*" every Java version
	Scenario string // column
	Target   string // "sidecar"
	Why      string
}

// kfake's own deviations from Kafka are not here: the tests skip them on
// kfake with the reason (kfakeDeviations in scripts/e2e/scenarios_test.go),
// and the report shows that reason in the kfake cell.
var intendedDifferences = []intendedDifference{
	// None yet: every cell that passes on Apache Kafka must pass on the
	// sidecar. Add an entry only for a difference a user would accept, for
	// example a feature Iggy does not have (compaction, transactions).
}

// lookupDifference returns the intended difference for a cell, or nil.
func lookupDifference(client, scenario, target string) *intendedDifference {
	for i, d := range intendedDifferences {
		prefix, wild := strings.CutSuffix(d.Client, "*")
		if (d.Client == client || (wild && strings.HasPrefix(client, prefix))) && d.Scenario == scenario && d.Target == target {
			return &intendedDifferences[i]
		}
	}
	return nil
}
