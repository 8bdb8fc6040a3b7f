package docker

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
)

// Skills. A sandbox's skills live in skillsMount, a tmpfs owned by the keeper user,
// and the workspace's skills/ is a symbolic link to it. The file helper unpacks a
// skill there as the keeper, with modes 0444 (0555 for an executable) and 0555 for
// directories: the code, uid 1000, reads them and can change nothing (it is neither
// owner nor capable: sandboxes have no capabilities, so not even root could write
// into the code's 0700 workspace, which is why skills are not in it). Because the
// link is the only trace in the workspace, and walks never follow links, skills are
// in no listing, no output and no snapshot; a recyclable sandbox's Wipe empties the
// tmpfs first. The tmpfs is as large as the workspace and, like it, is memory.
const skillsMount = "/run/codeinterp-skills"

// skillsTmpfs is skillsMount's mount options: the keeper's, readable by all.
func skillsTmpfs(l sandbox.Limits) string {
	// exec: a skill's scripts may be run (Docker's tmpfs default is noexec).
	return fmt.Sprintf("rw,exec,nosuid,nodev,size=%d,uid=65534,gid=65534,mode=0755", l.Workspace)
}

// PutSkill places a skill at skills/<name>/, read-only to the code (see
// [sandbox.Sandbox]). It costs one run of the file helper, and one more the first
// time, to link skills/ into the workspace. Under a fencing token it runs only while
// no newer owner fenced the sandbox, like every helper run.
func (s *Sandbox) PutSkill(ctx context.Context, name string, archive io.Reader) error {
	if err := sandbox.CheckSkillName(name); err != nil {
		return fmt.Errorf("%w: %v", sandbox.ErrBadPath, err)
	}
	if err := s.resume(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	s.skills = true // from now on a Wipe must empty the skills tmpfs
	linked := s.skillsLinked
	s.mu.Unlock()
	res, err := s.writeAs(ctx, keeperUser, func(w io.Writer) error { return skillTar(archive, w) }, "skill", name)
	if err != nil {
		return fmt.Errorf("put skill %s into %s: %w", name, s.name, err)
	}
	if res.Failed > 0 {
		return fmt.Errorf("%w: skill %s: %s", sandbox.ErrBadPath, name, strings.Join(res.Errors, "; "))
	}
	if linked {
		return nil
	}
	res, err = s.write(ctx, func(w io.Writer) error {
		tw := tar.NewWriter(w)
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: sandbox.SkillsDir, Linkname: skillsMount,
			Mode: 0o777, ModTime: time.Now(), Format: tar.FormatPAX}); err != nil {
			return err
		}
		return tw.Close()
	})
	switch {
	case err != nil:
		return fmt.Errorf("link skills into %s: %w", s.name, err)
	case res.Failed > 0:
		return fmt.Errorf("%w (%s)", sandbox.ErrSkillsInUse, strings.Join(res.Errors, "; "))
	}
	s.mu.Lock()
	s.skillsLinked = true
	s.mu.Unlock()
	return nil
}

// skillTar copies a skill's archive for the file helper: regular files and
// directories with clean relative paths, read-only modes (a directory the archive
// leaves out is added before its first file), nothing else.
func skillTar(r io.Reader, w io.Writer) error {
	tr, tw := tar.NewReader(r), tar.NewWriter(w)
	dirs := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return tw.Close()
		}
		if err != nil {
			return fmt.Errorf("read skill archive: %w", err)
		}
		name := strings.TrimSuffix(hdr.Name, "/")
		if c, err := sandbox.CleanPath(name); err != nil || c != name {
			return fmt.Errorf("%w: skill entry %q", sandbox.ErrBadPath, hdr.Name)
		}
		out := &tar.Header{Name: name, ModTime: hdr.ModTime, Format: tar.FormatPAX, Uid: 65534, Gid: 65534}
		switch hdr.Typeflag {
		case tar.TypeDir:
			out.Typeflag, out.Name, out.Mode = tar.TypeDir, name+"/", 0o555
		case tar.TypeReg:
			out.Typeflag, out.Size, out.Mode = tar.TypeReg, hdr.Size, 0o444
			if hdr.Mode&0o111 != 0 {
				out.Mode = 0o555
			}
		default:
			return fmt.Errorf("%w: skill entry %q is not a file or directory", sandbox.ErrBadPath, hdr.Name)
		}
		if out.Typeflag == tar.TypeDir {
			dirs[name] = true
		} else if err := parentDirs(tw, dirs, name); err != nil {
			return err
		}
		if err := tw.WriteHeader(out); err != nil {
			return err
		}
		if out.Typeflag == tar.TypeReg {
			if _, err := io.CopyN(tw, tr, hdr.Size); err != nil {
				return fmt.Errorf("copy skill entry %s: %w", name, err)
			}
		}
	}
}

// parentDirs writes the directories above name that were not written yet, read-only.
func parentDirs(tw *tar.Writer, dirs map[string]bool, name string) error {
	var missing []string
	for d := path.Dir(name); d != "." && !dirs[d]; d = path.Dir(d) {
		missing = append(missing, d)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		dirs[missing[i]] = true
		hdr := &tar.Header{Typeflag: tar.TypeDir, Name: missing[i] + "/", Mode: 0o555, ModTime: time.Now(), Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
	}
	return nil
}

// clearSkills empties the skills tmpfs, if a skill was ever put into the sandbox.
// The caller holds s.mu.
func (s *Sandbox) clearSkillsLocked(ctx context.Context) error {
	if !s.skills {
		return nil
	}
	code, out, err := s.d.execWait(ctx, s.id, keeperUser, fenced(s.token, append(helperCmd[:len(helperCmd):len(helperCmd)], "unskill")...)...)
	switch {
	case err != nil:
		return fmt.Errorf("remove skills of %s: %w", s.name, err)
	case code != 0:
		return fmt.Errorf("remove skills of %s: exit %d: %s", s.name, code, strings.TrimSpace(out))
	}
	s.skills, s.skillsLinked = false, false
	return nil
}

// isSkillsLink reports whether a workspace archive entry is the link to the skills
// tmpfs, which snapshots leave out (and restores ignore).
func isSkillsLink(hdr *tar.Header, name string) bool {
	return hdr.Typeflag == tar.TypeSymlink && name == sandbox.SkillsDir && hdr.Linkname == skillsMount
}
