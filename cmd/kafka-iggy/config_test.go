package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kafka-iggy/kafka-iggy/bridge"
	"github.com/kafka-iggy/kafka-iggy/bridge/cluster"
	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	"github.com/kafka-iggy/kafka-iggy/embedded"
	"github.com/kafka-iggy/kafka-iggy/proxy"
	"github.com/kafka-iggy/kafka-iggy/proxy/admin"
)

// update rewrites the generated sections of docs/OPERATIONS.md.
var update = flag.Bool("update", false, "rewrite the generated config reference in docs/OPERATIONS.md")

// repoRoot is the repository root, seen from this package's directory.
const repoRoot = "../.."

// modulePath is the module of the repository.
const modulePath = "github.com/kafka-iggy/kafka-iggy"

// fieldDocs returns the doc comment of every key, read from the Go source
// of the struct that declares its field. A field without its own comment
// takes the comment of an earlier field of the same struct that names it
// ("MinSessionTimeout and MaxSessionTimeout bound ...").
func fieldDocs(t *testing.T) map[string]string {
	t.Helper()
	structs := map[string]map[string]*ast.StructType{} // dir -> type name -> struct
	parseDir := func(dir string) map[string]*ast.StructType {
		if m, ok := structs[dir]; ok {
			return m
		}
		m := map[string]*ast.StructType{}
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(af, func(n ast.Node) bool {
				if ts, ok := n.(*ast.TypeSpec); ok {
					if st, ok := ts.Type.(*ast.StructType); ok {
						m[ts.Name.Name] = st
					}
				}
				return true
			})
		}
		structs[dir] = m
		return m
	}
	docs := map[string]string{}
	for _, lf := range leafIndex().list {
		dir := "."
		if pkg := lf.owner.PkgPath(); pkg != "main" {
			dir = filepath.Join(repoRoot, strings.TrimPrefix(pkg, modulePath+"/"))
		}
		st := parseDir(dir)[lf.owner.Name()]
		if st == nil {
			t.Fatalf("%s: struct %s not found in %s", lf.key, lf.owner.Name(), dir)
		}
		var doc string
		var earlier []string
	fields:
		for _, f := range st.Fields.List {
			text := strings.TrimSpace(f.Doc.Text())
			if text == "" {
				text = strings.TrimSpace(f.Comment.Text())
			}
			for _, n := range f.Names {
				if n.Name == lf.field {
					doc = text
					if doc == "" {
						for i := len(earlier) - 1; i >= 0; i-- {
							if strings.Contains(earlier[i], lf.field) {
								doc = earlier[i]
								break
							}
						}
					}
					break fields
				}
			}
			earlier = append(earlier, text)
		}
		docs[lf.key] = doc
	}
	return docs
}

// Every key is documented where its field is declared, and the comment
// gives the default.
func TestEveryKeyDocumented(t *testing.T) {
	docs := fieldDocs(t)
	for _, lf := range leafIndex().list {
		doc := docs[lf.key]
		switch {
		case doc == "":
			t.Errorf("%s (%s.%s): no doc comment", lf.key, lf.owner, lf.field)
		case !strings.Contains(strings.ToLower(doc), "default"):
			t.Errorf("%s (%s.%s): the doc comment does not give the default: %q", lf.key, lf.owner, lf.field, doc)
		}
	}
}

// configReference renders the generated part of docs/OPERATIONS.md: one
// table per top-level section, in declaration order.
func configReference(t *testing.T) string {
	docs := fieldDocs(t)
	def := reflect.ValueOf(DefaultConfig())
	var b bytes.Buffer
	section := ""
	for _, lf := range leafIndex().list {
		top, _, _ := strings.Cut(lf.key, ".")
		if top != section {
			section = top
			b.WriteString("\n### `" + top + "`\n\n")
			b.WriteString("| key | type | default | description |\n|---|---|---|---|\n")
		}
		doc := strings.Join(strings.Fields(docs[lf.key]), " ")
		doc = strings.ReplaceAll(doc, "|", `\|`)
		dv := formatValue(def.FieldByIndex(lf.index), false)
		b.WriteString("| `" + lf.key + "` | " + typeName(lf.typ) + " | `" + strings.ReplaceAll(dv, "|", `\|`) + "` | " + doc + " |\n")
	}
	return b.String()
}

const (
	refBegin = "<!-- BEGIN CONFIG REFERENCE: generated from the config structs by `go test ./cmd/kafka-iggy -run TestOperationsConfigReference -update`; do not edit by hand -->\n"
	refEnd   = "<!-- END CONFIG REFERENCE -->"
)

