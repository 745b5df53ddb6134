package txn

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
	"github.com/kafka-iggy/kafka-iggy/codec/records"
)

// Config tunes the transaction coordinator; keys are relative to where the
// bridge mounts it (transactions.*).
type Config struct {
	// MaxTimeout is the largest transaction.timeout.ms a producer may ask
	// for in InitProducerId (Kafka's broker config
	// transaction.max.timeout.ms); a larger one, or one not above 0, is
	// answered INVALID_TRANSACTION_TIMEOUT. Default 15m (900000 ms).
	MaxTimeout time.Duration `koanf:"max_timeout"`
	// IDExpiration is how long a transactional id without a transaction in
	// progress is kept after its last change (Kafka's
	// transactional.id.expiration.ms); then its state is dropped and its
	// next InitProducerId gets a new producer id. Default 168h (7 days).
	IDExpiration time.Duration `koanf:"id_expiration"`
	// CheckInterval is how often the coordinator aborts the transactions
	// past their timeout, finishes decided ones whose markers are not all
	// written (after a crash or a failed write) and expires ids (Kafka's
	// transaction.abort.timed.out.transaction.cleanup.interval.ms). Default
	// 10s.
	CheckInterval time.Duration `koanf:"check_interval"`
	// ProducerCheck is how long a producer's local sidecar trusts what it
	// learned of a transactional producer (its epoch, its open transaction)
	// before its next transactional Produce asks the coordinator again, so
	// that a zombie fenced by an InitProducerId through another sidecar is
	// refused (INVALID_PRODUCER_EPOCH) within this time; 0 turns the check
	// off (read_committed readers drop a zombie's records anyway). Default
	// 500ms.
	ProducerCheck time.Duration `koanf:"producer_check"`
	// SnapshotEvery is how many decision-log records a coordinator reads
	// between two snapshots it writes of the whole state (every id's
	// producer id, epoch and transaction, every shard's claim, and the log
	// offset the snapshot covers) to the snapshot logs beside the decision
	// log (topics `<log>.snap.0` and `.snap.1`, the two latest); a new owner
	// loads the latest snapshot and reads only
	// the records after it. 0 writes none (a log without snapshots is read
	// from its first record). Default 1000.
	SnapshotEvery int `koanf:"snapshot_every"`
	// MaxIDs bounds the transactional ids the coordinator holds in memory:
	// every id of the coordination domain's decision log (each sidecar of
	// the domain replays all of it). An InitProducerId for a new id when
	// MaxIDs are held first drops the ids this sidecar owns that are past
	// id_expiration, then, if none was, answers COORDINATOR_LOAD_IN_PROGRESS
	// (clients retry it until their max.block.ms; Kafka has no such bound).
	// Known ids are always served. Default 100000.
	MaxIDs int `koanf:"max_ids"`
}

// DefaultConfig is Kafka's defaults.
func DefaultConfig() Config {
	return Config{MaxTimeout: 15 * time.Minute, IDExpiration: 7 * 24 * time.Hour, CheckInterval: 10 * time.Second, ProducerCheck: 500 * time.Millisecond,
		MaxIDs: 100000, SnapshotEvery: 1000}
}

// Validate reports every bad value, with its transactions.* key.
func (c Config) Validate() error {
	var errs []error
	if c.MaxTimeout < time.Millisecond || c.MaxTimeout > time.Duration(1<<31-1)*time.Millisecond {
		errs = append(errs, fmt.Errorf("transactions.max_timeout: must be 1ms..2147483647ms, got %s", c.MaxTimeout))
	}
	if c.IDExpiration < time.Millisecond {
		errs = append(errs, fmt.Errorf("transactions.id_expiration: must be at least 1ms, got %s", c.IDExpiration))
	}
	if c.CheckInterval < time.Millisecond {
		errs = append(errs, fmt.Errorf("transactions.check_interval: must be at least 1ms, got %s", c.CheckInterval))
	}
	if c.ProducerCheck < 0 {
		errs = append(errs, fmt.Errorf("transactions.producer_check: must not be negative, got %s", c.ProducerCheck))
	}
	if c.SnapshotEvery < 0 {
		errs = append(errs, fmt.Errorf("transactions.snapshot_every: must not be negative, got %d", c.SnapshotEvery))
	}
	if c.MaxIDs < 1 {
		errs = append(errs, fmt.Errorf("transactions.max_ids: must be at least 1, got %d", c.MaxIDs))
	}
	return errors.Join(errs...)
}

