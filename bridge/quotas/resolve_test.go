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

// TestSensorsExpire: a rate nobody recorded to for an hour is dropped (a
// sweep runs at most once a minute), as Kafka expires its quota sensors.
func TestSensorsExpire(t *testing.T) {
	s := &Store{entries: map[string]*Entry{}, syncedAt: time.Now().Add(time.Hour)}
	p, _ := json.Marshal(record{V: version, Entity: Entity{{TypeClientID, nil}}, Ops: []Op{{Key: ProducerByteRate, Value: 100}}})
	s.apply(p)
	start := time.Now()
	s.Record(context.Background(), Produce, Anonymous, "a", 10, start)
	s.Record(context.Background(), Produce, Anonymous, "b", 10, start.Add(30*time.Minute))
	if len(s.thr.sensors) != 2 {
		t.Fatalf("%d rates, want 2", len(s.thr.sensors))
	}
	s.Record(context.Background(), Produce, Anonymous, "b", 10, start.Add(61*time.Minute))
	if _, ok := s.thr.sensors[sensorKey{kind: Produce, clientID: "a"}]; ok || len(s.thr.sensors) != 1 {
		t.Fatalf("rates after an idle hour: %v", s.thr.sensors)
	}
}
