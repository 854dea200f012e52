//go:build tools

// Multus CNI thin, as the test node's migration scenario installs it before manifold: the plugin,
// its installer (install_multus), its config generator (thin_entrypoint) and the passthru plugin
// the installer copies beside it, built from the pinned gopkg.in/k8snetworkplumbingwg/multus-cni.v4
// module. This file only keeps their packages in go.mod and go.sum; build-multus.sh builds each
// main package by its import path.
package multus

import (
	_ "gopkg.in/k8snetworkplumbingwg/multus-cni.v4/cmd/install_multus"
	_ "gopkg.in/k8snetworkplumbingwg/multus-cni.v4/cmd/multus"
	_ "gopkg.in/k8snetworkplumbingwg/multus-cni.v4/cmd/passthru-cni"
	_ "gopkg.in/k8snetworkplumbingwg/multus-cni.v4/cmd/thin_entrypoint"
)
