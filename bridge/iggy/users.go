package iggy

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/kafka-iggy/kafka-iggy/budget"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Credential is how one Kafka principal logs in to Iggy: a user name and
// password, or a personal access token (Token wins when set).
type Credential struct {
	Username string
	Password string
	Token    string
}

// UsersConfig bounds the per-principal session pools.
type UsersConfig struct {
	// PoolSize is the number of Iggy sessions of one principal's pool.
	PoolSize int
	// MaxPools is how many principals may have a pool at once; a further
	// principal's requests fail with ErrTooManyUsers until one idles out.
	MaxPools int
	// IdleTimeout closes a pool no request used for this long.
	IdleTimeout time.Duration
	// SessionBytes is what one session is charged to the memory budget
	// while its pool is open (its reply and frame buffers).
	SessionBytes int64
}

// ErrTooManyUsers: every pool slot (UsersConfig.MaxPools) is taken, or the
// memory budget has no room for another pool. Retriable: a pool idles out.
var ErrTooManyUsers = errors.New("iggy: too many principals with open Iggy sessions")

// Users keeps one session pool per Kafka principal, each logged in as the
// principal's Iggy user, so Iggy itself checks what the principal may do.
// A context bound to a pool (Bind) makes the home client's calls run on
// that pool; the sidecar's own logs (logpage.go) run on the home client
// whatever the context says (Sidecar). Safe for concurrent use.
type Users struct {
	home   *Client
	cfg    UsersConfig
	log    zerolog.Logger
	budget *budget.Budget
	key    [32]byte // keys pools by HMAC of the secret, never the secret

	mu    sync.Mutex
	pools map[string]*userPool
	done  chan struct{}
	once  sync.Once
}

type userPool struct {
	c       *Client
	user    string
	ready   chan struct{} // closed once the first login settled
	err     error         // the login's refusal (set before ready closes)
	last    time.Time     // guarded by Users.mu
	charged int64
}

// NewUsers makes home's calls follow the pool a context is bound to and
// starts closing idle pools. b (may be nil) is charged per open session.
func NewUsers(home *Client, cfg UsersConfig, b *budget.Budget, log zerolog.Logger) *Users {
	if cfg.PoolSize <= 0 {
		cfg.PoolSize = 1
	}
	if cfg.MaxPools <= 0 {
		cfg.MaxPools = 1
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 5 * time.Minute
	}
	u := &Users{home: home, cfg: cfg, log: log, budget: b, pools: make(map[string]*userPool), done: make(chan struct{})}
	_, _ = rand.Read(u.key[:])
	home.users = u
	go u.reap()
	return u
}

type userCtxKey struct{}

// bound is what a context carries: the pool to run on, or why none.
type bound struct {
	c   *Client
	err error
}

// Sidecar returns ctx with no principal: the home client's own sessions
// serve it (the sidecar-kept logs in __kafka_iggy).
func Sidecar(ctx context.Context) context.Context {
	if ctx.Value(userCtxKey{}) == nil {
		return ctx
	}
	return context.WithValue(ctx, userCtxKey{}, (*bound)(nil))
}

// Refused returns ctx whose Iggy calls fail with err (a principal without
// an Iggy user).
func Refused(ctx context.Context, err error) context.Context {
	return context.WithValue(ctx, userCtxKey{}, &bound{err: err})
}

// ErrNoIggyUser is what a principal without a mapped Iggy user gets from
// every call: Iggy's Unauthorized.
var ErrNoIggyUser = &Error{Op: "user.bind", Err: fmt.Errorf("%w: the principal has no Iggy user (sasl.iggy_users)", icodec.StatusUnauthorized)}

// delegate returns the pool c's call must run on instead of c (nil: c
// itself), or the refusal bound to ctx.
func (c *Client) delegate(ctx context.Context) (*Client, error) {
	if c.users == nil {
		return nil, nil
	}
	b, _ := ctx.Value(userCtxKey{}).(*bound)
	if b == nil {
		return nil, nil
	}
	if b.err != nil {
		return nil, b.err
	}
	if b.c == c {
		return nil, nil
	}
	return b.c, nil
}

// Bind returns ctx bound to cred's pool, opening it (and waiting for its
// first login, within ctx) when there is none. A refused login, no free
// slot or no budget binds the refusal instead, so every call of the
// request fails with it and the client gets an authorization error.
func (u *Users) Bind(ctx context.Context, cred Credential) context.Context {
	p, err := u.pool(ctx, cred)
	if err != nil {
		return Refused(ctx, err)
	}
	return context.WithValue(ctx, userCtxKey{}, &bound{c: p.c})
}

// Open returns how many principal pools are open.
func (u *Users) Open() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.pools)
}

