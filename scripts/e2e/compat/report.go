package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"
)

// The columns of the matrix, in order, with what each proves.
var columns = []struct{ key, title, what string }{
	{"produce/consume", "produce/consume", "the canonical records (null/empty/300-byte keys, tombstone, empty and binary values, duplicate/empty/long headers, CreateTime 0 ms and 2001, two partitions) produced with none, gzip, snappy, lz4 and zstd, read back by the client and by franz-go: keys, values, headers, timestamps, partitions and offsets equal"},
	{"group", "group + rebalance", "two members of one group: the first gets all 4 partitions, after the second joins each holds 2, and DescribeGroups shows them Stable with exactly those assignments"},
	{"cgroup", "group (consumer protocol)", "KIP-848's group.protocol=consumer (TestConsumerProtocolJava, TestConsumerProtocolConfluent): three members split 6 partitions with no overlap, a fourth joins and only the newcomer gains (the three only give partitions up), one is SIGKILLed and its partitions move after the session timeout, every record consumed, kafka-consumer-groups --describe --members shows 3 members and 6 partitions"},
	{"txn", "transactions / read_committed", "consume-transform-produce in transactions (TestTxnProducerJava for kafka-clients, TestTxnGroupTransactSession for franz-go, TestTxnProducerConfluent for confluent-kafka-go, TestTxnProducerPython for confluent-kafka-python; kcat, whose producer puts its whole input in one transaction, in TestTxnKcat: a committed run, a run SIGKILLed with its transaction open and aborted by the next run's InitProducerId, a committed run, read back by kcat -C at both isolation levels): a consumer group member reads an input topic at read_committed, a transactional producer writes each record to both partitions of an output topic and adds the group's offsets to the transaction; one transaction commits, the next aborts (its records flushed to the broker first); a read_committed consumer reads the committed records once and none of the aborted ones, read_uncommitted reads both, the group's committed offset is the committed transaction's. With it the read side on a topic a franz-go transactional producer wrote (a committed, an aborted and an open transaction): TestReadCommittedJava (kafka-console-consumer --isolation-level), TestReadCommittedConfluent, TestReadCommittedDiff (franz-go, Fetch and ListOffsets compared with Kafka); and for java-4.4.0 TestTransactions' java-producer (kafka-producer-perf-test --transactional-id, kafka-transactions.sh list and describe). kfake runs the consume-transform-produce scenario only (the read-side tests leave it out: its read_committed is not Kafka's reference)"},
	{"commit", "commit/resume", "commit offset 4 after 4 of 10 records, read it back, OffsetFetch says 4, a new member resumes at 4"},
	{"seek", "seek by timestamp", "the lookup of a CreateTime gives the first record at or after it, reading there gives it, a time after the last record gives none"},
	{"idempotent", "stock producer", "20 records with the client's default producer settings arrive once each, in order; batches carry a producer id exactly when the client is idempotent by default"},
	{"admin", "admin API", "create (3 partitions, retention.ms), create again (TOPIC_ALREADY_EXISTS), describe, describe configs, alter, describe configs, delete, describe (UNKNOWN_TOPIC_OR_PARTITION)"},
	{"perf", "perf tools", "kafka-producer-perf-test and kafka-consumer-perf-test, 20,000 records of 100 bytes"},
	{"admin-tools", "admin tools", "kafka-topics, kafka-configs and kafka-consumer-groups: create/describe/alter/delete, config alter/describe, group list/describe (offsets and lag)"},
	{"cluster-tools", "cluster tools", "kafka-log-dirs --describe (partition sizes), kafka-configs --entity-type clients and users (quota alter/describe/delete; users also reads the SCRAM credentials), kafka-reassign-partitions --list, kafka-leader-election (preferred: already elected) and kafka-client-metrics (alter/list/describe/delete), each exiting 0 without a stack trace and printing what it prints on Kafka"},
	{"across", "one group across 3 sidecars", "TestGroupAcrossSidecars: three sidecars (peer link on) on one embedded Iggy server, one group whose members are franz-go, sarama, the Java console consumer, confluent-kafka-python and kcat -G, each on its own sidecar: every partition assigned once, DescribeGroups agrees through each sidecar, every record consumed, kafka-consumer-groups --list/--describe through every sidecar; sidecar only (a Kafka cluster or kfake has one coordinator per group by design: —)"},
}

