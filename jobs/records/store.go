package records

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/quota"
	"github.com/codeinterp/codeinterp/jobs/threadq"
)

// ErrNotFound means no execution has the id (for this tenant).
var ErrNotFound = errors.New("execution not found")

// ProfileMismatch refuses a record naming a profile other than its thread's.
type ProfileMismatch struct {
	Thread  string
	Profile string // the thread's
}

func (e *ProfileMismatch) Error() string {
	return fmt.Sprintf("thread %s runs in profile %q", e.Thread, e.Profile)
}

// ErrIdempotencyMismatch means an Idempotency-Key was reused with a different request.
var ErrIdempotencyMismatch = errors.New("idempotency key reused with a different request")

// Config configures [New].
type Config struct {
	Prefix string        // namespaces every key; default "ci:"
	TTL    time.Duration // how long records are kept; default 7 days
	// Threads is the per-thread queue a thread's new record joins; required.
	Threads *threadq.Queue
	// OnEnd, if set, is called after a record reaches a terminal status (once: only
	// the transition that ends it calls it). It queues the webhook delivery.
	OnEnd func(ctx context.Context, ex *jobs.Execution)
	// Blocking, if set, is the client of blocking stream reads (Events), with a pool
	// of its own; default the main client.
	Blocking redis.UniversalClient
	// Quotas, if set, bounds each tenant's active executions and thread queues.
	Quotas func(tenant string) quota.Limits
	// OpTTL is how long the record of an awaited operation (jobs.Kind.Awaited)
	// lives: long enough for it to reach the front of its thread's queue behind the
	// longest run (a delete still happens after its caller stopped waiting), short
	// enough that a loop of abandoned requests cannot fill Redis. Default MinOpTTL.
	OpTTL time.Duration
	Now   func() time.Time
}

// MinOpTTL is the shortest OpTTL.
const MinOpTTL = 15 * time.Minute

// Store keeps execution records in Redis.
type Store struct {
	rdb        redis.UniversalClient
	blocking   redis.UniversalClient
	prefix     string
	ttl        time.Duration // how long records live; artifacts live as long
	idempotent time.Duration // how long an Idempotency-Key is remembered
	opTTL      time.Duration
	threads    *threadq.Queue
	onEnd      func(context.Context, *jobs.Execution)
	quotas     func(string) quota.Limits
	now        func() time.Time
}

