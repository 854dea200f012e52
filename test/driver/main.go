// Command driver is manifold's test runtime: a cnitool-compatible command line over Debian's libcni
// (v1.1.2), so that integration tests drive manifold exactly as containerd and CRI-O do. It loads a
// network by name from NETCONFPATH, runs ADD/CHECK/DEL through libcni for the spec versions libcni
// knows (up to 1.0.0), and execs the plugin itself through pkg/invoke for newer versions (1.1.0) and
// for GC and STATUS, which libcni v1.1.2 does not implement. Results go to stdout; a failure is one
// JSON line {"code":N,"msg":...} on stderr and exit status 1, so tests can assert the CNI error code.
package main

import (
	"context"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/containernetworking/cni/libcni"
)

// Environment variables understood by the driver (the first five are cnitool's).
const (
	envNetConfPath      = "NETCONFPATH"
	envCNIPath          = "CNI_PATH"
	envCNIArgs          = "CNI_ARGS"
	envCapArgs          = "CAP_ARGS"
	envIfName           = "CNI_IFNAME"
	envContainerID      = "CNI_CONTAINERID"
	envCacheDir         = "CNI_CACHE_DIR"
	envValidAttachments = "VALID_ATTACHMENTS"
	envTimeout          = "DRIVER_TIMEOUT"
	envForceRaw         = "DRIVER_RAW"

	defaultNetConfPath = "/etc/cni/net.d"
	defaultIfName      = "eth0"
	defaultTimeout     = 120 * time.Second
)

const usage = `usage: driver add|check|del|gc|status NETNAME NETNS

environment:
  NETCONFPATH        directory of .conf/.conflist/.json files (default /etc/cni/net.d)
  CNI_PATH           plugin search path, colon separated
  CNI_ARGS           key=value;key=value passed to the plugins
  CAP_ARGS           JSON object of capability arguments (runtimeConfig)
  CNI_IFNAME         interface name (default eth0)
  CNI_CONTAINERID    container ID (default: derived from the netns path)
  CNI_CACHE_DIR      libcni cache directory (default /var/lib/cni)
  VALID_ATTACHMENTS  gc only: JSON list of {"containerID":..,"ifname":..}
  DRIVER_TIMEOUT     seconds before the whole operation is cancelled (default 120)
  DRIVER_RAW         when "1", exec plugins through pkg/invoke even for versions libcni knows
`

// invocation is everything one driver run needs, gathered from the command line and environment.
type invocation struct {
	verb             string
	list             *libcni.NetworkConfigList
	rt               *libcni.RuntimeConf
	paths            []string
	cacheDir         string
	validAttachments []map[string]interface{}
	forceRaw         bool
}

func main() {
	os.Exit(run(os.Args[1:]))
}