// docs/OPERATIONS.md's config reference is what the structs say.
func TestOperationsConfigReference(t *testing.T) {
	path := filepath.Join(repoRoot, "docs", "OPERATIONS.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, refBegin), strings.Index(doc, refEnd)
	if i < 0 || j < i {
		t.Fatalf("%s: no %q ... %q markers", path, strings.TrimSpace(refBegin), refEnd)
	}
	want := configReference(t)
	got := doc[i+len(refBegin) : j]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(doc[:i+len(refBegin)]+want+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the config reference is stale; run go test ./cmd/kafka-iggy -run TestOperationsConfigReference -update", path)
}

// examplePath is the example configuration the golden test loads.
var examplePath = filepath.Join(repoRoot, "deploy", "config.example.yaml")

// The golden test: deploy/config.example.yaml, then environment variables
// (as a pod spec would set them) and flags, load into exactly this struct.
func TestExampleConfigGolden(t *testing.T) {
	environ := []string{
		"KAFKA_IGGY_IGGY__ADDRESS=iggy.iggy.svc:8090",
		"KAFKA_IGGY_IGGY__PASSWORD=s3cret-from-env",
		"KAFKA_IGGY_LISTENER__ADDRESS=0.0.0.0:9092",
		"KAFKA_IGGY_LISTENER__ADVERTISED_HOST=10.1.2.3",
		"KAFKA_IGGY_LOG__LEVEL=debug",
		"KAFKA_IGGY_GNET__MULTICORE=false",
		"KAFKA_IGGY_LIMITS__IDLE_TIMEOUT=2m",
		"KAFKA_IGGY_TOPICS__OVERRIDES__PAYMENTS=shop/payments",
		"KAFKA_IGGY_SASL__MECHANISMS=PLAIN",
		// Service links Kubernetes injects for a Service named kafka-iggy:
		// not configuration, ignored.
		"KAFKA_IGGY_SERVICE_HOST=10.0.0.1",
		"KAFKA_IGGY_SERVICE_PORT=9092",
		"KAFKA_IGGY_PORT=tcp://10.0.0.1:9092",
		"KAFKA_IGGY_PORT_9092_TCP_ADDR=10.0.0.1",
		"HOSTNAME=app-7d9f-x2x4q",
	}
	args := []string{"--config", examplePath, "--iggy.pool_size=8", "--admin.pprof", "--admin.address=127.0.0.1:9094", "--producer.instance_id", "7"}
	got, err := loadConfig(args, environ)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Proxy: proxy.Config{
			Listener: proxy.ListenerConfig{Address: "0.0.0.0:9092", AdvertisedHost: "10.1.2.3", AdvertisedPort: 0},
			Limits: proxy.LimitsConfig{
				MaxFrameBytes:    104857600,
				MaxConnections:   1024,
				MaxInFlight:      5,
				MaxInboundBytes:  134217728,
				MaxOutboundBytes: 33554432,
				IdleTimeout:      2 * time.Minute,
				DrainTimeout:     30 * time.Second,
			},
			Gnet: proxy.GnetConfig{
				Multicore:       false,
				NumEventLoop:    0,
				LockOSThread:    false,
				TCPNoDelay:      true,
				TCPKeepAlive:    0,
				ReadBufferCap:   65536,
				WriteBufferCap:  65536,
				EdgeTriggeredIO: false,
				ReusePort:       false,
				ReuseAddr:       true,
				LoadBalancing:   "round-robin",
				WorkerPoolSize:  1024,
				WorkerQueueSize: 1024,
			},
		},
		Bridge: bridge.Config{
			Topics: bridge.TopicsConfig{
				DefaultStream:     "kafka",
				Overrides:         map[string]string{"orders.v1": "shop/orders", "payments": "shop/payments"},
				AutoCreate:        true,
				DefaultPartitions: 1,
				MaxMessageBytes:   1048588,
				DefaultOptions:    map[string]string{},
			},
			Groups: bridge.GroupsConfig{
				InitialRebalanceDelay: 3 * time.Second,
				MinSessionTimeout:     6 * time.Second,
				MaxSessionTimeout:     30 * time.Minute,
				MaxSize:               2147483647,
				MaxRebalanceTimeout:   30 * time.Minute,
				MaxPendingMembers:     10000,
				EmptyRetention:        24 * time.Hour,
			},
			ConsumerGroups: bridge.ConsumerGroupsConfig{HeartbeatInterval: 5 * time.Second, SessionTimeout: 45 * time.Second, MaxSize: 2147483647},
			Offsets:        bridge.OffsetsConfig{Mode: "auto"},
			Producer:       bridge.ProducerConfig{InstanceID: 7, MaxTrackedProducers: 10000, RecoveryTailMessages: 4096},
			Fetch:          bridge.FetchConfig{RepollInterval: 50 * time.Millisecond, MaxBytes: 57671680, SessionCacheSlots: 1000, MaxWait: 30 * time.Second},
		},
		Iggy: iggy.Config{
			Address:           "iggy.iggy.svc:8090",
			Username:          "iggy",
			Password:          "s3cret-from-env",
			Protocol:          "auto",
			FollowLeader:      true,
			RoutePartitions:   true,
			TLS:               iggy.TLSConfig{},
			PoolSize:          8,
			RequestTimeout:    5 * time.Second,
			ConnectTimeout:    5 * time.Second,
			BackoffMin:        100 * time.Millisecond,
			BackoffMax:        5 * time.Second,
			KeepaliveInterval: 15 * time.Second,
			Coalesce:          true,
			MaxBatchBytes:     4194304,
			MaxBatchMessages:  20000,
			MetadataTTL:       30 * time.Second,
		},
		Embedded: EmbeddedConfig{
			Mode: "auto",
			Server: embedded.Config{
				Listen:               "127.0.0.1:8090",
				RootUsername:         "iggy",
				RootPassword:         "iggy",
				Protocol:             "0.11",
				ServerVersion:        "0.9.0-embedded",
				MaxFrameBytes:        67108864,
				HeartbeatInterval:    30 * time.Second,
				RebalanceTimeout:     30 * time.Second,
				RetentionInterval:    10 * time.Second,
				ReplyCacheSize:       32,
				SDKDurabilityOptions: true,
			},
		},
		SASL: SASLConfig{Mechanisms: []string{"PLAIN"}, Mode: "iggy", Users: map[string]string{}, FailureDelay: 100 * time.Millisecond,
			Authorization: "principal", Principals: PrincipalsConfig{PoolSize: 1, Max: 64, IdleTimeout: 5 * time.Minute},
			OAuthBearer: OAuthBearerConfig{PrincipalClaim: "sub", ClockSkew: 30 * time.Second}},
		TLS:          TLSConfig{ClientAuth: "none", MinVersion: "1.2", HandshakeTimeout: 10 * time.Second, PrincipalMappingRules: "DEFAULT"},
		Admin:        admin.Config{Enabled: true, Address: "127.0.0.1:9094", ReadHeaderTimeout: 5 * time.Second, StallTimeout: 20 * time.Second, MaxConnections: 64, IdleTimeout: 10 * time.Minute, Pprof: true},
		Log:          LogConfig{Level: "debug", Format: "auto"},
		Shutdown:     ShutdownConfig{UnreadyDelay: 0},
		Peers:        cluster.DefaultPeersConfig(),
		Coordination: cluster.DefaultCoordinationConfig(),
	}
	tx := &want.Bridge.Transactions // the example's transactions section
	tx.MaxTimeout, tx.IDExpiration, tx.CheckInterval, tx.ProducerCheck = 15*time.Minute, 168*time.Hour, 10*time.Second, 500*time.Millisecond
	tx.MaxIDs, tx.SnapshotEvery = 100000, 1000
	tm := &want.Bridge.Telemetry // the example's telemetry section: the defaults, off
	tm.Metrics = []string{"org.apache.kafka.producer.", "org.apache.kafka.consumer."}
	tm.PushInterval, tm.MaxBytes, tm.MaxClients, tm.MaxSeriesPerClient = 5*time.Minute, 1048576, 1000, 2000
	if !reflect.DeepEqual(got, want) {
		gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
		for _, lf := range leafIndex().list {
			g, w := gv.FieldByIndex(lf.index).Interface(), wv.FieldByIndex(lf.index).Interface()
			if !reflect.DeepEqual(g, w) {
				t.Errorf("%s = %#v, want %#v", lf.key, g, w)
			}
		}
		t.Fatal("the loaded configuration differs from the golden struct")
	}
	if got.UseEmbedded() {
		t.Error("UseEmbedded with iggy.address set")
	}
}

// Every key is in deploy/config.example.yaml, and nothing else is.
func TestExampleConfigComplete(t *testing.T) {
	raw, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	var tree map[string]any
	if err := yaml.Unmarshal(raw, &tree); err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			key := prefix + k
			if _, ok := leafIndex().leaves[key]; ok {
				present[key] = true
				continue
			}
			if sub, ok := v.(map[string]any); ok {
				walk(key+".", sub)
				continue
			}
			t.Errorf("%s: not a configuration key", key)
		}
	}
	walk("", tree)
	for _, lf := range leafIndex().list {
		if !present[lf.key] {
			t.Errorf("%s: missing from %s", lf.key, examplePath)
		}
	}
}