// acrossClients are the clients TestGroupAcrossSidecars puts in its group.
var acrossClients = map[string]bool{"franz-go": true, "sarama": true, "confluent-kafka-python": true, "kcat": true}

var targetOrder = []string{"kafka", "sidecar", "kfake"}

type cell struct {
	Status string // pass, fail, n/a, not run
	Detail string // reason: failing lines, or the n/a reason
	Leaves []string
}

type row struct {
	Client string
	Note   string
	Cells  map[string]map[string]cell // column -> target -> cell
}

type report struct {
	KafkaVersion, Kafka3Version string
	Started                     time.Time
	BrokerStart, E2EDuration    time.Duration
	KgoDuration, Total          time.Duration
	SidecarRan                  bool
	SidecarError                string
	Rows                        []row
	Other                       []row // protocol-level checks: differential, long poll
	KgoSuites                   []kgoSuiteResult
	ProtocolDifferences         []map[string]string
	Passed                      int
	Unexpected                  []string
	Accepted                    []string
	Flaky                       []flakyTest // e2e tests that failed once and passed when run again (rerun.go)

	tests map[string]*testNode
}

type testNode struct {
	action string // pass, fail, skip, "" (no end event)
	output []string
}

// clientRows lists each client, the prefixes of its round-trip tests per
// target, and what it is.
func (r *report) clientRows() []struct {
	name, note string
	roundTrip  []string
} {
	j4, j3 := "java-"+r.KafkaVersion, "java-"+r.Kafka3Version
	return []struct {
		name, note string
		roundTrip  []string
	}{
		{j4, "Apache Kafka Java client kafka-clients " + r.KafkaVersion + " (and the tools of the same release)", []string{"TestJavaRoundTrip/%s"}},
		{j3, "kafka-clients " + r.Kafka3Version + " (and its tools)", []string{"TestJava39RoundTrip/%s"}},
		{"confluent-kafka-python", "confluent-kafka (PyPI), librdkafka inside the wheel", []string{"TestPythonRoundTrip/confluent-kafka-python/%s"}},
		{"kafka-python", "kafka-python (PyPI), pure Python", []string{"TestPythonRoundTrip/kafka-python/%s"}},
		{"kcat", "kcat (Debian), librdkafka 2.0.2", []string{"TestKcatRoundTrip/%s", "TestKcatReadsEveryCase/%s"}},
		{"franz-go", "github.com/twmb/franz-go kgo + kadm", []string{"TestKgoRoundTrip/%s"}},
		{"sarama", "github.com/IBM/sarama", []string{"TestSaramaRoundTrip/%s"}},
		{"kafka-go", "github.com/segmentio/kafka-go", []string{"TestKafkaGoRoundTrip/%s"}},
		{"confluent-kafka-go", "confluent-kafka-go, bundled librdkafka (round trips only)", []string{"TestConfluentRoundTrip/%s"}},
	}
}

