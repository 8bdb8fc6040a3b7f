package app

import (
	"context"
	"fmt"
	"time"
)

// WaitFor calls f until it succeeds, for up to a minute: at start-up under compose,
// MinIO or Docker may still be coming up. (Nothing waits for Redis: every binary
// starts without it and goes on once it answers.)
func WaitFor(ctx context.Context, what string, f func(context.Context) error) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := f(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %w", what, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
