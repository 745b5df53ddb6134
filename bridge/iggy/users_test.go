package iggy

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/budget"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/embedded/embedtest"
)

// TestUsersPools: a context bound to a principal's pool runs the home
// client's calls as that Iggy user (Iggy refuses what it may not do); the
// sidecar's own calls (Sidecar) stay the home user's; a wrong password, a
// full pool table and a budget without room are refusals the calls
// return; an idle pool is closed and its budget returned.
func TestUsersPools(t *testing.T) {
	srv := embedtest.Start(t, "127.0.0.1:0", nil)
	home := startClient(t, testConfig(srv.Addr().String()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := home.EnsureStream(ctx, "kafka"); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"reader", "other"} {
		if err := home.Do(ctx, &icodec.CreateUserRequest{Username: u, Password: u + "-pw", Status: icodec.UserStatusActive}, nil); err != nil {
			t.Fatal(err)
		}
	}
	b := budget.New(1 << 20)
	users := NewUsers(home, UsersConfig{PoolSize: 2, MaxPools: 1, IdleTimeout: 100 * time.Millisecond, SessionBytes: 256 << 10}, b, zerolog.New(io.Discard))
	defer users.Close()

	reader := users.Bind(ctx, Credential{Username: "reader", Password: "reader-pw"})
	if _, err := home.CreateStream(reader, "not-yours"); !IsUnauthorized(err) {
		t.Fatalf("a user without permissions creating a stream: %v, want Unauthorized", err)
	}
	if _, err := home.CreateStream(Sidecar(reader), "the-sidecars"); err != nil {
		t.Fatalf("the sidecar's own call under a bound context: %v", err)
	}
	if users.Open() != 1 || b.InUse() != 512<<10 {
		t.Errorf("open pools %d, budget in use %d; want 1 and 2 x 256 KiB", users.Open(), b.InUse())
	}
	if err := home.Ping(users.Bind(ctx, Credential{Username: "other", Password: "other-pw"})); !errors.Is(err, ErrTooManyUsers) {
		t.Errorf("a second principal past principals.max: %v, want ErrTooManyUsers", err)
	}
	embedtest.WaitFor(t, 10*time.Second, "the idle pool closed", func() bool { return users.Open() == 0 && b.InUse() == 0 })
	if err := home.Ping(users.Bind(ctx, Credential{Username: "other", Password: "wrong-pw"})); !IsUnauthorized(err) {
		t.Errorf("a wrong password: %v, want Unauthorized", err)
	}
	embedtest.WaitFor(t, 10*time.Second, "the refused pool forgotten", func() bool { return users.Open() == 0 && b.InUse() == 0 })
	small := NewUsers(startClient(t, testConfig(srv.Addr().String())), UsersConfig{PoolSize: 8, MaxPools: 4, IdleTimeout: time.Minute, SessionBytes: 256 << 10}, budget.New(1<<20), zerolog.New(io.Discard))
	defer small.Close()
	if _, err := small.pool(ctx, Credential{Username: "other", Password: "other-pw"}); !errors.Is(err, ErrTooManyUsers) {
		t.Errorf("8 sessions x 256 KiB on a 1 MiB budget: %v, want ErrTooManyUsers", err)
	}
}
