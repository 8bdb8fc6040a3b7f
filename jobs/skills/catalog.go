package skills

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/quota"
)

// Errors of the catalog.
var (
	ErrNotFound = errors.New("no such skill")
	ErrExists   = errors.New("that version of the skill exists")
	// ErrTooManyVersions is a new version of a skill that has MaxVersions already.
	ErrTooManyVersions = errors.New("the skill has as many versions as it may")
)

// Catalog is the Redis catalog of skills.
type Catalog struct {
	rdb         redis.UniversalClient
	prefix      string
	threadTTL   time.Duration
	maxVersions int
}

// Config configures [New].
type Config struct {
	Prefix string // namespaces every key; default "ci:"
	// ThreadTTL is how long a thread's attached skills are kept after they were last
	// set: the records' retention, so they go with the thread; default 7 days.
	ThreadTTL time.Duration
	// MaxVersions bounds the versions of one skill (default 100): a new one past it
	// is refused, never made room for by deleting an old one, which a thread or a
	// pinned reference may still use.
	MaxVersions int
}

// New returns the catalog over rdb. It does no I/O.
func New(rdb redis.UniversalClient, cfg Config) *Catalog {
	return &Catalog{rdb: rdb, prefix: cmp.Or(cfg.Prefix, "ci:"), threadTTL: cmp.Or(cfg.ThreadTTL, 7*24*time.Hour),
		maxVersions: cmp.Or(cfg.MaxVersions, 100)}
}

var (
	//go:embed lua/add.lua
	addSrc string
	//go:embed lua/delete.lua
	deleteSrc string
	//go:embed lua/latest.lua
	latestSrc string

	addScript    = redis.NewScript(addSrc)
	deleteScript = redis.NewScript(deleteSrc)
	latestScript = redis.NewScript(latestSrc)
)

// Add records a new version of a skill, the next one when sk.Version is 0, and
// charges its Size to the tenant's skill bytes. It fails with [ErrExists] if the
// version exists, with [ErrTooManyVersions] if the skill has MaxVersions, and with a
// *quota.Exceeded ("skill_bytes") if the tenant's bytes would pass limit (0: none);
// then nothing is recorded.
func (c *Catalog) Add(ctx context.Context, tenant string, sk jobs.Skill, limit int64) (jobs.Skill, error) {
	meta, err := json.Marshal(sk)
	if err != nil {
		return sk, err
	}
	keys := []string{c.skillKey(tenant, sk.Name), c.namesKey(tenant), c.bytesKey(tenant), c.versionsKey(tenant, sk.Name)}
	res, err := addScript.Run(ctx, c.rdb, keys, sk.Name, sk.Version, meta, sk.Size, limit, c.maxVersions).Int64Slice()
	if err != nil {
		return sk, fmt.Errorf("add skill %s of %s: %w", sk.Name, tenant, err)
	}
	switch res[0] {
	case -1:
		return sk, fmt.Errorf("%w: %s@%d", ErrExists, sk.Name, res[1])
	case -2:
		return sk, &quota.Exceeded{Quota: "skill_bytes", Limit: float64(limit)}
	case -3:
		return sk, fmt.Errorf("%w: %s has %d (the most is %d)", ErrTooManyVersions, sk.Name, res[1], c.maxVersions)
	}
	sk.Version = int(res[1])
	return sk, nil
}

// MaxVersions is the most versions one skill may have.
func (c *Catalog) MaxVersions() int { return c.maxVersions }

// Get returns a version of a skill, the latest when version is 0, or [ErrNotFound].
// It reads that version alone, however many the skill has.
func (c *Catalog) Get(ctx context.Context, tenant, name string, version int) (jobs.Skill, error) {
	v, meta := strconv.Itoa(version), ""
	if version == 0 {
		res, err := latestScript.Run(ctx, c.rdb, []string{c.skillKey(tenant, name), c.versionsKey(tenant, name)}).StringSlice()
		if err != nil {
			return jobs.Skill{}, fmt.Errorf("read skill %s of %s: %w", name, tenant, err)
		}
		if len(res) == 2 {
			v, meta = res[0], res[1]
		}
	} else {
		var err error
		meta, err = c.rdb.HGet(ctx, c.skillKey(tenant, name), v).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return jobs.Skill{}, fmt.Errorf("read skill %s@%d of %s: %w", name, version, tenant, err)
		}
	}
	var sk jobs.Skill
	n, err := strconv.Atoi(v)
	if meta == "" || err != nil || json.Unmarshal([]byte(meta), &sk) != nil {
		return jobs.Skill{}, fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	sk.Name, sk.Version = name, n
	return sk, nil
}

