package firewall_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	"github.com/gardener/gardener/pkg/controller/tokenrequestor"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/csrapprover"
	firewallcontroller "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/firewall"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/firewall/credentials"
	firewallmanager "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager"
	managerfirewall "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/firewall"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/local"
	"github.com/metal-firewall/gardener-extension-firewall/test/netns"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

// countingProvider counts the machines created through it: one infrastructure
// (as metal-api is) behind both seeds.
type countingProvider struct {
	machine.Provider
	created atomic.Int32
}

func (p *countingProvider) Create(ctx context.Context, fw *firewallv1alpha1.Firewall, files []machine.File) (*machine.Machine, error) {
	p.created.Add(1)
	return p.Provider.Create(ctx, fw, files)
}

var seedScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntimeMust(kubernetes.AddSeedSchemeToScheme(s))
	utilruntimeMust(firewallv1alpha1.AddToScheme(s))
	return s
}()

func utilruntimeMust(err error) {
	if err != nil {
		panic(err)
	}
}

// startExtension runs in the seed what a seed runs for this extension: the
// extension (firewall controller, firewall manager with bootstrap
// credentials and shoot delivery, CSR approver), and Gardener's own
// TokenRequestor, as the shoot's gardener-resource-manager runs it. It
// returns a function that kills it.
func startExtension(seed, shoot *testenv.ControlPlane, provider machine.Provider) (stop func()) {
	mgr, err := manager.New(seed.Config, manager.Options{
		Scheme:     seedScheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	Expect(firewallcontroller.AddToManagerWithOptions(ctx, mgr, firewallcontroller.AddOptions{})).To(Succeed())
	Expect((&csrapprover.Reconciler{}).AddToManager(mgr)).To(Succeed())
	Expect(firewallmanager.AddToManager(mgr, firewallmanager.Options{
		Provider: provider, HeartbeatTimeout: time.Minute,
		Bootstrap: &managerfirewall.Bootstrap{
			Server: seed.Config.Host, CAData: seed.Config.CAData,
			SecretNames: []string{firewallcontroller.ShootAccessSecretName},
			Delivery:    &credentials.ShootDelivery{SeedClient: mgr.GetClient()},
		},
	})).To(Succeed())
	shootCluster, err := cluster.New(shoot.Config, func(o *cluster.Options) { o.Scheme = clientgoscheme.Scheme })
	Expect(err).NotTo(HaveOccurred())
	Expect(mgr.Add(shootCluster)).To(Succeed())
	Expect((&tokenrequestor.Reconciler{Class: ptr.To(resourcesv1alpha1.ResourceManagerClassShoot)}).AddToManager(mgr, mgr, shootCluster)).To(Succeed())

	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	return func() { cancel(); <-done }
}

// prepareShootNamespace creates what gardenlet has for a shoot in a seed.
func prepareShootNamespace(ctx context.Context, c client.Client, namespace string, shoot *testenv.ControlPlane) {
	Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
	Expect(c.Create(ctx, &extensionsv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: namespace},
		Spec: extensionsv1alpha1.ClusterSpec{
			CloudProfile: runtime.RawExtension{Raw: []byte(`{"apiVersion":"core.gardener.cloud/v1beta1","kind":"CloudProfile","metadata":{"name":"local"}}`)},
			Seed:         &runtime.RawExtension{Raw: []byte(`{"apiVersion":"core.gardener.cloud/v1beta1","kind":"Seed","metadata":{"name":"seed"}}`)},
			Shoot:        runtime.RawExtension{Raw: []byte(`{"apiVersion":"core.gardener.cloud/v1beta1","kind":"Shoot","metadata":{"name":"mig","namespace":"garden-e2e"}}`)},
		},
	})).To(Succeed())
	gardenerSecret, err := testenv.GardenerSecret(namespace, shoot.Config)
	Expect(err).NotTo(HaveOccurred())
	Expect(c.Create(ctx, gardenerSecret)).To(Succeed())
}

