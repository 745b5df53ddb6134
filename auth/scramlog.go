package auth

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// The SCRAM credential log: AlterUserScramCredentials' changes, kept in
// Iggy where every sidecar of the server reads them (stream __kafka_iggy,
// topic scram_credentials, one JSON record per change, never expiring).
// The credential file (sasl.scram_file) is the seed; the log's records are
// applied over it in order, so a deletion also removes a seeded
// credential.
var scramLogRef = iggy.TopicRef{Stream: "__kafka_iggy", Topic: "scram_credentials"}

var scramLogConsumer = icodec.Consumer{
	Kind: icodec.ConsumerKindConsumer,
	ID:   icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte("kafka-iggy.scram")},
}

const (
	scramLogVersion = 1
	// scramMaxAge bounds how stale an authentication's view of the log is.
	scramMaxAge = time.Second
	// MaxIterations is the highest SCRAM iteration count accepted (Kafka's).
	MaxIterations = 16384
)

// Kafka's SCRAM mechanism numbers (ScramMechanism.type()).
var scramMechanisms = map[int8]string{1: ScramSHA256, 2: ScramSHA512}

type scramRecord struct {
	V          int    `json:"v"`
	User       string `json:"user"`
	Mechanism  string `json:"mechanism"`
	Delete     bool   `json:"delete,omitempty"`
	Salt       []byte `json:"salt,omitempty"`
	StoredKey  []byte `json:"stored_key,omitempty"`
	ServerKey  []byte `json:"server_key,omitempty"`
	Iterations int    `json:"iterations,omitempty"`
}

// ScramLog serves DescribeUserScramCredentials and
// AlterUserScramCredentials on a ScramStore whose changes it keeps in
// Iggy. Safe for concurrent use.
type ScramLog struct {
	st     *ScramStore
	client *iggy.Client
	log    zerolog.Logger

	syncMu   sync.Mutex // one reader of Iggy at a time
	mu       sync.Mutex // guards tail and syncedAt
	tail     iggy.LogFollower
	syncedAt time.Time
}

// NewScramLog keeps st's alterations in Iggy through client; st's
// authentications then read the log (at most scramMaxAge old).
func NewScramLog(st *ScramStore, client *iggy.Client, log zerolog.Logger) *ScramLog {
	l := &ScramLog{st: st, client: client, log: log}
	st.refresh = l.fresh
	return l
}

func (l *ScramLog) apply(payload []byte) {
	var r scramRecord
	if json.Unmarshal(payload, &r) != nil || r.V != scramLogVersion || r.User == "" {
		return
	}
	key := r.Mechanism + " " + r.User
	l.st.mu.Lock()
	defer l.st.mu.Unlock()
	if r.Delete {
		delete(l.st.creds, key)
		return
	}
	l.st.creds[key] = ScramCredential{Salt: r.Salt, StoredKey: r.StoredKey, ServerKey: r.ServerKey, Iterations: r.Iterations}
}

// sync reads the log to its end.
func (l *ScramLog) sync(ctx context.Context) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if _, err := l.tail.Sync(ctx, l.client, scramLogConsumer, scramLogRef, 1000, &l.mu, l.apply); err != nil {
		return err
	}
	l.mu.Lock()
	l.syncedAt = time.Now()
	l.mu.Unlock()
	return nil
}

// fresh reads the log when the view is older than scramMaxAge (an
// authentication's lookup); a failed read keeps the older view (logged).
func (l *ScramLog) fresh() {
	l.mu.Lock()
	ok := time.Since(l.syncedAt) < scramMaxAge
	l.mu.Unlock()
	if ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.sync(ctx); err != nil {
		l.log.Warn().Err(err).Msg("scram: reading the credential log failed; using the credentials read before")
	}
}

// Describe answers DescribeUserScramCredentials as Kafka does: every user
// with a credential when none is named; RESOURCE_NOT_FOUND for a named
// user without one, DUPLICATE_RESOURCE for a user named twice.
func (l *ScramLog) Describe(ctx context.Context, req *kmsg.DescribeUserSCRAMCredentialsRequest, resp *kmsg.DescribeUserSCRAMCredentialsResponse) {
	resp.ErrorMessage = ptr("") // Kafka's answer carries an empty message
	if err := l.sync(ctx); err != nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		msg := "the SCRAM credential log in Iggy could not be read"
		resp.ErrorMessage = &msg
		l.log.Warn().Err(err).Msg("scram: describe could not read the credential log")
		return
	}
	infos := map[string][]kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}
	l.st.mu.RLock()
	for key, c := range l.st.creds {
		for num, mech := range scramMechanisms {
			if user, ok := cutPrefix(key, mech+" "); ok {
				ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				ci.Mechanism, ci.Iterations = num, int32(c.Iterations)
				infos[user] = append(infos[user], ci)
			}
		}
	}
	l.st.mu.RUnlock()
	result := func(user string, code int16, msg string) {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User, r.ErrorCode, r.ErrorMessage = user, code, &msg
		if code == 0 {
			r.CredentialInfos = infos[user]
			slices.SortFunc(r.CredentialInfos, func(a, b kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo) int {
				return int(a.Mechanism) - int(b.Mechanism)
			})
		}
		resp.Results = append(resp.Results, r)
	}
	if len(req.Users) == 0 {
		users := make([]string, 0, len(infos))
		for u := range infos {
			users = append(users, u)
		}
		slices.Sort(users)
		for _, u := range users {
			result(u, 0, "")
		}
		return
	}
	seen := map[string]int{}
	for _, u := range req.Users {
		seen[u.Name]++
	}
	for _, u := range req.Users {
		switch n := seen[u.Name]; {
		case n < 0: // reported
		case n > 1:
			result(u.Name, kerr.DuplicateResource.Code, "Cannot describe SCRAM credentials for the same user twice in a single request: "+u.Name)
			seen[u.Name] = -1
		case infos[u.Name] == nil:
			result(u.Name, kerr.ResourceNotFound.Code, "Attempt to describe a user credential that does not exist: "+u.Name)
		default:
			result(u.Name, 0, "")
		}
	}
}

