package skills_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/skills"
)

// commands records the names of the Redis commands a client sends (a script by the
// commands it runs is not seen: EVALSHA, EVAL).
type commands struct {
	mu    sync.Mutex
	names []string
}

func (c *commands) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *commands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.mu.Lock()
		c.names = append(c.names, strings.ToLower(cmd.Name()))
		c.mu.Unlock()
		return next(ctx, cmd)
	}
}
func (c *commands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (c *commands) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.names
	c.names = nil
	return out
}

func catalogWith(t *testing.T, cfg skills.Config) (*skills.Catalog, *redis.Client, *commands) {
	addr, db := testenv.RedisDB(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, DB: db})
	t.Cleanup(func() { rdb.Close() })
	rec := &commands{}
	rdb.AddHook(rec)
	return skills.New(rdb, cfg), rdb, rec
}

// A skill holds at most MaxVersions versions: one more is refused (nothing recorded,
// nothing charged) until one is deleted; the refusal says how many it has.
func TestCatalogVersionCap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _, _ := catalogWith(t, skills.Config{MaxVersions: 3})
	add := func(v int) (jobs.Skill, error) {
		return c.Add(ctx, "acme", jobs.Skill{Name: "report", Version: v, Size: 10}, 0)
	}
	for range 3 {
		if _, err := add(0); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []int{0, 9} {
		if _, err := add(v); !errors.Is(err, skills.ErrTooManyVersions) || !strings.Contains(err.Error(), "has 3") {
			t.Fatalf("a fourth version (%d): %v, want ErrTooManyVersions", v, err)
		}
	}
	if held, _ := c.Held(ctx, "acme"); held != 30 {
		t.Fatalf("held %d after refusals, want 30", held)
	}
	// Another skill, and another tenant, have versions of their own.
	if _, err := c.Add(ctx, "acme", jobs.Skill{Name: "other", Size: 10}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Add(ctx, "globex", jobs.Skill{Name: "report", Size: 10}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(ctx, "acme", "report", 1); err != nil {
		t.Fatal(err)
	}
	if sk, err := add(0); err != nil || sk.Version != 4 {
		t.Fatalf("after deleting one: %+v %v, want version 4", sk, err)
	}
	if _, err := add(0); !errors.Is(err, skills.ErrTooManyVersions) {
		t.Fatalf("full again: %v", err)
	}
}

// Get reads the one version it returns, never the skill's every version; deleting
// the latest makes the one before it the latest.
func TestCatalogGetReadsOneVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _, rec := catalogWith(t, skills.Config{MaxVersions: 1000})
	for i := range 200 {
		if _, err := c.Add(ctx, "acme", jobs.Skill{Name: "report", Digest: fmt.Sprint(i), Size: 1}, 0); err != nil {
			t.Fatal(err)
		}
	}
	rec.take()
	for _, c2 := range []struct{ ask, want int }{{0, 200}, {17, 17}, {200, 200}} {
		sk, err := c.Get(ctx, "acme", "report", c2.ask)
		if err != nil || sk.Version != c2.want || sk.Digest != fmt.Sprint(c2.want-1) {
			t.Fatalf("Get(%d) = %+v %v, want version %d", c2.ask, sk, err, c2.want)
		}
		if cmds := rec.take(); slices.ContainsFunc(cmds, func(n string) bool { return n == "hgetall" || n == "hkeys" || n == "hvals" }) {
			t.Fatalf("Get(%d) read every version: %v", c2.ask, cmds)
		}
	}
	if _, err := c.Get(ctx, "acme", "report", 201); !errors.Is(err, skills.ErrNotFound) {
		t.Fatalf("Get(201): %v", err)
	}
	if _, err := c.Delete(ctx, "acme", "report", 200); err != nil {
		t.Fatal(err)
	}
	if sk, err := c.Get(ctx, "acme", "report", 0); err != nil || sk.Version != 199 {
		t.Fatalf("latest after deleting 200: %+v %v", sk, err)
	}
	if _, err := c.Delete(ctx, "acme", "report", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "acme", "report", 0); !errors.Is(err, skills.ErrNotFound) {
		t.Fatalf("latest after deleting all: %v", err)
	}
}

// A skill stored before versions were indexed (its hash alone) is still found, its
// latest included, and is indexed by its next version, which counts the old ones
// against the cap.
func TestCatalogIndexesOlderSkills(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, rdb, _ := catalogWith(t, skills.Config{MaxVersions: 4})
	for _, v := range []int{1, 2, 5} {
		meta, _ := json.Marshal(jobs.Skill{Digest: fmt.Sprint("d", v), Size: 1})
		rdb.HSet(ctx, "ci:skill:acme:old", fmt.Sprint(v), meta)
	}
	rdb.SAdd(ctx, "ci:skills:acme", "old")
	if sk, err := c.Get(ctx, "acme", "old", 0); err != nil || sk.Version != 5 || sk.Digest != "d5" {
		t.Fatalf("latest of an older skill: %+v %v", sk, err)
	}
	if sk, err := c.Add(ctx, "acme", jobs.Skill{Name: "old", Size: 1}, 0); err != nil || sk.Version != 6 {
		t.Fatalf("next of an older skill: %+v %v, want 6", sk, err)
	}
	if _, err := c.Add(ctx, "acme", jobs.Skill{Name: "old", Size: 1}, 0); !errors.Is(err, skills.ErrTooManyVersions) {
		t.Fatalf("a fifth version: %v", err)
	}
	if sk, err := c.Get(ctx, "acme", "old", 0); err != nil || sk.Version != 6 {
		t.Fatalf("latest: %+v %v", sk, err)
	}
}
