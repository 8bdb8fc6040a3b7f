package worker

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/codeinterp/codeinterp/jobs"
)

// SkillCacheConfig configures the host's cache of skill archives.
type SkillCacheConfig struct {
	Dir      string // default <tmp>/codeinterp-skills; workers of a host may share it
	MaxBytes int64  // default 1 GiB; the least recently used archives go first
}

// skillCache keeps skill archives on disk by digest, so a skill is fetched from
// storage once per host, not once per attachment. Archives are written under a
// temporary name and renamed, checked against their digest, and evicted least
// recently used (by modification time, touched on each use) past MaxBytes. An archive
// evicted while open is still read to the end (unlinked, not truncated).
type skillCache struct {
	cfg   SkillCacheConfig
	mu    sync.Mutex
	locks map[string]*sync.Mutex // per digest: one fetch at a time
}

func newSkillCache(cfg SkillCacheConfig) *skillCache {
	cfg.Dir = cmp.Or(cfg.Dir, filepath.Join(os.TempDir(), "codeinterp-skills"))
	cfg.MaxBytes = cmp.Or(cfg.MaxBytes, 1<<30)
	return &skillCache{cfg: cfg, locks: map[string]*sync.Mutex{}}
}

func (c *skillCache) lock(digest string) func() {
	c.mu.Lock()
	l := c.locks[digest]
	if l == nil {
		l = &sync.Mutex{}
		c.locks[digest] = l
	}
	c.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// open returns the archive of sk, fetched with fetch if the host has no copy.
func (c *skillCache) open(ctx context.Context, sk jobs.Skill, fetch func(context.Context) (io.ReadCloser, error)) (*os.File, error) {
	if len(sk.Digest) != 64 {
		return nil, fmt.Errorf("skill %s: bad digest %q", sk.Ref(), sk.Digest)
	}
	path := filepath.Join(c.cfg.Dir, sk.Digest+".tar")
	unlock := c.lock(sk.Digest)
	defer unlock()
	if f, err := os.Open(path); err == nil {
		now := time.Now()
		_ = os.Chtimes(path, now, now)
		return f, nil
	}
	if err := os.MkdirAll(c.cfg.Dir, 0o700); err != nil {
		return nil, err
	}
	rc, err := fetch(ctx)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	tmp, err := os.CreateTemp(c.cfg.Dir, ".fetch-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	sum := sha256.New()
	if _, err := io.Copy(io.MultiWriter(tmp, sum), io.LimitReader(rc, sk.Size+1)); err != nil {
		return nil, fmt.Errorf("fetch skill %s: %w", sk.Ref(), err)
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != sk.Digest {
		return nil, fmt.Errorf("fetch skill %s: digest %s, want %s", sk.Ref(), got, sk.Digest)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, err
	}
	c.evict(sk.Digest)
	return os.Open(path)
}

// evict removes the least recently used archives past MaxBytes, keep aside.
func (c *skillCache) evict(keep string) {
	entries, err := os.ReadDir(c.cfg.Dir)
	if err != nil {
		return
	}
	type file struct {
		name string
		size int64
		used time.Time
	}
	var files []file
	var total int64
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() || filepath.Ext(e.Name()) != ".tar" {
			continue
		}
		files = append(files, file{e.Name(), info.Size(), info.ModTime()})
		total += info.Size()
	}
	sort.Slice(files, func(i, j int) bool { return files[i].used.Before(files[j].used) })
	for _, f := range files {
		if total <= c.cfg.MaxBytes {
			return
		}
		if f.name == keep+".tar" {
			continue
		}
		if os.Remove(filepath.Join(c.cfg.Dir, f.name)) == nil {
			total -= f.size
		}
	}
}
