// ADD, CHECK and DEL for spec versions libcni v1.1.2 cannot parse (1.1.0 and anything newer), and GC
// and STATUS for every version: the driver builds each plugin's config as libcni does (name,
// cniVersion, prevResult, capability-filtered runtimeConfig), execs the plugin through pkg/invoke,
// validates the result, and keeps a result cache in libcni's own on-disk format.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/ioutil"
	"os"
	"path/filepath"
	"strings"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/types/create"
	"github.com/containernetworking/cni/pkg/utils"
	"github.com/containernetworking/cni/pkg/version"
)

// spec110 is the one spec version newer than libcni v1.1.2 whose results the driver validates itself.
const spec110 = "1.1.0"

// Keys injected into every plugin config on GC (libcni injects both spellings, see CNI issue #1101).
const (
	keyValidAttachments = "cni.dev/valid-attachments"
	keyAttachments      = "cni.dev/attachments"
)

// cacheEntry mirrors libcni's on-disk cache record ("cniCacheV1").
type cacheEntry struct {
	Kind           string                 `json:"kind"`
	ContainerID    string                 `json:"containerId"`
	Config         []byte                 `json:"config"`
	IfName         string                 `json:"ifName"`
	NetworkName    string                 `json:"networkName"`
	CniArgs        [][2]string            `json:"cniArgs,omitempty"`
	CapabilityArgs map[string]interface{} `json:"capabilityArgs,omitempty"`
	RawResult      json.RawMessage        `json:"result,omitempty"`
}

// describePlugin names a plugin of the list in error messages, as libcni does.
func describePlugin(p *libcni.NetworkConfig) string {
	out := fmt.Sprintf("type=%q", p.Network.Type)
	if p.Network.Name != "" {
		out += fmt.Sprintf(" name=%q", p.Network.Name)
	}
	return out
}

// buildPluginConfig injects name, cniVersion, prevResult (when set), the extra keys and the
// runtimeConfig entries matching the plugin's declared capabilities.
func buildPluginConfig(inv *invocation, p *libcni.NetworkConfig, prev json.RawMessage,
	extra map[string]interface{}, withRuntimeConfig bool) ([]byte, error) {
	inject := map[string]interface{}{"name": inv.list.Name, "cniVersion": inv.list.CNIVersion}
	if prev != nil {
		inject["prevResult"] = prev
	}
	for k, v := range extra {
		inject[k] = v
	}
	if withRuntimeConfig {
		rc := map[string]interface{}{}
		for capability, enabled := range p.Network.Capabilities {
			if v, ok := inv.rt.CapabilityArgs[capability]; enabled && ok {
				rc[capability] = v
			}
		}
		if len(rc) > 0 {
			inject["runtimeConfig"] = rc
		}
	}
	conf, err := libcni.InjectConf(p, inject)
	if err != nil {
		return nil, driverError("building config for plugin %s: %v", describePlugin(p), err)
	}
	return conf.Bytes, nil
}

// attachmentEnv is the full CNI environment of ADD/CHECK/DEL, on top of the driver's own environment.
func attachmentEnv(command string, inv *invocation) []string {
	return (&invoke.Args{
		Command:     command,
		ContainerID: inv.rt.ContainerID,
		NetNS:       inv.rt.NetNS,
		PluginArgs:  inv.rt.Args,
		IfName:      inv.rt.IfName,
		Path:        strings.Join(inv.paths, string(os.PathListSeparator)),
	}).AsEnv()
}

// bareEnv is the environment of GC and STATUS: only CNI_COMMAND and CNI_PATH among the CNI_ variables.
func bareEnv(command string, inv *invocation) []string {
	var env []string
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "CNI_COMMAND", "CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_ARGS", "CNI_PATH":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "CNI_COMMAND="+command,
		"CNI_PATH="+strings.Join(inv.paths, string(os.PathListSeparator)))
}

// execPlugin finds the plugin binary in CNI_PATH and runs it with the given config and environment.
func execPlugin(ctx context.Context, inv *invocation, p *libcni.NetworkConfig, conf []byte,
	env []string) ([]byte, error) {
	exec := newExec()
	path, err := exec.FindInPath(p.Network.Type, inv.paths)
	if err != nil {
		return nil, err
	}
	return exec.ExecPlugin(ctx, path, conf, env)
}

