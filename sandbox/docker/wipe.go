package docker

import (
	"context"
	"fmt"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
)

// wipeTimeout bounds a wipe: the zygote gives up killing after 5 s, and emptying a
// full workspace takes well under a second.
const wipeTimeout = 30 * time.Second

// Wipe makes a recyclable sandbox blank again (see [sandbox.Sandbox]). The kernel of
// such a sandbox is a zygote (deploy/sandbox/zygote.py): the wipe is one request on
// the kernel's stream, no docker exec, so it costs about a fork. The zygote kills
// every other process of the code's user, empties /workspace, /tmp, /dev/shm and
// /dev/mqueue, removes System V IPC, checks that nothing is left and forks a fresh
// interpreter, then answers with the request's id, which is random, so that the
// code, which shares the kernel's output, cannot answer in its stead.
func (s *Sandbox) Wipe(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.spec.Recyclable {
		return fmt.Errorf("%w: %s", sandbox.ErrNotRecyclable, s.name)
	}
	k := s.kernel
	if k == nil {
		return fmt.Errorf("wipe %s: its kernel is gone", s.name)
	}
	if _, err := s.resumeLocked(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, wipeTimeout)
	defer cancel()
	// The zygote, the code's user, cannot remove skills (skills.go): the keeper does.
	if err := s.clearSkillsLocked(ctx); err != nil {
		return err
	}
	ev, err := s.askLocked(ctx, k, wireRequest{Op: "wipe", ID: "wipe-" + randomHex(12)}, "wiped")
	switch {
	case err != nil:
		return fmt.Errorf("wipe %s: %w", s.name, err)
	case !ev.OK:
		return fmt.Errorf("wipe %s: %s", s.name, ev.Reason)
	}
	s.restartPending = false
	return nil
}
