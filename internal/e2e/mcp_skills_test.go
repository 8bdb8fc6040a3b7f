package e2e

import (
	"net/http"
	"strings"
	"testing"
)

// MCP's code_interpreter attaches skills and picks profiles like POST /v1/executions.
func TestMCPSkillsAndProfile(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	var v skillView
	if code := s.uploadSkill(t, "key-a", "brand", "", tarOf(t, map[string]string{"colors.txt": "navy\n"}), false, &v); code != http.StatusCreated {
		t.Fatalf("upload: %d", code)
	}
	cs, err := s.mcpHTTP(t, "key-a", &progress{})
	if err != nil {
		t.Fatal(err)
	}
	res, ex := runCode(t, cs, "print(open('skills/brand/colors.txt').read(), end='')", map[string]any{"skills": []string{"brand@1"}, "profile": "default"})
	if res.IsError || ex.Stdout != "navy\n" {
		t.Fatalf("code_interpreter with a skill: %q", texts(res))
	}
	// The session's thread keeps it.
	if res, ex := runCode(t, cs, "print(open('skills/brand/colors.txt').read(), end='')"); res.IsError || ex.Stdout != "navy\n" {
		t.Fatalf("the thread's skill on the next call: %q", texts(res))
	}
	for what, args := range map[string]map[string]any{
		"unknown skill":   {"skills": []string{"nope"}},
		"unknown profile": {"profile": "huge"},
	} {
		field := "skills"
		if args["profile"] != nil {
			field = "profile"
		}
		args["code"] = "1"
		res := callTool(t, cs, "code_interpreter", args)
		if !res.IsError || !strings.Contains(texts(res), field) {
			t.Errorf("%s: %v %q; want a tool error naming %s", what, res.IsError, texts(res), field)
		}
	}
}
