package main

import (
	"bytes"
	"context"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/embedded/embedtest"
	"github.com/kafka-iggy/kafka-iggy/internal/tlsconf/tlstest"
)

// writeFile writes content to a file of the test's temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// twoUsers is an Iggy server with stream kafka holding topics orders and
// payments, and two users: alice may read and write orders only, bob
// payments only (per-topic permissions, as an operator grants them).
type twoUsers struct {
	addr string
}

func startTwoUsers(t *testing.T) twoUsers {
	t.Helper()
	srv := embedtest.Start(t, "127.0.0.1:0", nil)
	addr := srv.Addr().String()
	cfg := iggy.DefaultConfig()
	cfg.Address, cfg.PoolSize = addr, 1
	root, err := iggy.New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := root.Start(ctx); err != nil {
		t.Fatal(err)
	}
	sid, err := root.EnsureStream(ctx, "kafka")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]uint32{}
	for _, name := range []string{"orders", "payments"} {
		ti, err := root.CreateTopic(ctx, iggy.TopicRef{Stream: "kafka", Topic: name}, 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = ti.TopicID
	}
	for user, topic := range map[string]string{"alice": "orders", "bob": "payments"} {
		perms := &icodec.SizedPermissions{Permissions: icodec.Permissions{Streams: []icodec.StreamPermissions{{
			StreamID: sid,
			Topics:   []icodec.TopicPermissions{{TopicID: ids[topic], ReadTopic: true, PollMessages: true, SendMessages: true}},
		}}}}
		if err := root.Do(ctx, &icodec.CreateUserRequest{Username: user, Password: user + "-iggy-pw", Status: icodec.UserStatusActive, Permissions: perms}, nil); err != nil {
			t.Fatalf("create user %s: %v", user, err)
		}
	}
	return twoUsers{addr: addr}
}

// startAuthzSidecar starts a sidecar on the Iggy server of u with PLAIN
// (the Iggy user itself) and SCRAM-SHA-512 principal "payments-app" mapped
// to Iggy user bob by sasl.iggy_users_file; the sidecar's own Iggy login is
// root (its logs in __kafka_iggy).
func startAuthzSidecar(t *testing.T, u twoUsers) *sidecarProc {
	t.Helper()
	var scramFile, errb bytes.Buffer
	if rc := runScram([]string{"--user", "payments-app", "--mechanism", "SCRAM-SHA-512"}, strings.NewReader("app-secret\n"), &scramFile, &errb); rc != 0 {
		t.Fatalf("scram: %s", errb.String())
	}
	return startServeProc(t, "KAFKA_IGGY_IGGY__ADDRESS="+u.addr, "KAFKA_IGGY_SASL__ENABLED=true",
		"KAFKA_IGGY_SASL__MECHANISMS=PLAIN,SCRAM-SHA-512",
		"KAFKA_IGGY_SASL__SCRAM_FILE="+writeFile(t, "scram", scramFile.String()),
		"KAFKA_IGGY_SASL__IGGY_USERS_FILE="+writeFile(t, "iggy-users", "# principal -> Iggy user\npayments-app user bob bob-iggy-pw\n"))
}