// machineRecord is what the local provider records of a machine.
type machineRecord struct {
	ID    string `json:"id"`
	NetNS string `json:"netns"`
}

// waitForMachine waits until the local provider has recorded a machine.
func waitForMachine(stateDir string) machineRecord {
	GinkgoHelper()
	var rec machineRecord
	Eventually(func() string {
		entries, _ := os.ReadDir(stateDir)
		for _, e := range entries {
			if data, err := os.ReadFile(filepath.Join(stateDir, e.Name(), "machine.json")); err == nil {
				_ = json.Unmarshal(data, &rec)
			}
		}
		return rec.NetNS
	}).WithTimeout(time.Minute).ShouldNot(BeEmpty())
	return rec
}

func portOf(host string) int {
	u, err := url.Parse(host)
	Expect(err).NotTo(HaveOccurred())
	port, err := strconv.Atoi(u.Port())
	Expect(err).NotTo(HaveOccurred())
	return port
}

// dialFrom opens a TCP connection from inside a network namespace.
func dialFrom(ns, addr string, timeout time.Duration) (net.Conn, error) {
	var conn net.Conn
	err := (&netns.NS{Name: ns}).Do(func() (err error) {
		conn, err = net.DialTimeout("tcp", addr, timeout)
		return err
	})
	return conn, err
}

func lastOp(ctx context.Context, c client.Client, ex *extensionsv1alpha1.Extension) func() string {
	return func() string {
		if err := c.Get(ctx, client.ObjectKeyFromObject(ex), ex); err != nil || ex.Status.LastOperation == nil {
			return ""
		}
		return fmt.Sprintf("%s %s", ex.Status.LastOperation.Type, ex.Status.LastOperation.State)
	}
}

