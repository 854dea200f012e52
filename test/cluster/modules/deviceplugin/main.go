// manifold-test-device-plugin: a Kubernetes device plugin (the kubelet's deviceplugin v1beta1 API)
// that advertises a fixed set of devices under one extended resource, for the devices scenario of
// the test node. Each device ID names a network device of the node (the scenario gives it the
// PCI-style addresses under which host-device finds its veth ends). The plugin serves its socket in
// the kubelet's device-plugin directory, registers it with the kubelet, reports every device
// healthy, and on Allocate writes each allocated device's device-info file as the NPWG Device
// Information spec says (`<device-info-dir>/<resource with / as ->-<id>-device.json`, what the
// SR-IOV device plugin writes and manifold copies for the attachment). When its socket disappears
// (the kubelet restarted and cleared the directory) it serves and registers again. SIGTERM or
// SIGINT removes the socket and ends it.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

type plugin struct {
	pluginapi.UnimplementedDevicePluginServer
	resource      string
	devices       []string
	deviceInfoDir string
	stop          chan struct{}
}

func (p *plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch sends the device list once and keeps the stream open: the devices never change.
func (p *plugin) ListAndWatch(_ *pluginapi.Empty, stream grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	response := &pluginapi.ListAndWatchResponse{}
	for _, id := range p.devices {
		response.Devices = append(response.Devices, &pluginapi.Device{ID: id, Health: pluginapi.Healthy})
	}
	if err := stream.Send(response); err != nil {
		return err
	}
	select {
	case <-stream.Context().Done():
	case <-p.stop:
	}
	return nil
}

func (p *plugin) GetPreferredAllocation(context.Context, *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	return &pluginapi.PreferredAllocationResponse{}, nil
}

// Allocate writes the device-info file of every allocated device and tells the container its
// devices in MANIFOLD_TEST_DEVICES.
func (p *plugin) Allocate(_ context.Context, request *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	response := &pluginapi.AllocateResponse{}
	for _, container := range request.ContainerRequests {
		for _, id := range container.DevicesIds {
			if err := p.writeDeviceInfo(id); err != nil {
				return nil, err
			}
		}
		response.ContainerResponses = append(response.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{"MANIFOLD_TEST_DEVICES": strings.Join(container.DevicesIds, ",")},
		})
	}
	return response, nil
}

func (p *plugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

func (p *plugin) writeDeviceInfo(id string) error {
	if p.deviceInfoDir == "" {
		return nil
	}
	info, err := json.Marshal(map[string]any{"type": "pci", "version": "1.1.0",
		"pci": map[string]string{"pci-address": id}})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(p.deviceInfoDir, 0o700); err != nil {
		return err
	}
	name := fmt.Sprintf("%s-%s-device.json", strings.ReplaceAll(p.resource, "/", "-"), id)
	tmp := filepath.Join(p.deviceInfoDir, "."+name)
	if err := os.WriteFile(tmp, info, 0o444); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(p.deviceInfoDir, name))
}

// serve starts the gRPC server on socket and registers it with the kubelet.
func (p *plugin) serve(dir, socket string) (*grpc.Server, error) {
	path := filepath.Join(dir, socket)
	_ = os.Remove(path)
	listener, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	server := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(server, p)
	go func() { _ = server.Serve(listener) }()
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, "kubelet.sock"),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		server.Stop()
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: socket, ResourceName: p.resource})
	if err != nil {
		server.Stop()
		return nil, fmt.Errorf("registering with the kubelet: %v", err)
	}
	return server, nil
}

func main() {
	resource := flag.String("resource", "manifold.test/veth", "the extended resource the devices are advertised under")
	devices := flag.String("devices", "", "comma-separated device IDs")
	dir := flag.String("plugin-dir", pluginapi.DevicePluginPath, "the kubelet's device-plugin directory")
	socket := flag.String("socket", "manifold-test.sock", "this plugin's socket (a file name in -plugin-dir)")
	infoDir := flag.String("device-info-dir", "/var/run/k8s.cni.cncf.io/devinfo/dp", "where Allocate writes device-info files (\"\": none)")
	flag.Parse()
	if *devices == "" {
		fmt.Fprintln(os.Stderr, "manifold-test-device-plugin: -devices is required")
		os.Exit(2)
	}
	p := &plugin{resource: *resource, devices: strings.Split(*devices, ","), deviceInfoDir: *infoDir,
		stop: make(chan struct{})}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	path := filepath.Join(*dir, *socket)
	var server *grpc.Server
	for {
		if server == nil {
			var err error
			if server, err = p.serve(*dir, *socket); err != nil {
				fmt.Fprintf(os.Stderr, "manifold-test-device-plugin: %v; retrying\n", err)
			} else {
				fmt.Printf("registered %s with %d devices\n", *resource, len(p.devices))
			}
		}
		select {
		case <-signals:
			close(p.stop)
			if server != nil {
				server.Stop()
			}
			_ = os.Remove(path)
			return
		case <-time.After(time.Second):
		}
		if _, err := os.Stat(path); server != nil && err != nil {
			server.Stop() // the kubelet restarted: serve and register again
			server = nil
		}
	}
}