// produceOne produces one record to topic as m and returns the error.
func produceOne(t *testing.T, seed, topic string, m sasl.Mechanism) error {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.SASL(m), kgo.RecordRetries(1), kgo.RequestRetries(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v-" + topic)}).FirstErr()
}

// TestPrincipalAuthorization: two principals act in Iggy as two Iggy users
// with different permissions (PLAIN alice is Iggy user alice; SCRAM
// principal payments-app is mapped to Iggy user bob). Each produces,
// fetches, lists offsets and commits on its own topic; on the other's topic
// it gets TOPIC_AUTHORIZATION_FAILED in the per-partition fields (the
// connection stays up), and Metadata for all topics leaves the other's
// topic out, as Kafka does.
func TestPrincipalAuthorization(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a sidecar process")
	}
	u := startTwoUsers(t)
	p := startAuthzSidecar(t, u)
	alice := plain.Auth{User: "alice", Pass: "alice-iggy-pw"}.AsMechanism()
	bob := scram.Auth{User: "payments-app", Pass: "app-secret"}.AsSha512Mechanism()

	for _, c := range []struct {
		who      string
		m        sasl.Mechanism
		own, not string
	}{{"alice", alice, "orders", "payments"}, {"payments-app", bob, "payments", "orders"}} {
		if err := produceOne(t, p.kafka, c.own, c.m); err != nil {
			t.Fatalf("%s produce to %s: %v\n%s", c.who, c.own, err, p.logText())
		}
		if err := produceOne(t, p.kafka, c.not, c.m); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Fatalf("%s produce to %s: err = %v, want TOPIC_AUTHORIZATION_FAILED", c.who, c.not, err)
		}

		cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafka), kgo.SASL(c.m), kgo.RequestRetries(1), kgo.MaxVersions(kversion.V3_0_0())) // topics by name
		if err != nil {
			t.Fatal(err)
		}
		adm := kadm.NewClient(cl)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)

		// Metadata for every topic: only the principal's own.
		td, err := adm.ListTopics(ctx)
		if err != nil {
			t.Fatalf("%s list topics: %v", c.who, err)
		}
		if names := td.Names(); !slices.Equal(names, []string{c.own}) {
			t.Errorf("%s sees topics %v, want [%s]", c.who, names, c.own)
		}
		// Metadata naming the other topic: TOPIC_AUTHORIZATION_FAILED.
		// (kadm returns the topic's authorization error as the call's.)
		td, err = adm.ListTopics(ctx, c.not)
		if err == nil {
			err = td[c.not].Err
		}
		if !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Errorf("%s metadata %s: %v, want TOPIC_AUTHORIZATION_FAILED", c.who, c.not, err)
		}

		// ListOffsets (a direct request: kadm stops at the metadata refusal).
		lo := kmsg.NewPtrListOffsetsRequest()
		lo.ReplicaID = -1
		for _, tp := range []string{c.own, c.not} {
			lt := kmsg.NewListOffsetsRequestTopic()
			lt.Topic = tp
			lp := kmsg.NewListOffsetsRequestTopicPartition()
			lp.Timestamp = -1
			lt.Partitions = append(lt.Partitions, lp)
			lo.Topics = append(lo.Topics, lt)
		}
		lr, err := direct[*kmsg.ListOffsetsResponse](ctx, cl, lo)
		if err != nil {
			t.Fatalf("%s list offsets: %v", c.who, err)
		}
		for _, rt := range lr.Topics {
			for _, rp := range rt.Partitions {
				want := int16(0)
				if rt.Topic == c.not {
					want = kerr.TopicAuthorizationFailed.Code
				}
				if rp.ErrorCode != want {
					t.Errorf("%s list offsets %s/%d: code %d, want %d", c.who, rt.Topic, rp.Partition, rp.ErrorCode, want)
				}
			}
		}

		// Fetch (a direct request: a consumer never fetches a topic its
		// metadata refused).
		fr := fetchRaw(ctx, t, p.kafka, c.m, c.own, c.not)
		for _, ft := range fr.Topics {
			for _, fp := range ft.Partitions {
				want := int16(0)
				if ft.Topic == c.not {
					want = kerr.TopicAuthorizationFailed.Code
				}
				if fp.ErrorCode != want {
					t.Errorf("%s fetch %s/%d: code %d, want %d", c.who, ft.Topic, fp.Partition, fp.ErrorCode, want)
				}
			}
		}

		// Committed offsets: own topic stored, the other's refused.
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.Group, oc.Generation = "g-"+c.who, -1
		for _, tp := range []string{c.own, c.not} {
			ot := kmsg.NewOffsetCommitRequestTopic()
			ot.Topic = tp
			op := kmsg.NewOffsetCommitRequestTopicPartition()
			op.Offset = 1
			ot.Partitions = append(ot.Partitions, op)
			oc.Topics = append(oc.Topics, ot)
		}
		cr, err := direct[*kmsg.OffsetCommitResponse](ctx, cl, oc)
		if err != nil {
			t.Fatalf("%s commit: %v", c.who, err)
		}
		for _, rt := range cr.Topics {
			for _, rp := range rt.Partitions {
				want := int16(0)
				if rt.Topic == c.not {
					want = kerr.TopicAuthorizationFailed.Code
				}
				if rp.ErrorCode != want {
					t.Errorf("%s commit %s/%d: code %d, want %d", c.who, rt.Topic, rp.Partition, rp.ErrorCode, want)
				}
			}
		}
		// DescribeTopicPartitions of every topic (kafka-topics --describe):
		// the other's topic is left out.
		cl4, err := kgo.NewClient(kgo.SeedBrokers(p.kafka), kgo.SASL(c.m))
		if err != nil {
			t.Fatal(err)
		}
		dt, err := direct[*kmsg.DescribeTopicPartitionsResponse](ctx, cl4, kmsg.NewPtrDescribeTopicPartitionsRequest())
		cl4.Close()
		if err != nil {
			t.Fatalf("%s describe topic partitions: %v", c.who, err)
		}
		var described []string
		for _, dtt := range dt.Topics {
			described = append(described, fmt.Sprintf("%s %d", *dtt.Topic, dtt.ErrorCode))
		}
		if wantD := []string{"__consumer_offsets 0", c.own + " 0"}; !slices.Equal(described, wantD) {
			t.Errorf("%s describe topic partitions: %v, want %v", c.who, described, wantD)
		}

		// OffsetFetch of every topic: the other's topic is left out.
		of := kmsg.NewPtrOffsetFetchRequest() // v8 (Kafka 3.0): groups
		og := kmsg.NewOffsetFetchRequestGroup()
		og.Group = "g-" + c.who
		of.Groups = append(of.Groups, og)
		fr2, err := direct[*kmsg.OffsetFetchResponse](ctx, cl, of)
		if err != nil || len(fr2.Groups) != 1 || fr2.Groups[0].ErrorCode != 0 {
			t.Fatalf("%s offset fetch: %v %+v", c.who, err, fr2)
		}
		var fetched []string
		for _, ft := range fr2.Groups[0].Topics {
			for _, fp := range ft.Partitions {
				fetched = append(fetched, fmt.Sprintf("%s/%d=%d code %d", ft.Topic, fp.Partition, fp.Offset, fp.ErrorCode))
			}
		}
		if wantF := []string{c.own + "/0=1 code 0"}; !slices.Equal(fetched, wantF) {
			t.Errorf("%s offset fetch of every topic: %v, want %v", c.who, fetched, wantF)
		}

		// DescribeAcls: the principal's Iggy permissions as ACLs.
		da := kmsg.NewPtrDescribeACLsRequest()
		da.ResourceType, da.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeAny
		da.Operation, da.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		ar, err := direct[*kmsg.DescribeACLsResponse](ctx, cl, da)
		if err != nil || ar.ErrorCode != 0 {
			t.Fatalf("%s describe acls: %v %+v", c.who, err, ar)
		}
		var got []string
		for _, r := range ar.Resources {
			for _, a := range r.ACLs {
				got = append(got, fmt.Sprintf("%s %s %s %s", r.ResourceName, a.Principal, a.Operation, a.PermissionType))
			}
		}
		want := []string{c.own + " User:" + c.who + " DESCRIBE ALLOW", c.own + " User:" + c.who + " DESCRIBE_CONFIGS ALLOW",
			c.own + " User:" + c.who + " READ ALLOW", c.own + " User:" + c.who + " WRITE ALLOW"}
		if !slices.Equal(got, want) {
			t.Errorf("%s acls: %q, want %q", c.who, got, want)
		}
		cancel()
		cl.Close()
	}
	// A principal with no Iggy user (SCRAM authenticated, not mapped) is
	// refused everything; Iggy users are not Kafka principals unless PLAIN.
	if err := produceOne(t, p.kafka, "orders", plain.Auth{User: "alice", Pass: "wrong-pw-123"}.AsMechanism()); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("wrong PLAIN password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

// TestPrincipalAuthorizationCertificates: security protocol SSL with
// client certificates and no SASL: two certificates mapped by
// tls.principal_mapping_rules to principals alice-svc and bob-svc, which
// sasl.iggy_users_file maps to Iggy users alice (topic orders only) and bob
// (payments only). Each produces and consumes its own topic, gets
// TOPIC_AUTHORIZATION_FAILED producing to and fetching the other's, and
// sees only its own topic in Metadata; a certificate whose principal has no
// Iggy user is refused everything. Without the mapping file the sidecar
// refuses to start, naming the key.
func TestPrincipalAuthorizationCertificates(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a sidecar process")
	}
	u := startTwoUsers(t)
	pki := tlstest.New(t, t.TempDir())
	srv := pki.Issue("server", pkix.Name{CommonName: "localhost"}, true)
	certs := map[string]tlstest.Issued{}
	for _, cn := range []string{"Alice-Svc", "Bob-Svc", "Mallory-Svc"} {
		certs[cn] = pki.Issue(cn, pkix.Name{CommonName: cn, OrganizationalUnit: []string{"ServiceUsers"}}, false)
	}
	tlsEnv := []string{"KAFKA_IGGY_IGGY__ADDRESS=" + u.addr, "KAFKA_IGGY_TLS__ENABLED=true",
		"KAFKA_IGGY_TLS__CERT_FILE=" + srv.CertFile, "KAFKA_IGGY_TLS__KEY_FILE=" + srv.KeyFile, "KAFKA_IGGY_TLS__CLIENT_AUTH=require",
		"KAFKA_IGGY_TLS__CLIENT_CA_FILE=" + pki.CAFile, `KAFKA_IGGY_TLS__PRINCIPAL_MAPPING_RULES=RULE:^CN=([^,]*),OU=ServiceUsers$/$1/L`}
	if _, err := loadConfig(nil, tlsEnv); err == nil {
		t.Error("client certificates with authorization principal and no mapping file: accepted")
	} else if msg := problemKeys(t, err)["sasl.iggy_users_file"]; !strings.Contains(msg, "tls.client_auth is require") {
		t.Errorf("client certificates with authorization principal and no mapping file: %v", err)
	}
	p := startServeProc(t, append(tlsEnv, "KAFKA_IGGY_SASL__IGGY_USERS_FILE="+
		writeFile(t, "iggy-users", "alice-svc user alice alice-iggy-pw\nbob-svc user bob bob-iggy-pw\n"))...)

	for _, c := range []struct {
		cert, own, not string
	}{{"Alice-Svc", "orders", "payments"}, {"Bob-Svc", "payments", "orders"}} {
		dial := kgo.DialTLSConfig(pki.ClientTLS(new(certs[c.cert])))
		if err := tlsRoundTrip(t, p.kafka, c.own, dial); err != nil {
			t.Fatalf("%s produce and consume %s: %v\n%s", c.cert, c.own, err, p.logText())
		}
		if err := produceTLS(t, p.kafka, c.not, dial); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Errorf("%s produce to %s: err = %v, want TOPIC_AUTHORIZATION_FAILED", c.cert, c.not, err)
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafka), dial, kgo.RequestRetries(1), kgo.MaxVersions(kversion.V3_0_0())) // topics by name
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		td, err := kadm.NewClient(cl).ListTopics(ctx)
		if err != nil {
			t.Fatalf("%s list topics: %v", c.cert, err)
		}
		if names := td.Names(); !slices.Equal(names, []string{c.own}) {
			t.Errorf("%s sees topics %v, want [%s]", c.cert, names, c.own)
		}
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 10, 1<<20
		for _, tp := range []string{c.own, c.not} {
			ft := kmsg.NewFetchRequestTopic()
			ft.Topic = tp
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.PartitionMaxBytes = 1 << 20
			ft.Partitions = append(ft.Partitions, fp)
			req.Topics = append(req.Topics, ft)
		}
		fr, err := direct[*kmsg.FetchResponse](ctx, cl, req)
		if err != nil {
			t.Fatalf("%s fetch: %v", c.cert, err)
		}
		for _, ft := range fr.Topics {
			for _, fp := range ft.Partitions {
				want := int16(0)
				if ft.Topic == c.not {
					want = kerr.TopicAuthorizationFailed.Code
				}
				if fp.ErrorCode != want {
					t.Errorf("%s fetch %s/%d: code %d, want %d", c.cert, ft.Topic, fp.Partition, fp.ErrorCode, want)
				}
			}
		}
		cancel()
		cl.Close()
	}
	// mallory-svc is mapped by the rules but has no Iggy user.
	dial := kgo.DialTLSConfig(pki.ClientTLS(new(certs["Mallory-Svc"])))
	for _, topic := range []string{"orders", "payments"} {
		if err := produceTLS(t, p.kafka, topic, dial); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Errorf("unmapped principal produce to %s: err = %v, want TOPIC_AUTHORIZATION_FAILED", topic, err)
		}
	}
}

