package sandboxtest_test

import (
	"testing"

	"github.com/codeinterp/codeinterp/sandbox/sandboxtest"
)

// The fake keeps the promises the runtime-level suite pins, so unit tests built on it
// exercise the same semantics as the real runtimes.
func TestFakeRuntime(t *testing.T) {
	sandboxtest.ExerciseRuntime(t, func(t *testing.T) sandboxtest.Runtime { return sandboxtest.NewFake() })
}
