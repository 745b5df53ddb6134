package quotas

import "context"

// Anonymous is the user of a connection without SASL, as Kafka names its
// principal: quotas of user ANONYMOUS, else the default user, apply to it.
const Anonymous = "ANONYMOUS"

// level is which kind of entity a resolved quota came from.
type level uint8

const (
	levelUserClient level = iota // user (or default) and client id (or default)
	levelUser                    // user (or default) alone
	levelClient                  // client id (or default) alone
)

func (l level) String() string {
	switch l {
	case levelUserClient:
		return "user_client_id"
	case levelUser:
		return "user"
	}
	return "client_id"
}

// Quota returns the quota of key (bytes per second for the byte rates)
// that applies to a connection of user and clientID, from a view at most
// maxAge old, and false when none applies. The first entity in Kafka's
// precedence (DefaultQuotaCallback) that sets key wins:
//
//	user+client-id, user+default client-id, user,
//	default user+client-id, default user+default client-id, default user,
//	client-id, default client-id.
func (s *Store) Quota(ctx context.Context, user, clientID, key string) (float64, bool) {
	v, _, ok := s.resolve(ctx, user, clientID, key)
	return v, ok
}

func (s *Store) resolve(ctx context.Context, user, clientID, key string) (float64, level, bool) {
	s.fresh(ctx)
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.entries) == 0 {
		return 0, 0, false
	}
	u, c := &user, &clientID
	for i, e := range [...]Entity{
		{{TypeClientID, c}, {TypeUser, u}}, {{TypeClientID, nil}, {TypeUser, u}}, {{TypeUser, u}},
		{{TypeClientID, c}, {TypeUser, nil}}, {{TypeClientID, nil}, {TypeUser, nil}}, {{TypeUser, nil}},
		{{TypeClientID, c}}, {{TypeClientID, nil}},
	} {
		if en := s.entries[e.key()]; en != nil {
			if v, ok := en.Values[key]; ok {
				return v, [...]level{0, 0, 1, 0, 0, 1, 2, 2}[i], true
			}
		}
	}
	return 0, 0, false
}
