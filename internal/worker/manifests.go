package worker

import (
	"context"
	"slices"
	"time"

	"github.com/codeinterp/codeinterp/jobs/records"
)

// publishManifests reads the manifest of each profile's image and publishes it for
// the API (GET /v1/runtimes), once at start: a rebuilt image is read again when its
// workers restart. An image that cannot be read now is tried again a few times.
func (r *Runner) publishManifests(ctx context.Context) {
	var images []string
	for _, p := range r.cfg.Profiles.All() {
		if p.Image != "" && !slices.Contains(images, p.Image) {
			images = append(images, p.Image)
		}
	}
	for attempt := 1; len(images) > 0 && attempt <= 5; attempt++ {
		var failed []string
		for _, image := range images {
			m, err := r.cfg.Manifests.Manifest(ctx, image)
			if err == nil {
				err = r.cfg.Records.PublishManifest(ctx, image, records.ImageManifest{Manifest: m, Worker: r.cfg.Worker, ReadAt: r.cfg.Now().UTC()})
			}
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				r.cfg.Logger.Warn("read the manifest of a profile's image", "image", image, "attempt", attempt, "err", err)
				failed = append(failed, image)
			}
		}
		images = failed
		if len(images) > 0 && !r.pause(ctx, time.Duration(attempt)*10*time.Second) {
			return
		}
	}
}
