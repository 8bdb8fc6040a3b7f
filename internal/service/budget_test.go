package service

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// A body of unknown length reserves as it is read, not its largest size: a byte
// costs a step, and a body the budget cannot hold fails with Unavailable when it
// outgrows it, holding nothing afterwards.
func TestMeteredReservesAsItReads(t *testing.T) {
	b := NewBudget(1 << 20)
	small := b.Meter(bytes.NewReader([]byte("x")), 8<<20)
	if data, err := io.ReadAll(small); err != nil || string(data) != "x" {
		t.Fatalf("read %q, %v", data, err)
	}
	if b.Held() != meterStep {
		t.Fatalf("a one-byte body holds %d bytes of the budget; want one step (%d)", b.Held(), meterStep)
	}
	others := make([]*Metered, 15)
	for i := range others { // 15 more one-byte bodies fit beside it
		others[i] = b.Meter(bytes.NewReader([]byte("y")), 8<<20)
		if _, err := io.ReadAll(others[i]); err != nil {
			t.Fatalf("body %d: %v", i, err)
		}
	}
	big := b.Meter(bytes.NewReader(make([]byte, 2<<20)), 8<<20)
	_, err := io.ReadAll(big)
	var se *Error
	if !errors.As(err, &se) || se.Code != CodeUnavailable || se.RetryAfter < 1 {
		t.Fatalf("a body past the budget: %v; want Unavailable with Retry-After", err)
	}
	if b.Refused() != 1 {
		t.Fatalf("refused %d; want 1", b.Refused())
	}
	big.Release()
	small.Release()
	for _, m := range others {
		m.Release()
	}
	if b.Held() != 0 {
		t.Fatalf("%d bytes held after every release", b.Held())
	}
}

// A declared length is reserved before anything is read, and never more than the
// body's cap.
func TestMeteredPrefill(t *testing.T) {
	b := NewBudget(1 << 20)
	m := b.Meter(bytes.NewReader(make([]byte, 100)), 512<<10)
	if err := m.Prefill(4 << 20); err != nil || b.Held() != 512<<10 {
		t.Fatalf("prefill past the cap: %v, held %d; want the cap", err, b.Held())
	}
	if err := b.Meter(nil, 1<<20).Prefill(1 << 20); err == nil {
		t.Fatal("a second body of 1 MiB fit in what is left of 1 MiB")
	}
	m.Release()
	if b.Held() != 0 {
		t.Fatalf("%d held after release", b.Held())
	}
}
