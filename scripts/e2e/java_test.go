package e2e

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The Java client: java/KafkaRoundTrip.java with kafka-clients from Maven
// Central (version in java/pom.xml), compiled by scripts/install-test-deps.sh
// into $KAFKA_IGGY_JAVA_DIR (default $HOME/.cache/kafka-iggy/java). One JVM
// per target runs every codec: for each it produces the records (idempotent
// KafkaProducer, acks=all, offsets and timestamps from RecordMetadata) and
// then consumes the topic (KafkaConsumer, assign, seekToBeginning, no group).
// Every canonical case is sent unadapted.

func javaDir() string {
	if d := os.Getenv("KAFKA_IGGY_JAVA_DIR"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "kafka-iggy", "java")
}

// javaReady checks that java is on PATH and that the compiled program matches
// the source in java/ (the install script writes the same stamp).
func javaReady(t *testing.T) {
	t.Helper()
	lookTool(t, "java")
	dir := javaDir()
	if _, err := os.Stat(filepath.Join(dir, "classes", "KafkaRoundTrip.class")); err != nil {
		missingDependency(t, "the Java client is not compiled in %s", dir)
	}
	var src []byte
	for _, f := range []string{"java/pom.xml", "java/KafkaRoundTrip.java"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("read %s: %v", f, err)
		}
		src = append(src, b...)
	}
	sum := sha256.Sum256(src)
	stamp, _ := os.ReadFile(filepath.Join(dir, "stamp"))
	if strings.TrimSpace(string(stamp)) != hex.EncodeToString(sum[:]) {
		missingDependency(t, "the Java client in %s was compiled from another version of scripts/e2e/java", dir)
	}
}

func TestJavaRoundTrip(t *testing.T) {
	runRoundTrips(t, roundTripClient{
		name:    "java",
		ready:   javaReady,
		records: canonicalRecords,
		runAll:  javaRunAll,
	})
}

type javaRecord struct {
	Partition     int32        `json:"partition"`
	Offset        int64        `json:"offset"`
	Timestamp     int64        `json:"timestamp"`
	TimestampType string       `json:"timestampType,omitempty"`
	Key           *string      `json:"key"`
	Value         *string      `json:"value"`
	Headers       []javaHeader `json:"headers"`
}

type javaHeader struct {
	Key   string  `json:"key"`
	Value *string `json:"value"`
}

type javaJob struct {
	Topic   string       `json:"topic"`
	Codec   string       `json:"codec"`
	Records []javaRecord `json:"records"`
}

type javaResult struct {
	Topic    string       `json:"topic"`
	Codec    string       `json:"codec"`
	Produced []javaRecord `json:"produced"`
	Consumed []javaRecord `json:"consumed"`
	Error    string       `json:"error"`
}

func b64(b []byte) *string {
	if b == nil {
		return nil
	}
	s := base64.StdEncoding.EncodeToString(b)
	return &s
}

func unb64(s *string, errs *[]error) []byte {
	if s == nil {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(*s)
	if err != nil {
		*errs = append(*errs, fmt.Errorf("java output: bad base64 %q: %v", *s, err))
	}
	return b
}

func (j javaRecord) rec() (Rec, error) {
	var errs []error
	r := Rec{Partition: j.Partition, Offset: j.Offset, Timestamp: j.Timestamp, Key: unb64(j.Key, &errs), Value: unb64(j.Value, &errs)}
	for _, h := range j.Headers {
		r.Headers = append(r.Headers, Header{h.Key, unb64(h.Value, &errs)})
	}
	return r, errors.Join(errs...)
}

// javaRunAll runs every codec's job in one JVM and converts the results.
func javaRunAll(t *testing.T, tg Target, topics map[string]string, recs []Rec) map[string]codecRun {
	t.Helper()
	var in struct {
		Jobs []javaJob `json:"jobs"`
	}
	for _, codec := range codecs {
		job := javaJob{Topic: topics[codec], Codec: codec}
		for _, r := range recs {
			j := javaRecord{Partition: r.Partition, Timestamp: r.Timestamp, Key: b64(r.Key), Value: b64(r.Value), Headers: []javaHeader{}}
			for _, h := range r.Headers {
				j.Headers = append(j.Headers, javaHeader{h.Key, b64(h.Value)})
			}
			job.Records = append(job.Records, j)
		}
		in.Jobs = append(in.Jobs, job)
	}
	stdin, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	dir := javaDir()
	args := []string{
		"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-cp", filepath.Join(dir, "classes") + string(os.PathListSeparator) + filepath.Join(dir, "lib", "*"),
		"KafkaRoundTrip", tg.Bootstrap, strconv.Itoa(canonicalPartitions),
	}
	stdout, stderr, err := runTool(t, 150*time.Second, stdin, "java", args...)
	if err != nil {
		t.Fatalf("%s: java KafkaRoundTrip: %v\nstderr:\n%s", tg.Name, err, stderr)
	}
	var out struct {
		Results []javaResult `json:"results"`
	}
	if err := json.Unmarshal(stdout, &out); err != nil {
		t.Fatalf("%s: java KafkaRoundTrip output: %v\nstdout:\n%s\nstderr:\n%s", tg.Name, err, stdout, stderr)
	}
	runs := map[string]codecRun{}
	for _, res := range out.Results {
		var run codecRun
		if res.Error != "" {
			run.err = fmt.Errorf("java KafkaRoundTrip: %s\nstderr:\n%s", res.Error, stderr)
			runs[res.Codec] = run
			continue
		}
		if len(res.Produced) != len(recs) {
			run.err = fmt.Errorf("java reported %d produced records, sent %d", len(res.Produced), len(recs))
			runs[res.Codec] = run
			continue
		}
		run.produced = cloneRecs(recs)
		var tsErrs []error
		for i, p := range res.Produced {
			run.produced[i].Partition = p.Partition
			run.produced[i].Offset = p.Offset
			if p.Timestamp != recs[i].Timestamp {
				tsErrs = append(tsErrs, fmt.Errorf("RecordMetadata.timestamp of record %d [%s] = %s, want the CreateTime %s",
					i, recs[i].Label, fmtTime(p.Timestamp), fmtTime(recs[i].Timestamp)))
			}
		}
		for _, j := range res.Consumed {
			if j.TimestampType != "CreateTime" {
				tsErrs = append(tsErrs, fmt.Errorf("read p%d@%d with timestamp type %q, want CreateTime", j.Partition, j.Offset, j.TimestampType))
			}
			r, err := j.rec()
			if err != nil {
				tsErrs = append(tsErrs, err)
			}
			run.consumed = append(run.consumed, r)
		}
		run.err = errors.Join(tsErrs...)
		runs[res.Codec] = run
	}
	return runs
}
