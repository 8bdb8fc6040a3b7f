package config

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/jobs"
	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/storage"
)

// Redis returns a client for CODEINTERP_REDIS_URL. It does no I/O.
func (c Config) Redis() (*redis.Client, error) {
	opts, err := redis.ParseURL(c.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("CODEINTERP_REDIS_URL: %w", err)
	}
	// Long-polls and blocking reads hold connections; keep room for them, and let a
	// canceled context end a blocking read.
	opts.PoolSize = max(opts.PoolSize, 64)
	opts.ContextTimeoutEnabled = true
	return redis.NewClient(opts), nil
}

// Storage returns the artifact store's configuration.
func (c Config) Storage() storage.Config {
	return storage.Config{
		Endpoint: c.S3Endpoint, Secure: c.S3Secure, AccessKey: c.S3AccessKey, SecretKey: c.S3SecretKey,
		Region: c.S3Region, Bucket: c.S3Bucket, PublicURL: c.S3PublicURL, URLTTL: c.URLTTL, Retention: c.Retention,
	}
}

// Limits returns the per-sandbox limits.
func (c Config) Limits() sandbox.Limits {
	return sandbox.Limits{
		Memory: c.MemoryMB << 20, CPUs: c.CPUs, Pids: c.Pids, Workspace: c.WorkspaceMB << 20, Output: c.OutputBytes,
	}
}

// Sandbox returns the sandbox runtime's configuration.
func (c Config) Sandbox() sandbox.Config {
	return sandbox.Config{Image: c.SandboxImage, Grace: c.InterruptGrace, Prefix: c.SandboxPrefix}
}

// Logger returns the process logger.
func (c Config) Logger() *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}

// Records returns the record store's configuration.
func (c Config) Records() jobs.RecordsConfig {
	return jobs.RecordsConfig{Prefix: c.KeyPrefix, TTL: c.Retention, HeartbeatTTL: c.HeartbeatTTL}
}
