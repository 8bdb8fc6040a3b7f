package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/codeinterp/codeinterp/storage"
)

// The secrets docker-compose.yml falls back to, so that `make demo` works on a fresh
// clone. Everyone who has read the repository knows them: a stack running with one
// is open to anyone who reaches it. Every binary refuses them unless
// CODEINTERP_DEV_MODE=true (which `make up`, `make demo` and `make bench` set).
const (
	DemoAPIKey         = "demo-key"
	DemoWebhookSecret  = "demo-webhook-secret-change-me"
	DemoS3SecretKey    = "codeinterp-secret"      // the services' bucket-scoped user
	DemoS3RootPassword = "codeinterp-root-secret" // MinIO's root, for the setup step
)

const demoHint = "it is the demo value docker-compose.yml ships: set one of your own, or CODEINTERP_DEV_MODE=true for a local demo"

// demoSecrets names each variable that holds a demo secret, unless in dev mode. The
// errors name the variable, never the value.
func (c Config) demoSecrets() []error {
	if c.DevMode {
		return nil
	}
	var errs []error
	if c.S3SecretKey == DemoS3SecretKey {
		errs = append(errs, errors.New("CODEINTERP_S3_SECRET_KEY: "+demoHint))
	}
	if c.S3RootPassword == DemoS3RootPassword {
		errs = append(errs, errors.New("CODEINTERP_S3_ROOT_PASSWORD: "+demoHint))
	}
	for _, entry := range strings.Split(c.APIKeys, ",") {
		tenant, key, _ := strings.Cut(strings.TrimSpace(entry), ":")
		if key == DemoAPIKey {
			errs = append(errs, fmt.Errorf("CODEINTERP_API_KEYS: the key of tenant %q: %s", tenant, demoHint))
		}
	}
	for _, entry := range strings.Split(c.WebhookSecrets, ",") {
		tenant, secret, _ := strings.Cut(strings.TrimSpace(entry), ":")
		if secret == DemoWebhookSecret {
			errs = append(errs, fmt.Errorf("CODEINTERP_WEBHOOK_SECRETS: the secret of tenant %q: %s", tenant, demoHint))
		}
	}
	return errs
}

// S3Root returns the storage configuration with MinIO's root credentials instead of
// the services' user, for the setup step that creates that user. Both root variables
// are required, and the root user must not be the services' user.
func (c Config) S3Root() (storage.Config, error) {
	var errs []error
	if c.S3RootUser == "" || c.S3RootPassword == "" {
		errs = append(errs, errors.New("CODEINTERP_S3_ROOT_USER and CODEINTERP_S3_ROOT_PASSWORD: both required by the setup step (MinIO's root credentials)"))
	}
	if c.S3RootUser == c.S3AccessKey {
		errs = append(errs, errors.New("CODEINTERP_S3_ACCESS_KEY: must differ from CODEINTERP_S3_ROOT_USER: the services run as a bucket-scoped user, never as root"))
	}
	if len(c.S3SecretKey) < 8 {
		errs = append(errs, errors.New("CODEINTERP_S3_SECRET_KEY: want at least 8 characters (MinIO's minimum)"))
	}
	if err := errors.Join(errs...); err != nil {
		return storage.Config{}, err
	}
	root := c.Storage()
	root.AccessKey, root.SecretKey = c.S3RootUser, c.S3RootPassword
	return root, nil
}
