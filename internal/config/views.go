package config

// Typed views of the configuration, for the packages that take a Config struct.

import (
	"cmp"
	"log/slog"
	"os"

	"github.com/codeinterp/codeinterp/sandbox"
	"github.com/codeinterp/codeinterp/storage"
)

// Storage returns the artifact store's configuration.
func (c Config) Storage() storage.Config {
	return storage.Config{
		Endpoint: c.S3Endpoint, Secure: c.S3Secure, AccessKey: c.S3AccessKey, SecretKey: c.S3SecretKey,
		Region: c.S3Region, Bucket: c.S3Bucket, PublicURL: c.S3PublicURL, URLTTL: c.URLTTL, Retention: c.Retention,
		TransferTimeout: c.TransferTimeout,
	}
}

// SkillStorage returns the configuration of the skills' store: the same S3 in a bucket
// of its own, whose objects never expire (skills live until deleted).
func (c Config) SkillStorage() storage.Config {
	s := c.Storage()
	s.Bucket, s.Keep = cmp.Or(c.S3SkillBucket, c.S3Bucket+"-skills"), true
	return s
}

// Limits returns the per-sandbox limits.
func (c Config) Limits() sandbox.Limits {
	return sandbox.Limits{
		Memory: c.MemoryMB << 20, CPUs: c.CPUs, Pids: c.Pids, Workspace: c.WorkspaceMB << 20, Output: c.OutputBytes,
	}
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
