package config

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// README.md documents every setting: each variable Config reads appears in the first
// column of the Configuration table, or of the Limits and quotas table (which names
// them without the CODEINTERP_ prefix), and every variable those columns name is read
// by Config, unless its row says it is compose's alone. A setting added without its
// line, or a line left behind by a setting removed, fails here.
func TestREADMEDocumentsEverySetting(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	read := configVariables()
	documented := map[string]bool{}
	for _, row := range readmeRows(string(readme)) {
		for _, names := range row.spans {
			found := false
			for _, n := range names {
				documented[n] = true
				found = found || slices.Contains(read, n)
			}
			if !found && !strings.Contains(row.line, "compose") {
				t.Errorf("README.md documents %v, which internal/config does not read (a row of compose's variables says so): %s", names, row.line)
			}
		}
	}
	for _, name := range read {
		if !documented[name] {
			t.Errorf("%s is read by internal/config but README.md's Configuration or Limits and quotas table does not name it", name)
		}
	}
}

// configVariables returns the variables Config reads, from its env tags.
func configVariables() []string {
	var names []string
	typ := reflect.TypeOf(Config{})
	for i := range typ.NumField() {
		if tag := typ.Field(i).Tag.Get("env"); tag != "" {
			names = append(names, "CODEINTERP_"+strings.Split(tag, ",")[0])
		}
	}
	return names
}

var (
	codeSpan = regexp.MustCompile("`([^`]+)`")
	fullName = regexp.MustCompile(`^CODEINTERP_[A-Z0-9_]+$`)
	bareName = regexp.MustCompile(`^[A-Z][A-Z0-9_]+$`)
	tailName = regexp.MustCompile(`^_[A-Z0-9_]+$`)
)

// readmeRow is a row of a settings table: each code span of its first cell, as the
// variables it may name.
type readmeRow struct {
	line  string
	spans [][]string
}

// readmeRows returns the rows of README's Configuration and Limits and quotas tables.
// A first cell may shorten a second variable to its tail (`CODEINTERP_LOG_LEVEL` /
// `_LOG_FORMAT`): the tail replaces some of the last words of the name before it.
func readmeRows(readme string) []readmeRow {
	var rows []readmeRow
	section := ""
	for _, line := range strings.Split(readme, "\n") {
		if strings.HasPrefix(line, "## ") {
			section = strings.TrimPrefix(line, "## ")
		}
		cells := strings.Split(line, "|")
		if (section != "Configuration" && section != "Limits and quotas") || len(cells) < 3 || strings.HasPrefix(cells[1], "---") {
			continue
		}
		row := readmeRow{line: line}
		last := ""
		for _, m := range codeSpan.FindAllStringSubmatch(cells[1], -1) {
			span := m[1]
			switch {
			case fullName.MatchString(span):
				last = span
				row.spans = append(row.spans, []string{span})
			case section == "Limits and quotas" && bareName.MatchString(span):
				last = "CODEINTERP_" + span
				row.spans = append(row.spans, []string{last})
			case tailName.MatchString(span) && last != "":
				row.spans = append(row.spans, completions(last, span))
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// completions returns every variable the tail can make of the name before it, by
// replacing one or more of its last words.
func completions(last, tail string) []string {
	words := strings.Split(strings.TrimPrefix(last, "CODEINTERP_"), "_")
	var names []string
	for keep := len(words) - 1; keep >= 0; keep-- {
		names = append(names, strings.Join(append([]string{"CODEINTERP"}, words[:keep]...), "_")+tail)
	}
	return names
}
