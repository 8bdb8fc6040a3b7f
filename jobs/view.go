package jobs

import (
	"cmp"
	"context"
	"encoding/json"
	"path"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
)

// Presigner makes download URLs; *storage.Store provides it.
type Presigner interface {
	PresignGet(ctx context.Context, key, filename string) (string, time.Time, error)
}

// View is the execution object of the API contract, as GET /v1/executions/{id}
// answers it and webhooks deliver it.
type View struct {
	ID       string           `json:"id"`
	ThreadID *string          `json:"thread_id"`
	Language sandbox.Language `json:"language"`
	Profile  string           `json:"profile"`
	Status   Status           `json:"status"`
	Outcome
	Files     []FileView      `json:"files"`
	CreatedAt time.Time       `json:"created_at"`
	Metadata  json.RawMessage `json:"metadata"`
	Webhook   *WebhookState   `json:"webhook,omitempty"`
	// Skills are the attached skill versions, as "name@version".
	Skills []string `json:"skills"`
}

// FileView is a produced file in a View.
type FileView struct {
	Name        string    `json:"name"`
	Size        int64     `json:"size"`
	ContentType string    `json:"content_type"`
	SHA256      string    `json:"sha256"`
	URL         string    `json:"url"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// Render renders ex for a client, with freshly presigned download URLs: links stay
// valid for the URL TTL from each read, for as long as the artifacts are kept.
func Render(ctx context.Context, ex *Execution, p Presigner) (*View, error) {
	v := &View{
		ID: ex.ID, Language: ex.Language, Profile: cmp.Or(ex.Profile, DefaultProfile), Status: ex.Status, Outcome: ex.Outcome, Files: []FileView{},
		CreatedAt: ex.CreatedAt.UTC(), Metadata: ex.Metadata, Webhook: ex.Webhook,
	}
	v.StartedAt, v.FinishedAt = utc(ex.StartedAt), utc(ex.FinishedAt)
	if ex.ThreadID != "" {
		v.ThreadID = &ex.ThreadID
	}
	v.Skills = make([]string, 0, len(ex.Skills))
	for _, sk := range ex.Skills {
		v.Skills = append(v.Skills, sk.Ref())
	}
	if v.Results == nil {
		v.Results = []sandbox.Rich{}
	}
	if len(v.Metadata) == 0 {
		v.Metadata = json.RawMessage("{}")
	}
	for _, f := range ex.Files {
		url, expires, err := p.PresignGet(ctx, f.Key, path.Base(f.Name))
		if err != nil {
			return nil, err
		}
		v.Files = append(v.Files, FileView{Name: f.Name, Size: f.Size, ContentType: f.ContentType, SHA256: f.SHA256, URL: url, ExpiresAt: expires})
	}
	return v, nil
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
