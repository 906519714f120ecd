package runtime

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/network"

	"sandboxd"
)

// ociRuntimes are the OCI runtimes the isolation tests run under: runc, the
// default, and gVisor's runsc, which scripts/docker-up.sh registers.
var ociRuntimes = []string{"runc", "runsc"}

// netProbe prints the run's network namespace, the interfaces the kernel
// lists in /proc/net/dev, and what connecting to each target gives.
const netProbe = `import os, socket, errno
print(os.readlink('/proc/self/ns/net'))
lines = open('/proc/net/dev').read().splitlines()[2:]
print(sorted(l.split(':')[0].strip() for l in lines))
for host, port in [('1.1.1.1', 53), ('@GATEWAY@', 2375), ('127.0.0.1', 80)]:
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect((host, port))
        print(host, 'connected')
    except OSError as e:
        print(host, errno.errorcode.get(e.errno, str(e)))
`

// noRoute is the error of a connection out of a run, per OCI runtime: the
// kernel has no route (runc); gVisor's own network stack has no host.
var noRoute = map[string]string{"runc": "ENETUNREACH", "runsc": "EHOSTUNREACH"}

// TestLimitNetwork proves NetworkDisabled with NetworkMode "none": the run
// has a network namespace of its own (not the host's), holding only
// loopback, and nothing outside it can be reached: not the internet, not
// the host through Docker's bridge.
func TestLimitNetwork(t *testing.T) {
	host, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatalf("reading the host's network namespace: %v", err)
	}
	for _, oci := range ociRuntimes {
		t.Run(oci, func(t *testing.T) {
			eachMode(t, func(t *testing.T, mode func(*Config)) {
				d := mustDocker(t, mode, func(c *Config) { c.OCIRuntime = oci })
				gw := bridgeGateway(t, d)
				res := mustRun(t, d, strings.ReplaceAll(netProbe, "@GATEWAY@", gw))
				if res.Status != sandboxd.StatusOK {
					t.Fatalf("status %q exit %d stderr %q", res.Status, res.ExitCode, res.Stderr)
				}
				lines := strings.Split(strings.TrimSuffix(res.Stdout, "\n"), "\n")
				if len(lines) != 5 {
					t.Fatalf("stdout = %q, want 5 lines", res.Stdout)
				}
				if !strings.HasPrefix(lines[0], "net:[") || lines[0] == host {
					t.Errorf("the run's network namespace is %q, the host's %q: want one of its own", lines[0], host)
				}
				if lines[1] != "['lo']" {
					t.Errorf("interfaces in /proc/net/dev = %s, want only lo", lines[1])
				}
				no := noRoute[oci]
				want := []string{"1.1.1.1 " + no, gw + " " + no, "127.0.0.1 ECONNREFUSED"}
				for i, w := range want {
					if lines[2+i] != w {
						t.Errorf("connect: %q, want %q", lines[2+i], w)
					}
				}
				assertGone(t, d, jobID(t))
			})
		})
	}
}

// bridgeGateway is the host's address on Docker's default bridge: what a
// container with a network would reach the host at.
func bridgeGateway(tb testing.TB, d *Docker) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nw, err := d.cli.NetworkInspect(ctx, "bridge", network.InspectOptions{})
	if err != nil {
		tb.Fatalf("inspecting Docker's bridge network: %v", err)
	}
	for _, c := range nw.IPAM.Config {
		if c.Gateway != "" {
			return c.Gateway
		}
	}
	name := nw.Options["com.docker.network.bridge.name"]
	if name == "" {
		name = "docker0"
	}
	gw, err := interfaceAddr(name)
	if err != nil {
		tb.Fatalf("finding the bridge's gateway: %v", err)
	}
	return gw
}

// interfaceAddr is the first IPv4 address of a host interface.
func interfaceAddr(name string) (string, error) {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return "", err
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
			return ipn.IP.String(), nil
		}
	}
	return "", fmt.Errorf("interface %s has no IPv4 address", name)
}