func (r *report) build(events []testEvent) {
	r.tests = map[string]*testNode{}
	for _, ev := range events {
		if ev.Test == "" {
			continue
		}
		n := r.tests[ev.Test]
		if n == nil {
			n = &testNode{}
			r.tests[ev.Test] = n
		}
		switch ev.Action {
		case "output":
			n.output = append(n.output, ev.Output)
		case "pass", "fail", "skip":
			n.action = ev.Action
		}
	}
	for _, c := range r.clientRows() {
		rw := row{Client: c.name, Note: c.note, Cells: map[string]map[string]cell{}}
		for _, col := range columns {
			rw.Cells[col.key] = map[string]cell{}
			for _, tg := range targetOrder {
				var prefixes []string
				switch {
				case col.key == "produce/consume":
					for _, p := range c.roundTrip {
						prefixes = append(prefixes, fmt.Sprintf(p, tg))
					}
				case col.key == "across":
					if tg != "sidecar" {
						rw.Cells[col.key][tg] = cell{Status: "not run", Detail: "one group across several sidecars is a sidecar deployment shape; Kafka and kfake coordinate each group on one broker"}
						continue
					}
					if acrossClients[c.name] || c.name == "java-"+r.KafkaVersion {
						prefixes = []string{"TestGroupAcrossSidecars"}
					}
				case col.key == "cgroup":
					switch {
					case c.name == "java-"+r.KafkaVersion:
						prefixes = []string{"TestConsumerProtocolJava/" + tg}
					case c.name == "confluent-kafka-python":
						prefixes = []string{"TestConsumerProtocolConfluent/" + tg}
					default:
						rw.Cells[col.key][tg] = cell{Status: "not run", Detail: "not covered: the consumer-protocol scenario runs with kafka-clients " + r.KafkaVersion + " and confluent-kafka-python (sarama, kafka-go, kafka-python and kcat's librdkafka 2.0.2 have no group.protocol=consumer; franz-go's ServerSideBalancer is covered by the sidecar's own tests)"}
						continue
					}
				case col.key == "txn":
					var ok bool
					if prefixes, ok = txnPrefixes(c.name, tg, r.KafkaVersion); !ok {
						rw.Cells[col.key][tg] = cell{Status: "not run", Detail: "not covered: the transaction scenarios run with kafka-clients " + r.KafkaVersion + ", confluent-kafka-go, confluent-kafka-python, franz-go and kcat"}
						continue
					}
				case col.key == "perf" || col.key == "admin-tools" || col.key == "cluster-tools":
					if strings.HasPrefix(c.name, "java-") {
						prefixes = []string{fmt.Sprintf("TestJavaTools/%s/%s/%s", c.name, tg, col.key)}
					}
				default:
					if c.name != "confluent-kafka-go" {
						prefixes = []string{fmt.Sprintf("TestScenarios/%s/%s/%s", c.name, tg, col.key)}
					}
				}
				rw.Cells[col.key][tg] = r.cellFor(prefixes)
			}
		}
		r.Rows = append(r.Rows, rw)
	}
	for _, o := range []struct{ name, note, prefix string }{
		{"differential", "scripted admin + data scenario with raw requests, transcript compared field by field with the reference (Kafka)", "TestDifferential/%s"},
		{"long poll", "a waiting Fetch wakes on produce; an idle Fetch is held for max_wait", "TestLongPoll/%s"},
		{"TLS and SASL_SSL", "franz-go, confluent-kafka-go and confluent-kafka-python over SASL_SSL with PLAIN and SCRAM-SHA-512 (right and wrong password, a plaintext client refused) and OAUTHBEARER (unsigned tokens: Kafka's default unsecured validator, the sidecar's sasl.oauthbearer.unsecured; an expired one refused, franz-go) and SSL with required client certificates (with and without one), a CA the test makes; Kafka configured the same way on listeners of its own", "TestSecurityDifferential/%s"},
		{"kafka-streams", "Kafka Streams 4.x (Maven Central) stateful word count, stock settings: internal topics created by Streams (compact changelog, repartition), correct counts, restore from the changelog after the state dir is deleted, repartition start offsets advance (DeleteRecords purge); real brokers only", "TestKafkaStreams/%s"},
		{"kafka-streams-eos", "Kafka Streams 4.x word count with processing.guarantee=exactly_once_v2 (commit every 100 ms): two instances, on the sidecar each behind its own sidecar of one domain (peer link on, the group coordinated by the sidecar killed); mid-stream one instance and its sidecar are SIGKILLed and restarted (on Kafka the instance only); both instances stay up, read_committed sees every word's exact count, and no committed count in the output or the changelog exceeds the truth or goes backwards; real brokers only", "TestKafkaStreamsExactlyOnce/%s"},
		{"kafka-connect", "Kafka Connect distributed worker 4.3.0 (Maven Central; connect-file is not served for 4.4.0) with FileStream source and sink: worker topics created by Connect (compact), a file moved through a topic, resumed after a worker restart from the stored offsets (each added line once); real brokers only", "TestKafkaConnect/%s"},
		{"schema-registry", "crabka-schema-registry 0.3.0 (crates.io), a Confluent Schema Registry-compatible service: _schemas topic created by the registry (compact), Avro schemas registered and read back by id and by subject, an incompatible version refused (409), served again after a registry restart (rebuilt from the topic); real brokers only", "TestSchemaRegistry/%s"},
	} {
		rw := row{Client: o.name, Note: o.note, Cells: map[string]map[string]cell{"check": {}}}
		for _, tg := range targetOrder {
			c := r.cellFor([]string{fmt.Sprintf(o.prefix, tg)})
			if o.name == "differential" && tg == "kafka" {
				c = r.cellFor([]string{"TestDifferential"})
				if c.Status == "pass" {
					c.Detail = "the reference"
				}
			}
			rw.Cells["check"][tg] = c
		}
		r.Other = append(r.Other, rw)
	}
}

