package config

import (
	"strings"
	"testing"
)

// demoEnv is the environment docker-compose.yml gives a stack when nothing is set.
var demoEnv = map[string]string{
	"CODEINTERP_S3_ACCESS_KEY":    "codeinterp",
	"CODEINTERP_S3_SECRET_KEY":    DemoS3SecretKey,
	"CODEINTERP_S3_ROOT_USER":     "codeinterp-root",
	"CODEINTERP_S3_ROOT_PASSWORD": DemoS3RootPassword,
	"CODEINTERP_API_KEYS":         "acme:a-real-key-0123456789,demo:" + DemoAPIKey,
	"CODEINTERP_WEBHOOK_SECRETS":  "demo:" + DemoWebhookSecret,
}

// Without dev mode, every demo secret is refused, each naming its variable, all at
// once, and no message repeats a secret.
func TestRefusesDemoSecrets(t *testing.T) {
	_, err := Load(demoEnv)
	if err == nil {
		t.Fatal("the demo secrets were accepted without CODEINTERP_DEV_MODE")
	}
	msg := err.Error()
	for _, name := range []string{"CODEINTERP_S3_SECRET_KEY", "CODEINTERP_S3_ROOT_PASSWORD", "CODEINTERP_API_KEYS", "CODEINTERP_WEBHOOK_SECRETS"} {
		if !strings.Contains(msg, name) {
			t.Errorf("the refusal does not name %s:\n%s", name, msg)
		}
	}
	if !strings.Contains(msg, "CODEINTERP_DEV_MODE=true") {
		t.Errorf("the refusal does not say how to run a demo:\n%s", msg)
	}
	for _, secret := range []string{DemoS3SecretKey, DemoS3RootPassword, DemoWebhookSecret, "a-real-key-0123456789"} {
		if strings.Contains(msg, secret) {
			t.Errorf("the refusal quotes a secret %q:\n%s", secret, msg)
		}
	}
	if strings.Contains(msg, "tenant \"acme\"") {
		t.Errorf("a tenant with a real key was refused:\n%s", msg)
	}
	// The defaults themselves are the demo S3 user: a binary started with no
	// configuration at all refuses to run.
	if _, err := Load(map[string]string{}); err == nil || !strings.Contains(err.Error(), "CODEINTERP_S3_SECRET_KEY") {
		t.Fatalf("defaults without dev mode: %v", err)
	}
}

func TestDevModeAllowsDemoSecrets(t *testing.T) {
	env := map[string]string{"CODEINTERP_DEV_MODE": "true"}
	for k, v := range demoEnv {
		env[k] = v
	}
	c, err := Load(env)
	if err != nil {
		t.Fatal(err)
	}
	if !c.DevMode {
		t.Fatal("DevMode not set")
	}
}

func TestRealSecretsNeedNoDevMode(t *testing.T) {
	c, err := Load(map[string]string{
		"CODEINTERP_S3_SECRET_KEY": "s3-secret-of-mine", "CODEINTERP_API_KEYS": "acme:key-of-mine",
		"CODEINTERP_WEBHOOK_SECRETS": "acme:webhook-secret-of-mine",
	})
	if err != nil || c.DevMode {
		t.Fatalf("Load = %v (dev mode %v)", err, c.DevMode)
	}
}

// The setup step gets MinIO's root credentials; the services' user must be another.
func TestS3Root(t *testing.T) {
	base := map[string]string{"CODEINTERP_DEV_MODE": "true", "CODEINTERP_S3_ACCESS_KEY": "svc", "CODEINTERP_S3_SECRET_KEY": "svc-secret"}
	load := func(extra map[string]string) Config {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for k, v := range extra {
			env[k] = v
		}
		c, err := Load(env)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if _, err := load(nil).S3Root(); err == nil || !strings.Contains(err.Error(), "CODEINTERP_S3_ROOT_USER") {
		t.Fatalf("no root credentials: %v", err)
	}
	if _, err := load(map[string]string{"CODEINTERP_S3_ROOT_USER": "svc", "CODEINTERP_S3_ROOT_PASSWORD": "root-secret"}).S3Root(); err == nil ||
		!strings.Contains(err.Error(), "CODEINTERP_S3_ACCESS_KEY") || strings.Contains(err.Error(), "root-secret") {
		t.Fatalf("services' user is root: %v", err)
	}
	root, err := load(map[string]string{"CODEINTERP_S3_ROOT_USER": "admin", "CODEINTERP_S3_ROOT_PASSWORD": "root-secret"}).S3Root()
	if err != nil || root.AccessKey != "admin" || root.SecretKey != "root-secret" || root.Bucket != "codeinterp" {
		t.Fatalf("S3Root = %+v, %v", root, err)
	}
}
