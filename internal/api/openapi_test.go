package api_test

import (
	"context"
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/codeinterp/codeinterp/internal/api"
	"github.com/codeinterp/codeinterp/sandbox"
)

// openapi.json documents exactly the languages the sandboxes support, as requests
// accept them and executions show them.
func TestOpenAPILanguagesMatchSandbox(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, l := range sandbox.Languages {
		want = append(want, string(l))
	}
	for _, schema := range []string{"ExecutionRequest", "Execution"} {
		s := doc.Components.Schemas[schema]
		if s == nil || s.Value.Properties["language"] == nil {
			t.Fatalf("schema %s has no language property", schema)
		}
		var got []string
		for _, v := range s.Value.Properties["language"].Value.Enum {
			got = append(got, v.(string))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s.language enum = %v; sandbox.Languages = %v", schema, got, want)
		}
	}
	if d := doc.Components.Schemas["ExecutionRequest"].Value.Properties["language"].Value.Default; d != string(sandbox.DefaultLanguage) {
		t.Errorf("default language %v, want %s", d, sandbox.DefaultLanguage)
	}
}
