package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	aclcontroller "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/acl"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
	"github.com/metal-firewall/gardener-extension-firewall/test/lab"
)

// The networks in the shoot's Cluster: the acl extension always allows
// them, so that no shoot locks out its own seed or nodes.
const (
	seedNodes = "10.1.0.0/16"
	seedPods  = "10.2.0.0/16"
	// shootNodes are the nodes behind a machine in a network namespace
	// (the lab's are labNodes): the site says which (site.nodes).
	shootNodes = "10.250.0.0/24"
)

// apiHost is the shoot's kube-apiserver host name on the seed's gateway.
const apiHost = "api.local.demo.example.com"

func (d *demo) extensionLog() string { return filepath.Join(d.run.dir(), "extension.log") }

// startLandscape prepares the run's folder and starts seed A with the
// extension and the shoot's control plane.
func (d *demo) startLandscape(ctx context.Context) error {
	if err := os.MkdirAll(d.run.dir(), 0o700); err != nil {
		return err
	}
	if err := writePIDFile(d.run.dir()); err != nil {
		return err
	}
	// The control planes keep their data and certificates in TMPDIR: in the
	// run's folder, their arguments name it and demo-down finds them.
	if err := os.Setenv("TMPDIR", d.run.dir()); err != nil {
		return err
	}
	if err := d.logToFile(); err != nil {
		return err
	}
	d.n.say("Working folder %s; the extension's log is %s", d.run.dir(), d.extensionLog())

	d.n.say("Building firewall-agent from this tree: the program that runs on every firewall machine")
	var err error
	if d.agentPath, err = framework.BuildAgent(d.run.dir()); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}

	if dir, err := lab.Dir(); err == nil {
		d.site = &labSite{dir: dir}
	} else {
		d.site = &localSite{why: err.Error()}
	}
	d.n.say("The firewall machine runs in %s", d.site.title())
	provider, err := d.site.start(ctx, d)
	if err != nil {
		return err
	}
	// One infrastructure behind both seeds, as metal-api is.
	d.provider = provider

	d.n.say("Starting the shoot's control plane (etcd, kube-apiserver)")
	if d.shoot, err = framework.StartShootAt("shoot", d.site.address()); err != nil {
		return err
	}
	d.n.say("The shoot's API serves at %s", d.shoot.Config.Host)
	if d.shootClient, err = client.NewWithWatch(d.shoot.Config, client.Options{Scheme: framework.ShootScheme}); err != nil {
		return err
	}

	d.seedA = &seed{name: "seed A"}
	d.owner = d.seedA
	return d.startSeed(ctx, d.seedA, "seed-a")
}

// startSeed starts a seed's control plane, runs the extension in it and
// creates what gardenlet and Gardener's Istio have there for the shoot.
// The cleanup stops whatever of s has started.
func (d *demo) startSeed(ctx context.Context, s *seed, name string) error {
	title := s.name
	d.n.say("Starting %s: etcd, kube-apiserver, and a kube-controller-manager that signs approved certificate requests", title)
	var err error
	if s.cp, err = framework.StartSeedAt(name, d.site.address()); err != nil {
		return err
	}
	if s.c, err = framework.SeedClient(s.cp); err != nil {
		return err
	}
	d.n.say("The API of %s serves at %s", title, s.cp.Config.Host)

	d.n.say("Starting the extension in %s: the firewall and acl controllers, the firewall manager with the %s machine provider, the CSR approver, and Gardener's TokenRequestor", title, d.providerName())
	if s.stop, err = framework.StartExtension(s.cp, d.shoot, framework.ExtensionOptions{Provider: d.provider, ACL: &aclcontroller.Config{}}); err != nil {
		return err
	}

	shootNS := framework.ShootNamespace{Name: shootNamespace, Shoot: d.shoot, SeedNodes: seedNodes, SeedPods: seedPods, ShootNodes: d.site.nodes()}
	if err := shootNS.Create(ctx, s.c); err != nil {
		return fmt.Errorf("shoot namespace: %w", err)
	}
	if err := framework.CreateIngressGateway(ctx, s.c); err != nil {
		return fmt.Errorf("ingress gateway: %w", err)
	}
	if err := framework.CreateKubeAPIServerGateway(ctx, s.c, shootNamespace, apiHost); err != nil {
		return fmt.Errorf("kube-apiserver Gateway: %w", err)
	}
	d.n.say("In %s: shoot namespace %s with its Cluster and `gardener` Secret (the shoot's API), the kube-apiserver Gateway for %s, the Istio ingress gateway's namespace %s",
		title, shootNamespace, apiHost, framework.IngressNamespace)
	return nil
}

// providerName names the machine provider the extension runs with.
func (d *demo) providerName() string {
	if _, ok := d.site.(*labSite); ok {
		return "metal"
	}
	return "local"
}

// logToFile sends the controllers' and client-go's logs to the extension's
// log file: the terminal is for sentences.
func (d *demo) logToFile() error {
	f, err := os.OpenFile(d.extensionLog(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	logger := zap.New(zap.WriteTo(f), zap.UseDevMode(true))
	log.SetLogger(logger)
	klog.SetLogger(logger)
	return nil
}
