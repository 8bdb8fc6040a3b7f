package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hibiken/asynq"
)

// ProcessDrain is the handler of [TypeDrain]: it claims the thread for this worker
// and starts serving it. The task ends at once; the thread's items run on the
// worker's own runners, bounded by RunnerConfig.Concurrency.
func (r *Runner) ProcessDrain(ctx context.Context, t *asynq.Task) error {
	var p drainPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.Thread == "" {
		return fmt.Errorf("bad %s payload %q: %w", t.Type(), t.Payload(), asynq.SkipRetry)
	}
	if r.shuttingDown() {
		return errors.New("worker shutting down") // retried, on another worker
	}
	inflight, err := r.threads.Claim(ctx, p.Thread, r.cfg.Worker)
	if errors.Is(err, ErrOwned) {
		// A live worker serves it: make sure it looks at its queue.
		return r.threads.Wake(ctx, inflight, p.Thread)
	}
	if err != nil {
		return err
	}
	r.serve(p.Thread, inflight)
	return nil
}
