package e2e

import (
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestSecurityAPIsDifferential: the SCRAM credential APIs
// (DescribeUserScramCredentials, AlterUserScramCredentials) and the ACL
// APIs (DescribeAcls, CreateAcls, DeleteAcls), raw, against Kafka without
// an authorizer and the sidecar without SASL (issue 27).
func TestSecurityAPIsDifferential(t *testing.T) {
	kafkaDiff(t, securityAPIsScenario, securityAPIsWant, nil)
}

// securityAPIsWant is what Kafka 4.4 answers in securityAPIsScenario.
var securityAPIsWant = map[string]map[string]string{
	"describe scram of an unknown user":            {"error": "0 NONE", "message": "\"\"", "user ALICE": "91 RESOURCE_NOT_FOUND \"Attempt to describe a user credential that does not exist: ALICE\"", "results": "1"},
	"upsert two users":                             {"results": "2", "user ALICE": "0 NONE null", "user BOB": "0 NONE null"},
	"describe scram of every user":                 {"error": "0 NONE", "message": "\"\"", "user ALICE": "0 NONE \"\" 2/8192", "user BOB": "0 NONE \"\" 1/4096", "results": "2"},
	"describe scram of one user":                   {"error": "0 NONE", "message": "\"\"", "user ALICE": "0 NONE \"\" 2/8192", "results": "1"},
	"describe scram of a user named twice":         {"error": "0 NONE", "message": "\"\"", "user ALICE": "92 DUPLICATE_RESOURCE \"Cannot describe SCRAM credentials for the same user twice in a single request: ALICE\"", "user BOB": "0 NONE \"\" 1/4096", "results": "2"},
	"upsert a second mechanism":                    {"results": "1", "user ALICE": "0 NONE null"},
	"describe scram of a user with two mechanisms": {"error": "0 NONE", "message": "\"\"", "user ALICE": "0 NONE \"\" 1/4096,2/8192", "results": "1"},
	"upsert too few iterations":                    {"results": "1", "user BOB": "93 UNACCEPTABLE_CREDENTIAL \"Too few iterations\""},
	"upsert too many iterations":                   {"results": "1", "user BOB": "93 UNACCEPTABLE_CREDENTIAL \"Too many iterations\""},
	"upsert an unknown mechanism":                  {"results": "1", "user BOB": "33 UNSUPPORTED_SASL_MECHANISM \"Unknown SCRAM mechanism\""},
	"delete a missing credential":                  {"results": "1", "user BOB": "91 RESOURCE_NOT_FOUND \"Attempt to delete a user credential that does not exist\""},
	"delete and upsert one user":                   {"results": "1", "user ALICE": "92 DUPLICATE_RESOURCE \"A user credential cannot be altered twice in the same request\""},
	"upsert one user twice":                        {"results": "1", "user BOB": "92 DUPLICATE_RESOURCE \"A user credential cannot be altered twice in the same request\""},
	"delete two mechanisms of one user":            {"results": "1", "user ALICE": "92 DUPLICATE_RESOURCE \"A user credential cannot be altered twice in the same request\""},
	"delete a credential":                          {"results": "1", "user BOB": "0 NONE null"},
	"describe scram after deletions":               {"error": "0 NONE", "message": "\"\"", "user ALICE": "0 NONE \"\" 1/4096,2/8192", "user BOB": "91 RESOURCE_NOT_FOUND \"Attempt to describe a user credential that does not exist: BOB\"", "results": "2"},
	"upsert an empty user name":                    {"results": "1", "user ": "93 UNACCEPTABLE_CREDENTIAL \"Username must not be empty\""},
	"describe acls":                                {"error": "54 SECURITY_DISABLED", "message": "\"No Authorizer is configured on the broker\"", "resources": "0"},
	"create acls":                                  {"results": "1", "result 0": "54 SECURITY_DISABLED \"No Authorizer is configured.\""},
	"delete acls":                                  {"results": "1", "result 0": "54 SECURITY_DISABLED \"No Authorizer is configured.\" matching=0"},
}

func securityAPIsScenario(t *testing.T, tg Target) *transcript {
	t.Helper()
	tr := &transcript{}
	cl := newKgo(t, tg)
	ctx := testCtx(t, 60*time.Second)
	alice, bob := uniqueTopic("alice"), uniqueTopic("bob")
	names := strings.NewReplacer(alice, "ALICE", bob, "BOB")
	msg := func(s *string) string {
		if s == nil {
			return "null"
		}
		return fmt.Sprintf("%q", names.Replace(*s))
	}
	request := func(name string, req kmsg.Request) kmsg.Response {
		resp, err := cl.Request(ctx, req)
		if err != nil {
			tr.add(name, "error", "client error: "+err.Error())
			return nil
		}
		return resp
	}
	describe := func(name string, users ...string) {
		req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		if users != nil {
			req.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{}
		}
		for _, u := range users {
			ru := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
			ru.Name = u
			req.Users = append(req.Users, ru)
		}
		resp, ok := request(name, req).(*kmsg.DescribeUserSCRAMCredentialsResponse)
		if !ok {
			return
		}
		kv := []string{"error", errStr(resp.ErrorCode), "message", msg(resp.ErrorMessage)}
		n := 0
		for _, r := range resp.Results {
			if r.User != alice && r.User != bob {
				continue // users of other tests on a shared broker
			}
			n++
			infos := []string{}
			for _, ci := range r.CredentialInfos {
				infos = append(infos, fmt.Sprintf("%d/%d", ci.Mechanism, ci.Iterations))
			}
			slices.Sort(infos) // Kafka lists a user's mechanisms in no set order
			kv = append(kv, "user "+names.Replace(r.User), strings.TrimSpace(errStr(r.ErrorCode)+" "+msg(r.ErrorMessage)+" "+strings.Join(infos, ",")))
		}
		kv = append(kv, "results", fmt.Sprint(n))
		tr.add(name, kv...)
	}
	type del struct {
		user string
		mech int8
	}
	type ups struct {
		user  string
		mech  int8
		iters int32
	}
	alter := func(name string, dels []del, upss []ups) {
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		for _, d := range dels {
			rd := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
			rd.Name, rd.Mechanism = d.user, d.mech
			req.Deletions = append(req.Deletions, rd)
		}
		for _, u := range upss {
			ru := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
			ru.Name, ru.Mechanism, ru.Iterations = u.user, u.mech, u.iters
			ru.Salt = []byte("0123456789abcdef")
			if u.mech == 2 {
				ru.SaltedPassword, _ = pbkdf2.Key(sha512.New, "pw-"+u.user, ru.Salt, 4096, 64)
			} else {
				ru.SaltedPassword, _ = pbkdf2.Key(sha256.New, "pw-"+u.user, ru.Salt, 4096, 32)
			}
			req.Upsertions = append(req.Upsertions, ru)
		}
		resp, ok := request(name, req).(*kmsg.AlterUserSCRAMCredentialsResponse)
		if !ok {
			return
		}
		kv := []string{"results", fmt.Sprint(len(resp.Results))}
		changed := map[string]bool{}
		for _, r := range resp.Results {
			kv = append(kv, "user "+names.Replace(r.User), errStr(r.ErrorCode)+" "+msg(r.ErrorMessage))
			if r.ErrorCode == 0 {
				changed[r.User] = true
			}
		}
		tr.add(name, kv...)
		// Kafka answers an alteration once its controller committed it;
		// its brokers apply it to what DescribeUserScramCredentials reads
		// a moment later. Wait until the change is visible, so the next
		// step reads the state the alteration made (the sidecar's is at
		// once).
		want := map[[2]string]bool{} // {user, mechanism} -> present
		for _, d := range dels {
			if changed[d.user] {
				want[[2]string{d.user, fmt.Sprint(d.mech)}] = false
			}
		}
		for _, u := range upss {
			if changed[u.user] {
				want[[2]string{u.user, fmt.Sprint(u.mech)}] = true
			}
		}
		for len(want) > 0 {
			req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatalf("%s: waiting for the alteration to be visible: %v", name, err)
			}
			have := map[[2]string]bool{}
			for _, r := range resp.Results {
				for _, ci := range r.CredentialInfos {
					have[[2]string{r.User, fmt.Sprint(ci.Mechanism)}] = true
				}
			}
			visible := true
			for k, present := range want {
				visible = visible && have[k] == present
			}
			if visible {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s: the alteration never became visible", name)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}

	describe("describe scram of an unknown user", alice)
	alter("upsert two users", nil, []ups{{alice, 2, 8192}, {bob, 1, 4096}})
	describe("describe scram of every user")
	describe("describe scram of one user", alice)
	describe("describe scram of a user named twice", alice, bob, alice)
	alter("upsert a second mechanism", nil, []ups{{alice, 1, 4096}})
	describe("describe scram of a user with two mechanisms", alice)
	alter("upsert too few iterations", nil, []ups{{bob, 2, 1000}})
	alter("upsert too many iterations", nil, []ups{{bob, 2, 20000}})
	alter("upsert an unknown mechanism", nil, []ups{{bob, 3, 4096}})
	alter("delete a missing credential", []del{{bob, 2}}, nil)
	alter("delete and upsert one user", []del{{alice, 2}}, []ups{{alice, 2, 4096}})
	alter("upsert one user twice", nil, []ups{{bob, 2, 4096}, {bob, 2, 8192}})
	alter("delete two mechanisms of one user", []del{{alice, 2}, {alice, 1}}, nil)
	alter("delete a credential", []del{{bob, 1}}, nil)
	describe("describe scram after deletions", alice, bob)
	alter("upsert an empty user name", nil, []ups{{"", 2, 4096}})

	// ACLs.
	dreq := kmsg.NewPtrDescribeACLsRequest()
	dreq.ResourceType, dreq.ResourcePatternType, dreq.Operation, dreq.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	if resp, ok := request("describe acls", dreq).(*kmsg.DescribeACLsResponse); ok {
		tr.add("describe acls", "error", errStr(resp.ErrorCode), "message", msg(resp.ErrorMessage), "resources", fmt.Sprint(len(resp.Resources)))
	}
	creq := kmsg.NewPtrCreateACLsRequest()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, "orders", kmsg.ACLResourcePatternTypeLiteral
	c.Principal, c.Host, c.Operation, c.PermissionType = "User:"+alice, "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
	creq.Creations = append(creq.Creations, c)
	if resp, ok := request("create acls", creq).(*kmsg.CreateACLsResponse); ok {
		kv := []string{"results", fmt.Sprint(len(resp.Results))}
		for i, r := range resp.Results {
			kv = append(kv, fmt.Sprintf("result %d", i), errStr(r.ErrorCode)+" "+msg(r.ErrorMessage))
		}
		tr.add("create acls", kv...)
	}
	xreq := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	xreq.Filters = append(xreq.Filters, f)
	if resp, ok := request("delete acls", xreq).(*kmsg.DeleteACLsResponse); ok {
		kv := []string{"results", fmt.Sprint(len(resp.Results))}
		for i, r := range resp.Results {
			kv = append(kv, fmt.Sprintf("result %d", i), errStr(r.ErrorCode)+" "+msg(r.ErrorMessage)+fmt.Sprintf(" matching=%d", len(r.MatchingACLs)))
		}
		tr.add("delete acls", kv...)
	}
	return tr
}

// TestScramConfigsTool: kafka-configs --entity-type users adds, describes
// and deletes a SCRAM credential, and prints the same on Kafka and the
// sidecar.
func TestScramConfigsTool(t *testing.T) {
	version := kafka4Version()
	kafkaToolsReady(version)(t)
	outs := map[string][]string{}
	for _, tg := range targets(t) {
		if tg.Reference {
			continue
		}
		t.Run(tg.Name, func(t *testing.T) {
			user := uniqueTopic("dave")
			tool := func(args ...string) string {
				out := runKafkaTool(t, version, 90*time.Second, "configs", append([]string{"--bootstrap-server", tg.Bootstrap, "--entity-type", "users"}, args...)...)
				out = strings.TrimSpace(strings.ReplaceAll(out, user, "USER"))
				// Kafka lists a user's mechanisms in no set order.
				if head, list, ok := strings.Cut(out, " are "); ok {
					mechs := strings.Split(list, ", ")
					slices.Sort(mechs)
					out = head + " are " + strings.Join(mechs, ", ")
				}
				return out
			}
			steps := []string{
				// (one mechanism per request: Kafka refuses a user altered twice in one)
				tool("--entity-name", user, "--alter", "--add-config", "SCRAM-SHA-512=[password=dave-secret]"),
				tool("--entity-name", user, "--alter", "--add-config", "SCRAM-SHA-256=[iterations=8192,password=dave-secret]"),
				tool("--entity-name", user, "--describe"),
				tool("--entity-name", user, "--alter", "--delete-config", "SCRAM-SHA-256"),
				tool("--entity-name", user, "--describe"),
			}
			t.Logf("%s:\n%s", tg.Name, strings.Join(steps, "\n"))
			if !strings.Contains(steps[2], "SCRAM-SHA-512=iterations=4096") || !strings.Contains(steps[2], "SCRAM-SHA-256=iterations=8192") {
				t.Errorf("%s: describe after the alter: %q", tg.Name, steps[2])
			}
			outs[tg.Name] = steps
		})
	}
	if k, ok := outs["kafka"]; ok {
		for name, o := range outs {
			if name != "kafka" && !slices.Equal(o, k) {
				t.Errorf("kafka-configs printed on %s:\n%s\non Kafka:\n%s", name, strings.Join(o, "\n"), strings.Join(k, "\n"))
			}
		}
	}
}