// run executes one driver command and returns the process exit status.
func run(args []string) int {
	if len(args) != 3 {
		fmt.Fprint(os.Stderr, usage)
		reportError(driverError("expected 3 arguments, got %d", len(args)))
		return 2
	}
	inv, err := parseInvocation(args[0], args[1], args[2])
	if err != nil {
		reportError(err)
		return 1
	}
	timeout, err := timeoutFromEnv()
	if err != nil {
		reportError(err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := dispatch(ctx, inv); err != nil {
		reportError(err)
		return 1
	}
	return 0
}

// parseInvocation validates the verb and reads the network config and the runtime settings.
func parseInvocation(verb, netName, netns string) (*invocation, error) {
	switch verb {
	case "add", "check", "del", "gc", "status":
	default:
		return nil, driverError("unknown command %q (want add, check, del, gc or status)", verb)
	}
	netdir := os.Getenv(envNetConfPath)
	if netdir == "" {
		netdir = defaultNetConfPath
	}
	list, err := libcni.LoadConfList(netdir, netName)
	if err != nil {
		return nil, driverError("loading network %q from %s: %v", netName, netdir, err)
	}
	if netns != "" {
		if netns, err = filepath.Abs(netns); err != nil {
			return nil, driverError("netns path %q: %v", netns, err)
		}
	}
	cniArgs, err := parseCNIArgs(os.Getenv(envCNIArgs))
	if err != nil {
		return nil, err
	}
	capArgs, err := parseCapArgs(os.Getenv(envCapArgs))
	if err != nil {
		return nil, err
	}
	valid, err := parseValidAttachments(os.Getenv(envValidAttachments))
	if err != nil {
		return nil, err
	}
	ifName := os.Getenv(envIfName)
	if ifName == "" {
		ifName = defaultIfName
	}
	containerID := os.Getenv(envContainerID)
	if containerID == "" {
		containerID = containerIDFromNetns(netns)
	}
	return &invocation{
		verb: verb,
		list: list,
		rt: &libcni.RuntimeConf{
			ContainerID:    containerID,
			NetNS:          netns,
			IfName:         ifName,
			Args:           cniArgs,
			CapabilityArgs: capArgs,
		},
		paths:            filepath.SplitList(os.Getenv(envCNIPath)),
		cacheDir:         os.Getenv(envCacheDir),
		validAttachments: valid,
		forceRaw:         os.Getenv(envForceRaw) == "1",
	}, nil
}

// containerIDFromNetns derives a stable container ID from the netns path, as cnitool does.
func containerIDFromNetns(netns string) string {
	sum := sha512.Sum512([]byte(netns))
	return fmt.Sprintf("driver-%x", sum[:10])
}

// parseCNIArgs splits "K=V;K2=V2" into pairs, rejecting empty keys or values like cnitool.
func parseCNIArgs(s string) ([][2]string, error) {
	if s == "" {
		return nil, nil
	}
	var out [][2]string
	for _, pair := range strings.Split(s, ";") {
		kv := strings.SplitN(pair, "=", 2)
		if len(kv) != 2 || kv[0] == "" || kv[1] == "" {
			return nil, driverError("invalid %s pair %q", envCNIArgs, pair)
		}
		out = append(out, [2]string{kv[0], kv[1]})
	}
	return out, nil
}

// parseCapArgs decodes CAP_ARGS, a JSON object of capability name to value.
func parseCapArgs(s string) (map[string]interface{}, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]interface{}{}
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, driverError("invalid %s JSON: %v", envCapArgs, err)
	}
	return out, nil
}

// parseValidAttachments decodes VALID_ATTACHMENTS, a JSON list of {containerID, ifname} objects.
func parseValidAttachments(s string) ([]map[string]interface{}, error) {
	out := []map[string]interface{}{}
	if s == "" {
		return out, nil
	}
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, driverError("invalid %s JSON (want a list of objects): %v", envValidAttachments, err)
	}
	return out, nil
}

// timeoutFromEnv reads DRIVER_TIMEOUT in seconds.
func timeoutFromEnv() (time.Duration, error) {
	s := os.Getenv(envTimeout)
	if s == "" {
		return defaultTimeout, nil
	}
	secs, err := strconv.ParseFloat(s, 64)
	if err != nil || secs <= 0 {
		return 0, driverError("invalid %s %q (want seconds > 0)", envTimeout, s)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// dispatch routes the verb to libcni or to the direct pkg/invoke path.
func dispatch(ctx context.Context, inv *invocation) error {
	switch inv.verb {
	case "gc":
		return rawGC(ctx, inv)
	case "status":
		return rawStatus(ctx, inv)
	}
	if inv.forceRaw || !libcniKnowsVersion(inv.list.CNIVersion) {
		switch inv.verb {
		case "add":
			return rawAdd(ctx, inv)
		case "check":
			return rawCheck(ctx, inv)
		default:
			return rawDel(ctx, inv)
		}
	}
	switch inv.verb {
	case "add":
		return libcniAdd(ctx, inv)
	case "check":
		return libcniCheck(ctx, inv)
	default:
		return libcniDel(ctx, inv)
	}
}
