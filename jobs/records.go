package jobs

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotFound means no execution has the id (for this tenant).
var ErrNotFound = errors.New("execution not found")

// ErrIdempotencyMismatch means an Idempotency-Key was reused with a different request.
var ErrIdempotencyMismatch = errors.New("idempotency key reused with a different request")

// Records keeps execution records in Redis. Each record is a hash with the current
// status beside the JSON, so status changes are atomic compare-and-set operations in
// Lua without re-encoding JSON there.
type Records struct {
	rdb        redis.UniversalClient
	prefix     string
	ttl        time.Duration // how long records live; artifacts live as long
	idempotent time.Duration // how long an Idempotency-Key is remembered
	beatTTL    time.Duration // a worker silent for longer is dead
	onEnd      func(context.Context, *Execution)
}

// RecordsConfig configures [NewRecords].
type RecordsConfig struct {
	Prefix       string        // namespaces every key; default "ci:"
	TTL          time.Duration // how long records are kept; default 7 days
	HeartbeatTTL time.Duration // a worker silent for longer is dead; default 15 s
	// OnEnd, if set, is called after a record reaches a terminal status (once: only
	// the transition that ends it calls it). It queues the webhook delivery.
	OnEnd func(ctx context.Context, ex *Execution)
}

// NewRecords returns the record store (and, through it, the thread queues and the
// worker registry) over rdb.
func NewRecords(rdb redis.UniversalClient, cfg RecordsConfig) *Records {
	ttl := cmp.Or(cfg.TTL, 7*24*time.Hour)
	return &Records{
		rdb: rdb, prefix: cmp.Or(cfg.Prefix, "ci:"), ttl: ttl,
		idempotent: max(24*time.Hour, min(ttl, 7*24*time.Hour)),
		beatTTL:    cmp.Or(cfg.HeartbeatTTL, DefaultHeartbeatTTL),
		onEnd:      cfg.OnEnd,
	}
}

func (r *Records) key(id string) string { return r.prefix + "ex:" + id }

func (r *Records) tenantIndex(tenant string) string { return r.prefix + "ten:" + tenant + ":ex" }

// thread names one of a thread's keys; tk is "<tenant>/<thread>".
func (r *Records) thread(tk, what string) string { return r.prefix + "t:" + tk + ":" + what }

// threadKey identifies a thread across tenants. Neither part may contain "/".
func threadKey(tenant, thread string) string {
	if thread == "" {
		return tenant + "/-"
	}
	return tenant + "/" + thread
}

func (r *Records) idemKey(tenant, key string) string {
	return r.prefix + "idem:" + tenant + ":" + hashHex(key)
}

//go:embed lua/create.lua
var createSrc string

var createScript = redis.NewScript(createSrc)

// Created is the outcome of [Records.Create].
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
// different requestHash it returns ErrIdempotencyMismatch.
func (r *Records) Create(ctx context.Context, ex *Execution, idemKey, requestHash string) (Created, error) {
	data, err := json.Marshal(ex)
	if err != nil {
		return Created{}, err
	}
	ik := r.prefix + "idem:none"
	if idemKey != "" {
		ik = r.idemKey(ex.Tenant, idemKey)
	}
	tk := threadKey(ex.Tenant, ex.ThreadID)
	keys := []string{ik, r.key(ex.ID), r.tenantIndex(ex.Tenant), r.thread(tk, "q"), r.thread(tk, "own"), r.thread(tk, "ex"), r.workersKey(), r.unownedKey(), r.offersKey()}
	res, err := createScript.Run(ctx, r.rdb, keys,
		idemKey != "", ex.ID, requestHash, string(ex.Status), data,
		int(r.ttl.Seconds()), int(r.idempotent.Seconds()),
		ex.CreatedAt.UnixMilli(), ex.ThreadID != "", tk, r.prefix+"wake:",
		time.Now().UnixMilli(), r.beatTTL.Milliseconds()).StringSlice()
	if err != nil {
		return Created{}, fmt.Errorf("create execution record: %w", err)
	}
	c := Created{ID: res[1], Created: res[0] == "created", Owner: res[3]}
	if !c.Created && res[2] != requestHash {
		return c, ErrIdempotencyMismatch
	}
	return c, nil
}

// Lookup returns the id stored for an idempotency key, or "" if none.
func (r *Records) Lookup(ctx context.Context, tenant, idemKey string) (id, requestHash string, err error) {
	v, err := r.rdb.HMGet(ctx, r.idemKey(tenant, idemKey), "id", "hash").Result()
	if err != nil {
		return "", "", fmt.Errorf("look up idempotency key: %w", err)
	}
	id, _ = v[0].(string)
	requestHash, _ = v[1].(string)
	return id, requestHash, nil
}

// Get returns the record with id. A tenant other than the owner's gets ErrNotFound,
// so ids cannot be probed across tenants; an empty tenant means any (workers).
func (r *Records) Get(ctx context.Context, tenant, id string) (*Execution, error) {
	data, err := r.rdb.HGet(ctx, r.key(id), "json").Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get execution %s: %w", id, err)
	}
	var ex Execution
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
func (r *Records) Transition(ctx context.Context, ex *Execution, from ...Status) (ok bool, found Status, err error) {
	data, err := json.Marshal(ex)
	if err != nil {
		return false, "", err
	}
	args := []any{string(ex.Status), data, ex.Status.Terminal(), ex.ID, int(eventTTL.Seconds())}
	for _, s := range from {
		args = append(args, string(s))
	}
	res, err := transitionScript.Run(ctx, r.rdb, []string{r.key(ex.ID), r.doneChannel(), r.eventsKey(ex.ID)}, args...).StringSlice()
	if err != nil {
		return false, "", fmt.Errorf("update execution %s: %w", ex.ID, err)
	}
	ok = res[0] == "ok"
	if ok && ex.Status.Terminal() && r.onEnd != nil {
		r.onEnd(context.WithoutCancel(ctx), ex)
	}
	return ok, Status(res[1]), nil
}

func (r *Records) doneChannel() string { return r.prefix + "done" }

// Delete removes a record that was never queued, and its idempotency key.
func (r *Records) Delete(ctx context.Context, ex *Execution, idemKey string) error {
	keys := []string{r.key(ex.ID)}
	if idemKey != "" {
		keys = append(keys, r.idemKey(ex.Tenant, idemKey))
	}
	if err := r.rdb.Del(ctx, keys...).Err(); err != nil {
		return fmt.Errorf("delete execution %s: %w", ex.ID, err)
	}
	return nil
}

// ForgetIdempotencyKey drops a tenant's idempotency key, so a retry starts afresh.
func (r *Records) ForgetIdempotencyKey(ctx context.Context, tenant, idemKey string) error {
	if idemKey == "" {
		return nil
	}
	return r.rdb.Del(ctx, r.idemKey(tenant, idemKey)).Err()
}
