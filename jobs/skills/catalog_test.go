package skills_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/jobs/quota"
	"github.com/codeinterp/codeinterp/jobs/skills"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

func catalog(t *testing.T) *skills.Catalog {
	addr, db := testenv.RedisDB(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, DB: db})
	t.Cleanup(func() { rdb.Close() })
	return skills.New(rdb, skills.Config{})
}

// Versions are numbered in order, never twice; bytes are charged against the quota
// and credited on delete; tenants are apart.
func TestCatalogVersionsAndBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := catalog(t)
	add := func(tenant string, v int, size int64) (jobs.Skill, error) {
		return c.Add(ctx, tenant, jobs.Skill{Name: "report", Version: v, Digest: "d", Size: size}, 1000)
	}
	for want := 1; want <= 2; want++ {
		sk, err := add("acme", 0, 300)
		if err != nil || sk.Version != want {
			t.Fatalf("add: %+v %v, want version %d", sk, err, want)
		}
	}
	if _, err := add("acme", 2, 10); !errors.Is(err, skills.ErrExists) {
		t.Fatalf("version 2 again: %v", err)
	}
	if sk, err := add("acme", 7, 300); err != nil || sk.Version != 7 {
		t.Fatalf("version 7: %+v %v", sk, err)
	}
	var over *quota.Exceeded
	if _, err := add("acme", 0, 101); !errors.As(err, &over) || over.Quota != "skill_bytes" {
		t.Fatalf("past the quota: %v", err)
	}
	if held, _ := c.Held(ctx, "acme"); held != 900 {
		t.Fatalf("held %d, want 900", held)
	}
	if sk, err := c.Get(ctx, "acme", "report", 0); err != nil || sk.Version != 7 {
		t.Fatalf("latest: %+v %v", sk, err)
	}
	if _, err := c.Get(ctx, "globex", "report", 0); !errors.Is(err, skills.ErrNotFound) {
		t.Fatalf("another tenant's: %v", err)
	}
	if vs, err := c.Delete(ctx, "acme", "report", 2); err != nil || len(vs) != 1 || vs[0] != 2 {
		t.Fatalf("delete version 2: %v %v", vs, err)
	}
	if held, _ := c.Held(ctx, "acme"); held != 600 {
		t.Fatalf("held %d after deleting one, want 600", held)
	}
	if sk, err := add("acme", 0, 10); err != nil || sk.Version != 8 {
		t.Fatalf("next after 7: %+v %v", sk, err)
	}
	all, _ := c.List(ctx, "acme")
	if len(all) != 3 || all[0].Version != 1 || all[2].Version != 8 {
		t.Fatalf("list %+v", all)
	}
	if vs, err := c.Delete(ctx, "acme", "report", 0); err != nil || len(vs) != 3 {
		t.Fatalf("delete all: %v %v", vs, err)
	}
	if _, err := c.Delete(ctx, "acme", "report", 0); !errors.Is(err, skills.ErrNotFound) {
		t.Fatalf("delete again: %v", err)
	}
	if all, _ := c.List(ctx, "acme"); len(all) != 0 {
		t.Fatalf("list after deleting: %+v", all)
	}
	if held, _ := c.Held(ctx, "acme"); held != 0 {
		t.Fatalf("held %d after deleting all", held)
	}
}

func TestCatalogThreadAttachments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := catalog(t)
	tk := jobs.NewThreadKey("acme", "t1")
	if err := c.Attach(ctx, tk, map[string]int{"a": 1, "b": 2}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Attach(ctx, tk, map[string]int{"a": 3}, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	got, err := c.Attached(ctx, tk)
	if err != nil || len(got) != 1 || got["a"] != 3 {
		t.Fatalf("attached %v %v", got, err)
	}
	if other, _ := c.Attached(ctx, jobs.NewThreadKey("globex", "t1")); len(other) != 0 {
		t.Fatalf("another tenant's thread: %v", other)
	}
	if err := c.Detach(ctx, tk); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Attached(ctx, tk); len(got) != 0 {
		t.Fatalf("after detaching: %v", got)
	}
}