// produceTLS produces one record to topic with opts and returns the error.
func produceTLS(t *testing.T, seed, topic string, opts ...kgo.Opt) error {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seed), kgo.RecordRetries(1), kgo.RequestRetries(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v-" + topic)}).FirstErr()
}

// fetchRaw sends one Fetch v12 (topics by name) of partition 0 of each
// topic, as m.
func fetchRaw(ctx context.Context, t *testing.T, seed string, m sasl.Mechanism, topics ...string) *kmsg.FetchResponse {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.SASL(m), kgo.MaxVersions(kversion.V3_0_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 10, 1<<20
	for _, tp := range topics {
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = tp
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
	}
	resp, err := direct[*kmsg.FetchResponse](ctx, cl, req)
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	return resp
}

// direct sends req to the seed broker itself (kgo would first split it by
// partition leader and stop at a metadata refusal).
func direct[R kmsg.Response](ctx context.Context, cl *kgo.Client, req kmsg.Request) (R, error) {
	var zero R
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return zero, err
	}
	return resp.(R), nil
}

// TestPrincipalAuthorizationJava: kafka-clients as the two principals of
// TestPrincipalAuthorization: each produces and consumes its own topic and
// gets TopicAuthorizationException on the other's.
func TestPrincipalAuthorizationJava(t *testing.T) {
	run := javaSasl(t)
	u := startTwoUsers(t)
	p := startAuthzSidecar(t, u)
	const denied = "FAIL org.apache.kafka.common.errors.TopicAuthorizationException"
	for _, c := range []struct{ mech, user, pass, topic, want string }{
		{"PLAIN", "alice", "alice-iggy-pw", "orders", "OK"},
		{"PLAIN", "alice", "alice-iggy-pw", "payments", denied},
		{"SCRAM-SHA-512", "payments-app", "app-secret", "payments", "OK"},
		{"SCRAM-SHA-512", "payments-app", "app-secret", "orders", denied},
	} {
		got := run(p.kafka, c.mech, c.user, c.pass, c.topic)
		t.Logf("%s %s -> %s: %s", c.mech, c.user, c.topic, got)
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s %s -> %s: %q, want %s...", c.mech, c.user, c.topic, got, c.want)
		}
	}
}

