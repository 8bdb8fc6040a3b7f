package storage_test

import (
	"context"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/codeinterp/codeinterp/internal/testenv"
	"github.com/codeinterp/codeinterp/storage"
)

// stalled is a body of unknown length that sends one byte, tells that the uploader
// is waiting for more, and then waits to be released (or, a slow client, for slow to
// pass).
type stalled struct {
	sent    bool
	done    bool
	waiting chan<- struct{}
	release <-chan struct{}
	slow    time.Duration
}

func (s *stalled) Read(p []byte) (int, error) {
	if !s.sent {
		s.sent = true
		p[0] = 'x'
		return 1, nil
	}
	if s.done {
		return 0, io.EOF
	}
	s.done = true
	s.waiting <- struct{}{}
	if s.slow > 0 {
		select {
		case <-s.release:
		case <-time.After(s.slow):
		}
	} else {
		<-s.release
	}
	return 0, io.EOF
}

// Uploads of unknown length buffer a bounded part each: a few stalled chunked uploads
// must not cost the process gigabytes (minio-go's own choice is over 500 MiB a part).
func TestUnknownLengthUploadsAreBounded(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	const uploads = 4
	waiting, release := make(chan struct{}), make(chan struct{})
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	for i := range uploads {
		wg.Go(func() {
			body := &stalled{waiting: waiting, release: release}
			if _, err := s.Put(ctx, "t/uploads/"+string(rune('a'+i)), body, -1, ""); err != nil {
				t.Error(err)
			}
		})
	}
	for range uploads { // every upload holds its part buffer now
		<-waiting
	}
	var during runtime.MemStats
	runtime.ReadMemStats(&during)
	close(release)
	wg.Wait()
	if grew := int64(during.HeapAlloc) - int64(before.HeapAlloc); grew > uploads*64<<20 {
		t.Fatalf("%d stalled uploads of unknown length hold %d MiB", uploads, grew>>20)
	}
}

// A transfer that outlives the store's deadline is cut, rather than holding a worker
// or an API handler forever.
func TestTransferDeadline(t *testing.T) {
	t.Parallel()
	cfg := testenv.MinIO(t)
	cfg.TransferTimeout = 300 * time.Millisecond
	s, err := storage.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	waiting, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	start := time.Now()
	// The client sends its last byte after 2 s, well past the 300 ms deadline.
	_, err = s.Put(context.Background(), "t/slow", &stalled{waiting: waiting, release: release, slow: 2 * time.Second}, -1, "")
	if err == nil {
		t.Fatalf("a transfer that outlived its deadline succeeded after %s", time.Since(start))
	}
}
