// Command setup prepares MinIO for a codeinterp stack and exits: it creates the
// bucket and a user allowed only that bucket's objects, which the api, worker and
// janitor run as (internal/provision). It is the one process given MinIO's root
// credentials (CODEINTERP_S3_ROOT_USER, CODEINTERP_S3_ROOT_PASSWORD); the services'
// user is CODEINTERP_S3_ACCESS_KEY / CODEINTERP_S3_SECRET_KEY. docker-compose.yml
// runs it before the services on every start: it is idempotent, and a changed
// secret is applied to the user.
//
// A separate binary, not a subcommand of a service: the root credentials and the
// MinIO admin client never enter the services' binaries or environments.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/codeinterp/codeinterp/internal/config"
	"github.com/codeinterp/codeinterp/internal/provision"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "setup:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := config.Load(nil)
	if err != nil {
		return err
	}
	root, err := cfg.S3Root()
	if err != nil {
		return err
	}
	skills := root
	skills.Bucket, skills.Keep = cfg.SkillStorage().Bucket, true
	log := cfg.Logger()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	// MinIO may still be starting: try again for up to a minute.
	var res provision.Result
	for attempt := 1; ; attempt++ {
		res, err = provision.Run(ctx, provision.Config{Root: root, User: cfg.S3AccessKey, Secret: cfg.S3SecretKey, Skills: skills})
		if err == nil || attempt == 30 || ctx.Err() != nil {
			break
		}
		log.Info("minio not ready; trying again", "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
	if err != nil {
		return err
	}
	log.Info("minio ready for codeinterp", "bucket", res.Bucket, "user", res.User, "policy", res.Policy)
	return nil
}
