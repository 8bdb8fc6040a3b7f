package docker

import (
	"context"
	"errors"
	"testing"
)

func TestRetryTransientRemoval(t *testing.T) {
	zombie := errors.New("Error response from daemon: Could not kill running container 5164, cannot remove - container 5164 PID 16375 is zombie and can not be killed")
	calls := 0
	err := retryTransient(context.Background(), func() error {
		calls++
		if calls < 3 {
			return zombie
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("retry of a zombie removal: err %v after %d calls, want success after 3", err, calls)
	}

	lasting := errors.New("permission denied")
	calls = 0
	if err := retryTransient(context.Background(), func() error { calls++; return lasting }); !errors.Is(err, lasting) || calls != 1 {
		t.Fatalf("a lasting error was retried: err %v, %d calls", err, calls)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls = 0
	if err := retryTransient(ctx, func() error { calls++; return zombie }); !errors.Is(err, zombie) || calls != 1 {
		t.Fatalf("a canceled context kept retrying: err %v, %d calls", err, calls)
	}
}