// cellFor aggregates the tests under the prefixes: fail if any failed, n/a
// if all skipped, pass if all ran and passed; with no test under a prefix,
// the nearest ancestor's skip or failure (a missing dependency, a failed
// set-up) decides.
func (r *report) cellFor(prefixes []string) cell {
	if len(prefixes) == 0 {
		return cell{Status: "not run", Detail: "not covered for this client"}
	}
	var c cell
	var fails, skips, passes int
	var failDetail, skipDetail []string
	for _, p := range prefixes {
		found := false
		for name, n := range r.tests {
			if name != p && !strings.HasPrefix(name, p+"/") {
				continue
			}
			found = true
			if hasChildren(r.tests, name) {
				if n.action == "fail" && !childFailed(r.tests, name) {
					fails++
					failDetail = append(failDetail, name+": "+errorLines(n.output, 8))
				}
				continue
			}
			c.Leaves = append(c.Leaves, name)
			switch n.action {
			case "fail":
				fails++
				failDetail = append(failDetail, name+": "+errorLines(n.output, 8))
			case "skip":
				skips++
				skipDetail = append(skipDetail, skipReason(n.output))
			case "pass":
				passes++
			default:
				fails++
				failDetail = append(failDetail, name+": no result (the test binary stopped, or timed out, before it finished)")
			}
		}
		if !found {
			anc := p
			for {
				i := strings.LastIndex(anc, "/")
				if i < 0 {
					break
				}
				anc = anc[:i]
				if n, ok := r.tests[anc]; ok && (n.action == "skip" || n.action == "fail") {
					if n.action == "skip" {
						skips++
						skipDetail = append(skipDetail, skipReason(n.output))
					} else {
						fails++
						failDetail = append(failDetail, anc+": "+errorLines(n.output, 8))
					}
					found = true
					break
				}
			}
		}
		if !found {
			return cell{Status: "not run", Detail: "no test ran (target not started)"}
		}
	}
	slices.Sort(c.Leaves)
	switch {
	case fails > 0:
		c.Status, c.Detail = "fail", strings.Join(failDetail, "\n")
	case passes == 0 && skips > 0:
		c.Status, c.Detail = "n/a", strings.Join(slices.Compact(skipDetail), "; ")
	default:
		c.Status = "pass"
	}
	return c
}

func hasChildren(tests map[string]*testNode, name string) bool {
	for n := range tests {
		if strings.HasPrefix(n, name+"/") {
			return true
		}
	}
	return false
}

func childFailed(tests map[string]*testNode, name string) bool {
	for n, t := range tests {
		if strings.HasPrefix(n, name+"/") && t.action == "fail" {
			return true
		}
	}
	return false
}

var errLine = regexp.MustCompile(`^\s+\w+\.go:\d+: `)

// errorLines keeps the t.Error/t.Fatal lines of a test's output (not its
// progress logs) and their continuation lines.
func errorLines(out []string, max int) string {
	var keep []string
	in := false
	for _, l := range out {
		for _, line := range strings.Split(strings.TrimRight(l, "\n"), "\n") {
			switch {
			case errLine.MatchString(line):
				in = !isProgressLine(line)
				if in {
					keep = append(keep, strings.TrimSpace(line))
				}
			case in && strings.HasPrefix(line, "        "):
				keep = append(keep, strings.TrimSpace(line))
			default:
				in = false
			}
		}
	}
	if len(keep) == 0 {
		return "(no error lines; see the e2e log)"
	}
	if len(keep) > max {
		keep = append(keep[:max], fmt.Sprintf("... (%d more lines in the e2e log)", len(keep)-max))
	}
	return strings.Join(keep, "\n")
}

