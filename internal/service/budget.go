package service

import (
	"io"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// Budget bounds the bytes an API process holds for its clients at once: request
// bodies being read and input files being fetched by URL (CODEINTERP_INFLIGHT_BYTES).
// A reservation that does not fit is refused, never waited for (the client gets 503
// with Retry-After), so a burst of large requests or fetches cannot exhaust memory.
type Budget struct {
	sem     *semaphore.Weighted
	size    int64
	held    atomic.Int64
	refused atomic.Int64
}

// NewBudget returns a budget of size bytes.
func NewBudget(size int64) *Budget {
	size = max(size, 1)
	return &Budget{sem: semaphore.NewWeighted(size), size: size}
}

// Size is the budget's whole size; Held what is reserved now; Refused how many
// reservations did not fit since the process started.
func (b *Budget) Size() int64    { return b.size }
func (b *Budget) Held() int64    { return b.held.Load() }
func (b *Budget) Refused() int64 { return b.refused.Load() }

// Reserve takes n bytes of the budget, or returns the Unavailable error to answer.
func (b *Budget) Reserve(n int64) error {
	if n <= 0 {
		return nil
	}
	if !b.sem.TryAcquire(n) {
		b.refused.Add(1)
		return &Error{Code: CodeUnavailable, RetryAfter: 1,
			Message: "this server holds as many request bodies and fetched files as it can (CODEINTERP_INFLIGHT_BYTES); retry"}
	}
	b.held.Add(n)
	return nil
}

// Release gives back n bytes taken with Reserve.
func (b *Budget) Release(n int64) {
	if n <= 0 {
		return
	}
	b.held.Add(-n)
	b.sem.Release(n)
}

// meterStep is the least a [Metered] reader reserves at a time: a body of a byte
// costs 64 KiB of the budget, not the largest body it might have been.
const meterStep = 64 << 10

// Metered is a body of unknown length that reserves budget as it is read, up to
// limit bytes (the body's own cap, which its reader enforces): a read that needs
// more than the budget has fails with the Unavailable error. Release gives back all
// it holds; it must be called once the bytes read are no longer held. It may be
// read in one goroutine and released in another (an HTTP transport may still read a
// request body after the round trip returned): a read after Release fails.
type Metered struct {
	b     *Budget
	r     io.Reader
	limit int64

	mu       sync.Mutex
	held     int64 // reserved
	read     int64
	released bool
}

// Meter returns r reading within the budget, up to limit bytes.
func (b *Budget) Meter(r io.Reader, limit int64) *Metered {
	return &Metered{b: b, r: r, limit: limit}
}

// Prefill reserves n bytes at once (a length the body declared), so a body that
// cannot fit is refused before any of it is read.
func (m *Metered) Prefill(n int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reserve(n)
}

// reserve makes what m holds n, within its limit; m.mu is held.
func (m *Metered) reserve(n int64) error {
	if m.released {
		return io.ErrClosedPipe
	}
	n = min(n, m.limit) - m.held
	if err := m.b.Reserve(n); err != nil {
		return err
	}
	m.held += max(n, 0)
	return nil
}

func (m *Metered) Read(p []byte) (int, error) {
	m.mu.Lock()
	if m.read == m.held && m.held < m.limit {
		// Grow by an eighth of what is held, at least a step: few reservations for a
		// large body, little waste for a small one.
		if err := m.reserve(m.held + max(meterStep, m.held/8)); err != nil {
			m.mu.Unlock()
			return 0, err
		}
	}
	if m.released {
		m.mu.Unlock()
		return 0, io.ErrClosedPipe
	}
	if room := m.held - m.read; room > 0 && int64(len(p)) > room {
		p = p[:room]
	}
	m.mu.Unlock()
	// At the limit the reader's own cap answers what comes past it.
	n, err := m.r.Read(p)
	m.mu.Lock()
	m.read += int64(n)
	m.mu.Unlock()
	return n, err
}

// Close closes the underlying reader, if it is a Closer.
func (m *Metered) Close() error {
	if c, ok := m.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// Release gives back what the reader holds; later reads fail.
func (m *Metered) Release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.b.Release(m.held)
	m.held, m.released = 0, true
}
