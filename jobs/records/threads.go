package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
)

// What is known of each thread beyond its queue: a hash written by the thread's owner
// (a thread exists while it has one), its activity for the janitor and the thread
// listing, and which threads have a live sandbox, for the per-tenant cap.

// ThreadState is what GET /v1/threads/{id} shows beyond the queue.
type ThreadState struct {
	LastActiveAt time.Time
	Sandbox      jobs.SandboxState
	Snapshot     bool // a workspace snapshot is stored
	Files        []sandbox.FileInfo
}

// ThreadState returns the saved state of a thread, or nil if it has none.
func (s *Store) ThreadState(ctx context.Context, tk jobs.ThreadKey) (*ThreadState, error) {
	h, err := s.rdb.HGetAll(ctx, s.threadMeta(tk)).Result()
	if err != nil {
		return nil, fmt.Errorf("thread state: %w", err)
	}
	if len(h) == 0 {
		return nil, nil
	}
	st := &ThreadState{Sandbox: jobs.SandboxState(h["sandbox"]), Snapshot: h["snapshot"] == "1"}
	st.LastActiveAt, _ = time.Parse(time.RFC3339Nano, h["last_active_at"])
	if f := h["files"]; f != "" {
		_ = json.Unmarshal([]byte(f), &st.Files)
	}
	return st, nil
}

// ThreadProfile returns the profile thread tk was created with, or "" for a thread
// unknown (or older than profiles: the default profile).
func (s *Store) ThreadProfile(ctx context.Context, tk jobs.ThreadKey) (string, error) {
	p, err := s.rdb.Get(ctx, s.threadProfile(tk)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("thread profile: %w", err)
	}
	return p, nil
}

// MarkActive records that the thread's owner is working on it at now, which also
// restarts its idle clock for the janitor.
func (s *Store) MarkActive(ctx context.Context, tk jobs.ThreadKey, now time.Time) error {
	tenant, thread := tk.Split()
	pipe := s.rdb.TxPipeline()
	s.setMeta(ctx, pipe, tk, "last_active_at", now.UTC().Format(time.RFC3339Nano), "sandbox", string(jobs.SandboxRunning))
	pipe.ZAdd(ctx, s.activeKey(), zmember(now, string(tk)))
	pipe.ZAdd(ctx, s.tenantThreadsKey(tenant), zmember(now, thread))
	_, err := pipe.Exec(ctx)
	return err
}

// SaveFiles records the thread's workspace listing after a run at now.
func (s *Store) SaveFiles(ctx context.Context, tk jobs.ThreadKey, files []sandbox.FileInfo, now time.Time) error {
	data, _ := json.Marshal(files)
	return s.exec(ctx, func(p redis.Pipeliner) {
		s.setMeta(ctx, p, tk, "last_active_at", now.UTC().Format(time.RFC3339Nano), "files", data)
	})
}

// SnapshotSaved records that a snapshot of the thread's workspace was stored at now.
func (s *Store) SnapshotSaved(ctx context.Context, tk jobs.ThreadKey, now time.Time) error {
	return s.exec(ctx, func(p redis.Pipeliner) {
		s.setMeta(ctx, p, tk, "snapshot", "1", "snapshot_at", now.UTC().Format(time.RFC3339Nano))
	})
}

// SetThreadSandbox records the state of a thread's sandbox; with snapshot, also that a
// snapshot is stored. A thread whose sandbox is gone leaves the tenant's live set and
// the janitor's activity set (there is nothing left to pause or reap; MarkActive puts
// it back on its next use), so reaped threads never pile up in the janitor's way.
func (s *Store) SetThreadSandbox(ctx context.Context, tk jobs.ThreadKey, state jobs.SandboxState, snapshot bool) error {
	fields := []any{"sandbox", string(state)}
	if snapshot {
		fields = append(fields, "snapshot", "1")
	}
	return s.exec(ctx, func(p redis.Pipeliner) {
		s.setMeta(ctx, p, tk, fields...)
		if state == jobs.SandboxNone {
			tenant, _ := tk.Split()
			p.ZRem(ctx, s.liveKey(tenant), string(tk))
			p.ZRem(ctx, s.activeKey(), string(tk))
		}
	})
}

// ForgetThread drops everything known of a deleted thread but its records.
func (s *Store) ForgetThread(ctx context.Context, tk jobs.ThreadKey) error {
	tenant, thread := tk.Split()
	return s.exec(ctx, func(p redis.Pipeliner) {
		p.ZRem(ctx, s.liveKey(tenant), string(tk))
		p.Del(ctx, s.threadMeta(tk), s.threadProfile(tk))
		p.ZRem(ctx, s.activeKey(), string(tk))
		p.ZRem(ctx, s.tenantThreadsKey(tenant), thread)
	})
}

func (s *Store) setMeta(ctx context.Context, p redis.Pipeliner, tk jobs.ThreadKey, fields ...any) {
	p.HSet(ctx, s.threadMeta(tk), fields...)
	p.Expire(ctx, s.threadMeta(tk), s.ttl)
}

func (s *Store) exec(ctx context.Context, f func(redis.Pipeliner)) error {
	pipe := s.rdb.TxPipeline()
	f(pipe)
	_, err := pipe.Exec(ctx)
	return err
}

// ThreadSummary is one entry of a tenant's thread list.
type ThreadSummary struct {
	ID           string
	LastActiveAt time.Time
}

// TenantThreads returns up to limit of a tenant's threads, most recently active first.
func (s *Store) TenantThreads(ctx context.Context, tenant string, limit int) ([]ThreadSummary, error) {
	zs, err := s.rdb.ZRevRangeWithScores(ctx, s.tenantThreadsKey(tenant), 0, int64(limit)-1).Result()
	if err != nil {
		return nil, fmt.Errorf("list threads: %w", err)
	}
	out := make([]ThreadSummary, 0, len(zs))
	for _, z := range zs {
		out = append(out, ThreadSummary{ID: z.Member.(string), LastActiveAt: time.UnixMilli(int64(z.Score)).UTC()})
	}
	return out, nil
}

// SandboxLive records that tk has a sandbox, last used at now, for the tenant cap.
func (s *Store) SandboxLive(ctx context.Context, tk jobs.ThreadKey, now time.Time) error {
	tenant, _ := tk.Split()
	return s.rdb.ZAdd(ctx, s.liveKey(tenant), zmember(now, string(tk))).Err()
}

// OverTenantCap returns the tenant's least recently used threads with sandboxes that
// must go for one more to fit under limit, leaving out tk.
func (s *Store) OverTenantCap(ctx context.Context, tk jobs.ThreadKey, limit int) ([]jobs.ThreadKey, error) {
	tenant, _ := tk.Split()
	n, err := s.rdb.ZCard(ctx, s.liveKey(tenant)).Result()
	if err != nil || int(n) < limit {
		return nil, err
	}
	lru, err := s.rdb.ZRange(ctx, s.liveKey(tenant), 0, n-int64(limit)).Result()
	if err != nil {
		return nil, err
	}
	var out []jobs.ThreadKey
	for _, v := range lru {
		if v != string(tk) {
			out = append(out, jobs.ThreadKey(v))
		}
	}
	return out, nil
}

func zmember(t time.Time, member string) redis.Z {
	return redis.Z{Score: float64(t.UnixMilli()), Member: member}
}
