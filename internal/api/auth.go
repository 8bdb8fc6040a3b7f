package api

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/labstack/echo/v4"
)

var tenantRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// validTenant reports whether name may name a tenant: a tenant's name becomes a path
// component of its storage keys and a part of its sandboxes' names, where "." and ".."
// would mean the bucket's root or another tenant's place.
func validTenant(name string) bool {
	return tenantRE.MatchString(name) && name != "." && name != ".."
}

// Keys maps API keys to tenants. Only SHA-256 hashes of the keys are kept.
type Keys struct {
	byHash map[[32]byte]string
}

// ParseKeys reads keys from a comma-separated list ("tenantA:keyA,tenantB:keyB") and
// from the text of a keys file: one "tenant:key" or "tenant:sha256:<hex>" per line,
// with # comments. It reports every bad entry.
func ParseKeys(list, file string) (*Keys, error) {
	k := &Keys{byHash: map[[32]byte]string{}}
	var bad []string
	add := func(where, entry string) {
		entry = strings.TrimSpace(entry)
		if entry == "" || strings.HasPrefix(entry, "#") {
			return
		}
		tenant, key, ok := strings.Cut(entry, ":")
		if !ok || !validTenant(tenant) || key == "" {
			bad = append(bad, fmt.Sprintf("%s: want tenant:key with tenant matching %s (and not . or ..)", where, tenantRE))
			return
		}
		if hexSum, ok := strings.CutPrefix(key, "sha256:"); ok {
			sum, err := hex.DecodeString(hexSum)
			if err != nil || len(sum) != 32 {
				bad = append(bad, where+": bad sha256 hash")
				return
			}
			k.byHash[[32]byte(sum)] = tenant
			return
		}
		k.byHash[sha256.Sum256([]byte(key))] = tenant
	}
	for i, entry := range strings.Split(list, ",") {
		add(fmt.Sprintf("CODEINTERP_API_KEYS entry %d", i+1), entry)
	}
	sc := bufio.NewScanner(strings.NewReader(file))
	for n := 1; sc.Scan(); n++ {
		add(fmt.Sprintf("keys file line %d", n), sc.Text())
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("API keys: %s", strings.Join(bad, "; "))
	}
	if len(k.byHash) == 0 {
		return nil, fmt.Errorf("API keys: none configured (set CODEINTERP_API_KEYS or CODEINTERP_API_KEYS_FILE)")
	}
	return k, nil
}

// Tenant returns the tenant a key belongs to.
func (k *Keys) Tenant(key string) (string, bool) {
	t, ok := k.byHash[sha256.Sum256([]byte(key))]
	return t, ok
}

const tenantKey = "tenant"

// authenticate resolves the bearer key to a tenant, or answers 401.
func authenticate(keys *Keys) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			key, ok := strings.CutPrefix(c.Request().Header.Get(echo.HeaderAuthorization), "Bearer ")
			if !ok {
				return errUnauthenticated
			}
			tenant, ok := keys.Tenant(strings.TrimSpace(key))
			if !ok {
				return errUnauthenticated
			}
			c.Set(tenantKey, tenant)
			return next(c)
		}
	}
}

func tenantOf(c echo.Context) string { return c.Get(tenantKey).(string) }
