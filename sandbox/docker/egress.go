package docker

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"

	"github.com/codeinterp/codeinterp/sandbox"
)

// Egress (issue 23). A sandbox made with Spec.Egress gets a network of its own with
// exactly two members: itself and the installation's egress proxy (Config.EgressProxy,
// a running container). The network is internal (the engine routes nothing out of
// it) and its bridge has no host address (inhibit_ipv4), so from the sandbox the
// proxy is the only thing there is: not the host, not another sandbox (each has its
// own network, a tenant's too), not Redis, MinIO or the API, and no resolver that
// forwards (Docker's embedded one forwards nothing on an internal network). Its
// address is one of its network alone, which the code cannot change (no
// capabilities), so the proxy knows a connection's sandbox from its source address.
//
// Networks are /29s carved at random from Config.EgressSubnets; the engine refuses
// an overlap, and another is tried. Pooled sandboxes are never made with egress:
// gVisor cannot add an interface to a running sandbox.

// ErrEgressOff means a sandbox with egress was asked of a runtime with no egress
// proxy configured, or its container is not running.
var ErrEgressOff = sandbox.ErrNoEgress

// Addresses inside an egress network: .1 is the gateway the engine reserves (no host
// address holds it), then the proxy and the sandbox.
const (
	egressProxyHost   = 2
	egressSandboxHost = 3
	egressNetBits     = 29
	egressTries       = 16
)

// egressNet is a sandbox's egress network.
type egressNet struct {
	name           string
	proxy, sandbox netip.Addr
}

// proxyURL is what the code's HTTP clients are told to use.
func (n egressNet) proxyURL(port int) string {
	return fmt.Sprintf("http://%s:%d", n.proxy, port)
}

// proxyEnv is the environment that sends the code's HTTP clients, pip and npm
// through the proxy. Code that ignores it gets nowhere: nothing else is routable.
func (n egressNet) proxyEnv(port int) []string {
	u := n.proxyURL(port)
	var env []string
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "npm_config_proxy", "npm_config_https_proxy"} {
		env = append(env, k+"="+u)
	}
	return append(env, "NO_PROXY=localhost,127.0.0.1", "no_proxy=localhost,127.0.0.1")
}

// createEgressNet makes a sandbox's network and connects the proxy to it.
func (d *Runtime) createEgressNet(ctx context.Context, labels map[string]string) (egressNet, error) {
	if d.cfg.EgressProxy == "" {
		return egressNet{}, ErrEgressOff
	}
	name := d.cfg.Prefix + "-net-" + randomHex(8)
	var n egressNet
	for try := 1; ; try++ {
		subnet, err := randomSubnet(d.cfg.EgressSubnets)
		if err != nil {
			return egressNet{}, err
		}
		_, err = d.cli.NetworkCreate(ctx, name, network.CreateOptions{
			Driver:   "bridge",
			Internal: true,
			Labels:   labels,
			IPAM:     &network.IPAM{Config: []network.IPAMConfig{{Subnet: subnet.String()}}},
			Options:  map[string]string{"com.docker.network.bridge.inhibit_ipv4": "true"},
		})
		if err == nil {
			n = egressNet{name: name, proxy: nth(subnet, egressProxyHost), sandbox: nth(subnet, egressSandboxHost)}
			break
		}
		if try == egressTries || !strings.Contains(err.Error(), "overlap") {
			return egressNet{}, fmt.Errorf("create egress network: %w", err)
		}
	}
	err := d.cli.NetworkConnect(ctx, name, d.cfg.EgressProxy, &network.EndpointSettings{
		IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: n.proxy.String()},
	})
	if err != nil {
		_ = d.cli.NetworkRemove(context.WithoutCancel(ctx), name)
		if client.IsErrNotFound(err) {
			return egressNet{}, fmt.Errorf("%w: the egress proxy container %q is not running", ErrEgressOff, d.cfg.EgressProxy)
		}
		return egressNet{}, fmt.Errorf("connect the egress proxy to %s: %w", name, err)
	}
	return n, nil
}