// problemKeys returns the keys of a *ConfigError's problems.
func problemKeys(t *testing.T, err error) map[string]string {
	t.Helper()
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("want a *ConfigError, got %T %v", err, err)
	}
	keys := map[string]string{}
	for _, p := range ce.Problems {
		if p.Key == "" {
			t.Errorf("a problem without a key: %q", p.Msg)
		}
		if keys[p.Key] != "" {
			keys[p.Key] += "; "
		}
		keys[p.Key] += p.Msg
	}
	return keys
}

// Each bad configuration fails with every problem named by its key.
func TestBadConfigs(t *testing.T) {
	cases := []struct {
		file    string
		environ []string
		args    []string
		want    map[string]string // key -> a fragment of its message
	}{
		{file: "bad_types.yaml", want: map[string]string{
			"iggy.pool_size":           `"lots" is not a whole number`,
			"iggy.request_timeout":     "has no unit",
			"gnet.multicore":           "expected true or false",
			"listener.address":         "expected a string, got a list",
			"limits.max_in_flight":     "not a whole number",
			"embedded.max_frame_bytes": "out of range",
			"producer.instance_id":     "out of range",
			"log":                      "is a section",
		}},
		{file: "bad_unknown.yaml", want: map[string]string{
			"listener.adress":              "unknown key; did you mean listener.address?",
			"iggy.tls.verify":              "unknown key",
			"colour":                       "unknown key",
			"topics.overrides.deep.nested": "topics.overrides is a map of string, not a section",
		}},
		{file: "bad_credentials.yaml", want: map[string]string{
			"iggy.username": "length 0",
			"iggy.password": "length 0",
			"sasl.users":    "at least one user",
		}},
		{file: "bad_addresses.yaml", want: map[string]string{
			"listener.address": "not host:port",
			"iggy.address":     "not 1-65535",
			"admin.address":    "not host:port",
			"embedded.listen":  "not host:port",
			"embedded.mode":    "iggy.address is set",
		}},
		{file: "bad_wildcard.yaml", want: map[string]string{
			"listener.advertised_host": "required",
			"admin.address":            "uses the port of listener.address",
		}},
		{file: "bad_embedded_login.yaml", want: map[string]string{
			"iggy.username": "only knows its root user",
		}},
		{
			environ: []string{"KAFKA_IGGY_IGGY__POOLSIZE=8", "KAFKA_IGGY_LOGLEVEL=debug", "KAFKA_IGGY_EMBEDDED__MODE=off"},
			want: map[string]string{
				"iggy.poolsize": "did you mean iggy.pool_size? (from KAFKA_IGGY_IGGY__POOLSIZE)",
				"loglevel":      "(from KAFKA_IGGY_LOGLEVEL)",
				"iggy.address":  "required when embedded.mode is off",
			},
		},
		{
			args: []string{"--limits.drain_timeout=soon", "--log.format=xml", "--tls.enabled", "--tls.client_auth=require"},
			want: map[string]string{
				"limits.drain_timeout": `"soon" is not a duration`,
				"log.format":           `"xml" is not one of auto, json, console`,
				"tls.cert_file":        "required when tls.enabled",
				"tls.client_ca_file":   "required when tls.client_auth is require",
				"sasl.iggy_users_file": "required with sasl.authorization principal when tls.client_auth is require",
			},
		},
		{
			args: []string{"--peers.address=127.0.0.1:0", "--peers.secret=change-me-to-32-random-bytes"},
			want: map[string]string{"peers.secret": `a placeholder (contains "change-me")`},
		},
		{
			args: []string{"--groups.max_pending_members=0", "--groups.max_rebalance_timeout=0s", "--groups.empty_retention=-1s", "--groups.max_size=0"},
			want: map[string]string{
				"groups.max_pending_members":   "must be at least 1, got 0",
				"groups.max_rebalance_timeout": "must be positive",
				"groups.empty_retention":       "must be positive",
				"groups.max_size":              "must be at least 1, got 0",
			},
		},
		{
			args: []string{"--peers.address=127.0.0.1:0", "--peers.secret=a-secret-of-forty-bytes-0123456789abcdef",
				"--peers.max_connections=0", "--peers.max_inflight_calls=100001", "--peers.idle_timeout=0s"},
			want: map[string]string{
				"peers.max_connections":    "must be 1..65535, got 0",
				"peers.max_inflight_calls": "must be 1..100000, got 100001",
				"peers.idle_timeout":       "must be positive",
			},
		},
		{
			args: []string{"--transactions.max_ids=0", "--transactions.snapshot_every=-1"},
			want: map[string]string{"transactions.max_ids": "must be at least 1, got 0", "transactions.snapshot_every": "must not be negative, got -1"},
		},
		{
			args: []string{"--peers.address=127.0.0.1:0", "--peers.secret=only-31-bytes-long-0123456789ab"},
			want: map[string]string{"peers.secret": "31 bytes; at least 32 required"},
		},
		{
			args: []string{"--sasl.enabled", "--sasl.mechanisms=SCRAM-SHA-512,OAUTHBEARER", "--sasl.session_lifetime=-1s"},
			want: map[string]string{
				"sasl.scram_file":       "required when SCRAM-SHA-512 is offered",
				"sasl.oauthbearer.jwks": "required when OAUTHBEARER is offered",
				"sasl.session_lifetime": "is negative",
			},
		},
		{
			args: []string{"--sasl.enabled", "--sasl.mechanisms=SCRAM-SHA-512", "--sasl.scram_file=/x"},
			want: map[string]string{"sasl.iggy_users_file": "required with sasl.authorization principal when SCRAM-SHA-512 principals are offered"},
		},
		{
			args: []string{"--sasl.enabled", "--listener.address=0.0.0.0:9092", "--listener.advertised_host=10.0.0.5", "--sasl.mechanisms=OAUTHBEARER", "--sasl.oauthbearer.jwks=/x"},
			want: map[string]string{"sasl.mechanisms": "OAUTHBEARER would carry bearer tokens in clear text"},
		},
		{
			// Unsigned tokens anyone can mint: loopback only, even over TLS.
			args: []string{"--sasl.enabled", "--listener.address=0.0.0.0:9092", "--listener.advertised_host=10.0.0.5", "--tls.enabled",
				"--tls.cert_file=/x", "--tls.key_file=/x", "--sasl.authorization=sidecar", "--sasl.mechanisms=OAUTHBEARER", "--sasl.oauthbearer.unsecured"},
			want: map[string]string{"sasl.oauthbearer.unsecured": `refused unless listener.address is loopback (it is "0.0.0.0:9092")`},
		},
		{
			args: []string{"--sasl.enabled", "--listener.address=0.0.0.0:9092", "--listener.advertised_host=10.0.0.5", "--sasl.mechanisms=PLAIN,GSSAPI"},
			want: map[string]string{
				"sasl.mechanisms": "PLAIN would carry passwords in clear text",
			},
		},
	}
	for _, c := range cases {
		name := c.file
		if name == "" {
			name = strings.Join(append(c.environ, c.args...), " ")
		}
		t.Run(name, func(t *testing.T) {
			args := c.args
			if c.file != "" {
				args = append([]string{"--config", filepath.Join("testdata", c.file)}, args...)
			}
			_, err := loadConfig(args, c.environ)
			got := problemKeys(t, err)
			for key, frag := range c.want {
				msg, ok := got[key]
				if !ok {
					t.Errorf("no problem reported for %s; got %v", key, err)
				} else if !strings.Contains(msg, frag) {
					t.Errorf("%s: %q does not say %q", key, msg, frag)
				}
			}
		})
	}
}