// checkResult validates a plugin's ADD output. A missing cniVersion means the config's version (as
// in libcni). 1.1.0 results are decoded with the 1.0.0 types, which 1.1.0 only extends; other
// versions go through libcni's own result parser. It returns the result version, the result bytes
// with cniVersion filled in, and the parsed result (nil for 1.1.0).
func checkResult(confVersion string, out []byte) (string, []byte, types.Result, error) {
	raw := map[string]interface{}{}
	if err := json.Unmarshal(out, &raw); err != nil {
		return "", nil, nil, driverError("plugin result is not a JSON object: %v: %q", err, string(out))
	}
	resultVersion, _ := raw["cniVersion"].(string)
	if resultVersion == "" {
		resultVersion = confVersion
		raw["cniVersion"] = confVersion
		fixed, err := json.Marshal(raw)
		if err != nil {
			return "", nil, nil, driverError("re-encoding result: %v", err)
		}
		out = fixed
	}
	if resultVersion == spec110 {
		var r types100.Result
		if err := json.Unmarshal(out, &r); err != nil {
			return "", nil, nil, driverError("invalid %s result: %v: %q", spec110, err, string(out))
		}
		return resultVersion, out, nil, nil
	}
	parsed, err := create.Create(resultVersion, out)
	if err != nil {
		return "", nil, nil, driverError("invalid %s result: %v: %q", resultVersion, err, string(out))
	}
	return resultVersion, out, parsed, nil
}

// cachePath is libcni's cache file path for this network and attachment.
func cachePath(inv *invocation) string {
	dir := inv.cacheDir
	if dir == "" {
		dir = libcni.CacheDir
	}
	return filepath.Join(dir, "results",
		fmt.Sprintf("%s-%s-%s", inv.list.Name, inv.rt.ContainerID, inv.rt.IfName))
}

// writeCache stores the final ADD result and the list config like libcni's cacheAdd.
func writeCache(inv *invocation, result []byte) error {
	entry := cacheEntry{
		Kind: libcni.CNICacheV1, ContainerID: inv.rt.ContainerID, Config: inv.list.Bytes,
		IfName: inv.rt.IfName, NetworkName: inv.list.Name, CniArgs: inv.rt.Args,
		CapabilityArgs: inv.rt.CapabilityArgs, RawResult: result,
	}
	data, err := json.Marshal(&entry)
	if err != nil {
		return driverError("encoding cache entry: %v", err)
	}
	path := cachePath(inv)
	if err := os.MkdirAll(filepath.Dir(path), 0700); err != nil {
		return driverError("creating cache dir: %v", err)
	}
	if err := ioutil.WriteFile(path, data, 0600); err != nil {
		return driverError("writing cache %s: %v", path, err)
	}
	return nil
}

// readCachedResult returns the cached ADD result, or nil when there is no cache entry.
func readCachedResult(inv *invocation) (json.RawMessage, error) {
	data, err := ioutil.ReadFile(cachePath(inv))
	if err != nil {
		return nil, nil
	}
	var entry cacheEntry
	if err := json.Unmarshal(data, &entry); err != nil || entry.Kind != libcni.CNICacheV1 {
		return nil, driverError("corrupt cache entry %s", cachePath(inv))
	}
	return entry.RawResult, nil
}

// validateAttachment applies libcni's checks on container ID, network name and interface name.
func validateAttachment(inv *invocation) error {
	if err := utils.ValidateContainerID(inv.rt.ContainerID); err != nil {
		return err
	}
	if err := utils.ValidateNetworkName(inv.list.Name); err != nil {
		return err
	}
	if err := utils.ValidateInterfaceName(inv.rt.IfName); err != nil {
		return err
	}
	return nil
}

