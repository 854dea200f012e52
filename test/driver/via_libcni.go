// ADD, CHECK and DEL through libcni's CNIConfig, for configs whose cniVersion libcni v1.1.2 knows
// (0.1.0 … 1.0.0). This is the code path containerd and CRI-O take: libcni injects name, cniVersion,
// prevResult and runtimeConfig, parses and version-checks the result, and keeps its own result cache.
package main

import (
	"context"
	"os"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/version"
)

// libcniKnowsVersion reports whether libcni v1.1.2 can parse results of this spec version.
func libcniKnowsVersion(v string) bool {
	if v == "" {
		return true
	}
	for _, known := range version.All.SupportedVersions() {
		if v == known {
			return true
		}
	}
	return false
}

// newExec returns the plugin executor: libcni's default one, with plugin stderr copied to ours.
func newExec() invoke.Exec {
	return &invoke.DefaultExec{
		RawExec:       &invoke.RawExec{Stderr: stderr},
		PluginDecoder: version.PluginDecoder{},
	}
}

// newLibcni builds the libcni runtime object for this invocation.
func newLibcni(inv *invocation) *libcni.CNIConfig {
	return libcni.NewCNIConfigWithCacheDir(inv.paths, inv.cacheDir, newExec())
}

// libcniAdd runs AddNetworkList and prints the parsed result in its own version.
func libcniAdd(ctx context.Context, inv *invocation) error {
	result, err := newLibcni(inv).AddNetworkList(ctx, inv.list, inv.rt)
	if err != nil {
		return err
	}
	if err := result.PrintTo(os.Stdout); err != nil {
		return driverError("printing result: %v", err)
	}
	_, _ = os.Stdout.Write([]byte("\n"))
	return nil
}

// libcniCheck runs CheckNetworkList (libcni refuses versions below 0.4.0 itself).
func libcniCheck(ctx context.Context, inv *invocation) error {
	return newLibcni(inv).CheckNetworkList(ctx, inv.list, inv.rt)
}

// libcniDel runs DelNetworkList (with the cached prevResult for 0.4.0 and later).
func libcniDel(ctx context.Context, inv *invocation) error {
	return newLibcni(inv).DelNetworkList(ctx, inv.list, inv.rt)
}
