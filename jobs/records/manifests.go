package records

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/codeinterp/codeinterp/sandbox"
)

// ImageManifest is what a worker read of a sandbox image's manifest, published for
// the API (GET /v1/runtimes), which never talks to the sandbox runtime itself.
type ImageManifest struct {
	// Manifest is nil when the image has no manifest file.
	Manifest *sandbox.Manifest `json:"manifest"`
	Worker   string            `json:"worker"`
	ReadAt   time.Time         `json:"read_at"`
}

// PublishManifest records what image holds. It is kept without expiry: a worker
// publishes it again whenever it starts, so it follows a rebuilt image.
func (s *Store) PublishManifest(ctx context.Context, image string, m ImageManifest) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := s.rdb.Set(ctx, s.manifestKey(image), data, 0).Err(); err != nil {
		return fmt.Errorf("publish manifest of %s: %w", image, err)
	}
	return nil
}

// Manifests returns the published manifests of images, by image; an image no
// worker published yet is absent.
func (s *Store) Manifests(ctx context.Context, images []string) (map[string]ImageManifest, error) {
	out := map[string]ImageManifest{}
	if len(images) == 0 {
		return out, nil
	}
	keys := make([]string, len(images))
	for i, img := range images {
		keys[i] = s.manifestKey(img)
	}
	vals, err := s.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("read manifests: %w", err)
	}
	for i, v := range vals {
		str, ok := v.(string)
		if !ok {
			continue
		}
		var m ImageManifest
		if err := json.Unmarshal([]byte(str), &m); err != nil {
			continue // unreadable: as if not yet published
		}
		out[images[i]] = m
	}
	return out, nil
}
