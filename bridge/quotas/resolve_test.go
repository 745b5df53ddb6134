package quotas

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// TestQuotaPrecedence: the quota applying to a user and client id is the
// one of the first entity in Kafka's order that sets the key, per key.
func TestQuotaPrecedence(t *testing.T) {
	s := &Store{entries: map[string]*Entry{}, syncedAt: time.Now().Add(time.Hour)}
	str := func(v string) *string { return &v }
	set := func(v float64, e ...Component) {
		p, _ := json.Marshal(record{V: version, Entity: e, Ops: []Op{{Key: ProducerByteRate, Value: v}}})
		s.apply(p)
	}
	alice, app := str("alice"), str("app")
	levels := []Entity{
		{{TypeUser, alice}, {TypeClientID, app}}, {{TypeUser, alice}, {TypeClientID, nil}}, {{TypeUser, alice}},
		{{TypeUser, nil}, {TypeClientID, app}}, {{TypeUser, nil}, {TypeClientID, nil}}, {{TypeUser, nil}},
		{{TypeClientID, app}}, {{TypeClientID, nil}},
	}
	// Set from the lowest level up: each new one must win.
	for i := len(levels) - 1; i >= 0; i-- {
		set(float64(i+1), levels[i]...)
		if v, ok := s.Quota(context.Background(), "alice", "app", ProducerByteRate); !ok || v != float64(i+1) {
			t.Fatalf("level %d: got %v %v", i, v, ok)
		}
	}
	// Another user and client id fall to the defaults.
	if v, _ := s.Quota(context.Background(), "bob", "other", ProducerByteRate); v != 5 {
		t.Fatalf("bob/other: %v", v)
	}
	if _, ok := s.Quota(context.Background(), "alice", "app", ConsumerByteRate); ok {
		t.Fatal("a key nobody set applies")
	}
	// Removing the top level's key uncovers the next.
	p, _ := json.Marshal(record{V: version, Entity: levels[0], Ops: []Op{{Key: ProducerByteRate, Remove: true}}})
	s.apply(p)
	if v, _ := s.Quota(context.Background(), "alice", "app", ProducerByteRate); v != 2 {
		t.Fatalf("after removal: %v", v)
	}
}