// removeEgressNet disconnects whatever is still attached to a sandbox's network (the
// proxy) and removes it, once the sandbox is gone; a network already gone is fine.
// It asks the network, not the configuration, who is attached: a janitor removing a
// dead worker's sandbox may not know the proxy's name.
func (d *Runtime) removeEgressNet(ctx context.Context, name string) error {
	if name == "" {
		return nil
	}
	info, err := d.cli.NetworkInspect(ctx, name, network.InspectOptions{})
	if client.IsErrNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("inspect egress network %s: %w", name, err)
	}
	for id := range info.Containers {
		err := d.cli.NetworkDisconnect(ctx, name, id, true)
		if err != nil && !client.IsErrNotFound(err) && !errdefs.IsForbidden(err) && !strings.Contains(err.Error(), "is not connected") {
			return fmt.Errorf("disconnect %s from %s: %w", id, name, err)
		}
	}
	err = retryTransient(ctx, func() error { return d.cli.NetworkRemove(ctx, name) })
	if err != nil && !client.IsErrNotFound(err) {
		return fmt.Errorf("remove egress network %s: %w", name, err)
	}
	return nil
}

// egressOf reads the egress network a found container was made with, if any.
func (d *Runtime) egressOf(info container.InspectResponse) egressNet {
	if info.HostConfig == nil || info.NetworkSettings == nil {
		return egressNet{}
	}
	name := string(info.HostConfig.NetworkMode)
	ep := info.NetworkSettings.Networks[name]
	if !strings.HasPrefix(name, d.cfg.Prefix+"-net-") || ep == nil {
		return egressNet{}
	}
	addr, err := netip.ParseAddr(ep.IPAddress)
	if err != nil {
		return egressNet{name: name} // still removed with the sandbox
	}
	sub := netip.PrefixFrom(addr, egressNetBits).Masked()
	return egressNet{name: name, proxy: nth(sub, egressProxyHost), sandbox: addr}
}

// randomSubnet picks a /29 of within at random.
func randomSubnet(within netip.Prefix) (netip.Prefix, error) {
	if !within.Addr().Is4() || within.Bits() > egressNetBits {
		return netip.Prefix{}, fmt.Errorf("egress subnets %s: want an IPv4 prefix of /%d or wider", within, egressNetBits)
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return netip.Prefix{}, err
	}
	span := uint32(1) << (egressNetBits - within.Bits())
	base := binary.BigEndian.Uint32(within.Masked().Addr().AsSlice())
	pick := base + (binary.BigEndian.Uint32(b[:])%span)<<(32-egressNetBits)
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], pick)
	return netip.PrefixFrom(netip.AddrFrom4(a), egressNetBits), nil
}

// nth is the i-th address of p.
func nth(p netip.Prefix, i uint32) netip.Addr {
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], binary.BigEndian.Uint32(p.Masked().Addr().AsSlice())+i)
	return netip.AddrFrom4(a)
}

// EgressAddr is the sandbox's address on its egress network, the one the proxy sees
// its connections come from; false for a sandbox without egress.
func (s *Sandbox) EgressAddr() (netip.Addr, bool) {
	return s.egress.sandbox, s.egress.name != ""
}

// SweepEgressNetworks removes this installation's egress networks whose sandbox is
// gone (a worker died between making the network and the container, or the
// container was removed behind the runtime's back), if older than minAge: a network
// is made moments before its sandbox. It returns how many it removed.
func (d *Runtime) SweepEgressNetworks(ctx context.Context, minAge time.Duration) (int, error) {
	list, err := d.cli.NetworkList(ctx, network.ListOptions{Filters: filters.NewArgs(
		filters.Arg("label", LabelInstall+"="+d.cfg.Prefix),
		filters.Arg("name", d.cfg.Prefix+"-net-"),
	)})
	if err != nil {
		return 0, fmt.Errorf("list egress networks: %w", err)
	}
	removed := 0
	var errs []error
	for _, n := range list {
		if !strings.HasPrefix(n.Name, d.cfg.Prefix+"-net-") || time.Since(n.Created) < minAge {
			continue
		}
		info, err := d.cli.NetworkInspect(ctx, n.ID, network.InspectOptions{})
		if client.IsErrNotFound(err) {
			continue
		}
		if err != nil || len(info.IPAM.Config) == 0 {
			errs = append(errs, fmt.Errorf("inspect egress network %s: %v", n.Name, err))
			continue
		}
		subnet, err := netip.ParsePrefix(info.IPAM.Config[0].Subnet)
		if err != nil {
			continue
		}
		want := nth(subnet, egressSandboxHost)
		alive := false
		for _, ep := range info.Containers {
			if p, err := netip.ParsePrefix(ep.IPv4Address); err == nil && p.Addr() == want {
				alive = true
			}
		}
		if alive {
			continue
		}
		if err := d.removeEgressNet(ctx, n.Name); err != nil {
			errs = append(errs, err) // one network in the way does not stop the sweep
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}
