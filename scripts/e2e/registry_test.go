package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A schema registry that keeps its schemas in a Kafka topic runs unchanged
// against each real target: crabka-schema-registry 0.3.0 (crates.io; a
// Confluent Schema Registry-compatible REST service, state in a compacted
// topic), built by scripts/e2e/registry/build.sh.

const registryVersion = "0.3.0"

// registryBin is the built registry, or a missing dependency.
func registryBin(t *testing.T) string {
	t.Helper()
	base := os.Getenv("KAFKA_IGGY_CACHE")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".cache", "kafka-iggy")
	}
	bin := filepath.Join(base, "schema-registry-"+registryVersion, "bin", "crabka-schema-registry")
	if st, err := os.Stat(bin); err != nil || st.Mode()&0o111 == 0 {
		missingDependency(t, "crabka-schema-registry %s is not built at %s (scripts/e2e/registry/build.sh)", registryVersion, bin)
	}
	return bin
}

// srCall is one Confluent REST call; it returns the status and the body.
func srCall(ctx context.Context, method, url, body string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	}
	req.Header.Set("Accept", "application/vnd.schemaregistry.v1+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, err
}

// sameSchema compares two Avro schemas as JSON values (the registry may
// store a normalised text).
func sameSchema(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// TestSchemaRegistry: crabka-schema-registry creates its _schemas topic on
// each target itself (compact), registers Avro schemas through the
// Confluent REST API, serves them by id and by subject, refuses an
// incompatible version (409, BACKWARD by default), and after a restart
// serves the same schemas again, rebuilt from the topic.
func TestSchemaRegistry(t *testing.T) {
	bin := registryBin(t)
	for _, tg := range appTargets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			topic := uniqueTopic("_schemas")
			subject := topic + "-value"
			port := freePort(t)
			base := fmt.Sprintf("http://127.0.0.1:%d", port)
			args := []string{"--bootstrap-servers", tg.Bootstrap, "--listen-addr", fmt.Sprintf("127.0.0.1:%d", port),
				"--schemas-topic", topic, "--schemas-topic-rf", "1", "--group-id", topic + "-sr"}
			ctx := testCtx(t, 4*time.Minute)

			// call retries until the answer has status want (the REST
			// server, the _schemas reader and the primary election come up
			// on their own), or fails after d.
			call := func(app *javaApp, method, path, body string, want int, d time.Duration) []byte {
				t.Helper()
				deadline := time.Now().Add(d)
				for {
					code, b, err := srCall(ctx, method, base+path, body)
					if err == nil && code == want {
						return b
					}
					if ctx.Err() != nil || time.Now().After(deadline) {
						t.Fatalf("%s: %s %s: %d %s %v, want %d\nregistry output:\n%s", tg.Name, method, path, code, tail(string(b), 5), err, want, app.output())
					}
					time.Sleep(200 * time.Millisecond) // the registry becomes ready on its own schedule
				}
			}
			register := func(app *javaApp, schema string, want int) (id int) {
				t.Helper()
				body, _ := json.Marshal(map[string]string{"schema": schema})
				b := call(app, "POST", "/subjects/"+subject+"/versions", string(body), want, time.Minute)
				if want != http.StatusOK {
					return 0
				}
				var r struct{ ID int }
				if err := json.Unmarshal(b, &r); err != nil || r.ID <= 0 {
					t.Fatalf("%s: register answered %s (%v)", tg.Name, b, err)
				}
				return r.ID
			}
			type version struct {
				Subject string
				Version int
				ID      int
				Schema  string
			}
			check := func(app *javaApp, ver, id int, schema string, d time.Duration) {
				t.Helper()
				var byID struct{ Schema string }
				b := call(app, "GET", fmt.Sprintf("/schemas/ids/%d", id), "", http.StatusOK, d)
				if err := json.Unmarshal(b, &byID); err != nil || !sameSchema(byID.Schema, schema) {
					t.Fatalf("%s: schema %d is %s, want %s (%v)", tg.Name, id, b, schema, err)
				}
				var v version
				b = call(app, "GET", fmt.Sprintf("/subjects/%s/versions/%d", subject, ver), "", http.StatusOK, d)
				if err := json.Unmarshal(b, &v); err != nil || v.Subject != subject || v.Version != ver || v.ID != id || !sameSchema(v.Schema, schema) {
					t.Fatalf("%s: %s version %d is %s, want id %d and %s (%v)", tg.Name, subject, ver, b, id, schema, err)
				}
			}
			latest := func(app *javaApp, ver, id int) {
				t.Helper()
				var v version
				b := call(app, "GET", "/subjects/"+subject+"/versions/latest", "", http.StatusOK, time.Minute)
				if err := json.Unmarshal(b, &v); err != nil || v.Version != ver || v.ID != id {
					t.Fatalf("%s: latest of %s is %s, want version %d id %d (%v)", tg.Name, subject, b, ver, id, err)
				}
			}

			v1 := `{"type":"record","name":"Payment","namespace":"e2e","fields":[{"name":"id","type":"string"},{"name":"amount","type":"double"}]}`
			// BACKWARD-compatible: the new field has a default.
			v2 := `{"type":"record","name":"Payment","namespace":"e2e","fields":[{"name":"id","type":"string"},{"name":"amount","type":"double"},{"name":"currency","type":"string","default":"EUR"}]}`
			// Not BACKWARD-compatible: a new field without a default.
			bad := `{"type":"record","name":"Payment","namespace":"e2e","fields":[{"name":"id","type":"string"},{"name":"amount","type":"double"},{"name":"payer","type":"string"}]}`

			// The registry's producer is idempotent and gives up at start
			// when InitProducerId answers an error, and a fresh Kafka broker
			// answers its first InitProducerId with COORDINATOR_LOAD_IN_PROGRESS
			// (14) while it fetches a block of producer ids. An idempotent
			// produce first (franz-go retries that) makes the broker ready.
			warm := topic + "-warmup"
			createTopic(t, tg, warm, 1)
			if err := newKgo(t, tg).ProduceSync(ctx, &kgo.Record{Topic: warm, Value: []byte("x")}).FirstErr(); err != nil {
				t.Fatalf("%s: idempotent produce to %s: %v", tg.Name, warm, err)
			}

			start := time.Now()
			sr := startApp(t, bin, args...)
			id1 := register(sr, v1, http.StatusOK)
			t.Logf("%s: first schema registered as id %d after %v (registry start included)", tg.Name, id1, time.Since(start).Round(time.Millisecond))
			check(sr, 1, id1, v1, time.Minute)
			latest(sr, 1, id1)
			id2 := register(sr, v2, http.StatusOK)
			if id2 == id1 {
				t.Fatalf("%s: the second version got the first one's id %d", tg.Name, id1)
			}
			check(sr, 2, id2, v2, time.Minute)
			latest(sr, 2, id2)
			var cfg struct{ CompatibilityLevel string }
			if b := call(sr, "GET", "/config", "", http.StatusOK, time.Minute); json.Unmarshal(b, &cfg) != nil || cfg.CompatibilityLevel != "BACKWARD" {
				t.Fatalf("%s: GET /config answered %s, want compatibilityLevel BACKWARD (the default)", tg.Name, b)
			}
			register(sr, bad, http.StatusConflict)

			// The _schemas topic as the registry created it.
			adm := kadm.NewClient(newKgo(t, tg))
			rcs, err := adm.DescribeTopicConfigs(ctx, topic)
			if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
				t.Fatalf("describe %s: %v %+v", topic, err, rcs)
			}
			policy := ""
			for _, c := range rcs[0].Configs {
				if c.Key == "cleanup.policy" {
					policy = c.MaybeValue()
				}
			}
			if policy != "compact" {
				t.Errorf("%s: %s cleanup.policy %q, want compact", tg.Name, topic, policy)
			}

			// Restart: the state is rebuilt from the topic (the registry
			// keeps none elsewhere), which holds a record per version.
			sr.stop(t)
			ends, err := adm.ListEndOffsets(ctx, topic)
			if err != nil {
				t.Fatal(err)
			}
			if o, ok := ends.Lookup(topic, 0); !ok || o.Err != nil || o.Offset < 2 {
				t.Fatalf("%s: %s end offset %+v, want at least the 2 registered versions", tg.Name, topic, o)
			}
			start = time.Now()
			sr = startApp(t, bin, args...)
			check(sr, 1, id1, v1, time.Minute)
			t.Logf("%s: schemas served again %v after the restart", tg.Name, time.Since(start).Round(time.Millisecond))
			check(sr, 2, id2, v2, time.Minute)
			latest(sr, 2, id2)
			// The same schema again is the same id; the compatibility check
			// still runs against the rebuilt versions.
			if again := register(sr, v2, http.StatusOK); again != id2 {
				t.Errorf("%s: registering version 2 again after the restart gave id %d, want %d", tg.Name, again, id2)
			}
			register(sr, bad, http.StatusConflict)
			sr.stop(t)
		})
	}
}