// Alter answers AlterUserScramCredentials as Kafka's controller does
// (ScramControlManager): one result per user; a user altered twice in
// the request gets DUPLICATE_RESOURCE, an unknown mechanism
// UNSUPPORTED_SASL_MECHANISM, iterations outside 4096-16384
// UNACCEPTABLE_CREDENTIAL, the deletion of a missing credential
// RESOURCE_NOT_FOUND. Accepted changes are appended to the log; the
// password never leaves the client (the request carries the salted one).
func (l *ScramLog) Alter(ctx context.Context, req *kmsg.AlterUserSCRAMCredentialsRequest, resp *kmsg.AlterUserSCRAMCredentialsResponse) {
	syncErr := l.sync(ctx)
	var order []string
	errs := map[string]kerr.Error{}
	msgs := map[string]string{}
	recs := map[string]scramRecord{}
	fail := func(user string, e *kerr.Error, msg string) {
		_, failed := errs[user]
		if _, pending := recs[user]; !failed && !pending {
			order = append(order, user)
		}
		errs[user], msgs[user] = *e, msg
		delete(recs, user)
	}
	dup := "A user credential cannot be altered twice in the same request"
	for _, d := range req.Deletions {
		if _, failed := errs[d.Name]; failed {
			continue
		}
		if _, twice := recs[d.Name]; twice {
			fail(d.Name, kerr.DuplicateResource, dup)
			continue
		}
		mech, ok := scramMechanisms[d.Mechanism]
		switch {
		case d.Name == "":
			fail(d.Name, kerr.UnacceptableCredential, "Username must not be empty")
		case !ok:
			fail(d.Name, kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
		case !l.has(mech, d.Name):
			fail(d.Name, kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist")
		default:
			order = append(order, d.Name)
			recs[d.Name] = scramRecord{V: scramLogVersion, User: d.Name, Mechanism: mech, Delete: true}
		}
	}
	for _, u := range req.Upsertions {
		if _, failed := errs[u.Name]; failed {
			continue
		}
		if _, twice := recs[u.Name]; twice {
			fail(u.Name, kerr.DuplicateResource, dup)
			continue
		}
		mech, ok := scramMechanisms[u.Mechanism]
		switch {
		case u.Name == "":
			fail(u.Name, kerr.UnacceptableCredential, "Username must not be empty")
		case !ok:
			fail(u.Name, kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
		case u.Iterations < MinIterations:
			fail(u.Name, kerr.UnacceptableCredential, "Too few iterations")
		case u.Iterations > MaxIterations:
			fail(u.Name, kerr.UnacceptableCredential, "Too many iterations")
		default:
			h := newHash(mech)
			clientKey := hmacOf(h, u.SaltedPassword, "Client Key")
			sk := h()
			sk.Write(clientKey)
			order = append(order, u.Name)
			recs[u.Name] = scramRecord{V: scramLogVersion, User: u.Name, Mechanism: mech, Salt: u.Salt,
				StoredKey: sk.Sum(nil), ServerKey: hmacOf(h, u.SaltedPassword, "Server Key"), Iterations: int(u.Iterations)}
		}
	}
	for _, user := range order {
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = user
		if e, failed := errs[user]; failed {
			r.ErrorCode, r.ErrorMessage = e.Code, ptr(msgs[user])
			resp.Results = append(resp.Results, r)
			continue
		}
		rec, ok := recs[user]
		if !ok {
			continue // listed when it failed
		}
		delete(recs, user)
		err := syncErr
		if err == nil {
			payload, _ := json.Marshal(rec)
			err = l.tail.Append(ctx, l.client, scramLogRef, iggy.NeverExpire(), &l.mu, payload)
		}
		if err != nil {
			l.log.Warn().Err(err).Str("user", user).Msg("scram: storing a credential change failed")
			r.ErrorCode, r.ErrorMessage = kerr.CoordinatorNotAvailable.Code, ptr("the SCRAM credential log in Iggy could not be written")
		}
		resp.Results = append(resp.Results, r)
	}
	if err := l.sync(ctx); err != nil {
		l.log.Warn().Err(err).Msg("scram: reading back the credential log failed")
	}
}

func (l *ScramLog) has(mech, user string) bool {
	l.st.mu.RLock()
	defer l.st.mu.RUnlock()
	_, ok := l.st.creds[mech+" "+user]
	return ok
}

func cutPrefix(s, prefix string) (string, bool) {
	if len(s) > len(prefix) && s[:len(prefix)] == prefix {
		return s[len(prefix):], true
	}
	return "", false
}

func ptr(s string) *string { return &s }