// GroupOffsets resolves the offsets a transaction committed for a group
// (TxnOffsetCommit, kept pending by the group's coordinator): made visible
// on commit, dropped on abort. Called once per group added with
// AddOffsetsToTxn, after the transaction's markers; calls for a
// transaction already resolved must be harmless (recovery calls again).
type GroupOffsets interface {
	ResolveTxnOffsets(ctx context.Context, group string, producerID int64, epoch int16, commit bool) error
}

// Deps are what the coordinator needs of the sidecar.
type Deps struct {
	Client *iggy.Client
	// Ref maps a Kafka topic to its Iggy topic.
	Ref func(topic string) iggy.TopicRef
	// NewProducerID leases a producer id unique across the domain
	// (bridge/producers).
	NewProducerID func(ctx context.Context) (int64, error)
	// Offsets resolves a transaction's group offsets.
	Offsets GroupOffsets
	// Wake wakes fetches waiting on a partition (after a marker).
	Wake func(topic string, partition int32)
	// Log is the decision log; zero: __kafka_iggy/transactions.
	Log iggy.TopicRef
}

// DefaultLog is the decision log of a sidecar without a domain.
var DefaultLog = iggy.TopicRef{Stream: "__kafka_iggy", Topic: "transactions"}

var logConsumer = icodec.Consumer{
	Kind: icodec.ConsumerKindConsumer,
	ID:   icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte("kafka-iggy.txn")},
}

// Coordinator is the transaction coordinator of the transactional ids this
// sidecar owns.
type Coordinator struct {
	cfg  Config
	deps Deps
	log  zerolog.Logger
	now  func() time.Time

	mu   sync.Mutex // guards txns, f, claims, mine and verdicts
	f    iggy.LogFollower
	txns map[string]*Txn

	// The claims of the decision log's shards (fence.go): each shard's
	// current claim, this coordinator's own, and the outcome of the
	// records it appended until it reads them back (by Txn.Nonce).
	claims   map[int]ClaimRef
	mine     map[int]ClaimRef
	verdicts map[uint64]uint8
	claimMu  sync.Mutex // one claim taken at a time
	instance uint64     // names this coordinator in its claims
	hook     func(point string, t *Txn)

	syncMu sync.Mutex // one log read at a time
	snap   snapState  // the snapshots (snapshot.go), guarded by mu

	locksMu sync.Mutex
	locks   map[string]*idLock

	ownsMu sync.RWMutex
	owns   func(id string) bool // nil: every id
	shard  func(id string) int  // nil: shard 0

	stop chan struct{}
	done chan struct{}
}

type idLock struct {
	mu sync.Mutex
	n  int
}

// New returns a coordinator; Start runs its sweep.
func New(cfg Config, d Deps, log zerolog.Logger) *Coordinator {
	if d.Log == (iggy.TopicRef{}) {
		d.Log = DefaultLog
	}
	return &Coordinator{cfg: cfg, deps: d, log: log, now: time.Now, txns: map[string]*Txn{}, locks: map[string]*idLock{},
		claims: map[int]ClaimRef{}, mine: map[int]ClaimRef{}, verdicts: map[uint64]uint8{}, instance: nonce()}
}

// SetLog names the decision log (the cluster router: one per coordination
// domain); call it before the coordinator is used.
func (c *Coordinator) SetLog(ref iggy.TopicRef) { c.deps.Log = ref }

// SetOwns restricts the sweep, and the claims of the decision log's shards
// (fence.go), to the ids owns accepts (the cluster router: the ids of the
// shards this sidecar owns); shard is an id's shard.
func (c *Coordinator) SetOwns(owns func(id string) bool, shard func(id string) int) {
	c.ownsMu.Lock()
	c.owns, c.shard = owns, shard
	c.ownsMu.Unlock()
}

func (c *Coordinator) owned(id string) bool {
	c.ownsMu.RLock()
	defer c.ownsMu.RUnlock()
	return c.owns == nil || c.owns(id)
}

// Start runs the sweep (timeouts, unfinished decisions, expiry) every
// CheckInterval, the first at once, until Close.
func (c *Coordinator) Start() {
	c.stop, c.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(c.done)
		t := time.NewTicker(c.cfg.CheckInterval)
		defer t.Stop()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), c.cfg.CheckInterval+30*time.Second)
			c.Sweep(ctx)
			cancel()
			select {
			case <-c.stop:
				return
			case <-t.C:
			}
		}
	}()
}

