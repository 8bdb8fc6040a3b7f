package storage

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// ErrNotFound means no object has the key.
var ErrNotFound = errors.New("object not found")

// Config configures a [Store].
type Config struct {
	Endpoint  string // host:port the services reach S3 at, e.g. "minio:9000"
	Secure    bool   // https to Endpoint
	AccessKey string
	SecretKey string
	Region    string // default "us-east-1"; set so presigning needs no network call
	Bucket    string // default "codeinterp"
	// PublicURL is the base URL clients download from, e.g. "http://localhost:9000",
	// when it differs from Endpoint. Presigned URLs are signed for this host.
	PublicURL string
	URLTTL    time.Duration // lifetime of presigned URLs; default 1 h
	Retention time.Duration // how long objects are kept; default 7 days
	// TransferTimeout bounds one Put, and one Open from the call to the reader's
	// Close; default 10 min.
	TransferTimeout time.Duration
	// Keep makes the bucket's objects permanent: Init sets no expiry rule (and
	// removes one), and Retention means nothing. For skills, kept until deleted.
	Keep bool
}

func (c Config) withDefaults() Config {
	c.Region = cmp.Or(c.Region, "us-east-1")
	c.Bucket = cmp.Or(c.Bucket, "codeinterp")
	c.URLTTL = cmp.Or(c.URLTTL, time.Hour)
	c.Retention = cmp.Or(c.Retention, 7*24*time.Hour)
	c.TransferTimeout = cmp.Or(c.TransferTimeout, 10*time.Minute)
	return c
}

// Store reads and writes objects in one bucket.
type Store struct {
	cli    *minio.Client
	signer *minio.Client // same credentials, public host: only used to presign
	cfg    Config
}

// New returns a Store. It does no I/O.
func New(cfg Config) (*Store, error) {
	cfg = cfg.withDefaults()
	cli, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds: credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""), Secure: cfg.Secure, Region: cfg.Region,
	})
	if err != nil {
		return nil, fmt.Errorf("s3 client for %s: %w", cfg.Endpoint, err)
	}
	signer := cli
	if cfg.PublicURL != "" {
		u, err := url.Parse(cfg.PublicURL)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("public URL %q: want scheme://host[:port]", cfg.PublicURL)
		}
		signer, err = minio.New(u.Host, &minio.Options{
			Creds: credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""), Secure: u.Scheme == "https", Region: cfg.Region,
		})
		if err != nil {
			return nil, fmt.Errorf("s3 signer for %s: %w", cfg.PublicURL, err)
		}
	}
	return &Store{cli: cli, signer: signer, cfg: cfg}, nil
}

// Bucket returns the bucket name.
func (s *Store) Bucket() string { return s.cfg.Bucket }

// Retention returns how long objects are kept.
func (s *Store) Retention() time.Duration { return s.cfg.Retention }

// URLTTL returns how long a presigned URL works.
func (s *Store) URLTTL() time.Duration { return s.cfg.URLTTL }

// Ping checks that the bucket answers.
func (s *Store) Ping(ctx context.Context) error {
	ok, err := s.cli.BucketExists(ctx, s.cfg.Bucket)
	if err != nil {
		return fmt.Errorf("s3 %s: %w", s.cfg.Endpoint, err)
	}
	if !ok {
		return fmt.Errorf("s3 bucket %q does not exist", s.cfg.Bucket)
	}
	return nil
}
