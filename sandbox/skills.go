package sandbox

import (
	"errors"
	"fmt"
	"regexp"
)

// SkillsDir is where skills appear in the workspace: skills/<name>/, read-only to
// the code. The name is reserved: a runtime may refuse to attach a skill while the
// code keeps a file or directory of its own there ([ErrSkillsInUse]).
const SkillsDir = "skills"

// ErrSkillsInUse means a skill could not be attached because the workspace holds a
// file or directory of the code's own at [SkillsDir].
var ErrSkillsInUse = errors.New("the workspace has its own " + SkillsDir + "/; rename it to attach skills")

// MaxSkillName bounds a skill's name.
const MaxSkillName = 64

var skillNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// CheckSkillName says why name cannot name a skill (a directory under [SkillsDir]),
// or returns nil: 1 to 64 of A-Z a-z 0-9 . _ -, starting with a letter or digit.
func CheckSkillName(name string) error {
	if len(name) > MaxSkillName || !skillNameRE.MatchString(name) {
		return fmt.Errorf("a skill name is 1 to %d of A-Z a-z 0-9 . _ - and starts with a letter or digit, not %q", MaxSkillName, name)
	}
	return nil
}
