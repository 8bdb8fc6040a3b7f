package storage_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/storage"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

func newStore(t *testing.T) *storage.Store {
	t.Helper()
	s, err := storage.New(testenv.MinIO(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPutOpenPresign(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	body := "col\n1\n2\n"
	obj, err := s.Put(ctx, "tenant/oneoff/ex_1/outputs/data.csv", strings.NewReader(body), int64(len(body)), "text/csv")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(body))
	if obj.Size != int64(len(body)) || obj.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("put = %+v", obj)
	}

	rc, info, err := s.Open(ctx, obj.Key)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if string(got) != body || info.ContentType != "text/csv" {
		t.Fatalf("open = %q, %+v", got, info)
	}

	url, expires, err := s.PresignGet(ctx, obj.Key, "data.csv")
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(expires); d < 59*time.Minute || d > time.Hour {
		t.Fatalf("expires in %s, want the default 1h", d)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(got) != body || !strings.Contains(resp.Header.Get("Content-Disposition"), "data.csv") {
		t.Fatalf("download: %d %q %v", resp.StatusCode, got, resp.Header)
	}
	// Without the signature the bucket is closed.
	plain, err := http.Get(strings.Split(url, "?")[0])
	if err != nil {
		t.Fatal(err)
	}
	plain.Body.Close()
	if plain.StatusCode != http.StatusForbidden {
		t.Fatalf("unsigned GET = %d, want 403", plain.StatusCode)
	}
}

func TestNotFound(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	if _, _, err := s.Open(context.Background(), "nope"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Open = %v, want ErrNotFound", err)
	}
	if _, err := s.Stat(context.Background(), "nope"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Stat = %v, want ErrNotFound", err)
	}
}

func TestDeletePrefixAndBefore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	put := func(key string) {
		if _, err := s.Put(ctx, key, strings.NewReader("x"), 1, ""); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"a/t1/1", "a/t1/2", "a/t2/1", "b/t1/1"} {
		put(k)
	}
	n, err := s.DeletePrefix(ctx, "a/t1/")
	if err != nil || n != 2 {
		t.Fatalf("DeletePrefix = %d, %v; want 2", n, err)
	}
	cut := time.Now().Add(time.Second) // after everything put so far, by the server's clock too
	n, err = s.DeleteBefore(ctx, "", cut.Add(-time.Hour))
	if err != nil || n != 0 {
		t.Fatalf("DeleteBefore(an hour ago) = %d, %v; want 0", n, err)
	}
	n, err = s.DeleteBefore(ctx, "", cut)
	if err != nil || n != 2 {
		t.Fatalf("DeleteBefore(now) = %d, %v; want 2", n, err)
	}
	if _, err := s.Stat(ctx, "b/t1/1"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("b/t1/1 survived: %v", err)
	}
}

func TestInitIsIdempotent(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	for range 2 {
		if err := s.Init(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestOpenTail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	body := strings.Repeat("0123456789", 1000)
	obj, err := s.Put(ctx, "tenant/oneoff/ex_2/stdout.log", strings.NewReader(body), int64(len(body)), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int64{1, 25, int64(len(body)), int64(len(body)) + 100} {
		rc, _, err := s.OpenTail(ctx, obj.Key, n)
		if err != nil {
			t.Fatalf("tail %d: %v", n, err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		want := body[max(0, int64(len(body))-n):]
		if err != nil || string(got) != want {
			t.Fatalf("tail %d: %d bytes %.20q, %v; want %d bytes %.20q", n, len(got), got, err, len(want), want)
		}
	}
	if _, _, err := s.OpenTail(ctx, "tenant/nope", 10); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("tail of a missing object: %v; want ErrNotFound", err)
	}
}