// isProgressLine tells the suite's informational t.Logf lines from failures.
func isProgressLine(line string) bool {
	for _, s := range []string{" records in ", " against kfake in ", " against kafka in ", " against sidecar in ", "every codec in", ": describe group ", ": before [", "idempotent by default", "records/sec", "kafka-consumer-perf-test (Kafka", "batch codecs per partition"} {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

func skipReason(out []string) string {
	for _, l := range out {
		if m := errLine.FindStringIndex(l); m != nil {
			return strings.TrimPrefix(strings.TrimSpace(l[m[1]:]), "n/a: ")
		}
	}
	return "skipped"
}

// judge decides the exit status: Kafka cells must pass (or be n/a); sidecar
// cells must pass where Kafka passes unless an intended difference covers
// them; each kgo suite must reach its floor.
func (r *report) judge(gateSidecar bool) {
	if r.SidecarError != "" && gateSidecar {
		r.Unexpected = append(r.Unexpected, "the sidecar hook failed to start the sidecar: "+firstLine(r.SidecarError))
	}
	check := func(client, col string, cells map[string]cell) {
		k := cells["kafka"]
		switch k.Status {
		case "pass":
			r.Passed++
		case "fail":
			r.Unexpected = append(r.Unexpected, fmt.Sprintf("%s / %s fails against Apache Kafka (the reference): %s", client, col, firstLine(k.Detail)))
		}
		s := cells["sidecar"]
		switch {
		case s.Status == "pass":
			r.Passed++
		case s.Status == "fail" && col == "across" && gateSidecar:
			r.Unexpected = append(r.Unexpected, fmt.Sprintf("%s / %s fails on the sidecar: %s", client, col, firstLine(s.Detail)))
		case s.Status == "fail" && k.Status == "pass":
			if d := lookupDifference(client, col, "sidecar"); d != nil {
				r.Accepted = append(r.Accepted, fmt.Sprintf("%s / %s on the sidecar: %s", client, col, d.Why))
			} else if gateSidecar {
				r.Unexpected = append(r.Unexpected, fmt.Sprintf("%s / %s passes on Kafka but fails on the sidecar: %s", client, col, firstLine(s.Detail)))
			}
		}
	}
	for _, rw := range r.Rows {
		for _, col := range columns {
			check(rw.Client, col.key, rw.Cells[col.key])
		}
	}
	for _, rw := range r.Other {
		check(rw.Client, "check", rw.Cells["check"])
	}
	for _, ks := range r.KgoSuites {
		if ks.Target == "sidecar" && !gateSidecar {
			continue
		}
		r.Passed += ks.Passed
		if ks.Passed < kgoSuiteFloor && !ks.Subset {
			r.Unexpected = append(r.Unexpected, fmt.Sprintf("franz-go kgo suite against %s: %d tests passed, below the floor of %d", ks.Target, ks.Passed, kgoSuiteFloor))
		}
		// Every test the list runs must pass (or skip itself) on the target:
		// a test that cannot pass gets a skip line with its reason instead.
		for _, t := range ks.Tests {
			if t.Outcome == "fail" {
				r.Unexpected = append(r.Unexpected, fmt.Sprintf("franz-go kgo suite: %s fails against %s (exclude it in kgo-suite.txt only with a reason a user would accept): %s", t.Test, ks.Target, firstLine(t.Detail)))
			}
		}
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	if len(l) > 300 {
		l = l[:300] + "..."
	}
	return l
}

func icon(c cell) string {
	switch c.Status {
	case "pass":
		return "✅"
	case "fail":
		return "❌"
	case "n/a":
		return "n/a"
	}
	return "—"
}

func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", "<br>")
}

// versionOf runs a command and returns the first line of its output.
func versionOf(name string, args ...string) string {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil && len(out) == 0 {
		return "not found"
	}
	return firstLine(strings.TrimSpace(string(out)))
}

func modVersion(mod string) string {
	root, _ := moduleRoot()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", mod)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}

func pipVersions() string {
	root, _ := moduleRoot()
	b, err := os.ReadFile(root + "/scripts/e2e/python/requirements.txt")
	if err != nil {
		return "?"
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, "`"+l+"`")
		}
	}
	return strings.Join(out, ", ")
}

func (r *report) markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# Compatibility\n\n")
	w("Generated by `go run ./scripts/e2e/compat -out docs/COMPATIBILITY.md` on %s in %v. Do not edit by hand: change the tests (scripts/e2e) or the lists of differences and run it again.\n\n",
		r.Started.UTC().Format("2006-01-02 15:04 UTC"), r.Total.Round(time.Second))
	w("Each client runs each scenario against **Apache Kafka %s** (the reference: a real single-node KRaft broker started from the Maven Central jars), **the kafka-iggy sidecar**%s, and **kfake** (franz-go's in-process fake broker, the reference of `make test`). ",
		r.KafkaVersion, r.sidecarNote())
	w("A cell reads Kafka · sidecar · kfake: ✅ pass, ❌ fail (the reason is below), n/a the client cannot express it (reason below), — not run.\n\n")

	w("## Versions\n\n| component | version |\n|---|---|\n")
	w("| Apache Kafka broker (reference) | %s, KRaft combined broker+controller, `-Xmx512m`, loopback |\n", r.KafkaVersion)
	w("| Java clients and tools | kafka-clients and kafka-tools %s and %s (Maven Central) |\n", r.KafkaVersion, r.Kafka3Version)
	w("| Java runtime | %s |\n", versionOf("java", "-version"))
	w("| franz-go (kgo, kadm, kfake) | %s, kadm %s, kfake %s |\n", modVersion("github.com/twmb/franz-go"), modVersion("github.com/twmb/franz-go/pkg/kadm"), modVersion("github.com/twmb/franz-go/pkg/kfake"))
	w("| sarama | %s |\n| kafka-go | %s |\n| confluent-kafka-go | %s (bundled librdkafka) |\n", modVersion("github.com/IBM/sarama"), modVersion("github.com/segmentio/kafka-go"), modVersion("github.com/confluentinc/confluent-kafka-go/v2"))
	w("| Python clients (PyPI) | %s on %s |\n", pipVersions(), versionOf("python3", "--version"))
	w("| kcat (Debian) | %s |\n", kcatVersion())
	w("| Go | %s |\n\n", runtime.Version())
	b.WriteString(apiTableMarkdown())

	w("## Client matrix\n\n| client |")
	for _, col := range columns {
		w(" %s |", col.title)
	}
	w("\n|---|")
	for range columns {
		w("---|")
	}
	w("\n")
	for _, rw := range r.Rows {
		w("| **%s** |", rw.Client)
		for _, col := range columns {
			cs := rw.Cells[col.key]
			all := true
			for _, tg := range targetOrder {
				if cs[tg].Status != "not run" || cs[tg].Detail != "not covered for this client" {
					all = false
				}
			}
			if all {
				w(" — |")
				continue
			}
			w(" %s · %s · %s |", icon(cs["kafka"]), icon(cs["sidecar"]), icon(cs["kfake"]))
		}
		w("\n")
	}
	w("\nProtocol checks (franz-go with raw requests):\n\n| check | Kafka · sidecar · kfake | what it proves |\n|---|---|---|\n")
	for _, rw := range r.Other {
		cs := rw.Cells["check"]
		w("| %s | %s · %s · %s | %s |\n", rw.Client, icon(cs["kafka"]), icon(cs["sidecar"]), icon(cs["kfake"]), rw.Note)
	}
	w("\nWhat each column proves:\n\n")
	for _, col := range columns {
		w("- **%s**: %s.\n", col.title, col.what)
	}
	w("\nClients: ")
	var notes []string
	for _, rw := range r.Rows {
		notes = append(notes, fmt.Sprintf("**%s**: %s", rw.Client, rw.Note))
	}
	w("%s.\n\n", strings.Join(notes, "; "))

	w("## Cells that do not pass, and why\n\n")
	any := false
	for _, rw := range append(slices.Clone(r.Rows), r.Other...) {
		for _, col := range append([]struct{ key, title, what string }{{"check", "check", ""}}, columns...) {
			cs, ok := rw.Cells[col.key]
			if !ok {
				continue
			}
			for _, tg := range targetOrder {
				c := cs[tg]
				if c.Status != "fail" && c.Status != "n/a" {
					continue
				}
				any = true
				note := ""
				if d := lookupDifference(rw.Client, col.key, tg); d != nil {
					note = " — intended difference: " + d.Why
				}
				w("- **%s / %s on %s**: %s%s\n", rw.Client, col.title, tg, c.Status, note)
				w("  ```\n")
				for _, l := range strings.Split(c.Detail, "\n") {
					w("  %s\n", l)
				}
				w("  ```\n")
			}
		}
	}
	if !any {
		w("None.\n")
	}

	w("\n## Intended differences\n\nThe one list of cells where a target may fail although Apache Kafka passes (scripts/e2e/compat/differences.go):\n\n| client | scenario | target | why |\n|---|---|---|---|\n")
	for _, d := range intendedDifferences {
		w("| %s | %s | %s | %s |\n", d.Client, d.Scenario, d.Target, mdEscape(d.Why))
	}
	if len(intendedDifferences) == 0 {
		w("| — | — | — | none: every cell that passes on Apache Kafka must pass on the sidecar |\n")
	}
	if len(r.ProtocolDifferences) > 0 {
		w("\nField-level differences the differential test accepts (intendedDifferences in scripts/e2e/differential_test.go; with Kafka as the reference an entry without a target excuses kfake only):\n\n| step | field | target | required value | why |\n|---|---|---|---|---|\n")
		for _, d := range r.ProtocolDifferences {
			w("| %s | %s | %s | %s | %s |\n", mdEscape(d["step"]), mdEscape(d["field"]), mdEscape(d["target"]), mdEscape(d["want"]), mdEscape(d["why"]))
		}
	}

	w("\n## franz-go's kgo integration suite\n\n")
	if len(r.KgoSuites) == 0 {
		w("Not run.\n")
	}
	for i, ks := range r.KgoSuites {
		if i == 0 {
			w("franz-go %s `pkg/kgo` tests, run from the module source (`go mod download`) with `%s` against each target. scripts/e2e/compat/kgo-suite.txt judges every test function of the package (run, skip, skip-sidecar, each skip with its reason). The floor is %d passing tests.\n\n",
				ks.Version, strings.Join(ks.Env[1:4], " "), kgoSuiteFloor)
			w("| target | passed | of them reach the broker | failed | skipped by the test | excluded by the list | time |\n|---|---|---|---|---|---|---|\n")
			for _, k := range r.KgoSuites {
				w("| %s | **%d** | %d | %d | %d | %d | %v |\n", k.Target, k.Passed, k.IntegrationPassed, k.Failed, k.Skipped, k.Excluded, k.Duration.Round(time.Second))
			}
			w("\nExcluded tests and the reason:\n\n| test | list entry | reason |\n|---|---|---|\n")
			for _, t := range ks.Tests {
				if t.Mode != "run" {
					w("| %s | %s | %s |\n", t.Test, t.Mode, mdEscape(t.Why))
				}
			}
		}
		var bad []string
		for _, t := range ks.Tests {
			if t.Outcome == "fail" || t.Outcome == "skip" {
				bad = append(bad, fmt.Sprintf("- %s: **%s**: %s", t.Test, t.Outcome, mdEscape(firstLine(t.Detail))))
			}
		}
		if len(bad) > 0 {
			w("\nAgainst %s, tests that failed or skipped themselves:\n\n%s\n", ks.Target, strings.Join(bad, "\n"))
		}
	}

	w("\n## Passed on a second run\n\nA test that fails is run once more, alone (scripts/e2e/compat/rerun.go); passing then, it counts as passed and is listed here with the lines of its first failure. A test that fails twice fails the run.\n\n")
	flaky := slices.Clone(r.Flaky)
	for _, ks := range r.KgoSuites {
		flaky = append(flaky, ks.Flaky...)
	}
	if len(flaky) == 0 {
		w("None in this run.\n")
	}
	for _, f := range flaky {
		w("- **%s** (%s), first run:\n  ```\n", f.Test, f.Suite)
		for _, l := range strings.Split(f.FirstFailure, "\n") {
			w("  %s\n", l)
		}
		w("  ```\n")
	}

	w("\n## Run\n\n`make e2e` installs what it needs (scripts/install-test-deps.sh: Kafka %s and %s jars and the Java programs via scripts/kafka/install.sh, the Python venv, kcat) and runs `go run ./scripts/e2e/compat -out docs/COMPATIBILITY.md`. ", r.KafkaVersion, r.Kafka3Version)
	w("This run: Kafka broker start %v, e2e suite %v, kgo suite %v, total %v.\n", r.BrokerStart.Round(100*time.Millisecond), r.E2EDuration.Round(time.Second), r.KgoDuration.Round(time.Second), r.Total.Round(time.Second))
	if len(r.Unexpected) > 0 {
		w("\n**Unexpected failures (the run failed):**\n\n")
		for _, u := range r.Unexpected {
			w("- %s\n", mdEscape(u))
		}
	}
	return b.String()
}

