package netguard

import (
	"errors"
	"net/netip"
	"net/url"
	"testing"
	"time"
)

func TestGuard(t *testing.T) {
	g := Guard{}
	for _, ip := range []string{"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
		"0.0.0.0", "224.0.0.1", "::1", "fe80::1", "fd00:ec2::254", "::ffff:10.0.0.1", "::ffff:127.0.0.1", "ff02::1", "::"} {
		if g.Permitted(netip.MustParseAddr(ip)) {
			t.Errorf("%s permitted; want blocked", ip)
		}
	}
	for _, ip := range []string{"93.184.216.34", "1.1.1.1", "2606:4700:4700::1111"} {
		if !g.Permitted(netip.MustParseAddr(ip)) {
			t.Errorf("%s blocked; want permitted", ip)
		}
	}
	allowed := Guard{Allow: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}}
	if !allowed.Permitted(netip.MustParseAddr("10.1.2.3")) || allowed.Permitted(netip.MustParseAddr("10.2.0.1")) {
		t.Error("the allow-list should open 10.1.0.0/16 and nothing else")
	}
}

// Every spelling of an internal address is refused when the URL is submitted, and
// again when a delivery dials it.
func TestGuardSpellings(t *testing.T) {
	g := Guard{}
	for _, raw := range []string{
		"http://127.0.0.1/", "http://2130706433/", "http://0x7f000001/", "http://0x7f.1/", "http://0177.0.0.1/",
		"http://127.1/", "http://0/", "http://10.0.0.1:8080/", "http://169.254.169.254/latest/meta-data",
		"http://[::1]/", "http://[::1%25lo]/", "http://[fe80::1%25eth0]/", "http://[::ffff:127.0.0.1]/",
		"http://[::127.0.0.1]/", "http://[64:ff9b::a00:1]/", "http://[64:ff9b:1::1]/", "http://[2002:7f00:1::]/",
		"http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "http://[fec0::1]/", "http://[100::1]/",
		"http://[2606:4700::1111%25eth0]/",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if err := g.CheckURL(u); !errors.Is(err, ErrForbiddenTarget) {
			t.Errorf("CheckURL(%s) = %v, want refused", raw, err)
		}
	}
	for _, raw := range []string{"https://example.com/hook", "http://93.184.216.34:8080/", "http://[2606:4700:4700::1111]/", "http://1.1.1.1/"} {
		u, _ := url.Parse(raw)
		if err := g.CheckURL(u); err != nil {
			t.Errorf("CheckURL(%s) = %v, want allowed", raw, err)
		}
	}
	// At dial time: the client refuses before connecting.
	c := g.Client(2 * time.Second)
	for _, raw := range []string{"http://[::1%25lo]:9/", "http://[fe80::1%25lo]:9/", "http://[::127.0.0.1]:9/", "http://[64:ff9b::7f00:1]:9/", "http://127.0.0.1:9/"} {
		_, err := c.Get(raw)
		if !errors.Is(err, ErrForbiddenTarget) {
			t.Errorf("dial %s: %v, want refused by the guard", raw, err)
		}
	}
}

// An operator can restrict ports.
func TestGuardPorts(t *testing.T) {
	g := Guard{Ports: []uint16{443}, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	for raw, ok := range map[string]bool{"https://example.com/": true, "http://example.com/": false, "https://example.com:8443/": false} {
		u, _ := url.Parse(raw)
		if err := g.CheckURL(u); (err == nil) != ok {
			t.Errorf("CheckURL(%s) = %v", raw, err)
		}
	}
	if _, err := g.Client(time.Second).Get("http://127.0.0.1:9/"); !errors.Is(err, ErrForbiddenTarget) {
		t.Errorf("port 9 dialed: %v", err)
	}
}

// Azure's WireServer and IPv4-translated addresses are refused like the metadata
// services, as addresses, in URLs and at dial time; an IPv4-mapped address is judged
// as the IPv4 address it maps.
func TestGuardWireServerAndTranslated(t *testing.T) {
	g := Guard{}
	for _, c := range []struct {
		ip        string
		permitted bool
	}{
		{"168.63.129.16", false},
		{"::ffff:168.63.129.16", false},   // IPv4-mapped
		{"::ffff:0:168.63.129.16", false}, // IPv4-translated (RFC 2765)
		{"::ffff:0:10.0.0.1", false},
		{"::ffff:0:127.0.0.1", false},
		{"::ffff:0:93.184.216.34", false}, // translated: refused whatever it embeds
		{"::ffff:127.0.0.1", false},
		{"::ffff:10.0.0.1", false},
		{"::ffff:93.184.216.34", true}, // mapped public address: the public address
		{"168.63.129.15", true},
		{"168.63.129.17", true},
	} {
		if got := g.Permitted(netip.MustParseAddr(c.ip)); got != c.permitted {
			t.Errorf("Permitted(%s) = %v, want %v", c.ip, got, c.permitted)
		}
	}
	for _, raw := range []string{"http://168.63.129.16/machine?comp=goalstate", "http://2822734096/", "http://[::ffff:0:a83f:8110]/",
		"http://[::ffff:0:127.0.0.1]/", "http://[::ffff:168.63.129.16]/"} {
		u, _ := url.Parse(raw)
		if err := g.CheckURL(u); !errors.Is(err, ErrForbiddenTarget) {
			t.Errorf("CheckURL(%s) = %v, want refused", raw, err)
		}
	}
	c := g.Client(2 * time.Second)
	for _, raw := range []string{"http://168.63.129.16:9/", "http://[::ffff:0:7f00:1]:9/"} {
		if _, err := c.Get(raw); !errors.Is(err, ErrForbiddenTarget) {
			t.Errorf("dial %s: %v, want refused by the guard", raw, err)
		}
	}
	// The operator's allow-list still opens it, for a service that must reach it.
	if !(Guard{Allow: []netip.Prefix{netip.MustParsePrefix("168.63.129.16/32")}}).Permitted(netip.MustParseAddr("168.63.129.16")) {
		t.Error("an allowed WireServer address is refused")
	}
}
