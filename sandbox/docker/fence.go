package docker

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
)

// Fencing. A thread's sandbox records the fencing token of the thread lease that last
// acted on it (jobs/threadq gives each claim a token larger than any before), in a
// tmpfs only the keeper user may write (fenceDir): the code, uid 1000, can read it but
// never change it. Raising the token is a compare-and-set run as the keeper under an
// exclusive lock. Every step that touches the sandbox's processes or removes it
// checks the token in the same process that then acts:
//
//   - the keeper's compare-and-set (Fence) refuses a token below the recorded one;
//   - a kernel start and a kernel reset run as uid 1000 read the recorded token and
//     go on only if it is not above theirs. A newer owner raises the token first and
//     then resets, killing every uid-1000 process, so anything that passed its check
//     before the raise is killed by that reset, and anything after it is refused;
//   - Remove first retires the sandbox (records "retired", which no token passes),
//     so an older owner can never adopt a sandbox that is being removed, and a newer
//     one never loses a sandbox to an older owner's removal;
//   - Pause and Snapshot check first: a stale owner's pause is refused, and so is its
//     snapshot.
//
// Sandboxes made with no token (one-off and blank ones) skip all of this until a
// thread's owner fences them.
//
// The lock is the keeper's alone (mode 0600): a lock the code could open, it could
// flock and hold for ever, and every raise (adoption, Remove, the janitor's reclaim)
// would time out. Sandboxes made before this kept a lock at fenceDir/lock, readable by
// the code; it is no longer used.
const (
	fenceDir  = "/run/codeinterp"
	fenceFile = fenceDir + "/fence"
	fenceLock = fenceDir + "/keeper.lock"
	retired   = "retired"
	// fencedExit is the exit status of a fence check that refused.
	fencedExit = 3
	// legacyExit says the sandbox predates fencing (no fenceDir): it is used as
	// before, unfenced, until it is reaped.
	legacyExit = 4
)

// fenceTmpfs is the tmpfs mount options of fenceDir: owned by the keeper, read-only
// to the code.
const fenceTmpfs = "rw,nosuid,nodev,noexec,size=65536,uid=65534,gid=65534,mode=0755"

// keeperCmd is the keeper's command: it records token, if any, before anything else
// can run in the sandbox, then holds the container (and its workspace) alive.
func keeperCmd(token int64) []string {
	if token <= 0 {
		return []string{"sleep", "infinity"}
	}
	return []string{"sh", "-c", `echo "$0" > ` + fenceFile + ` && exec sleep infinity`, strconv.FormatInt(token, 10)}
}

// raiseScript runs as the keeper: $0 is the token, $1 "retire" to retire the sandbox.
const raiseScript = `set -e
[ -d ` + fenceDir + ` ] || exit 4
umask 077
exec 9>>` + fenceLock + `
umask 022
flock -x -w 10 9
cur=$(cat ` + fenceFile + ` 2>/dev/null || echo 0)
if [ "$cur" = ` + retired + ` ] || [ "$cur" -gt "$0" ]; then echo "fenced: $cur" >&2; exit 3; fi
if [ "$1" = retire ]; then echo ` + retired + ` > ` + fenceFile + `.new; else echo "$0" > ` + fenceFile + `.new; fi
mv ` + fenceFile + `.new ` + fenceFile

// checkScript is the check that prefixes a command run as the code's user under a
// token ($0); the command follows as "$@".
const checkScript = `cur=$(cat ` + fenceFile + ` 2>/dev/null || echo 0)
if [ "$cur" = ` + retired + ` ] || [ "$cur" -gt "$0" ]; then echo "codeinterp: fenced: $cur" >&2; exit 3; fi
exec "$@"`

// fenced wraps cmd in the fence check for token; without a token it is cmd.
func fenced(token int64, cmd ...string) []string {
	if token <= 0 {
		return cmd
	}
	return append([]string{"sh", "-c", checkScript, strconv.FormatInt(token, 10)}, cmd...)
}

// Fence records token in the sandbox, unless a larger one is recorded ([sandbox.ErrFenced]).
// A paused sandbox is resumed first: its keeper must run.
func (s *Sandbox) Fence(ctx context.Context, token int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.raiseLocked(ctx, token, false)
}

func (s *Sandbox) raiseLocked(ctx context.Context, token int64, retire bool) error {
	if token <= 0 {
		return fmt.Errorf("fence sandbox %s: no token", s.name)
	}
	if _, err := s.resumeLocked(ctx); err != nil {
		return err
	}
	mode := ""
	if retire {
		mode = "retire"
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	code, out, err := s.d.execWait(ctx, s.id, keeperUser, "sh", "-c", raiseScript, strconv.FormatInt(token, 10), mode)
	switch {
	case err != nil:
		return fmt.Errorf("fence sandbox %s: %w", s.name, err)
	case code == fencedExit:
		return fmt.Errorf("%w: %s (token %d, %s)", sandbox.ErrFenced, s.name, token, strings.TrimSpace(out))
	case code == legacyExit:
		return nil
	case code != 0:
		return fmt.Errorf("fence sandbox %s: exit %d: %s", s.name, code, strings.TrimSpace(out))
	}
	s.token = token
	return nil
}

// checkFence fails with [sandbox.ErrFenced] if a newer owner fenced the sandbox since
// this handle did. Handles without a token check nothing.
func (s *Sandbox) checkFence(ctx context.Context) error {
	if s.token <= 0 {
		return nil
	}
	// As the keeper: a reset by the newer owner, killing uid-1000 processes, must
	// not turn the answer into an error.
	code, out, err := s.d.execWait(ctx, s.id, keeperUser, fenced(s.token, "true")...)
	switch {
	case err != nil:
		return fmt.Errorf("check fence of %s: %w", s.name, err)
	case code == fencedExit:
		return fmt.Errorf("%w: %s (token %d, %s)", sandbox.ErrFenced, s.name, s.token, strings.TrimSpace(out))
	case code != 0:
		return fmt.Errorf("check fence of %s: exit %d: %s", s.name, code, strings.TrimSpace(out))
	}
	return nil
}

// isFencedStart reports whether a kernel failed to start because its fence check
// refused.
func isFencedStart(err error) bool {
	return err != nil && strings.Contains(err.Error(), "codeinterp: fenced")
}

// errFencedStart turns a kernel start refused by the fence into [sandbox.ErrFenced].
func errFencedStart(name string, err error) error {
	if isFencedStart(err) {
		return fmt.Errorf("%w: %s: %v", sandbox.ErrFenced, name, err)
	}
	return err
}

func (s *Sandbox) isPaused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paused
}