func (r *report) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "== compat: matrix (Kafka · sidecar · kfake)\n")
	for _, rw := range r.Rows {
		fmt.Fprintf(&b, "   %-24s", rw.Client)
		for _, col := range columns {
			cs := rw.Cells[col.key]
			fmt.Fprintf(&b, " %s:%s/%s/%s", col.key, short(cs["kafka"]), short(cs["sidecar"]), short(cs["kfake"]))
		}
		fmt.Fprintln(&b)
	}
	for _, ks := range r.KgoSuites {
		fmt.Fprintf(&b, "== compat: kgo suite against %s: %d passed, %d failed, %d skipped, %d excluded\n", ks.Target, ks.Passed, ks.Failed, ks.Skipped, ks.Excluded)
	}
	for _, f := range r.Flaky {
		fmt.Fprintf(&b, "FLAKY (failed once, passed on its second run): %s: %s\n", f.Test, firstLine(f.FirstFailure))
	}
	for _, ks := range r.KgoSuites {
		for _, f := range ks.Flaky {
			fmt.Fprintf(&b, "FLAKY (failed once, passed on its second run): %s, %s: %s\n", f.Suite, f.Test, firstLine(f.FirstFailure))
		}
	}
	for _, u := range r.Unexpected {
		fmt.Fprintf(&b, "UNEXPECTED: %s\n", u)
	}
	for _, a := range r.Accepted {
		fmt.Fprintf(&b, "intended: %s\n", a)
	}
	return b.String()
}

