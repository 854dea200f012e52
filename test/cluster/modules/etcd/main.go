// etcd, as the upstream etcd binary runs its server (go.etcd.io/etcd/server/v3/etcdmain), built
// from a pinned module of its own: its dependency graph differs from Kubernetes'.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
