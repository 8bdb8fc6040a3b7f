package sandbox

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestOutcomeClean(t *testing.T) {
	outputs := []string{"outputs/a.txt", "../etc/passwd", "/etc/shadow", "outputs/a.txt", "./outputs/b.txt", "a.txt", "outputs/x\ny", "outputs/\xff"}
	for i := range 1200 {
		outputs = append(outputs, fmt.Sprintf("outputs/%d", i))
	}
	out := Outcome{
		ExitCode: math.MinInt64, CPUSeconds: math.Inf(1),
		Error:     &Error{Name: strings.Repeat("é", 1000), Value: "v\xff", Traceback: strings.Repeat("t", 1<<20)},
		Outputs:   outputs,
		Workspace: []FileInfo{{Name: "ok.txt", Size: -3}, {Name: "../x"}, {Name: "ok.txt"}, {Name: "d/e.txt", Size: 7}},
		Results: []Rich{{Type: "text/plain", Text: "ok"}, {Type: "image/png", File: "../x.png"}, {Type: "image/png", File: "outputs/p.png"},
			{Type: "text/html", Text: "<b>", File: "outputs/p.png"}, {Type: "image/svg", Text: "x"}},
		Notes: []string{strings.Repeat("n", 10000)},
	}
	c := out.Clean()
	if c.ExitCode != math.MinInt32 || c.CPUSeconds != 0 {
		t.Errorf("exit %d cpu %v", c.ExitCode, c.CPUSeconds)
	}
	if len(c.Error.Name) > MaxErrorName || !utf8.ValidString(c.Error.Name) || c.Error.Value != "v\uFFFD" ||
		len(c.Error.Traceback) > MaxTraceback || !strings.HasSuffix(c.Error.Traceback, "[truncated]") {
		t.Errorf("error %d %q %d", len(c.Error.Name), c.Error.Value, len(c.Error.Traceback))
	}
	if len(c.Outputs) != MaxOutputs || c.Outputs[0] != "outputs/a.txt" || c.Outputs[1] != "outputs/0" {
		t.Errorf("outputs: %d, %q", len(c.Outputs), c.Outputs[:3])
	}
	if want := []FileInfo{{Name: "ok.txt"}, {Name: "d/e.txt", Size: 7}}; !reflect.DeepEqual(c.Workspace, want) {
		t.Errorf("workspace %+v", c.Workspace)
	}
	if want := []Rich{{Type: "text/plain", Text: "ok"}, {Type: "image/png", File: "outputs/p.png"}}; !reflect.DeepEqual(c.Results, want) {
		t.Errorf("results %+v", c.Results)
	}
	if len(c.Notes) != 3 || len(c.Notes[0]) > MaxNote || !strings.HasPrefix(c.Notes[1], "208 reported output paths refused") ||
		!strings.HasPrefix(c.Notes[2], "2 workspace listing entries refused") {
		t.Errorf("notes %q", c.Notes)
	}
	if again := c.Clean(); !reflect.DeepEqual(again, c) {
		t.Errorf("cleaning a clean outcome changed it:\n%+v\n%+v", again, c)
	}
	if out.Error.Value != "v\xff" || len(out.Notes) != 1 {
		t.Error("Clean changed the outcome it was given")
	}
	many := Outcome{Notes: make([]string, 25)}.Clean()
	if len(many.Notes) != MaxNotes || many.Notes[MaxNotes-1] != "16 more notes left out" {
		t.Errorf("notes %q", many.Notes)
	}
	if empty := (Outcome{Workspace: []FileInfo{}}).Clean(); empty.Workspace == nil {
		t.Error("an empty listing became no listing")
	}
}

func TestReadLimits(t *testing.T) {
	for _, tc := range []struct {
		l          ReadLimits
		size, sent int64
		want       bool
	}{
		{ReadLimits{}, 1 << 40, 1 << 40, true},
		{ReadLimits{}, -1, 0, false},
		{ReadLimits{Each: 10}, 10, 100, true},
		{ReadLimits{Each: 10}, 11, 0, false},
		{ReadLimits{Total: 10}, 4, 6, true},
		{ReadLimits{Total: 10}, 5, 6, false},
	} {
		if got := tc.l.Admits(tc.size, tc.sent); got != tc.want {
			t.Errorf("%+v.Admits(%d, %d) = %v", tc.l, tc.size, tc.sent, got)
		}
	}
}