// New returns the record store over rdb. It does no I/O.
func New(rdb redis.UniversalClient, cfg Config) *Store {
	ttl := cmp.Or(cfg.TTL, 7*24*time.Hour)
	s := &Store{
		rdb: rdb, blocking: cfg.Blocking, prefix: cmp.Or(cfg.Prefix, "ci:"), ttl: ttl,
		idempotent: max(24*time.Hour, min(ttl, 7*24*time.Hour)),
		threads:    cfg.Threads, onEnd: cfg.OnEnd, quotas: cfg.Quotas, now: cfg.Now,
		opTTL: min(max(cfg.OpTTL, MinOpTTL), ttl),
	}
	if s.blocking == nil {
		s.blocking = rdb
	}
	if s.quotas == nil {
		s.quotas = func(string) quota.Limits { return quota.Limits{} }
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// TTL returns how long records are kept.
func (s *Store) TTL() time.Duration { return s.ttl }

// OpTTL returns how long an awaited operation's record is kept.
func (s *Store) OpTTL() time.Duration { return s.opTTL }

// recordTTL is how long a new record of kind k lives.
func (s *Store) recordTTL(k jobs.Kind) time.Duration {
	if k.Awaited() {
		return s.opTTL
	}
	return s.ttl
}

//go:embed lua/create.lua
var createSrc string

var createScript = redis.NewScript(createSrc)

// Created is the outcome of [Store.Create].
type Created struct {
	ID      string
	Created bool // false: the idempotency key named an earlier record, ID
	// Owner is, for a thread, the live worker serving it, which has been woken; when
	// "" the thread was offered to every worker.
	Owner string
}

// Create stores a new queued record and, for a thread, appends it to the thread's
// queue in the same atomic step. With an idempotency key, a second Create with the
// same tenant and key returns the first record's id and Created=false instead; with a
// different requestHash it returns ErrIdempotencyMismatch. A thread keeps the profile
// its first record named: a record naming another is refused with a
// *ProfileMismatch (a record naming none, an operation, joins whatever it is). A
// record that counts (jobs.Kind.Counted: code, and the API's operations but a delete)
// past the tenant's active or thread-queue quota is refused with a *quota.Exceeded, and
// counts among the tenant's active ones until it ends. An awaited operation's record
// lives OpTTL, not the records' TTL.
func (s *Store) Create(ctx context.Context, ex *jobs.Execution, idemKey, requestHash string) (Created, error) {
	data, err := json.Marshal(ex)
	if err != nil {
		return Created{}, err
	}
	ik := s.noIdemKey()
	if idemKey != "" {
		ik = s.idemKey(ex.Tenant, idemKey)
	}
	tk := jobs.NewThreadKey(ex.Tenant, ex.ThreadID)
	push := s.threads.PushTarget(tk)
	keys := []string{ik, s.recordKey(ex.ID), s.tenantIndex(ex.Tenant), push.Queue, push.Owner, s.threadIndex(tk), push.Workers, push.Unowned, push.Offers,
		s.activeIndex(ex.Tenant), s.threadProfile(tk)}
	q := s.quotas(ex.Tenant)
	res, err := createScript.Run(ctx, s.rdb, keys,
		idemKey != "", ex.ID, requestHash, string(ex.Status), data,
		int(s.ttl.Seconds()), int(s.idempotent.Seconds()),
		ex.CreatedAt.UnixMilli(), ex.ThreadID != "", string(tk), push.WakePrefix,
		push.NowMS, push.BeatTTLMS, ex.Kind == jobs.KindExecution, q.Active, q.ThreadQueue, ex.Profile,
		ex.Kind.Counted(), int(s.recordTTL(ex.Kind).Seconds())).StringSlice()
	if err != nil {
		return Created{}, fmt.Errorf("create execution record: %w", err)
	}
	if res[0] == "profile" {
		return Created{}, &ProfileMismatch{Thread: ex.ThreadID, Profile: res[1]}
	}
	if res[0] == "quota" {
		limit, _ := strconv.ParseFloat(res[2], 64)
		return Created{}, &quota.Exceeded{Quota: res[1], Limit: limit, RetryAfter: 1}
	}
	c := Created{ID: res[1], Created: res[0] == "created", Owner: res[3]}
	if !c.Created && res[2] != requestHash {
		return c, ErrIdempotencyMismatch
	}
	return c, nil
}

// Admit reports, before anything is stored, whether the tenant's quotas would refuse a
// new execution (on thread, if not ""), as a *quota.Exceeded. Create checks again,
// atomically; this early check spares storing the inputs of a doomed submission.
func (s *Store) Admit(ctx context.Context, tenant, thread string) error {
	q := s.quotas(tenant)
	if q.Active > 0 {
		n, err := s.rdb.ZCard(ctx, s.activeIndex(tenant)).Result()
		if err != nil {
			return fmt.Errorf("active executions of %s: %w", tenant, err)
		}
		if n >= int64(q.Active) {
			return &quota.Exceeded{Quota: "active", Limit: float64(q.Active), RetryAfter: 1}
		}
	}
	if q.ThreadQueue > 0 && thread != "" {
		n, err := s.threads.Queued(ctx, jobs.NewThreadKey(tenant, thread))
		if err != nil {
			return err
		}
		if n >= int64(q.ThreadQueue) {
			return &quota.Exceeded{Quota: "thread_queue", Limit: float64(q.ThreadQueue), RetryAfter: 1}
		}
	}
	return nil
}

// Lookup returns the id stored for an idempotency key, or "" if none.
func (s *Store) Lookup(ctx context.Context, tenant, idemKey string) (id, requestHash string, err error) {
	v, err := s.rdb.HMGet(ctx, s.idemKey(tenant, idemKey), "id", "hash").Result()
	if err != nil {
		return "", "", fmt.Errorf("look up idempotency key: %w", err)
	}
	id, _ = v[0].(string)
	requestHash, _ = v[1].(string)
	return id, requestHash, nil
}

// Get returns the record with id. A tenant other than the owner's gets ErrNotFound,
// so ids cannot be probed across tenants; an empty tenant means any (workers).
func (s *Store) Get(ctx context.Context, tenant, id string) (*jobs.Execution, error) {
	data, err := s.rdb.HGet(ctx, s.recordKey(id), "json").Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get execution %s: %w", id, err)
	}
	var ex jobs.Execution
	if err := json.Unmarshal(data, &ex); err != nil {
		return nil, fmt.Errorf("decode execution %s: %w", id, err)
	}
	if tenant != "" && ex.Tenant != tenant {
		return nil, ErrNotFound
	}
	return &ex, nil
}

//go:embed lua/transition.lua
var transitionSrc string

var transitionScript = redis.NewScript(transitionSrc)

// Transition saves ex if the stored status is one of from, and reports the stored
// status it found. When ex.Status is terminal, it also announces the end on the
// done channel, in the same atomic step.
func (s *Store) Transition(ctx context.Context, ex *jobs.Execution, from ...jobs.Status) (ok bool, found jobs.Status, err error) {
	return s.transition(ctx, nil, ex, from)
}

// TransitionAs is Transition for an item of a thread, made by the holder of lease:
// it fails with threadq.ErrLost, changing nothing, once the lease is no longer the
// thread's (another worker took the thread over).
func (s *Store) TransitionAs(ctx context.Context, lease threadq.Lease, ex *jobs.Execution, from ...jobs.Status) (ok bool, found jobs.Status, err error) {
	f := s.threads.FenceOf(lease)
	return s.transition(ctx, &f, ex, from)
}

func (s *Store) transition(ctx context.Context, fence *threadq.Fence, ex *jobs.Execution, from []jobs.Status) (ok bool, found jobs.Status, err error) {
	data, err := json.Marshal(ex)
	if err != nil {
		return false, "", err
	}
	keys := []string{s.recordKey(ex.ID), s.doneChannel(), s.eventsKey(ex.ID), s.activeIndex(ex.Tenant)}
	args := []any{string(ex.Status), data, ex.Status.Terminal(), ex.ID, int(eventTTL.Seconds()), "", ""}
	if fence != nil {
		keys = append(keys, fence.OwnerKey)
		args[5], args[6] = fence.Worker, fence.Token
	}
	for _, st := range from {
		args = append(args, string(st))
	}
	res, err := transitionScript.Run(ctx, s.rdb, keys, args...).StringSlice()
	if err != nil {
		return false, "", fmt.Errorf("update execution %s: %w", ex.ID, err)
	}
	if res[0] == "fenced" {
		return false, "", fmt.Errorf("update execution %s: thread owned by %q now: %w", ex.ID, res[1], threadq.ErrLost)
	}
	ok = res[0] == "ok"
	if ok && ex.Status.Terminal() && s.onEnd != nil {
		s.onEnd(context.WithoutCancel(ctx), ex)
	}
	return ok, jobs.Status(res[1]), nil
}

// Delete removes a record that was never queued, and its idempotency key.
func (s *Store) Delete(ctx context.Context, ex *jobs.Execution, idemKey string) error {
	keys := []string{s.recordKey(ex.ID)}
	if idemKey != "" {
		keys = append(keys, s.idemKey(ex.Tenant, idemKey))
	}
	pipe := s.rdb.TxPipeline()
	pipe.Del(ctx, keys...)
	pipe.ZRem(ctx, s.activeIndex(ex.Tenant), ex.ID)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("delete execution %s: %w", ex.ID, err)
	}
	return nil
}

// ForgetIdempotencyKey drops a tenant's idempotency key, so a retry starts afresh.
func (s *Store) ForgetIdempotencyKey(ctx context.Context, tenant, idemKey string) error {
	if idemKey == "" {
		return nil
	}
	return s.rdb.Del(ctx, s.idemKey(tenant, idemKey)).Err()
}

// EnqueueLifecycle queues a pause or reap on thread tk, in order with its other items.
func (s *Store) EnqueueLifecycle(ctx context.Context, tk jobs.ThreadKey, kind jobs.Kind) error {
	tenant, thread := tk.Split()
	op := &jobs.Execution{ID: jobs.NewOpID(), Kind: kind, Tenant: tenant, ThreadID: thread, Status: jobs.Queued, CreatedAt: s.now().UTC()}
	_, err := s.Create(ctx, op, "", "")
	return err
}