// TestScramAlterSeenByEverySidecar: a SCRAM credential created with
// AlterUserScramCredentials through one sidecar authenticates through
// another sidecar of the same Iggy server (the change is kept in Iggy), is
// listed by DescribeUserScramCredentials there, and a deletion of a
// credential seeded from the file takes effect everywhere.
func TestScramAlterSeenByEverySidecar(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sidecar processes")
	}
	srv := embedtest.Start(t, "127.0.0.1:0", nil)
	var seed, errb bytes.Buffer
	if rc := runScram([]string{"--user", "alice", "--mechanism", "SCRAM-SHA-512"}, strings.NewReader("alice-secret\n"), &seed, &errb); rc != 0 {
		t.Fatalf("scram: %s", errb.String())
	}
	env := []string{"KAFKA_IGGY_IGGY__ADDRESS=" + srv.Addr().String(), "KAFKA_IGGY_SASL__ENABLED=true",
		"KAFKA_IGGY_SASL__MECHANISMS=SCRAM-SHA-512", "KAFKA_IGGY_SASL__SCRAM_FILE=" + writeFile(t, "scram", seed.String()),
		"KAFKA_IGGY_SASL__IGGY_USERS_FILE=" + writeFile(t, "iggy-users", "alice user iggy iggy\ncarol user iggy iggy\n")}
	a, b := startServeProc(t, env...), startServeProc(t, env...)
	alice := scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()
	carol := scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha512Mechanism()

	admin := func(addr string, m sasl.Mechanism) *kadm.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(m), kgo.RequestRetries(1))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return kadm.NewClient(cl)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	altered, err := admin(a.kafka, alice).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "carol-secret"}})
	if err != nil || altered.Error() != nil {
		t.Fatalf("alter through sidecar a: %v %v", err, altered.Error())
	}
	// The other sidecar: carol authenticates and produces, and is listed.
	if err := saslRoundTrip(t, b.kafka, "carol-topic", carol); err != nil {
		t.Fatalf("carol through sidecar b: %v", err)
	}
	described, err := admin(b.kafka, carol).DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := described["carol"]; d.Err != nil || len(d.CredInfos) != 1 || d.CredInfos[0].Iterations != 4096 {
		t.Errorf("describe through sidecar b: carol %+v (all: %v)", d, described)
	}
	if d := described["alice"]; d.Err != nil || len(d.CredInfos) != 1 {
		t.Errorf("describe through sidecar b: seeded alice %+v", d)
	}
	// Deleting the seeded alice through b: a refuses her (within the one
	// second its view may lag).
	deleted, err := admin(b.kafka, carol).AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha512}}, nil)
	if err != nil || deleted.Error() != nil {
		t.Fatalf("delete through sidecar b: %v %v", err, deleted.Error())
	}
	waitFor(t, 10*time.Second, "alice refused by sidecar a", func() error {
		if err := saslMetadata(t, a.kafka, alice); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			return fmt.Errorf("alice: %v", err)
		}
		return nil
	})
}