func short(c cell) string {
	switch c.Status {
	case "pass":
		return "ok"
	case "fail":
		return "FAIL"
	case "n/a":
		return "na"
	}
	return "-"
}

func (r *report) sidecarNote() string {
	switch {
	case r.SidecarRan:
		return ""
	case r.SidecarError != "":
		return " (not run: the sidecar hook in scripts/e2e/sidecar_target.go failed: " + mdEscape(firstLine(r.SidecarError)) + ")"
	}
	return " (not run: the sidecar hook in scripts/e2e/sidecar_target.go does not start one yet)"
}

// kcatVersion is kcat's "Version ..." line, up to the librdkafka version.
func kcatVersion() string {
	out, _ := exec.Command("kcat", "-V").CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "Version ") {
			if i := strings.Index(l, " builtin.features"); i > 0 {
				l = l[:i] + ")"
			}
			return strings.TrimSpace(l)
		}
	}
	return "not found"
}

// txnPrefixes are the tests of the "txn" column for client on target tg:
// false when no transaction test covers the client. On kfake only the
// consume-transform-produce scenario runs (the read-side tests leave it out).
func txnPrefixes(client, tg, kafkaVersion string) ([]string, bool) {
	var ps []string
	switch client {
	case "java-" + kafkaVersion:
		ps = []string{"TestTxnProducerJava/" + tg}
		if tg != "kfake" {
			ps = append(ps, "TestTransactions/"+tg+"/java-producer", "TestReadCommittedJava/"+tg)
		}
	case "confluent-kafka-go":
		ps = []string{"TestTxnProducerConfluent/" + tg}
		if tg != "kfake" {
			ps = append(ps, "TestReadCommittedConfluent/"+tg)
		}
	case "confluent-kafka-python":
		ps = []string{"TestTxnProducerPython/" + tg}
	case "kcat":
		ps = []string{"TestTxnKcat/" + tg}
	case "franz-go":
		ps = []string{"TestTxnGroupTransactSession/" + tg}
		if tg != "kfake" {
			ps = append(ps, "TestReadCommittedDiff/"+tg)
		}
	default:
		return nil, false
	}
	return ps, true
}
