// One executable for the Kubernetes components the test node runs: kube-apiserver,
// kube-controller-manager, kube-scheduler, kubelet, kube-proxy and kubectl, each exactly as its
// upstream main package builds it (same command constructor, same registrations). It dispatches on
// the name it was started as (a symlink per component) or, failing that, on its first argument.
// One link of the shared dependency graph instead of six separate ones: see build.sh's header for
// the measured difference.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
	_ "time/tzdata"
)

// Each server component: its upstream constructor.
var servers = map[string]func() *cobra.Command{
	"kube-apiserver":          apiserver.NewAPIServerCommand,
	"kube-controller-manager": controllermanager.NewControllerManagerCommand,
	"kube-scheduler": func() *cobra.Command {
		return scheduler.NewSchedulerCommand()
	},
	"kubelet":    func() *cobra.Command { return kubelet.NewKubeletCommand(context.Background()) },
	"kube-proxy": proxy.NewProxyCommand,
}

// kubectl, as its upstream main runs it (verbosity set before the command is built).
func runKubectl() {
	logs.GlogSetter(kubectlcmd.GetLogVerbosity(os.Args)) // nolint:errcheck
	command := kubectlcmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		kubectlutil.CheckErr(err)
	}
}

func main() {
	name := filepath.Base(os.Args[0])
	if _, known := servers[name]; !known && name != "kubectl" && len(os.Args) > 1 {
		// Called by its own name (kube-node kubelet …): drop it so the component sees its flags.
		name = os.Args[1]
		os.Args = append([]string{name}, os.Args[2:]...)
	}
	if name == "kubectl" {
		runKubectl()
		return
	}
	constructor, known := servers[name]
	if !known {
		fmt.Fprintf(os.Stderr, "usage: kube-node {kube-apiserver|kube-controller-manager|"+
			"kube-scheduler|kubelet|kube-proxy|kubectl} [flags]\n")
		os.Exit(2)
	}
	os.Exit(cli.Run(constructor()))
}