// TestIggyUserProvision: `kafka-iggy iggy-user` (what deploy/'s Job runs)
// creates the app's Iggy user with its streams' permissions only; a
// sidecar logged in as that user (not root) creates topics, produces with
// an idempotent producer, consumes in a group and commits; the user may
// not touch another stream; a second run (an upgrade) succeeds.
func TestIggyUserProvision(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a sidecar process")
	}
	srv := embedtest.Start(t, "127.0.0.1:0", nil)
	addr := srv.Addr().String()
	env := map[string]string{"IGGY_ADMIN_USERNAME": "iggy", "IGGY_ADMIN_PASSWORD": "iggy", "IGGY_APP_USERNAME": "orders-app", "IGGY_APP_PASSWORD": "orders-app-pw"}
	for run := 1; run <= 2; run++ {
		var out, errb bytes.Buffer
		if rc := runIggyUser([]string{"--address", addr}, func(k string) string { return env[k] }, &out, &errb); rc != 0 {
			t.Fatalf("run %d: rc %d: %s", run, rc, errb.String())
		}
		t.Logf("run %d: %s", run, strings.TrimSpace(out.String()))
	}
	var errb bytes.Buffer
	if rc := runIggyUser([]string{"--address", addr}, func(string) string { return "" }, io.Discard, &errb); rc != 2 || !strings.Contains(errb.String(), "IGGY_ADMIN_USERNAME is not set") {
		t.Errorf("without credentials: rc %d %q", rc, errb.String())
	}

	p := startServeProc(t, "KAFKA_IGGY_IGGY__ADDRESS="+addr, "KAFKA_IGGY_IGGY__USERNAME=orders-app", "KAFKA_IGGY_IGGY__PASSWORD=orders-app-pw")
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafka), kgo.DefaultProduceTopic("orders"), kgo.ConsumerGroup("orders-group"),
		kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatalf("create topic as the app user: %v", err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("o1")}).FirstErr(); err != nil {
		t.Fatalf("idempotent produce as the app user: %v\n%s", err, p.logText())
	}
	for got := false; !got; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume as the app user: %v", err)
		}
		got = fs.NumRecords() > 0
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit as the app user: %v", err)
	}
	if refused := grepLines(p.logText(), "Unauthorized"); refused != "" {
		t.Errorf("the sidecar met refusals as the app user:\n%s", refused)
	}
	// The user has nothing outside its streams: another stream is refused.
	cfg := iggy.DefaultConfig()
	cfg.Address, cfg.Username, cfg.Password, cfg.PoolSize = addr, "orders-app", "orders-app-pw", 1
	app, err := iggy.New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := app.CreateStream(ctx, "other"); !iggy.IsUnauthorized(err) {
		t.Errorf("app user creating a stream: %v, want Unauthorized", err)
	}
}

