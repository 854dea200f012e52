//go:build tools

// The reference CNI plugins the test node runs (the cluster network and the delegates manifold
// calls), built from the pinned github.com/containernetworking/plugins module. This file only keeps
// their packages in go.mod and go.sum; build.sh builds each main package by its import path.
package plugins

import (
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/ipam/static"
	_ "github.com/containernetworking/plugins/plugins/main/bridge"
	_ "github.com/containernetworking/plugins/plugins/main/host-device"
	_ "github.com/containernetworking/plugins/plugins/main/loopback"
	_ "github.com/containernetworking/plugins/plugins/main/macvlan"
	_ "github.com/containernetworking/plugins/plugins/meta/portmap"
	_ "github.com/containernetworking/plugins/plugins/meta/tuning"
)
