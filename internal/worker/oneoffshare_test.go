package worker

import (
	"errors"
	"fmt"
	"testing"
)

func TestOneOffShares(t *testing.T) {
	s := newOneOffShares(2)
	if !s.take("acme") || !s.take("acme") {
		t.Fatal("acme's share of 2 refused")
	}
	if s.take("acme") {
		t.Fatal("acme ran past its share")
	}
	if !s.take("globex") {
		t.Fatal("globex held back by acme's share")
	}
	s.release("acme")
	if !s.take("acme") {
		t.Fatal("a released share not taken again")
	}
}

// A postponed one-off is retried soon and is no failure (it uses none of its
// retries); any other error is.
func TestPostponedIsNoFailure(t *testing.T) {
	busy := fmt.Errorf("run: %w", ErrTenantBusy)
	if IsFailure(busy) || !IsFailure(errors.New("create sandbox: boom")) || IsFailure(nil) {
		t.Fatal("IsFailure")
	}
	if d := RetryDelay(0, busy, nil); d != postponeDelay {
		t.Fatalf("postponed: retried after %v, want %v", d, postponeDelay)
	}
}