func (u *Users) poolKey(cred Credential) string {
	m := hmac.New(sha256.New, u.key[:])
	m.Write([]byte(cred.Username))
	m.Write([]byte{0})
	m.Write([]byte(cred.Password))
	m.Write([]byte{0})
	m.Write([]byte(cred.Token))
	return hex.EncodeToString(m.Sum(nil))
}

func (u *Users) pool(ctx context.Context, cred Credential) (*userPool, error) {
	key := u.poolKey(cred)
	u.mu.Lock()
	p := u.pools[key]
	if p == nil {
		var err error
		if p, err = u.openLocked(key, cred); err != nil {
			u.mu.Unlock()
			return nil, err
		}
	}
	p.last = time.Now()
	u.mu.Unlock()
	select {
	case <-p.ready:
	case <-ctx.Done():
		return nil, &Error{Op: "user.login", Err: ctxCause(ctx)}
	}
	if p.err != nil {
		return nil, p.err
	}
	return p, nil
}

// openLocked starts a pool for cred. Caller holds u.mu.
func (u *Users) openLocked(key string, cred Credential) (*userPool, error) {
	if len(u.pools) >= u.cfg.MaxPools {
		return nil, &Error{Op: "user.pool", Err: ErrTooManyUsers}
	}
	charge := u.cfg.SessionBytes * int64(u.cfg.PoolSize)
	if charge > 0 && u.budget != nil {
		if got := u.budget.TryUpTo(charge); got < charge {
			u.budget.Release(got)
			return nil, &Error{Op: "user.pool", Err: ErrTooManyUsers}
		}
	}
	cfg := u.home.cfg
	cfg.PoolSize = u.cfg.PoolSize
	cfg.RoutePartitions = false
	cfg.Username, cfg.Password, cfg.PersonalAccessToken = cred.Username, cred.Password, cred.Token
	if p := u.home.Protocol(); p != 0 {
		cfg.Protocol = p.Label()
	}
	name := cred.Username
	if cred.Token != "" {
		name = "(token)"
	}
	log := u.log.With().Str("iggy_user", name).Logger()
	c, err := New(cfg, log, WithMetrics(peerMetrics{u.home.metrics}), WithClientVersion(u.home.version))
	if err != nil {
		u.budget.Release(charge)
		return nil, &Error{Op: "user.pool", Err: fmt.Errorf("%w: %w", icodec.StatusInvalidCredentials, err)}
	}
	c.parent = u.home
	p := &userPool{c: c, user: name, ready: make(chan struct{}), charged: charge}
	u.pools[key] = p
	go u.start(key, p)
	return p, nil
}

// start logs the pool in; a refusal closes it and forgets it, so the
// next request tries again (a fixed password takes effect).
func (u *Users) start(key string, p *userPool) {
	ctx, cancel := context.WithTimeout(context.Background(), max(u.home.cfg.ConnectTimeout, time.Second)*2)
	err := p.c.Start(ctx)
	cancel()
	if err == nil {
		u.log.Info().Str("iggy_user", p.user).Int("sessions", u.cfg.PoolSize).Msg("iggy: principal pool open")
		close(p.ready)
		return
	}
	if !IsUnauthorized(err) {
		err = &Error{Op: "user.login", Err: err}
	}
	p.err = err
	u.log.Warn().Err(err).Str("iggy_user", p.user).Msg("iggy: principal pool login failed")
	close(p.ready)
	u.mu.Lock()
	if u.pools[key] == p {
		delete(u.pools, key)
	}
	u.mu.Unlock()
	_ = p.c.Close()
	u.budget.Release(p.charged)
}

// reap closes pools idle for IdleTimeout.
func (u *Users) reap() {
	t := time.NewTicker(max(u.cfg.IdleTimeout/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-u.done:
			return
		case <-u.home.ctx.Done():
			u.Close()
			return
		case now := <-t.C:
			u.closeIdle(now)
		}
	}
}

func (u *Users) closeIdle(now time.Time) {
	var idle []*userPool
	u.mu.Lock()
	for k, p := range u.pools {
		select {
		case <-p.ready:
		default:
			continue // still logging in
		}
		if now.Sub(p.last) >= u.cfg.IdleTimeout {
			delete(u.pools, k)
			idle = append(idle, p)
		}
	}
	u.mu.Unlock()
	for _, p := range idle {
		u.log.Debug().Str("iggy_user", p.user).Msg("iggy: principal pool idle, closed")
		_ = p.c.Close()
		u.budget.Release(p.charged)
	}
}

// Close closes every pool. Idempotent.
func (u *Users) Close() {
	u.once.Do(func() { close(u.done) })
	u.mu.Lock()
	pools := u.pools
	u.pools = make(map[string]*userPool)
	u.mu.Unlock()
	for _, p := range pools {
		<-p.ready
		_ = p.c.Close()
		u.budget.Release(p.charged)
	}
}