// TestPrincipalAuthorizationAcrossSidecars: with the peer link on (groups
// coordinated across the deployment's sidecars), a principal's group
// consumes its own topic through either sidecar; the domain's own records
// stay the sidecars' (no refusal logged).
func TestPrincipalAuthorizationAcrossSidecars(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sidecar processes")
	}
	u := startTwoUsers(t)
	env := []string{"KAFKA_IGGY_SASL__ENABLED=true", "KAFKA_IGGY_SASL__MECHANISMS=PLAIN"}
	a, b := startClusterSidecar(t, u.addr, env...), startClusterSidecar(t, u.addr, env...)
	alice := kgo.SASL(plain.Auth{User: "alice", Pass: "alice-iggy-pw"}.AsMechanism())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i, s := range []*sidecarProc{a, b} {
		p, err := kgo.NewClient(kgo.SeedBrokers(s.kafka), alice)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("alice produce through %s: %v", s.kafka, err)
		}
		p.Close()
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.kafka), alice, kgo.ConsumerGroup(fmt.Sprintf("alice-group-%d", i)),
			kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for got := false; !got; {
			fs := cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatalf("alice's group through %s: %v", s.kafka, err)
			}
			got = fs.NumRecords() > 0
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("alice's commit through %s: %v", s.kafka, err)
		}
		cl.Close()
	}
	for _, s := range []*sidecarProc{a, b} {
		if refused := grepLines(s.logText(), "Unauthorized"); refused != "" {
			t.Errorf("sidecar %s met refusals of its own records:\n%s", s.kafka, refused)
		}
	}
}