// versions returns a skill's versions, oldest first.
func (c *Catalog) versions(ctx context.Context, tenant, name string) ([]jobs.Skill, error) {
	h, err := c.rdb.HGetAll(ctx, c.skillKey(tenant, name)).Result()
	if err != nil {
		return nil, fmt.Errorf("read skill %s of %s: %w", name, tenant, err)
	}
	out := make([]jobs.Skill, 0, len(h))
	for v, meta := range h {
		var sk jobs.Skill
		n, err := strconv.Atoi(v)
		if err != nil || json.Unmarshal([]byte(meta), &sk) != nil {
			continue // not written by Add
		}
		sk.Name, sk.Version = name, n
		out = append(out, sk)
	}
	slices.SortFunc(out, func(a, b jobs.Skill) int { return a.Version - b.Version })
	return out, nil
}

// List returns every version of every skill of the tenant, by name, oldest first.
func (c *Catalog) List(ctx context.Context, tenant string) ([]jobs.Skill, error) {
	names, err := c.rdb.SMembers(ctx, c.namesKey(tenant)).Result()
	if err != nil {
		return nil, fmt.Errorf("list skills of %s: %w", tenant, err)
	}
	slices.Sort(names)
	var out []jobs.Skill
	for _, name := range names {
		vs, err := c.versions(ctx, tenant, name)
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	return out, nil
}

// Delete deletes one version of a skill (all when version is 0), credits their bytes
// and returns the versions deleted: none is [ErrNotFound].
func (c *Catalog) Delete(ctx context.Context, tenant, name string, version int) ([]int, error) {
	keys := []string{c.skillKey(tenant, name), c.namesKey(tenant), c.bytesKey(tenant), c.versionsKey(tenant, name)}
	res, err := deleteScript.Run(ctx, c.rdb, keys, name, version).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("delete skill %s of %s: %w", name, tenant, err)
	}
	if len(res) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	out := make([]int, 0, len(res))
	for _, v := range res {
		n, _ := strconv.Atoi(v)
		out = append(out, n)
	}
	return out, nil
}

// Held returns the bytes of skills the tenant holds.
func (c *Catalog) Held(ctx context.Context, tenant string) (int64, error) {
	n, err := c.rdb.Get(ctx, c.bytesKey(tenant)).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return n, err
}

// Attached returns the skills attached to a thread: name → version.
func (c *Catalog) Attached(ctx context.Context, tk jobs.ThreadKey) (map[string]int, error) {
	h, err := c.rdb.HGetAll(ctx, c.threadKey(tk)).Result()
	if err != nil {
		return nil, fmt.Errorf("read skills of thread %s: %w", tk, err)
	}
	out := make(map[string]int, len(h))
	for name, v := range h {
		if n, err := strconv.Atoi(v); err == nil {
			out[name] = n
		}
	}
	return out, nil
}

// Attach records the skills attached to a thread: set (name → version) is attached,
// drop detached; the thread's skills are kept ThreadTTL from now.
func (c *Catalog) Attach(ctx context.Context, tk jobs.ThreadKey, set map[string]int, drop []string) error {
	key := c.threadKey(tk)
	pipe := c.rdb.TxPipeline()
	if len(drop) > 0 {
		pipe.HDel(ctx, key, drop...)
	}
	for name, v := range set {
		pipe.HSet(ctx, key, name, v)
	}
	pipe.Expire(ctx, key, c.threadTTL)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("attach skills to thread %s: %w", tk, err)
	}
	return nil
}

// Detach forgets every skill attached to a thread (the thread is deleted).
func (c *Catalog) Detach(ctx context.Context, tk jobs.ThreadKey) error {
	return c.rdb.Del(ctx, c.threadKey(tk)).Err()
}