// rawAdd runs the list's plugins in order with prevResult threaded through, caches the final
// result and prints it (1.1.0 results byte for byte, others as libcni re-prints them).
func rawAdd(ctx context.Context, inv *invocation) error {
	if err := validateAttachment(inv); err != nil {
		return err
	}
	var prev json.RawMessage
	var last []byte
	var parsed types.Result
	resultVersion := ""
	for _, p := range inv.list.Plugins {
		conf, err := buildPluginConfig(inv, p, prev, nil, true)
		if err != nil {
			return err
		}
		out, err := execPlugin(ctx, inv, p, conf, attachmentEnv("ADD", inv))
		if err != nil {
			return fmt.Errorf("plugin %s failed (add): %w", describePlugin(p), err)
		}
		resultVersion, prev, parsed, err = checkResult(inv.list.CNIVersion, out)
		if err != nil {
			return err
		}
		last = out
	}
	if err := writeCache(inv, prev); err != nil {
		return err
	}
	if resultVersion == spec110 {
		if _, err := os.Stdout.Write(last); err != nil {
			return driverError("printing result: %v", err)
		}
		if len(last) == 0 || last[len(last)-1] != '\n' {
			_, _ = os.Stdout.Write([]byte("\n"))
		}
		return nil
	}
	if err := parsed.PrintTo(os.Stdout); err != nil {
		return driverError("printing result: %v", err)
	}
	_, _ = os.Stdout.Write([]byte("\n"))
	return nil
}

// atLeast040 reports whether the list's version has CHECK and cached DEL (spec 0.4.0 and later).
func atLeast040(inv *invocation) (bool, error) {
	ok, err := version.GreaterThanOrEqualTo(inv.list.CNIVersion, "0.4.0")
	if err != nil {
		return false, driverError("config cniVersion %q: %v", inv.list.CNIVersion, err)
	}
	return ok, nil
}

// rawCheck runs CHECK on every plugin of the list with the cached result as prevResult.
func rawCheck(ctx context.Context, inv *invocation) error {
	ok, err := atLeast040(inv)
	if err != nil {
		return err
	}
	if !ok {
		return driverError("configuration version %q does not support the CHECK command", inv.list.CNIVersion)
	}
	if inv.list.DisableCheck {
		return nil
	}
	cached, err := readCachedResult(inv)
	if err != nil {
		return err
	}
	for _, p := range inv.list.Plugins {
		conf, err := buildPluginConfig(inv, p, cached, nil, true)
		if err != nil {
			return err
		}
		if _, err := execPlugin(ctx, inv, p, conf, attachmentEnv("CHECK", inv)); err != nil {
			return fmt.Errorf("plugin %s failed (check): %w", describePlugin(p), err)
		}
	}
	return nil
}

// rawDel runs DEL on the list's plugins in reverse order, then drops the cache entry.
func rawDel(ctx context.Context, inv *invocation) error {
	ok, err := atLeast040(inv)
	if err != nil {
		return err
	}
	var cached json.RawMessage
	if ok {
		if cached, err = readCachedResult(inv); err != nil {
			return err
		}
	}
	for i := len(inv.list.Plugins) - 1; i >= 0; i-- {
		p := inv.list.Plugins[i]
		conf, err := buildPluginConfig(inv, p, cached, nil, true)
		if err != nil {
			return err
		}
		if _, err := execPlugin(ctx, inv, p, conf, attachmentEnv("DEL", inv)); err != nil {
			return fmt.Errorf("plugin %s failed (delete): %w", describePlugin(p), err)
		}
	}
	_ = os.Remove(cachePath(inv))
	return nil
}

// rawGC sends GC, with the valid attachments injected, to every plugin of the list. Every plugin
// is tried; the first failure is returned.
func rawGC(ctx context.Context, inv *invocation) error {
	extra := map[string]interface{}{
		keyValidAttachments: inv.validAttachments,
		keyAttachments:      inv.validAttachments,
	}
	var first error
	for _, p := range inv.list.Plugins {
		conf, err := buildPluginConfig(inv, p, nil, extra, false)
		if err == nil {
			if _, err = execPlugin(ctx, inv, p, conf, bareEnv("GC", inv)); err != nil {
				err = fmt.Errorf("plugin %s failed (gc): %w", describePlugin(p), err)
			}
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// rawStatus sends STATUS to every plugin of the list, stopping at the first failure.
func rawStatus(ctx context.Context, inv *invocation) error {
	for _, p := range inv.list.Plugins {
		conf, err := buildPluginConfig(inv, p, nil, nil, false)
		if err != nil {
			return err
		}
		if _, err := execPlugin(ctx, inv, p, conf, bareEnv("STATUS", inv)); err != nil {
			return fmt.Errorf("plugin %s failed (status): %w", describePlugin(p), err)
		}
	}
	return nil
}