func seedFirewalls(ctx context.Context, c client.Client, namespace string) []firewallv1alpha1.Firewall {
	list := &firewallv1alpha1.FirewallList{}
	Expect(c.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
	return list.Items
}

func agentTokens(ctx context.Context, c client.Client, namespace string) []corev1.Secret {
	list := &corev1.SecretList{}
	Expect(c.List(ctx, list, client.InNamespace(metav1.NamespaceSystem), client.MatchingLabels{credentials.LabelNamespace: namespace})).To(Succeed())
	return list.Items
}

var _ = Describe("Control plane migration end to end", func() {
	It("moves a running firewall to another seed: one machine, the connection kept, the agent finds its new seed through the shoot", func(ctx SpecContext) {
		dir := GinkgoT().TempDir()

		By("starting the shoot's control plane and two seeds whose kube-controller-managers sign certificates")
		start := func(name string, crds []string, kcm bool) *testenv.ControlPlane {
			cp, err := testenv.Start(testenv.Options{Name: name, CRDDirectoryPaths: crds, ControllerManager: kcm})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() { Expect(cp.Stop()).To(Succeed()) })
			return cp
		}
		shoot := start("shoot", nil, false)
		seedA := start("seed-a", testenv.SeedCRDPaths(), true)
		seedB := start("seed-b", testenv.SeedCRDPaths(), true)
		cA, err := client.New(seedA.Config, client.Options{Scheme: seedScheme})
		Expect(err).NotTo(HaveOccurred())
		cB, err := client.New(seedB.Config, client.Options{Scheme: seedScheme})
		Expect(err).NotTo(HaveOccurred())
		cShoot, err := client.New(shoot.Config, client.Options{Scheme: clientgoscheme.Scheme})
		Expect(err).NotTo(HaveOccurred())

		By("running the extension in both seeds over one machine infrastructure")
		suffix := make([]byte, 3)
		_, _ = rand.Read(suffix)
		id := hex.EncodeToString(suffix)
		intNS, extNS := "mig-int-"+id, "mig-ext-"+id
		stateDir := filepath.Join(dir, "machines")
		localProvider, err := local.New(local.Options{StateDir: stateDir, AgentPath: agentBinary, InternalNetNS: intNS, ExternalNetNS: extNS})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			for _, ns := range []string{intNS, extNS} {
				_ = exec.Command("ip", "netns", "delete", ns).Run()
			}
		})
		provider := &countingProvider{Provider: localProvider}
		stopA := startExtension(seedA, shoot, provider)
		DeferCleanup(func() { stopA() })
		stopB := startExtension(seedB, shoot, provider)
		DeferCleanup(func() { stopB() })

		By("enabling the firewall for the shoot in seed A")
		namespace := "shoot--mig--" + id
		prepareShootNamespace(ctx, cA, namespace, shoot)
		providerConfig := `{"size":"local","image":"local","partition":"local","project":"e2e","networks":["internet"],"internalPrefixes":["10.250.0.0/24"]}`
		ex := &extensionsv1alpha1.Extension{
			ObjectMeta: metav1.ObjectMeta{Name: "firewall", Namespace: namespace, Annotations: map[string]string{v1beta1constants.GardenerOperation: v1beta1constants.GardenerOperationReconcile}},
			Spec:       extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: "firewall", ProviderConfig: &runtime.RawExtension{Raw: []byte(providerConfig)}}},
		}
		Expect(cA.Create(ctx, ex)).To(Succeed())

		By("wiring the machine's networks: the shoot's nodes inside, a server outside")
		rec := waitForMachine(stateDir)
		DeferCleanup(func() {
			if CurrentSpecReport().Failed() {
				agentLog, _ := os.ReadFile(filepath.Join(stateDir, rec.ID, "agent.log"))
				GinkgoWriter.Printf("agent log:\n%s\n", agentLog)
			}
		})
		short := strings.TrimPrefix(rec.ID, "local-")
		for _, step := range [][]string{
			{"-n", rec.NetNS, "addr", "add", "10.250.0.1/24", "dev", "int0"},
			{"-n", rec.NetNS, "addr", "add", "203.0.113.1/24", "dev", "ext0"},
			{"-n", intNS, "addr", "add", "10.250.0.2/24", "dev", "fw" + short + "i"},
			{"-n", intNS, "route", "add", "default", "via", "10.250.0.1"},
			{"-n", extNS, "addr", "add", "203.0.113.2/24", "dev", "fw" + short + "e"},
			{"-n", extNS, "route", "add", "10.250.0.0/24", "via", "203.0.113.1"},
		} {
			out, err := exec.Command("ip", step...).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), string(out))
		}
		var server net.Listener
		Expect((&netns.NS{Name: extNS}).Do(func() (err error) {
			server, err = net.Listen("tcp", "203.0.113.2:7000")
			return err
		})).To(Succeed())
		DeferCleanup(func() { _ = server.Close() })
		go func() {
			for {
				conn, err := server.Accept()
				if err != nil {
					return
				}
				go func() { defer func() { _ = conn.Close() }(); _, _ = io.Copy(conn, conn) }()
			}
		}()

		By("tracking connections from boot, as a firewall image's base ruleset does")
		// The agent only allows established connections and what policies
		// allow; the firewall extension enables no policy source yet. So the
		// connection is opened before the agent's table exists, and a base
		// table (which the agent leaves alone) makes the kernel track it from
		// its first packet, so it counts as established later.
		out, err := exec.Command("ip", "netns", "exec", rec.NetNS, "nft",
			"add table inet boot; add chain inet boot forward { type filter hook forward priority -10; policy accept; }; add rule inet boot forward ct state established counter").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))

		By("opening a connection through the machine before the agent enforces anything")
		conn, err := dialFrom(intNS, "203.0.113.2:7000", 5*time.Second)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = conn.Close() })
		reader := bufio.NewReader(conn)
		echo := func(msg string) {
			GinkgoHelper()
			Expect(conn.SetDeadline(time.Now().Add(5 * time.Second))).To(Succeed())
			_, err := fmt.Fprintln(conn, msg)
			Expect(err).NotTo(HaveOccurred())
			line, err := reader.ReadString('\n')
			Expect(err).NotTo(HaveOccurred(), "the connection opened before must carry %q", msg)
			Expect(line).To(Equal(msg + "\n"))
		}
		echo("before the firewall enforces")

		By("letting the machine reach both seeds and the shoot as a firewall reaches their endpoints")
		fwdCtx, stopForward := context.WithCancel(context.Background())
		DeferCleanup(stopForward)
		for _, cp := range []*testenv.ControlPlane{seedA, seedB, shoot} {
			Expect((&netns.NS{Name: rec.NetNS}).ForwardLoopback(fwdCtx, portOf(cp.Config.Host))).To(Succeed())
		}

		connectedIn := func(c client.Client) func(Gomega) {
			return func(g Gomega) {
				fws := seedFirewalls(ctx, c, namespace)
				g.Expect(fws).To(HaveLen(1))
				g.Expect(meta.IsStatusConditionTrue(fws[0].Status.Conditions, firewallv1alpha1.ConditionSeedConnected)).To(BeTrue(), "%v", fws[0].Status.Conditions)
				g.Expect(meta.IsStatusConditionTrue(fws[0].Status.Conditions, firewallv1alpha1.ConditionReady)).To(BeTrue())
			}
		}
		newConnectionDropped := func() {
			GinkgoHelper()
			c, err := dialFrom(intNS, "203.0.113.2:7000", time.Second)
			if err == nil {
				_ = c.Close()
			}
			Expect(err).To(HaveOccurred(), "a new connection that no policy allows is dropped")
		}

		By("the agent bootstraps at seed A, enforces its rules and turns Ready")
		Eventually(connectedIn(cA)).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		fwName := seedFirewalls(ctx, cA, namespace)[0].Name
		Eventually(func() (string, error) {
			out, err := exec.Command("ip", "netns", "exec", rec.NetNS, "nft", "list", "table", "inet", "firewall-agent").CombinedOutput()
			return string(out), err
		}).Should(ContainSubstring("10.250.0.0/24"))
		newConnectionDropped()
		echo("while seed A manages the firewall")

		By("the agent keeps a shoot kubeconfig with a TokenRequestor token, readable by root only")
		shootKubeconfig := filepath.Join(stateDir, rec.ID, "root", firewallcontroller.AgentShootKubeconfigPath)
		Eventually(func() (string, error) {
			data, err := os.ReadFile(shootKubeconfig)
			return string(data), err
		}).WithTimeout(time.Minute).Should(And(ContainSubstring("token: "), ContainSubstring(shoot.Config.Host)))
		info, err := os.Stat(shootKubeconfig)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)))

		By("migrating away from seed A")
		Expect(cA.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
		metav1.SetMetaDataAnnotation(&ex.ObjectMeta, v1beta1constants.GardenerOperation, v1beta1constants.GardenerOperationMigrate)
		Expect(cA.Update(ctx, ex)).To(Succeed())
		Eventually(lastOp(ctx, cA, ex)).WithTimeout(time.Minute).Should(Equal("Migrate Succeeded"))
		state := ex.Status.State.DeepCopy()
		Expect(cA.Delete(ctx, ex)).To(Succeed(), "gardenlet deletes the Extension shallowly")
		Eventually(func() bool { return apierrors.IsNotFound(cA.Get(ctx, client.ObjectKeyFromObject(ex), ex)) }).Should(BeTrue())
		Expect(seedFirewalls(ctx, cA, namespace)).To(BeEmpty())
		Expect(agentTokens(ctx, cA, namespace)).To(BeEmpty(), "seed A's bootstrap tokens are revoked")
		Expect(cA.Get(ctx, client.ObjectKey{Name: firewallv1alpha1.AgentUserName(namespace, fwName)}, &rbacv1.ClusterRoleBinding{})).To(Satisfy(apierrors.IsNotFound),
			"seed A grants the agent nothing any more")
		echo("between migrate and restore: the machine forwards with its last rules")
		newConnectionDropped()

		By("restoring in seed B as gardenlet does: wait-for-state, the state, then restore")
		prepareShootNamespace(ctx, cB, namespace, shoot)
		exB := &extensionsv1alpha1.Extension{
			ObjectMeta: metav1.ObjectMeta{Name: "firewall", Namespace: namespace, Annotations: map[string]string{v1beta1constants.GardenerOperation: v1beta1constants.GardenerOperationWaitForState}},
			Spec:       ex.Spec,
		}
		Expect(cB.Create(ctx, exB)).To(Succeed())
		Eventually(func() error {
			if err := cB.Get(ctx, client.ObjectKeyFromObject(exB), exB); err != nil {
				return err
			}
			exB.Status.State = state
			exB.Status.LastOperation = &gardencorev1beta1.LastOperation{Type: gardencorev1beta1.LastOperationTypeRestore, State: gardencorev1beta1.LastOperationStatePending, LastUpdateTime: metav1.Now()}
			return cB.Status().Update(ctx, exB)
		}).Should(Succeed())
		Eventually(func() error {
			if err := cB.Get(ctx, client.ObjectKeyFromObject(exB), exB); err != nil {
				return err
			}
			metav1.SetMetaDataAnnotation(&exB.ObjectMeta, v1beta1constants.GardenerOperation, v1beta1constants.GardenerOperationRestore)
			return cB.Update(ctx, exB)
		}).Should(Succeed())
		Eventually(lastOp(ctx, cB, exB)).WithTimeout(time.Minute).Should(MatchRegexp(`^(Restore|Reconcile) Succeeded$`))
		restored := time.Now()

		By("the extension in seed B dies and starts again")
		stopB()
		stopB = startExtension(seedB, shoot, provider)

		By("the agent takes its new bootstrap kubeconfig from the shoot and connects to seed B")
		// The time it takes is a figure (printed), not an assertion: CI runs
		// the suites in parallel on two cores.
		Eventually(connectedIn(cB)).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		GinkgoWriter.Printf("agent connected to seed B %.1f s after the restore\n", time.Since(restored).Seconds())
		fwB := seedFirewalls(ctx, cB, namespace)[0]
		Expect(fwB.Name).To(Equal(fwName))
		Expect(fwB.Status.MachineStatus.MachineID).To(Equal(rec.ID), "the same machine, found by its ID")
		Expect(fwB.Status.AgentStatus.LastRunAgainstSeed.Time).To(BeTemporally(">", restored.Add(-time.Second)))
		Expect(provider.created.Load()).To(Equal(int32(1)), "never a second machine")

		By("the delivered kubeconfig is withdrawn from the shoot and the new token revoked")
		Eventually(func() bool {
			return apierrors.IsNotFound(cShoot.Get(ctx, client.ObjectKey{Namespace: credentials.ShootNamespace, Name: firewallv1alpha1.DeliveredBootstrapSecretName(fwName)}, &corev1.Secret{}))
		}).Should(BeTrue())
		Eventually(func() []corev1.Secret { return agentTokens(ctx, cB, namespace) }).Should(BeEmpty())

		By("the connection opened before the migration still carries data; new ones are still dropped")
		echo("after the migration")
		newConnectionDropped()
		Consistently(provider.created.Load).WithTimeout(3 * time.Second).Should(Equal(int32(1)))

		By("deleting the Extension in seed B releases the one machine")
		Expect(cB.Delete(ctx, exB)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(cB.Get(ctx, client.ObjectKeyFromObject(exB), exB)) }).WithTimeout(2 * time.Minute).Should(BeTrue())
		Expect(filepath.Join("/var/run/netns", rec.NetNS)).NotTo(BeAnExistingFile())
	})
})