// Close stops the sweep.
func (c *Coordinator) Close() {
	if c.stop != nil {
		close(c.stop)
		<-c.done
		c.stop = nil
	}
	c.snap.writers.Wait()
}

// lock serialises the decisions of one transactional id.
func (c *Coordinator) lock(id string) func() {
	c.locksMu.Lock()
	l := c.locks[id]
	if l == nil {
		l = &idLock{}
		c.locks[id] = l
	}
	l.n++
	c.locksMu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		c.locksMu.Lock()
		if l.n--; l.n == 0 {
			delete(c.locks, id)
		}
		c.locksMu.Unlock()
	}
}

// sync reads the decision log to its end.
func (c *Coordinator) sync(ctx context.Context) error {
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	c.loadSnapshot(ctx)
	_, err := c.f.Sync(ctx, c.deps.Client, logConsumer, c.deps.Log, 1000, &c.mu, func(p []byte) {
		c.snap.read++
		c.applyRecordLocked(p)
	})
	if err == nil {
		c.maybeSnapshot()
	}
	return err
}

// applyLocked applies transaction record t read from the log, unless it
// is void (fence.go).
func (c *Coordinator) applyLocked(t *Txn) {
	valid := c.validLocked(t)
	if _, mine := c.verdicts[t.Nonce]; mine && t.Nonce != 0 {
		c.verdicts[t.Nonce] = verdictVoid
		if valid {
			c.verdicts[t.Nonce] = verdictApplied
		}
	}
	if !valid {
		c.log.Debug().Str("transactional_id", t.ID).Int("shard", t.Claim.Shard).Int32("claim_epoch", t.Claim.Epoch).
			Msg("transactions: a decision-log record written under a superseded claim is void")
		return
	}
	if t.State == Dead {
		delete(c.txns, t.ID)
		return
	}
	c.txns[t.ID] = t
}