// Files that do not parse fail alone, naming the file and the line.
func TestUnparseableFiles(t *testing.T) {
	for file, frag := range map[string]string{
		"bad_syntax.yaml":    "yaml: line 2",
		"bad_duplicate.yaml": `"pool_size" already defined`,
		"missing.yaml":       "no such file",
	} {
		path := filepath.Join("testdata", file)
		_, err := loadConfig([]string{"--config", path}, nil)
		var ce *ConfigError
		if err == nil || errors.As(err, &ce) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), frag) {
			t.Errorf("%s: err = %v; want a file error naming the file and %q", file, err, frag)
		}
	}
	for _, args := range [][]string{{"--no-such-flag"}, {"serve-me"}, {"--iggy.pool_size"}} {
		if _, err := loadConfig(args, nil); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
	if _, err := loadConfig([]string{"--help"}, nil); !errors.Is(err, errHelp) {
		t.Errorf("--help: %v", err)
	}
}

// Later layers win: defaults < file < environment < flags; map entries
// merge across layers.
func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte("iggy:\n  pool_size: 2\n  request_timeout: 1s\ntopics:\n  overrides:\n    a.b: s/a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	environ := []string{"KAFKA_IGGY_IGGY__POOL_SIZE=3", "KAFKA_IGGY_IGGY__CONNECT_TIMEOUT=2s", "KAFKA_IGGY_TOPICS__OVERRIDES__C=s/c"}
	cfg, err := loadConfig([]string{"-c", path, "--iggy.pool_size=4", "--topics.overrides=d.e=s/d", "--gnet.multicore=false"}, environ)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Iggy.PoolSize != 4 || cfg.Iggy.RequestTimeout != time.Second || cfg.Iggy.ConnectTimeout != 2*time.Second || cfg.Iggy.BackoffMax != 5*time.Second {
		t.Errorf("iggy = %+v", cfg.Iggy)
	}
	if want := map[string]string{"a.b": "s/a", "c": "s/c", "d.e": "s/d"}; !reflect.DeepEqual(cfg.Bridge.Topics.Overrides, want) {
		t.Errorf("overrides = %v, want %v", cfg.Bridge.Topics.Overrides, want)
	}
	if cfg.Proxy.Gnet.Multicore {
		t.Error("--gnet.multicore=false ignored")
	}
	// An empty file and an empty section change nothing.
	if err := os.WriteFile(path, []byte("# nothing\nsasl:\niggy: {}\ntopics:\n  overrides: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err = loadConfig([]string{"-c", path}, nil)
	want := DefaultConfig()
	want.Bridge.Topics.Overrides = map[string]string{} // "overrides: {}"
	if err != nil || !reflect.DeepEqual(cfg, want) {
		t.Errorf("empty file: %v, %+v", err, cfg)
	}
	// Lists from the environment are comma-separated.
	cfg, err = loadConfig([]string{"--sasl.mode=static"}, []string{"KAFKA_IGGY_SASL__MECHANISMS=SCRAM-SHA-512, PLAIN", "KAFKA_IGGY_SASL__USERS__ALICE=pw"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.SASL.Mechanisms, []string{"SCRAM-SHA-512", "PLAIN"}) || cfg.SASL.Users["alice"] != "pw" {
		t.Errorf("sasl = %+v", cfg.SASL)
	}
}

func TestDefaultsValidAndEmbedded(t *testing.T) {
	cfg, err := loadConfig(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg, DefaultConfig()) {
		t.Error("no input does not give DefaultConfig")
	}
	if !cfg.UseEmbedded() {
		t.Error("defaults do not use the embedded server")
	}
	cfg.Iggy.Address = "x:1"
	if cfg.UseEmbedded() {
		t.Error("auto with an address uses the embedded server")
	}
	cfg.Embedded.Mode = EmbeddedOff
	cfg.Iggy.Address = ""
	if cfg.UseEmbedded() {
		t.Error("mode off uses the embedded server")
	}
}

// Keys named like credentials are masked; a new one must be added to
// secretKeys.
func TestSecretKeysListed(t *testing.T) {
	for _, lf := range leafIndex().list {
		name := lf.key[strings.LastIndexByte(lf.key, '.')+1:]
		looksSecret := strings.Contains(name, "password") || strings.Contains(name, "token") ||
			strings.Contains(name, "secret") || name == "users"
		if looksSecret != secretKeys[lf.key] {
			t.Errorf("%s: looks secret %v, listed in secretKeys %v", lf.key, looksSecret, secretKeys[lf.key])
		}
	}
	for key := range secretKeys {
		if _, ok := leafIndex().leaves[key]; !ok {
			t.Errorf("secretKeys lists %s, which is not a key", key)
		}
	}
}

func TestListenerTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeSelfSigned(t, dir)
	cfg, err := loadConfig([]string{"--tls.enabled", "--tls.cert_file", cert, "--tls.key_file", key,
		"--tls.client_auth=require", "--tls.client_ca_file", cert, "--tls.min_version=1.3", "--sasl.authorization=sidecar",
		"--tls.principal_mapping_rules", "RULE:^CN=([^,]*).*$/$1/L,DEFAULT"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SecurityProtocol() != "SSL" || cfg.TLS.HandshakeTimeout != 10*time.Second {
		t.Errorf("protocol %s, handshake timeout %v", cfg.SecurityProtocol(), cfg.TLS.HandshakeTimeout)
	}
	_, err = loadConfig([]string{"--tls.enabled", "--tls.cert_file", key, "--tls.key_file", cert}, nil)
	if msg := problemKeys(t, err)["tls.cert_file"]; !strings.Contains(msg, "cannot load the key pair") {
		t.Errorf("swapped files: %v", err)
	}
	other, _ := writeSelfSigned(t, t.TempDir())
	_, err = loadConfig([]string{"--tls.enabled", "--tls.cert_file", other, "--tls.key_file", key}, nil)
	if msg := problemKeys(t, err)["tls.cert_file"]; !strings.Contains(msg, "private key does not match") {
		t.Errorf("key of another certificate: %v", err)
	}
	_, err = loadConfig([]string{"--tls.enabled", "--tls.cert_file", filepath.Join(dir, "missing.pem"), "--tls.key_file", key,
		"--tls.handshake_timeout=10ms", "--tls.principal_mapping_rules=RULE:(/x/"}, nil)
	keys := problemKeys(t, err)
	for k, want := range map[string]string{"tls.cert_file": "no such file", "tls.handshake_timeout": "not 1s-5m", "tls.principal_mapping_rules": "rule pattern"} {
		if !strings.Contains(keys[k], want) {
			t.Errorf("%s: %q, want it to say %q", k, keys[k], want)
		}
	}
}

// writeSelfSigned writes a self-signed certificate and its key as PEM.
func writeSelfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kafka-iggy-test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// podIP stands for status.podIP in the manifests' environment.
const podIP = "10.1.2.3"

// podConfig loads the configuration a set of manifests gives the
// kafka-iggy container: its ConfigMap's config.yaml as the file named by
// its args, its environment with Secret references resolved from the
// Secrets in the set, status.podIP given podIP and $(VAR) expanded.
func podConfig(t *testing.T, manifests []byte) (Config, map[string]any) {
	t.Helper()
	byKind := map[string][]map[string]any{}
	dec := yaml.NewDecoder(bytes.NewReader(manifests))
	for {
		var d map[string]any
		if err := dec.Decode(&d); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		if d != nil {
			kind, _ := d["kind"].(string)
			byKind[kind] = append(byKind[kind], d)
		}
	}
	named := func(kind, name string) map[string]any {
		for _, d := range byKind[kind] {
			if dig(d, "metadata", "name") == name {
				return d
			}
		}
		return nil
	}
	if len(byKind["Deployment"]) != 1 {
		t.Fatalf("want one Deployment, got %d", len(byKind["Deployment"]))
	}
	pod := dig(byKind["Deployment"][0], "spec", "template", "spec")
	var side map[string]any
	for _, c := range dig(pod, "initContainers").([]any) {
		if dig(c, "name") == "kafka-iggy" {
			side = c.(map[string]any)
		}
	}
	if side == nil || dig(side, "restartPolicy") != "Always" {
		t.Fatalf("no native sidecar named kafka-iggy: %v", side)
	}

	// The config file: the mounted ConfigMap's config.yaml.
	dir := t.TempDir()
	mount := dig(side, "volumeMounts", 0)
	var cmName string
	for _, v := range dig(pod, "volumes").([]any) {
		if dig(v, "name") == dig(mount, "name") {
			cmName, _ = dig(v, "configMap", "name").(string)
		}
	}
	cm := named("ConfigMap", cmName)
	text, ok := dig(cm, "data", "config.yaml").(string)
	if !ok {
		t.Fatalf("ConfigMap %q with config.yaml not found", cmName)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var args []string
	for i, a := range dig(side, "args").([]any) {
		s := a.(string)
		if i == 0 && s == "serve" {
			continue
		}
		args = append(args, strings.ReplaceAll(s, dig(mount, "mountPath").(string), dir))
	}

	// The environment.
	vars := map[string]string{}
	var environ []string
	for _, e := range dig(side, "env").([]any) {
		name := dig(e, "name").(string)
		var val string
		switch {
		case dig(e, "value") != nil:
			val = os.Expand(strings.NewReplacer("$(", "${", ")", "}").Replace(dig(e, "value").(string)),
				func(k string) string { return vars[k] })
		case dig(e, "valueFrom", "fieldRef", "fieldPath") == "status.podIP":
			val = podIP
		case dig(e, "valueFrom", "resourceFieldRef") != nil:
			val = "268435456"
		case dig(e, "valueFrom", "secretKeyRef") != nil:
			ref := dig(e, "valueFrom", "secretKeyRef")
			key := dig(ref, "key").(string)
			sec := named("Secret", dig(ref, "name").(string))
			switch {
			case sec == nil:
				val = "from-existing-secret-" + key
			case dig(sec, "stringData", key) != nil:
				val = dig(sec, "stringData", key).(string)
			default:
				b, err := base64.StdEncoding.DecodeString(dig(sec, "data", key).(string))
				if err != nil {
					t.Fatal(err)
				}
				val = string(b)
			}
		default:
			t.Fatalf("env %s: unhandled source %v", name, e)
		}
		vars[name] = val
		environ = append(environ, name+"="+val)
	}
	cfg, err := loadConfig(args, environ)
	if err != nil {
		t.Fatalf("the sidecar's configuration does not load: %v", err)
	}
	return cfg, side
}

// dig walks maps and lists: dig(m, "spec", "containers", 0, "name").
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// checkPodConfig checks what the manifests' sidecar configuration must be
// in a cluster.
func checkPodConfig(t *testing.T, cfg Config, side map[string]any, user, password string) {
	t.Helper()
	// Kafka stays in the pod; the replicas' sidecars meet on the peer
	// listener, authenticated, advertising the pod IP.
	if cfg.Proxy.Listener.Address != "127.0.0.1:9092" || cfg.Proxy.Listener.AdvertisedHost != "" {
		t.Errorf("listener = %+v; want 127.0.0.1:9092 (loopback only)", cfg.Proxy.Listener)
	}
	if !cfg.Peers.Enabled() || len(cfg.Peers.Secret) < 16 || cfg.Coordination.Domain == "" {
		t.Errorf("peers %+v, coordination %+v: want the peer link on with a secret", cfg.Peers, cfg.Coordination)
	}
	if cfg.Peers.AdvertisedHost != podIP {
		t.Errorf("peers.advertised_host %q, want the pod IP", cfg.Peers.AdvertisedHost)
	}
	if cfg.UseEmbedded() || cfg.Embedded.Mode != EmbeddedOff || cfg.Iggy.Address == "" {
		t.Errorf("iggy.address %q, embedded.mode %q: a pod must use a real Iggy server", cfg.Iggy.Address, cfg.Embedded.Mode)
	}
	if cfg.Iggy.Username != user || cfg.Iggy.Password != password {
		t.Errorf("Iggy login %q/%q, want %q/%q from the Secret", cfg.Iggy.Username, cfg.Iggy.Password, user, password)
	}
	ports := map[string]string{}
	for _, p := range dig(side, "ports").([]any) {
		ports[dig(p, "name").(string)] = fmt.Sprint(dig(p, "containerPort"))
	}
	if ports["kafka"] != "" || !strings.HasSuffix(cfg.Peers.Address, ":"+ports["peers"]) || !strings.HasSuffix(cfg.Admin.Address, ":"+ports["admin"]) {
		t.Errorf("container ports %v do not match peers.address %q / admin.address %q (kafka: loopback, no pod port)", ports, cfg.Peers.Address, cfg.Admin.Address)
	}
	for probe, path := range map[string]string{"startupProbe": "/readyz", "readinessProbe": "/readyz", "livenessProbe": "/healthz"} {
		if dig(side, probe, "httpGet", "path") != path || dig(side, probe, "httpGet", "port") != "admin" {
			t.Errorf("%s = %v", probe, dig(side, probe))
		}
	}
}

// The configuration the Kubernetes manifests give the sidecar loads and is
// what a cluster needs.
func TestKubernetesManifestsConfig(t *testing.T) {
	var all []byte
	for _, f := range []string{"configmap.yaml", "secret.yaml", "deployment.yaml"} {
		raw, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "kubernetes", f))
		if err != nil {
			t.Fatal(err)
		}
		all = append(append(all, raw...), "\n---\n"...)
	}
	cfg, side := podConfig(t, all)
	checkPodConfig(t, cfg, side, "kafka-iggy", "change-me-please")
}

// The same for the Helm chart rendered with its default values and with
// an existing Secret and extra config. Needs helm from
// scripts/install-test-deps.sh (a failure under CI=true when missing).
func TestHelmChartConfig(t *testing.T) {
	dir := os.Getenv("KAFKA_IGGY_TOOLS_DIR")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(home, ".cache", "kafka-iggy", "bin")
	}
	helm := filepath.Join(dir, "helm")
	if _, err := os.Stat(helm); err != nil {
		msg := "helm is not installed; run scripts/install-test-deps.sh"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	render := func(set ...string) []byte {
		args := append([]string{"template", "demo", filepath.Join(repoRoot, "deploy", "helm", "kafka-iggy"), "--kube-version", "1.33.0"}, set...)
		out, err := exec.Command(helm, args...).Output()
		if err != nil {
			t.Fatalf("helm template: %v", err)
		}
		return out
	}
	cfg, side := podConfig(t, render("--set", "iggy.password=app-iggy-pw"))
	checkPodConfig(t, cfg, side, "orders-app", "app-iggy-pw") // the app's own Iggy user, never root

	cfg, side = podConfig(t, render("--set", "iggy.existingSecret=login", "--set", "config.iggy.pool_size=8",
		"--set-string", `config.topics.overrides.orders\.v1=shop/orders`, "--set", "sidecar.ports.admin=9500"))
	checkPodConfig(t, cfg, side, "from-existing-secret-username", "from-existing-secret-password")
	if cfg.Iggy.PoolSize != 8 || cfg.Bridge.Topics.Overrides["orders.v1"] != "shop/orders" || cfg.Admin.Address != "0.0.0.0:9500" {
		t.Errorf("values not applied: pool_size %d, overrides %v, admin %q", cfg.Iggy.PoolSize, cfg.Bridge.Topics.Overrides, cfg.Admin.Address)
	}
}