// get returns a copy of id's state after reading the log; nil when unknown.
func (c *Coordinator) get(ctx context.Context, id string) (*Txn, error) {
	if err := c.sync(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.txns[id]; t != nil {
		return t.clone(), nil
	}
	return nil, nil
}

// loadCode is the answer while Iggy cannot be read or written: retriable.
var loadCode = kerr.CoordinatorLoadInProgress.Code

// InitParams is an InitProducerId with a transactional id.
type InitParams struct {
	ID         string
	TimeoutMs  int32
	ProducerID int64 // v3+: the producer's current id and epoch, else -1
	Epoch      int16
}

// InitResult answers InitProducerId.
type InitResult struct {
	Code       int16
	ProducerID int64
	Epoch      int16
}

// InitProducerID gives id's producer a producer id and a new epoch,
// fencing the previous epoch: its open transaction is aborted first.
func (c *Coordinator) InitProducerID(ctx context.Context, p InitParams) InitResult {
	fail := func(code int16) InitResult { return InitResult{Code: code, ProducerID: -1, Epoch: -1} }
	if p.TimeoutMs <= 0 || time.Duration(p.TimeoutMs)*time.Millisecond > c.cfg.MaxTimeout {
		return fail(kerr.InvalidTransactionTimeout.Code)
	}
	defer c.lock(p.ID)()
	t, cl, err := c.begin(ctx, p.ID)
	if err != nil {
		if !errors.Is(err, errDeposed) {
			c.log.Warn().Err(err).Str("transactional_id", p.ID).Msg("transactions: reading the decision log failed")
		}
		return fail(errCode(err, loadCode))
	}
	if t == nil {
		if !c.admitNew(ctx, p.ID) {
			return fail(loadCode)
		}
		pid, err := c.deps.NewProducerID(ctx)
		if err != nil {
			c.log.Warn().Err(err).Str("transactional_id", p.ID).Msg("transactions: leasing a producer id failed")
			return fail(loadCode)
		}
		t = &Txn{ID: p.ID, ProducerID: pid, Epoch: 0, State: Empty, StartMs: -1, TimeoutMs: p.TimeoutMs}
		if err := c.put(ctx, cl, t); err != nil {
			return fail(errCode(err, loadCode))
		}
		return InitResult{ProducerID: t.ProducerID, Epoch: t.Epoch}
	}
	if p.ProducerID >= 0 && (p.ProducerID != t.ProducerID || (p.Epoch != t.Epoch && p.Epoch != t.Epoch-1)) && !t.retryOfBump(p.ProducerID, p.Epoch) {
		return fail(kerr.ProducerFenced.Code)
	}
	switch t.State {
	case PrepareCommit, PrepareAbort:
		if err := c.finish(ctx, cl, t); err != nil {
			return fail(errCode(err, kerr.ConcurrentTransactions.Code))
		}
	case Ongoing:
		// A new instance of the producer: the old one's transaction is
		// aborted (fenced: the epoch is bumped before the decision).
		if err := c.decide(ctx, cl, t, false, true, false); err != nil {
			return fail(errCode(err, kerr.ConcurrentTransactions.Code))
		}
	}
	t.TimeoutMs = p.TimeoutMs
	if t.Epoch >= 32766 { // the epoch would run out: a new producer id (KIP-360)
		pid, err := c.deps.NewProducerID(ctx)
		if err != nil {
			return fail(loadCode)
		}
		t.ProducerID, t.Epoch, t.Seq = pid, 0, 0
	} else {
		t.Epoch++
	}
	t.State, t.Parts, t.Groups, t.StartMs = Empty, nil, nil, -1
	t.Bumped, t.MarkPID = false, 0
	if err := c.put(ctx, cl, t); err != nil {
		return fail(errCode(err, loadCode))
	}
	return InitResult{ProducerID: t.ProducerID, Epoch: t.Epoch}
}

// check is the producer check of AddPartitionsToTxn, AddOffsetsToTxn and
// EndTxn: the id is known, maps to pid, and epoch is its current one.
func check(t *Txn, pid int64, epoch int16) int16 {
	switch {
	case t == nil || t.ProducerID != pid:
		return kerr.InvalidProducerIDMapping.Code
	case epoch != t.Epoch:
		return kerr.ProducerFenced.Code
	}
	return 0
}

// AddResult answers AddPartitionsToTxn: one code per partition, and the
// transaction's sequence and mark epoch when they were added.
type AddResult struct {
	Code      int16 // for every partition when set
	Codes     []int16
	Seq       uint32
	MarkEpoch int16
}

// AddPartitions adds partitions to id's transaction, starting one when
// none is open.
func (c *Coordinator) AddPartitions(ctx context.Context, id string, pid int64, epoch int16, parts []Partition) AddResult {
	defer c.lock(id)()
	t, cl, code := c.open(ctx, id, pid, epoch)
	if code != 0 {
		return AddResult{Code: code}
	}
	n := len(t.Parts)
	for _, p := range parts {
		if !t.hasPart(p) {
			t.Parts = append(t.Parts, p)
		}
	}
	if len(t.Parts) != n || t.State != Ongoing {
		t.State = Ongoing
		if err := c.put(ctx, cl, t); err != nil {
			return AddResult{Code: errCode(err, loadCode)}
		}
	}
	return AddResult{Codes: make([]int16, len(parts)), Seq: t.Seq, MarkEpoch: t.MarkEpoch}
}

// AddOffsets adds group to id's transaction (its offsets commit with it).
func (c *Coordinator) AddOffsets(ctx context.Context, id string, pid int64, epoch int16, group string) int16 {
	defer c.lock(id)()
	t, cl, code := c.open(ctx, id, pid, epoch)
	if code != 0 {
		return code
	}
	if !slices.Contains(t.Groups, group) || t.State != Ongoing {
		if !slices.Contains(t.Groups, group) {
			t.Groups = append(t.Groups, group)
		}
		t.State = Ongoing
		if err := c.put(ctx, cl, t); err != nil {
			return errCode(err, loadCode)
		}
	}
	return 0
}

// open checks the producer and returns id's state with a transaction open
// in memory (a new one, with the next sequence, when none was); the caller
// holds id's lock and puts it under the claim returned.
func (c *Coordinator) open(ctx context.Context, id string, pid int64, epoch int16) (*Txn, ClaimRef, int16) {
	t, cl, err := c.begin(ctx, id)
	if err != nil {
		return nil, cl, errCode(err, loadCode)
	}
	if code := check(t, pid, epoch); code != 0 {
		return nil, cl, code
	}
	switch t.State {
	case PrepareCommit, PrepareAbort:
		if err := c.finish(ctx, cl, t); err != nil {
			return nil, cl, errCode(err, kerr.ConcurrentTransactions.Code)
		}
		fallthrough
	case Empty, CompleteCommit, CompleteAbort:
		t.Seq++
		t.State, t.Parts, t.Groups = Ongoing, nil, nil
		t.StartMs, t.MarkEpoch = c.now().UnixMilli(), t.Epoch
		t.Bumped, t.MarkPID = false, 0
	}
	return t, cl, 0
}

// EndTxn commits or aborts id's transaction: the Prepare record is the
// decision; then the markers, the groups' offsets and the Complete record.
// A retried EndTxn of a finished transaction with the same outcome
// answers 0.
func (c *Coordinator) EndTxn(ctx context.Context, id string, pid int64, epoch int16, commit bool) int16 {
	defer c.lock(id)()
	t, cl, err := c.begin(ctx, id)
	if err != nil {
		return errCode(err, loadCode)
	}
	if code := check(t, pid, epoch); code != 0 {
		return code
	}
	same := func(prep, done State) bool {
		return (commit && (t.State == prep || t.State == done)) || (!commit && (t.State == prep+1 || t.State == done+1))
	}
	switch {
	case t.State == Ongoing:
		// The answer is 0 once the decision counts (its record was read
		// back applied), whatever happens to its markers.
		if err := c.decide(ctx, cl, t, commit, false, false); err != nil && t.State == Ongoing {
			return errCode(err, loadCode)
		}
		return 0
	case same(PrepareCommit, CompleteCommit):
		if t.State == PrepareCommit || t.State == PrepareAbort {
			_ = c.finish(ctx, cl, t) // the decision stands; the sweep retries
		}
		return 0
	}
	return kerr.InvalidTxnState.Code
}

// decide appends t's decision (fencing: the epoch is bumped first; v2:
// the epoch moves on for the producer's next transaction, v2.go), then
// finishes it. An error before the decision counts (also: the decision
// record was void, errDeposed: no marker is written) leaves t Ongoing;
// after it, t is Prepare* and the sweep finishes it.
func (c *Coordinator) decide(ctx context.Context, cl ClaimRef, t *Txn, commit, fence, v2 bool) error {
	d := t.clone()
	d.State = PrepareAbort
	if commit {
		d.State = PrepareCommit
	}
	if fence && d.Epoch < 32767 {
		d.Epoch++
	} else if v2 && !fence {
		if err := c.bump(ctx, d); err != nil {
			return err
		}
	}
	if err := c.put(ctx, cl, d); err != nil {
		return err
	}
	*t = *d
	return c.finish(ctx, cl, t)
}

// finish writes the markers of t's decided transaction, resolves its
// groups' offsets and appends Complete*, under claim cl (the markers carry
// its epoch). Idempotent: run again after a failure or by a new owner.
// The caller read t's decision as counting under cl.
func (c *Coordinator) finish(ctx context.Context, cl ClaimRef, t *Txn) error {
	commit := t.State == PrepareCommit
	ctl := records.ControlAbort
	if commit {
		ctl = records.ControlCommit
	}
	mark := records.TxnMark{ProducerID: t.markPID(), Epoch: t.MarkEpoch, Seq: t.Seq}
	hdrs := records.AppendTxnMarkerHeaders(nil, ctl, mark, cl.Epoch)
	for _, p := range t.Parts {
		msgs := c.deps.Client.NewMessages()
		var d records.Decoder
		if err := msgs.Add(d.NewID(), uint64(c.now().UnixMicro()), records.MarkerPayload, hdrs); err != nil {
			msgs.Release()
			return err
		}
		if _, err := c.deps.Client.Send(ctx, c.deps.Ref(p.Topic), uint32(p.Partition), msgs); err != nil {
			if iggy.IsNotFound(err) { // topic or partition deleted: nothing to mark
				continue
			}
			c.log.Warn().Err(err).Str("transactional_id", t.ID).Str("topic", p.Topic).Int32("partition", p.Partition).
				Msg("transactions: writing a marker failed; retried by the sweep")
			return err
		}
		if c.deps.Wake != nil {
			c.deps.Wake(p.Topic, p.Partition)
		}
	}
	for _, g := range t.Groups {
		if c.deps.Offsets == nil {
			break
		}
		if err := c.deps.Offsets.ResolveTxnOffsets(ctx, g, t.markPID(), t.MarkEpoch, commit); err != nil {
			c.log.Warn().Err(err).Str("transactional_id", t.ID).Str("group", g).
				Msg("transactions: resolving the group's transactional offsets failed; retried by the sweep")
			return err
		}
	}
	d := t.clone()
	d.State = CompleteAbort
	if commit {
		d.State = CompleteCommit
	}
	d.Parts, d.Groups, d.StartMs = nil, nil, -1
	if err := c.put(ctx, cl, d); err != nil {
		return err
	}
	*t = *d
	return nil
}

// Sweep aborts the transactions past their timeout (bumping the epoch, as
// Kafka does, so the producer is fenced), finishes decided transactions
// whose markers are not all written and drops ids expired, for the ids
// this sidecar owns.
func (c *Coordinator) Sweep(ctx context.Context) {
	if err := c.sync(ctx); err != nil {
		c.log.Warn().Err(err).Msg("transactions: reading the decision log failed")
		return
	}
	now := c.now().UnixMilli()
	var ids []string
	c.mu.Lock()
	for id, t := range c.txns {
		switch {
		case t.State == PrepareCommit || t.State == PrepareAbort,
			t.State == Ongoing && now-t.StartMs > int64(t.TimeoutMs),
			t.State != Ongoing && now-t.UpdateMs > c.cfg.IDExpiration.Milliseconds():
			ids = append(ids, id)
		}
	}
	c.mu.Unlock()
	for _, id := range ids {
		if !c.owned(id) {
			continue
		}
		c.sweepOne(ctx, id, now)
	}
}

func (c *Coordinator) sweepOne(ctx context.Context, id string, now int64) {
	defer c.lock(id)()
	t, cl, err := c.begin(ctx, id)
	if err != nil || t == nil {
		return
	}
	switch {
	case t.State == PrepareCommit || t.State == PrepareAbort:
		if err := c.finish(ctx, cl, t); err == nil {
			c.log.Info().Str("transactional_id", id).Str("state", t.State.String()).Msg("transactions: finished a decided transaction")
		}
	case t.State == Ongoing && now-t.StartMs > int64(t.TimeoutMs):
		if err := c.decide(ctx, cl, t, false, true, false); err == nil {
			c.log.Info().Str("transactional_id", id).Int64("producer_id", t.ProducerID).Msg("transactions: aborted a transaction past its timeout")
		}
	case t.State != Ongoing && now-t.UpdateMs > c.cfg.IDExpiration.Milliseconds():
		t.State = Dead
		_ = c.put(ctx, cl, t)
	}
}

// Description is a transactional id's state, as DescribeTransactions and
// ListTransactions show it.
type Description struct {
	Code       int16
	ID         string
	State      State
	ProducerID int64
	Epoch      int16
	TimeoutMs  int32
	StartMs    int64
	Parts      []Partition
}

// Describe returns id's state; TRANSACTIONAL_ID_NOT_FOUND when unknown.
func (c *Coordinator) Describe(ctx context.Context, id string) Description {
	t, err := c.get(ctx, id)
	switch {
	case err != nil:
		return Description{Code: loadCode, ID: id}
	case t == nil:
		return Description{Code: kerr.TransactionalIDNotFound.Code, ID: id}
	}
	return Description{ID: id, State: t.State, ProducerID: t.ProducerID, Epoch: t.Epoch, TimeoutMs: t.TimeoutMs, StartMs: t.StartMs, Parts: t.Parts}
}

// List returns the ids this sidecar owns (their states and producers).
func (c *Coordinator) List(ctx context.Context) ([]Description, int16) {
	if err := c.sync(ctx); err != nil {
		return nil, loadCode
	}
	c.mu.Lock()
	var out []Description
	for id, t := range c.txns {
		out = append(out, Description{ID: id, State: t.State, ProducerID: t.ProducerID, Epoch: t.Epoch, TimeoutMs: t.TimeoutMs, StartMs: t.StartMs})
	}
	c.mu.Unlock()
	out = slices.DeleteFunc(out, func(d Description) bool { return !c.owned(d.ID) })
	return out, 0
}

// View is what a producer's local sidecar needs to admit its transactional
// batches (Gate): the producer's epoch, its open transaction's sequence and
// partitions.
type View struct {
	Code       int16
	ProducerID int64
	Epoch      int16
	Open       bool
	Seq        uint32
	MarkEpoch  int16
	Parts      []Partition
}

// Producer returns id's view for the local sidecar of its producer
// (KIP-890's verification, when that sidecar has no view: after a
// restart).
func (c *Coordinator) Producer(ctx context.Context, id string) View {
	t, err := c.get(ctx, id)
	switch {
	case err != nil:
		return View{Code: loadCode}
	case t == nil:
		return View{Code: kerr.InvalidProducerIDMapping.Code}
	}
	return View{ProducerID: t.ProducerID, Epoch: t.Epoch, Open: t.State == Ongoing, Seq: t.Seq, MarkEpoch: t.MarkEpoch, Parts: t.Parts}
}
